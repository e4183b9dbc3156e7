"""The vector store of the project-pool reference: Qdrant in local mode, two collections.

``episodes`` holds what was said (payload ``{sessionId, createdAt, text}``, ``sessionId`` the
session's internal id); ``entities`` what was extracted from it (payload ``{name, type, notes,
projectId}``, ``projectId`` the project's internal id, or null). Filters are built here from
internal ids, by :func:`any_of`, :func:`equal` and :func:`is_null`.

The only module of the reference that imports ``qdrant_client``, and only when a store is
opened or a filter built: the rest of the package (the mutant catalogue included) imports
without the ``qdrant`` extra. Qdrant's local mode searches exactly (brute force), so a search
returns the nearest points of its filter, not an approximation.

A trap of Qdrant's filter language: a ``should`` list that is empty matches every point. The
service never sends one: :func:`any_of` is a match-any condition, and refuses an empty list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http.models import Filter

EPISODES = "episodes"
ENTITIES = "entities"


@dataclass(frozen=True, slots=True)
class Point:
    """A point as a search returns it: id, payload and cosine similarity."""

    id: str
    payload: Mapping[str, Any]
    score: float


def any_of(key: str, values: Sequence[int]) -> Filter:
    """Points whose ``key`` is one of ``values`` (one match-any condition, what a ``should`` of
    one match per value says, and five times faster in local mode). ``values`` must not be
    empty: a scope with no one in it is answered without a query."""
    from qdrant_client import models

    if not values:
        raise ValueError(f"an empty 'should' on {key!r} would match every point")
    return models.Filter(must=[models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))])


def unchecked_any_of(key: str, values: Iterable[int | str]) -> Filter:
    """The modelled system's form of :func:`any_of`, a ``should`` of one match per value, without
    the guard: with no values it matches every point (for the mutants that model the trap)."""
    from qdrant_client import models

    return models.Filter(
        should=[models.FieldCondition(key=key, match=models.MatchValue(value=value)) for value in values]
    )


def equal(key: str, value: int | str) -> Filter:
    """Points whose ``key`` is ``value``."""
    from qdrant_client import models

    return models.Filter(must=[models.FieldCondition(key=key, match=models.MatchValue(value=value))])


def is_null(key: str) -> Filter:
    """Points whose ``key`` is null."""
    from qdrant_client import models

    return models.Filter(must=[models.IsNullCondition(is_null=models.PayloadField(key=key))])


class QdrantStore:
    """One local (in-memory) Qdrant client with its two collections, empty when opened."""

    def __init__(self, dimensions: int) -> None:
        from qdrant_client import QdrantClient, models

        self.client: QdrantClient = QdrantClient(":memory:")
        for name in (EPISODES, ENTITIES):
            self.client.create_collection(
                name, vectors_config=models.VectorParams(size=dimensions, distance=models.Distance.COSINE)
            )

    def upsert(
        self, collection: str, points: Sequence[tuple[str, Sequence[float], Mapping[str, Any]]]
    ) -> None:
        """Write ``points`` (id, vector, payload) in one call: all of them or none."""
        from qdrant_client import models

        self.client.upsert(
            collection,
            points=[
                models.PointStruct(id=point_id, vector=list(vector), payload=dict(payload))
                for point_id, vector, payload in points
            ],
            wait=True,
        )

    def search(
        self, collection: str, vector: Sequence[float], where: Filter | None, limit: int
    ) -> list[Point]:
        """The ``limit`` points of ``collection`` nearest to ``vector`` that ``where`` matches
        (None: every point), nearest first."""
        found = self.client.query_points(
            collection, query=list(vector), query_filter=where, limit=limit, with_payload=True
        )
        return [Point(str(point.id), dict(point.payload or {}), float(point.score)) for point in found.points]

    def set_payload(self, collection: str, payload: Mapping[str, Any], where: Filter) -> None:
        """Overwrite ``payload``'s keys on every point ``where`` matches."""
        self.client.set_payload(collection, payload=dict(payload), points=where, wait=True)

    def count(self, collection: str) -> int:
        """How many points ``collection`` holds."""
        return int(self.client.count(collection, exact=True).count)

    def close(self) -> None:
        self.client.close()
