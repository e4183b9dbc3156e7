"""An exact in-memory store (numpy): the oracle the approximate stores are compared with."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kbconform_reference._vectors import Match, Metadata, Rows, exact_top_k
from kbconform_reference.namespace.stores._protocol import Where, upserted_vectors
from kbconform_reference.namespace.stores._where import matches

#: The memory store's default :attr:`MemoryStore.max_batch`: small, so that a batch of a few
#: hundred rows is written in several pages and memory mode exercises paging as Chroma does.
MEMORY_MAX_BATCH = 64


class MemoryStore:
    """Rows in insertion order; queries are brute-force cosine distance over the matching rows.

    ``max_batch`` is only what the store declares (the knowledge base pages by it); it accepts
    any number of rows per call.
    """

    description = "memory (exact)"

    def __init__(self, max_batch: int = MEMORY_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch: expected a positive number of rows, got {max_batch}")
        self.max_batch = max_batch
        self._rows: dict[str, tuple[npt.NDArray[np.float32], str | None, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        vectors = upserted_vectors(ids, embeddings, documents, metadatas)
        with self._lock:
            for index, row_id in enumerate(ids):
                self._rows[row_id] = (vectors[index].copy(), documents[index], dict(metadatas[index]))

    def _select(self, ids: Sequence[str] | None, where: Where | None) -> list[str]:
        with self._lock:
            candidates = (
                list(self._rows) if ids is None else [i for i in dict.fromkeys(ids) if i in self._rows]
            )
            return [i for i in candidates if matches(self._rows[i][2], where)]

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        selected = self._select(ids, where)
        selected = selected[offset : None if limit is None else offset + limit]
        rows = [self._rows[i] for i in selected]
        vectors = np.stack([r[0] for r in rows]) if rows else np.zeros((0, 0), np.float32)
        return Rows(
            tuple(selected),
            tuple(r[1] for r in rows),
            tuple(dict(r[2]) for r in rows),
            vectors if embeddings else None,
        )

    def ids(self, *, where: Where | None = None, limit: int | None = None) -> tuple[str, ...]:
        """The ids of the rows matching ``where`` (at most ``limit``), as :meth:`get` orders them."""
        return tuple(self._select(None, where)[:limit])

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        rows = self.get(where=where, embeddings=True)
        return exact_top_k(rows, embedding, n_results)

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            for row_id in ids:
                self._rows.pop(row_id, None)
