"""Chroma embedded as a kb-grant store: one cosine-space collection per embedding model.

Chroma answers a query with a cosine *distance* ``1 - cos``, in [0, 2], lower is nearer (engine
``chroma``). Documents carry their knowledge base's internal id in the metadata key ``kb``;
every query, read and delete filters on it with ``$in`` or ``$eq`` (positive matches only).

Collections are created with a search breadth (``ef_search``) far above any page of results the
suites ask, so the HNSW search ranks exactly at the sizes a conformance run holds. The client is
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

from kbconform_reference.grant.index import Found, Point
from kbconform_reference.stores.chroma import query_rows

_CONFIGURATION: Any = {"hnsw": {"space": "cosine", "ef_search": 1024, "ef_construction": 200}}


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
        result = self._collections[model].query(
            query_embeddings=[list(vector)],
            n_results=limit,
            where=_any_of(kbs),
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
