"""The tenant-namespace reference's stores under their earlier name: those of
:mod:`kbconform_reference.namespace.stores` (``kbconform_reference.stores.chroma`` is
:mod:`kbconform_reference.namespace.stores.chroma`'s)."""

from kbconform_reference.namespace.stores import Match, MemoryStore, Rows, VectorStore, exact_top_k

__all__ = ["Match", "MemoryStore", "Rows", "VectorStore", "exact_top_k"]
