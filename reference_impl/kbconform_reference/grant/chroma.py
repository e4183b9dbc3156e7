"""Chroma embedded as a kb-grant store: one cosine-space collection per embedding model.

Chroma answers a query with a cosine *distance* ``1 - cos``, in [0, 2], lower is nearer (engine
``chroma``). Documents carry their knowledge base's internal id in the metadata key ``kb``;
every query, read and delete filters on it with ``$in`` or ``$eq`` (positive matches only).

Collections are created with a search breadth (``ef_search``) far above any page of results the
suites ask, so the HNSW search ranks exactly at the sizes a conformance run holds. The client is
an ``EphemeralClient`` (in process, in memory); ephemeral clients of one process share their
data, so each store names its collections afresh and drops them when closed. Chroma is imported
when a store is opened, never when this module is.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform_reference.grant.index import Found, Point

_CONFIGURATION: Any = {"hnsw": {"space": "cosine", "ef_search": 1024, "ef_construction": 200}}


def version() -> str:
    """The installed chromadb's version ("unknown" when it is not installed)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("chromadb")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class ChromaIndex:
    """A Chroma embedded store with a collection per model (``models``: name -> dimension)."""

    engine = "chroma"

    def __init__(self, models: Mapping[str, int]) -> None:
        import chromadb
        from chromadb.config import Settings

        self._client: Any = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
        prefix = f"kbg-{uuid.uuid4().hex}"
        self._collections: dict[str, Any] = {
            model: self._client.create_collection(
                f"{prefix}-{index}", embedding_function=None, configuration=_CONFIGURATION
            )
            for index, model in enumerate(models)
        }
        self.max_batch = max(1, int(self._client.get_max_batch_size()))

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
        return [
            Found(str(i), int(m["kb"]), str(d), float(x))
            for i, d, m, x in zip(
                result["ids"][0],
                result["documents"][0],
                result["metadatas"][0],
                result["distances"][0],
                strict=True,
            )
        ]

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
        for collection in self._collections.values():
            with contextlib.suppress(Exception):  # already gone: nothing to release
                self._client.delete_collection(collection.name)
        self._collections.clear()


def _any_of(kbs: Sequence[int]) -> dict[str, Any]:
    """The documents of ``kbs`` (never empty: an empty scope is never queried)."""
    if not kbs:
        raise ValueError("a query names at least one knowledge base")
    return {"kb": {"$in": list(kbs)}}
