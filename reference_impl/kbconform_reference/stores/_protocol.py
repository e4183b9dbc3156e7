"""The storage interface the knowledge base is built on: a vector collection with metadata.

``where`` clauses use Chroma's dialect (``$and``/``$or`` of ``{key: value}`` or
``{key: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin: value}}``); the service builds every one of them,
clients never reach a store directly. Embeddings are float32. Any failure raises; a store never
answers "nothing" for "could not look".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Metadata = Mapping[str, str | int | float | bool]
Where = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Rows:
    """Stored rows, in one order: ids, documents (may be None), metadata, embeddings (optional)."""

    ids: tuple[str, ...]
    documents: tuple[str | None, ...]
    metadatas: tuple[Metadata, ...]
    embeddings: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """A query result: a row and its cosine distance to the query."""

    id: str
    document: str | None
    metadata: Metadata
    distance: float


@runtime_checkable
class VectorStore(Protocol):
    """One collection of rows (id, float32 embedding, document, flat metadata)."""

    #: A short description for reports (for example ``chroma-embedded 1.5.9``).
    description: str

    #: The most rows one :meth:`upsert` or :meth:`delete` takes as a single call. The knowledge
    #: base pages its writes and deletes by it, so that each page is one store call.
    max_batch: int

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        """Insert or replace the rows, as one call (more than :attr:`max_batch` rows may take several)."""
        ...

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        """The rows with these ids (all when None) that match ``where``, in a stable order."""
        ...

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        """The nearest rows matching ``where``, nearest first (approximate for large sets)."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete these rows; absent ids are ignored (more than :attr:`max_batch` may take several calls)."""
        ...
