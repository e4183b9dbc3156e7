"""Qdrant in local mode as a kb-grant store: one cosine collection per embedding model.

Qdrant answers a query with the cosine *similarity*, in [-1, 1], higher is nearer (engine
``qdrant``). Documents carry their knowledge base's internal id in the payload key ``kb`` (and
their text in ``text``); every query, read and delete filters on it with a match-any condition
(never a ``should``, whose empty form matches every point). Local mode searches exactly (brute
force). ``qdrant_client`` is imported when a store is opened, never when this module is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbconform_reference.grant.index import Found, Point

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter

_PAGE = 256


def _any_of(kbs: Sequence[int]) -> Filter:
    """The documents of ``kbs`` (never empty: an empty scope is never queried)."""
    from qdrant_client import models

    if not kbs:
        raise ValueError("a query names at least one knowledge base")
    return models.Filter(must=[models.FieldCondition(key="kb", match=models.MatchAny(any=list(kbs)))])


class QdrantIndex:
    """A local-mode Qdrant client with a collection per model (``models``: name -> dimension)."""

    engine = "qdrant"
    max_batch = 4096

    def __init__(self, models: Mapping[str, int]) -> None:
        from qdrant_client import QdrantClient
        from qdrant_client import models as qm

        self._client: Any = QdrantClient(":memory:")
        self._names = {model: f"model-{index}" for index, model in enumerate(models)}
        for model, name in self._names.items():
            self._client.create_collection(
                name, vectors_config=qm.VectorParams(size=models[model], distance=qm.Distance.COSINE)
            )

    def upsert(self, model: str, points: Sequence[Point], /) -> None:
        from qdrant_client import models as qm

        if points:
            self._client.upsert(
                self._names[model],
                points=[
                    qm.PointStruct(id=p.id, vector=list(p.vector), payload={"kb": p.kb, "text": p.text})
                    for p in points
                ],
                wait=True,
            )

    def query(self, model: str, vector: Sequence[float], kbs: Sequence[int], limit: int, /) -> list[Found]:
        found = self._client.query_points(
            self._names[model], query=list(vector), query_filter=_any_of(kbs), limit=limit, with_payload=True
        )
        return [
            Found(str(p.id), int(p.payload["kb"]), str(p.payload["text"]), float(p.score))
            for p in found.points
        ]

    def points(self, model: str, kb: int, /) -> list[Point]:
        read: list[Point] = []
        offset = None
        while True:
            page, offset = self._client.scroll(
                self._names[model],
                scroll_filter=_any_of([kb]),
                limit=_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=True,
            )
            read += [Point(str(p.id), kb, str(p.payload["text"]), tuple(map(float, p.vector))) for p in page]
            if offset is None:
                return read

    def count(self, model: str, kb: int, /) -> int:
        return int(self._client.count(self._names[model], count_filter=_any_of([kb]), exact=True).count)

    def delete(self, model: str, ids: Sequence[str], /) -> None:
        from qdrant_client import models as qm

        if ids:
            selector = qm.PointIdsList(points=list(ids))
            self._client.delete(self._names[model], points_selector=selector, wait=True)

    def delete_kb(self, model: str, kb: int, /) -> None:
        from qdrant_client import models as qm

        selector = qm.FilterSelector(filter=_any_of([kb]))
        self._client.delete(self._names[model], points_selector=selector, wait=True)

    def close(self) -> None:
        self._client.close()
