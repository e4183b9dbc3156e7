"""Stores: an exact in-memory oracle and Chroma (embedded or server); Chroma loads lazily."""

from kbconform_reference._vectors import exact_top_k
from kbconform_reference.namespace.stores._protocol import Match, Rows, VectorStore
from kbconform_reference.namespace.stores.memory import MemoryStore

__all__ = ["Match", "MemoryStore", "Rows", "VectorStore", "exact_top_k"]
