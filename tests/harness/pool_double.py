"""A small in-memory project-pool backend (``schemas/project-pool.md``), for harness-v1's tests.

Sessions and projects have internal ids (integers counting from 0); every scope is built from
them. "Nearest" is the number of words an item shares with the search text, ties in the order
written. The store (episodes and entities) consults the fault switch before every call; the
membership tables are not the store.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions, pool_invalid
from kbconform.errors import BackendUnavailable, NotFound, Unauthenticated

MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "project-pool",
    "adapter": {"name": "pool-double", "version": "1"},
    "backend": {"name": "in-memory", "version": "1"},
    "isolationModel": "metadata-filter",
    "readFacades": ["search-episodes", "search-entities"],
    "features": {"fault-injection": True},
}
_ENTITY_KEYS = ("name", "type", "notes")


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    text: str


def _nearest(hits: list[Hit], text: str, limit: int) -> list[Hit]:
    words = set(text.split())
    return sorted(hits, key=lambda hit: -len(words & set(hit.text.split())))[:limit]


class PoolBackend:
    def __init__(self, store_fails: Callable[[], bool] | None) -> None:
        self.store_fails = store_fails
        self.projects: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.member: dict[int, int | None] = {}  # session id -> project id (None: shared pool)
        self.episodes: list[tuple[int, Hit]] = []  # (session id, episode)
        self.entities: list[tuple[int | None, Hit]] = []  # (project id or None, entity)
        self.ids = itertools.count()

    def _store(self, operation: str) -> None:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable(operation, "the store is down")

    def _caller(self, session: object, operation: str) -> int:
        if not isinstance(session, str) or session not in self.sessions:
            raise Unauthenticated(operation)
        return self.sessions[session]

    def _session(self, session: str) -> int:
        if session not in self.sessions:
            raise NotFound(session)
        return self.sessions[session]

    def _project(self, project: str) -> int:
        if project not in self.projects:
            raise NotFound(project)
        return self.projects[project]

    def create_project(self, project: str, /) -> None:
        if not isinstance(project, str) or not project or project in self.projects:
            raise pool_invalid("project", "a new, non-empty project name", repr(project))
        self.projects[project] = len(self.projects)

    def start_session(self, session: str, project: str | None, /) -> None:
        if not isinstance(session, str) or not session or session in self.sessions:
            raise pool_invalid("session", "a new, non-empty session id", repr(session))
        joined = None if project is None else self._project(project)
        self.sessions[session] = len(self.sessions)
        self.member[self.sessions[session]] = joined

    def assign_session(self, session: str, project: str, /) -> None:
        found, joined = self._session(session), self._project(project)
        self.member[found] = joined

    def remove_session(self, session: str, /) -> None:
        self.member[self._session(session)] = None

    def write_episode(self, session: str, text: str, /) -> str:
        caller = self._caller(session, "write_episode")
        if not isinstance(text, str) or not text:
            raise pool_invalid("text", "a non-empty string", repr(text))
        self._store("write_episode")
        episode = Hit(f"episode-{next(self.ids)}", text)
        self.episodes.append((caller, episode))
        return episode.id

    def extract_entities(self, session: str, entities: Sequence[Mapping[str, str]], /) -> Sequence[str]:
        caller = self._caller(session, "extract_entities")
        for entity in entities:
            if not isinstance(entity, Mapping) or not all(
                isinstance(entity.get(key), str) and entity[key] for key in _ENTITY_KEYS
            ):
                raise pool_invalid("entities", "{name, type, notes}, each a non-empty string", repr(entity))
        self._store("extract_entities")
        tag = self.member[caller]
        made = [Hit(f"entity-{next(self.ids)}", entity["name"]) for entity in entities]
        self.entities += [(tag, entity) for entity in made]
        return [entity.id for entity in made]

    def _limit(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise pool_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))

    def search_episodes(self, session: str, text: str, limit: int, /) -> Sequence[Hit]:
        caller = self._caller(session, "search_episodes")
        self._limit(limit)
        self._store("search_episodes")
        scope = self.member[caller]
        found = [episode for writer, episode in self.episodes if self.member[writer] == scope]
        return _nearest(found, text, limit)

    def search_entities(self, session: str, text: str, limit: int, /) -> Sequence[Hit]:
        caller = self._caller(session, "search_entities")
        self._limit(limit)
        self._store("search_entities")
        scope = self.member[caller]
        found = [entity for tag, entity in self.entities if scope is not None and tag == scope]
        return _nearest(found, text, limit)


class PoolAdapter:
    manifest: Mapping[str, Any] = MANIFEST

    def open(self, options: BackendOptions, /) -> PoolBackend:
        return PoolBackend(options.store_fails)

    def close(self, backend: Any, /) -> None:
        """Nothing to release."""

    def shutdown(self) -> None:
        """Nothing to release."""


def adapter() -> PoolAdapter:
    return PoolAdapter()
