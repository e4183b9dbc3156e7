"""What the kb-grant reference asks of a vector store: one collection per embedding model.

A store holds the documents of every knowledge base bound to it, one collection per model (a
collection has one dimension), each document tagged with its knowledge base's internal id
(``kb``). Every read and delete is filtered by internal ids: a query names the knowledge bases
it searches, never "all". Each engine answers in its own score scale (:attr:`VectorIndex.engine`
says which); the service brings it to ``(1 + cos) / 2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Point:
    """A document as a store holds it: its id, knowledge base (internal id), text and vector."""

    id: str
    kb: int
    text: str
    vector: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Found:
    """A document a query found, with the engine's own score (a distance or a similarity)."""

    id: str
    kb: int
    text: str
    native: float


class VectorIndex(Protocol):
    """One vector store: its collections, created empty when the store is opened."""

    #: The engine's name: which score scale :meth:`query` answers in.
    engine: str
    #: The most points one :meth:`upsert` takes; a larger write is several calls.
    max_batch: int

    def upsert(self, model: str, points: Sequence[Point], /) -> None:
        """Write ``points`` (at most :attr:`max_batch`) in one call."""
        ...

    def query(self, model: str, vector: Sequence[float], kbs: Sequence[int], limit: int, /) -> list[Found]:
        """The ``limit`` documents of the knowledge bases ``kbs`` nearest to ``vector``."""
        ...

    def points(self, model: str, kb: int, /) -> list[Point]:
        """Every document of ``kb``, vectors included."""
        ...

    def count(self, model: str, kb: int, /) -> int:
        """How many documents ``kb`` holds."""
        ...

    def delete(self, model: str, ids: Sequence[str], /) -> None:
        """Delete the documents ``ids`` (one call)."""
        ...

    def delete_kb(self, model: str, kb: int, /) -> None:
        """Delete every document of ``kb`` (one call)."""
        ...

    def close(self) -> None: ...
