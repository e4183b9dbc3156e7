"""The source/parser registry (an immutable value; no global singleton)."""

from kbconform.registry._registry import Registry, derive_name

__all__ = ["Registry", "derive_name"]
