"""Stores: an exact in-memory oracle and Chroma (embedded or server); Chroma loads lazily."""

from kbconform_reference.stores._protocol import Match, Rows, VectorStore
from kbconform_reference.stores.memory import MemoryStore, exact_top_k

__all__ = ["Match", "MemoryStore", "Rows", "VectorStore", "exact_top_k"]
