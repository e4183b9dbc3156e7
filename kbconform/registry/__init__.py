"""The source/parser registry (an immutable value; no global singleton) and what it holds."""

from kbconform.registry._registry import Registry, derive_name
from kbconform.registry._types import DEFAULT_HASH_INPUTS, Chunk, Parser, Paths, Source

__all__ = ["DEFAULT_HASH_INPUTS", "Chunk", "Parser", "Paths", "Registry", "Source", "derive_name"]
