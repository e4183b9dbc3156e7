"""A small project-pool adapter, as an adapter author would write one: memory in dictionaries.

Correct by ``schemas/project-pool.md``: sessions and projects get internal integer ids (each
counting from 1, as SQLite's do), every filter is built from them, entities carry the project's
internal id of the moment they were extracted, and the store switch is consulted before every
store call. Episodes and entities share one count of ids (``episode-1``, ``entity-2``), so a
run in process and one served give the same ids. The broken ones (``by_name.<name>``) each break
one rule, so the suites can be seen to fail them.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions, pool_invalid
from kbconform.errors import BackendUnavailable, NotFound, Unauthenticated

MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "project-pool",
    "adapter": {"name": "pool-double", "version": "0.0.1"},
    "backend": {"name": "project pool in memory", "version": "test"},
    "isolationModel": "metadata-filter",
    "readFacades": ["search-episodes", "search-entities"],
    "features": {"fault-injection": True},
}
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class PoolHit:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class _Point:
    """A stored episode (``owner``: the session's internal id) or entity (``owner``: the
    project's internal id, or None)."""

    id: str
    text: str
    owner: int | None
    words: Counter[str]


def _words(text: str) -> Counter[str]:
    return Counter(_WORD.findall(text.casefold()))


def _similarity(a: Counter[str], b: Counter[str]) -> float:
    dot = sum(count * b[word] for word, count in a.items())
    norm = math.sqrt(sum(c * c for c in a.values())) * math.sqrt(sum(c * c for c in b.values()))
    return dot / norm if norm else 0.0


class MemoryPool:
    """Conversation memory scoped by project (kbconform.adapter.ProjectPoolBackend)."""

    def __init__(self, store_fails: Callable[[], bool] | None = None) -> None:
        self.store_fails = store_fails
        self.session_ids = itertools.count(1)
        self.project_ids = itertools.count(1)
        self.point_ids = itertools.count(1)
        self.projects: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.membership: dict[int, int | None] = {}  # session's internal id -> project's
        self.episodes: list[_Point] = []
        self.entities: list[_Point] = []

    # -- plumbing --------------------------------------------------------------------------------

    def _store(self, operation: str) -> None:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable(operation, "the store is unavailable (fault injected)")

    def _session(self, session: object, operation: str) -> int:
        if not isinstance(session, str) or session not in self.sessions:
            raise Unauthenticated(operation)
        return self.sessions[session]

    @staticmethod
    def _limit(limit: object) -> int:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise pool_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
        return limit

    @staticmethod
    def _nearest(points: Sequence[_Point], text: str, limit: int) -> list[PoolHit]:
        query = _words(text)
        ranked = sorted(points, key=lambda p: -_similarity(query, p.words))
        return [PoolHit(p.id, p.text) for p in ranked[:limit]]

    def _project_now(self, internal: int) -> int | None:
        return self.membership[internal]

    # -- membership ------------------------------------------------------------------------------

    def create_project(self, project: str, /) -> None:
        if not isinstance(project, str) or not project:
            raise pool_invalid("project", "a non-empty string", repr(project))
        if project in self.projects:
            raise pool_invalid("project", "a new project name", repr(project))
        self.projects[project] = next(self.project_ids)

    def start_session(self, session: str, project: str | None, /) -> None:
        if not isinstance(session, str) or not session:
            raise pool_invalid("session", "a non-empty string", repr(session))
        if session in self.sessions:
            raise pool_invalid("session", "a new session id", repr(session))
        if project is not None and project not in self.projects:
            raise NotFound(project)
        internal = next(self.session_ids)
        self.sessions[session] = internal
        self.membership[internal] = None if project is None else self.projects[project]

    def assign_session(self, session: str, project: str, /) -> None:
        if session not in self.sessions:
            raise NotFound(session)
        if project not in self.projects:
            raise NotFound(project)
        self.membership[self.sessions[session]] = self.projects[project]

    def remove_session(self, session: str, /) -> None:
        if session not in self.sessions:
            raise NotFound(session)
        self.membership[self.sessions[session]] = None

    # -- writes ----------------------------------------------------------------------------------

    def write_episode(self, session: str, text: str, /) -> str:
        internal = self._session(session, "write_episode")
        if not isinstance(text, str) or not text:
            raise pool_invalid("text", "a non-empty string", repr(text))
        self._store("write_episode")
        point = _Point(f"episode-{next(self.point_ids)}", text, internal, _words(text))
        self.episodes.append(point)
        return point.id

    def extract_entities(self, session: str, entities: Sequence[Mapping[str, str]], /) -> list[str]:
        internal = self._session(session, "extract_entities")
        for index, entity in enumerate(entities):
            if not isinstance(entity, Mapping) or any(
                not isinstance(entity.get(f), str) or not entity.get(f) for f in ("name", "type", "notes")
            ):
                raise pool_invalid(
                    f"entities[{index}]", "{name, type, notes} of non-empty strings", repr(entity)
                )
        self._store("extract_entities")
        tag = self._project_now(internal)
        points = [
            _Point(f"entity-{next(self.point_ids)}", e["name"], tag, _words(e["name"])) for e in entities
        ]
        self.entities += points
        return [p.id for p in points]

    # -- reads -----------------------------------------------------------------------------------

    def _episode_scope(self, internal: int) -> list[_Point]:
        project = self._project_now(internal)
        pool = {s for s, p in self.membership.items() if p == project}
        return [p for p in self.episodes if p.owner in pool]

    def _entity_scope(self, internal: int) -> list[_Point]:
        project = self._project_now(internal)
        return [] if project is None else [p for p in self.entities if p.owner == project]

    def search_episodes(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        internal = self._session(session, "search_episodes")
        limit = self._limit(limit)
        self._store("search_episodes")
        return self._nearest(self._episode_scope(internal), text, limit)

    def search_entities(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        internal = self._session(session, "search_entities")
        limit = self._limit(limit)
        self._store("search_entities")
        return self._nearest(self._entity_scope(internal), text, limit)


# -- broken on purpose ----------------------------------------------------------------------------


class ExternalIdsAsInternal(MemoryPool):
    """P8: a session id that reads as a number is taken for the internal id it spells."""

    def _session(self, session: object, operation: str) -> int:
        if isinstance(session, str) and session.isdecimal() and int(session) in self.membership:
            return int(session)
        return super()._session(session, operation)


class NoProjectReadsEveryEntity(MemoryPool):
    """P2: a session in no project searches entities without a filter."""

    def _entity_scope(self, internal: int) -> list[_Point]:
        return list(self.entities) if self._project_now(internal) is None else super()._entity_scope(internal)


class ProjectCachedOnFirstCall(MemoryPool):
    """P5, P6: a session's project is looked up on its first call and kept."""

    def __init__(self, store_fails: Callable[[], bool] | None = None) -> None:
        super().__init__(store_fails)
        self.cache: dict[int, int | None] = {}

    def _project_now(self, internal: int) -> int | None:
        return self.cache.setdefault(internal, self.membership[internal])


class EpisodesStayWhereWritten(MemoryPool):
    """P5: an episode belongs to the pool its session was in when it was written."""

    def write_episode(self, session: str, text: str, /) -> str:
        episode = super().write_episode(session, text)
        internal = self.sessions[session]
        project = self.membership[internal]
        owner = -(project or 0) - 1  # a pseudo-session per pool: moves leave it behind
        self.episodes[-1] = _Point(episode, text, owner, _words(text))
        self.membership.setdefault(owner, project)
        return episode


class EntityTagFollowsSession(MemoryPool):
    """P7: entities are tagged with their session, and searched by its project now."""

    def extract_entities(self, session: str, entities: Sequence[Mapping[str, str]], /) -> list[str]:
        ids = super().extract_entities(session, entities)
        internal = self.sessions[session]
        self.entities[-len(ids) :] = [
            _Point(p.id, p.text, internal, p.words) for p in self.entities[-len(ids) :]
        ]
        return ids

    def _entity_scope(self, internal: int) -> list[_Point]:
        project = self._project_now(internal)
        if project is None:
            return []
        return [p for p in self.entities if p.owner is not None and self.membership.get(p.owner) == project]


class FirstMessageOutsideProject(MemoryPool):
    """P9: a session started in a project joins it only after its first call."""

    def __init__(self, store_fails: Callable[[], bool] | None = None) -> None:
        super().__init__(store_fails)
        self.pending: dict[int, int] = {}

    def start_session(self, session: str, project: str | None, /) -> None:
        super().start_session(session, None)
        if project is not None:
            self.pending[self.sessions[session]] = self.projects[project]

    def _project_now(self, internal: int) -> int | None:
        project = self.membership[internal]
        if internal in self.pending:  # answered from the shared pool, then assigned
            self.membership[internal] = self.pending.pop(internal)
        return project


class UnknownSessionUnfiltered(MemoryPool):
    """P10: a session never started is searched without a filter."""

    def search_episodes(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        if isinstance(session, str) and session and session not in self.sessions:
            return self._nearest(self.episodes, text, self._limit(limit))
        return super().search_episodes(session, text, limit)


class NoneReadsSharedPool(MemoryPool):
    """P11: no session reads the shared pool."""

    def search_episodes(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        if session is None:
            pool = {s for s, p in self.membership.items() if p is None}
            return self._nearest([p for p in self.episodes if p.owner in pool], text, self._limit(limit))
        return super().search_episodes(session, text, limit)


class FilterAfterTopK(MemoryPool):
    """P13: the nearest ``limit`` of every episode, then the scope's filter."""

    def search_episodes(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        internal = self._session(session, "search_episodes")
        self._store("search_episodes")
        scope = {p.id for p in self._episode_scope(internal)}
        return [hit for hit in self._nearest(self.episodes, text, self._limit(limit)) if hit.id in scope]


class EmptyOnStoreError(MemoryPool):
    """P12: a failing store reads as no results."""

    def search_entities(self, session: str, text: str, limit: int, /) -> list[PoolHit]:
        try:
            return super().search_entities(session, text, limit)
        except BackendUnavailable:
            return []


class Pool:
    """The adapter: a fresh :class:`MemoryPool` (or ``kind``) per open."""

    manifest = MANIFEST

    def __init__(self, kind: type[MemoryPool] = MemoryPool) -> None:
        self.kind = kind

    def open(self, options: BackendOptions) -> Any:
        return self.kind(options.store_fails)

    def close(self, backend: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass


def make() -> Pool:
    return Pool()


#: The broken adapters, by name: ``tests.plugin.pool_adapter:by_name.external_ids_as_internal``.
BROKEN: dict[str, type[MemoryPool]] = {
    "external_ids_as_internal": ExternalIdsAsInternal,
    "no_project_reads_every_entity": NoProjectReadsEveryEntity,
    "project_cached_on_first_call": ProjectCachedOnFirstCall,
    "episodes_stay_where_written": EpisodesStayWhereWritten,
    "entity_tag_follows_session": EntityTagFollowsSession,
    "first_message_outside_project": FirstMessageOutsideProject,
    "unknown_session_unfiltered": UnknownSessionUnfiltered,
    "none_reads_shared_pool": NoneReadsSharedPool,
    "filter_after_top_k": FilterAfterTopK,
    "empty_on_store_error": EmptyOnStoreError,
}
by_name = SimpleNamespace(**{name: (lambda kind=kind: Pool(kind)) for name, kind in BROKEN.items()})
