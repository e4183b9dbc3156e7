"""Mutants of the project-pool reference, its filters: a ``should`` built from an empty list,
external ids where payloads hold internal ones, entities of no project unfiltered, the shared
pool read as one's own session, a filter applied after the top k."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform_reference.pool.membership import SessionRow
from kbconform_reference.pool.mutants._base import Mutant, both, external_id
from kbconform_reference.pool.qdrant import ENTITIES, any_of, unchecked_any_of
from kbconform_reference.pool.service import PoolHit, ProjectPool

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


class EmptyShouldForFreshProject(ProjectPool):
    """A project's pool is the sessions of the project that have talked already, and the filter
    is a ``should`` over them with no guard: in a project where nobody has written yet it is
    ``should=[]``, which Qdrant reads as every point."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._talked: set[int] = set()

    def write_episode(self, session: object, text: object, /) -> str:
        episode = super().write_episode(session, text)
        row = self.membership.session(str(session))
        assert row is not None
        self._talked.add(row.id)
        return episode

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        scope = self._episode_scope(caller, operation)
        if caller.project_id is None:
            return any_of("sessionId", scope)
        return unchecked_any_of("sessionId", [session for session in scope if session in self._talked])


class ExternalIdInFilter(ProjectPool):
    """The episode filter is built from the pool's external session ids (as a request carries
    them, numeric-looking ones parsed to integers), while payloads hold internal ids."""

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        scope = self._episode_scope(caller, operation)
        marks = ", ".join("?" for _ in scope)
        rows = self.membership._db.execute(f"SELECT external_id FROM sessions WHERE id IN ({marks})", scope)
        external = [str(row[0]) for row in rows]
        return unchecked_any_of("sessionId", [int(e) if e.isdecimal() else e for e in external])


class NumericSessionIdReadAsInternal(ProjectPool):
    """A caller id that parses as an integer is taken for an internal id when a session has it
    (an API that accepts either form): the session named "1" is the session whose row is 1."""

    def _caller(self, session: object, operation: str) -> SessionRow:
        external = external_id(session)
        if external is not None and external.isdecimal():
            with self._store(operation):
                row = self.membership._db.execute(
                    "SELECT s.id, m.project_id FROM sessions s LEFT JOIN memberships m "
                    "ON m.session_id = s.id AND m.removed_at IS NULL WHERE s.id = ?",
                    (int(external),),
                ).fetchone()
            if row is not None:
                return SessionRow(int(row[0]), None if row[1] is None else int(row[1]))
        return super()._caller(session, operation)


class NoProjectEntitiesUnfiltered(ProjectPool):
    """A session in no project searches the entities with no filter at all (the modelled code's
    'no filter for non-project sessions'), instead of getting no entity context."""

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        caller = self._caller(session, "search_entities")
        if caller.project_id is not None:
            return super().search_entities(session, text, limit)
        query, checked = self._query(text, limit)
        return self._search(ENTITIES, "name", query, None, checked, "search_entities")


class SharedPoolIsOwnSession(ProjectPool):
    """A session in no project searches its own episodes only (the modelled code's single-session
    filter), not the shared pool of every session in no project."""

    def _episode_scope(self, caller: SessionRow, operation: str) -> list[int]:
        if caller.project_id is None:
            return [caller.id]
        return super()._episode_scope(caller, operation)


class FilterAfterTopK(ProjectPool):
    """Searches take the nearest ``limit`` points of the whole collection and then drop the ones
    the scope's filter does not match: fewer hits than the scope holds."""

    def _search(
        self, collection: str, field: str, text: str, where: Filter | None, limit: int, operation: str
    ) -> list[PoolHit]:
        (vector,) = self._embed([text])
        with self._store(operation):
            points = self.vectors.search(collection, vector, None, limit)
        return [
            PoolHit(point.id, str(point.payload[field]), point.score)
            for point in points
            if where is None or _matches(point.payload, where)
        ]


def _matches(payload: Mapping[str, Any], where: Filter) -> bool:
    """Whether ``payload`` satisfies ``where`` (its ``should`` and ``must`` matches)."""

    def holds(condition: Any) -> bool:
        match = condition.match
        if hasattr(match, "any"):
            return payload.get(condition.key) in match.any
        return bool(payload.get(condition.key) == match.value)

    def listed(conditions: Any) -> list[Any]:
        return (
            [] if conditions is None else list(conditions) if isinstance(conditions, list) else [conditions]
        )

    should, must = listed(where.should), listed(where.must)
    return (not should or any(holds(c) for c in should)) and all(holds(c) for c in must)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pool-empty-should-for-fresh-project",
        EmptyShouldForFreshProject,
        "a project's filter is a should over its sessions that have written, unguarded: a fresh "
        "project's should=[] matches every episode",
        ("iso-01[search-episodes]", "pool-05", "pool-08", "pool-09"),
    ),
    Mutant(
        "pool-external-id-in-filter",
        ExternalIdInFilter,
        "episode filters are built from external session ids (numeric ones parsed to integers), "
        "payloads hold internal ids",
        ("iso-01[search-episodes]", "pool-04"),
    ),
    Mutant(
        "pool-numeric-session-id-read-as-internal",
        NumericSessionIdReadAsInternal,
        "a caller id that parses as an integer is taken for the internal id of another session",
        (*both("iso-02"), "pool-04", "pool-06"),
    ),
    Mutant(
        "pool-no-project-entities-unfiltered",
        NoProjectEntitiesUnfiltered,
        "a session in no project searches every entity with no filter",
        ("iso-01[search-entities]", "pool-08", "pool-09"),
    ),
    Mutant(
        "pool-shared-pool-is-own-session",
        SharedPoolIsOwnSession,
        "a session in no project searches its own episodes only, not the shared pool",
        ("iso-01[search-episodes]", "pool-08", "pool-09"),
    ),
    Mutant(
        "pool-filter-after-top-k",
        FilterAfterTopK,
        "searches take the collection's top limit, then drop what is out of scope",
        ("pool-07",),
    ),
)
