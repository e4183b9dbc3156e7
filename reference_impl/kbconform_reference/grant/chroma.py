"""Chroma embedded as a kb-grant store: one cosine-space collection per embedding model.

Chroma answers a query with a cosine *distance* ``1 - cos``, in [0, 2], lower is nearer (engine
``chroma``). Documents carry their knowledge base's internal id in the metadata key ``kb``;
every query, read and delete filters on it with ``$in`` or ``$eq`` (positive matches only).

A query over at most :data:`EXACT_LIMIT` documents ranks them exactly: it reads them with their
embeddings and sorts by cosine distance (:func:`~kbconform_reference._vectors.exact_top_k`, the
tenant-namespace reference's small-scope rule). HNSW is approximate, and a collection reused after
many deletes can miss a true neighbour even with a wide search breadth (``ef_search``); larger
scopes go to the HNSW search. Either way the answer is Chroma's distance ``1 - cos``. The client is
an ``EphemeralClient`` (in process, in memory). chromadb 1.5 keeps about 2.5 MB of every
collection that held data after it is deleted, and a conformance run opens thousands of
backends; so a closed store empties its collections and hands them to the next store opened in
the process (:class:`_Spare`, by dimension), which takes one only if it is empty. Chroma is
imported when a store is opened, never when this module is.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kbconform_reference._vectors import Rows, exact_top_k, query_rows
from kbconform_reference.grant.index import Found, Point

_CONFIGURATION: Any = {"hnsw": {"space": "cosine", "ef_search": 1024, "ef_construction": 200}}

#: The most documents a query ranks exactly (more go to the HNSW search).
EXACT_LIMIT = 2000


class _Spare:
    """Emptied collections of closed stores, by dimension, for the next stores of the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._client: Any = None
        self._free: dict[int, list[Any]] = {}

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import chromadb
                from chromadb.config import Settings

                self._client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
            return self._client

    def take(self, dimension: int) -> Any:
        """An empty collection for vectors of ``dimension``: a spare one, or a new one."""
        with self._lock:
            free = self._free.get(dimension, [])
            while free:
                collection = free.pop()
                if collection.count() == 0:
                    return collection
        return self.client().create_collection(
            f"kbg-{uuid.uuid4().hex}", embedding_function=None, configuration=_CONFIGURATION
        )

    def give(self, dimension: int, collection: Any) -> None:
        """Empty ``collection`` and keep it (one that cannot be emptied is dropped)."""
        try:
            collection.delete(where={"kb": {"$gte": 0}})
            if collection.count() != 0:
                return
        except Exception:  # a collection that cannot be emptied is not reused
            return
        with self._lock:
            self._free.setdefault(dimension, []).append(collection)


_SPARE = _Spare()


class ChromaIndex:
    """A Chroma embedded store with a collection per model (``models``: name -> dimension)."""

    engine = "chroma"

    def __init__(self, models: Mapping[str, int]) -> None:
        self._dimensions = dict(models)
        self._collections: dict[str, Any] = {model: _SPARE.take(size) for model, size in models.items()}
        self.max_batch = max(1, int(_SPARE.client().get_max_batch_size()))

    def upsert(self, model: str, points: Sequence[Point], /) -> None:
        if points:
            self._collections[model].upsert(
                ids=[point.id for point in points],
                embeddings=[list(point.vector) for point in points],
                documents=[point.text for point in points],
                metadatas=[{"kb": point.kb} for point in points],
            )

    def query(self, model: str, vector: Sequence[float], kbs: Sequence[int], limit: int, /) -> list[Found]:
        collection, where = self._collections[model], _any_of(kbs)
        if len(collection.get(where=where, limit=EXACT_LIMIT + 1, include=[])["ids"]) <= EXACT_LIMIT:
            rows = collection.get(where=where, include=["documents", "metadatas", "embeddings"])
            if not rows["ids"]:
                return []
            scope = Rows(
                tuple(rows["ids"]),
                tuple(rows["documents"]),
                tuple(rows["metadatas"]),
                np.asarray(rows["embeddings"], dtype=np.float32).reshape(len(rows["ids"]), -1),
            )
            matches = exact_top_k(scope, np.asarray(vector, dtype=np.float32), limit)
            return [Found(m.id, int(m.metadata["kb"]), str(m.document), m.distance) for m in matches]
        result = collection.query(
            query_embeddings=[list(vector)],
            n_results=limit,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return [Found(str(i), int(m["kb"]), str(d), float(x)) for i, d, m, x in query_rows(result)]

    def points(self, model: str, kb: int, /) -> list[Point]:
        rows = self._collections[model].get(where={"kb": {"$eq": kb}}, include=["documents", "embeddings"])
        return [
            Point(str(i), kb, str(d), tuple(float(x) for x in v))
            for i, d, v in zip(rows["ids"], rows["documents"], rows["embeddings"], strict=True)
        ]

    def count(self, model: str, kb: int, /) -> int:
        return len(self._collections[model].get(where={"kb": {"$eq": kb}}, include=[])["ids"])

    def delete(self, model: str, ids: Sequence[str], /) -> None:
        if ids:
            self._collections[model].delete(ids=list(ids))

    def delete_kb(self, model: str, kb: int, /) -> None:
        self._collections[model].delete(where={"kb": {"$eq": kb}})

    def close(self) -> None:
        """Hand the collections, emptied, to the next store opened in the process."""
        for model, collection in self._collections.items():
            _SPARE.give(self._dimensions[model], collection)
        self._collections.clear()


def _any_of(kbs: Sequence[int]) -> dict[str, Any]:
    """The documents of ``kbs`` (never empty: an empty scope is never queried)."""
    if not kbs:
        raise ValueError("a query names at least one knowledge base")
    return {"kb": {"$in": list(kbs)}}
