"""A small project-pool adapter, as an adapter author would write one: memory in dictionaries.

Correct by ``schemas/project-pool.md``: sessions and projects get internal integer ids (each
counting from 1, as SQLite's do), every filter is built from them, entities carry the project's
internal id of the moment they were extracted, and the store switch is consulted before every
store call. Episodes and entities share one count of ids (``episode-1``, ``entity-2``), so a
run in process and one served give the same ids.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions
from kbconform.errors import BackendUnavailable, NotFound, Unauthenticated
from kbconform.profiles.project_pool.protocol import pool_invalid

MANIFEST = {
    "manifestVersion": "1",
    "concurrency": "threads",
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
