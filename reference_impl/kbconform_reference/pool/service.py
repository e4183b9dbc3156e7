"""The project-pool reference: project-scoped conversation memory (``schemas/project-pool.md``).

Membership (projects, sessions, who is in which project) lives in SQLite
(:mod:`~kbconform_reference.pool.membership`); episodes and entities in Qdrant
(:mod:`~kbconform_reference.pool.qdrant`), embedded by the offline
:class:`~kbconform_reference.embedding.HashingEmbedding`. Every call reads membership afresh:
nothing is cached, so a move takes effect on the next call.

Read side: a session's scope is a filter built from internal ids only. A session in project P
searches the episodes whose ``sessionId`` is one of the sessions now in P, and the entities
whose ``projectId`` is P; a session in no project searches the episodes of the sessions in no
project, and gets no entity context (no query at all). A scope with no session in it is
answered with nothing, without a query: an empty ``should`` would match every point. Search
is exact (Qdrant's local mode is brute force).

Identity: the caller is a session named by its external id. ``None``, a value that is not a
``str``, an empty string, and a session never started are :class:`Unauthenticated`, before
anything else is checked: never a new session, never a search without a filter.
``start_session(s, P)`` puts ``s`` in ``P`` in the same transaction that creates it, so its
first call is already inside ``P`` (the first-message window of the system this models is
closed).

Faults: the store is the membership database and Qdrant together. The ``store_fails`` switch
is consulted once before every call to either (a read of membership included); while it says
True, the call raises :class:`BackendUnavailable` and nothing is returned. Every write is one
store call (one SQLite transaction, or one Qdrant upsert of every point), so a failed call
changes nothing. Calls on one backend are serialized.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbconform.adapter import MAX_LIMIT, pool_invalid
from kbconform.errors import NotFound, Unauthenticated
from kbconform_reference._arguments import checked_name, describe
from kbconform_reference._store_calls import store_call
from kbconform_reference.embedding import HashingEmbedding
from kbconform_reference.pool.membership import Membership, SessionRow
from kbconform_reference.pool.qdrant import ENTITIES, EPISODES, QdrantStore, any_of, equal

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter

ENTITY_FIELDS = ("name", "type", "notes")


@dataclass(frozen=True, slots=True)
class PoolHit:
    """An episode or an entity as a search returns it: its id, its text (an episode's text, an
    entity's name) and its cosine similarity to the query."""

    id: str
    text: str
    score: float | None = None


def _name(value: object, what: str) -> str:
    """A non-empty string argument (a session or project name), else ``KB_POOL_INVALID``."""
    return checked_name(value, what, pool_invalid)


def _limit(value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_LIMIT:
        raise pool_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", describe(value))
    return value


def _entities(value: object) -> list[dict[str, str]]:
    """Every entity checked before anything is stored: a mapping whose ``name``, ``type`` and
    ``notes`` are non-empty strings. Only those three are kept: any other key (a ``projectId``
    claimed by the caller included) is never stored nor read."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise pool_invalid("entities", "a list of entities", describe(value))
    checked = []
    for index, entity in enumerate(value):
        if not isinstance(entity, Mapping) or not all(
            type(entity.get(key)) is str and entity[key] for key in ENTITY_FIELDS
        ):
            raise pool_invalid(
                f"entities[{index}]",
                "an entity: name, type and notes, each a non-empty string",
                describe(entity),
            )
        checked.append({key: str(entity[key]) for key in ENTITY_FIELDS})
    return checked


def _known(value: object) -> str:
    """A session or project a membership operation names: anything but a non-empty string names
    none, and is NotFound like an unknown name."""
    if type(value) is not str or not value:
        raise NotFound(describe(value))
    return value


class ProjectPool:
    """One backend: its own membership database and Qdrant client, empty when made.

    ``store_fails`` is the fault switch (consulted before every store call); ``embedder`` turns
    texts into vectors (the offline hashing embedding by default).
    """

    def __init__(
        self,
        *,
        store_fails: Callable[[], bool] | None = None,
        embedder: HashingEmbedding | None = None,
    ) -> None:
        self.embedder = embedder or HashingEmbedding()
        self.membership = Membership()
        self.vectors = QdrantStore(self.embedder.dimensions)
        self._fails = store_fails
        self._lock = threading.RLock()

    def close(self) -> None:
        """Release the Qdrant client and the membership database."""
        with self._lock:
            self.vectors.close()
            self.membership.close()

    # -- guards ---------------------------------------------------------------------------------

    def _store(self, operation: str) -> AbstractContextManager[None]:
        """One store call (:func:`~kbconform_reference._store_calls.store_call`)."""
        return store_call(self._fails, operation)

    def _caller(self, session: object, operation: str) -> SessionRow:
        """The calling session, read from membership now; no identity or an unknown session is
        Unauthenticated."""
        if type(session) is not str or not session:
            raise Unauthenticated(operation)
        with self._store(operation):
            row = self.membership.session(session)
        if row is None:
            raise Unauthenticated(operation)
        return row

    def _embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = self.embedder(texts).tolist()
        return vectors

    # -- membership (the operator's) ------------------------------------------------------------

    def create_project(self, project: object, /) -> None:
        name = _name(project, "project")
        with self._lock, self._store("create_project"):
            if self.membership.project(name) is not None:
                raise pool_invalid("project", "a project name not in use", describe(name))
            self.membership.create_project(name)

    def start_session(self, session: object, project: object, /) -> None:
        external = _name(session, "session")
        name = None if project is None else _known(project)
        with self._lock, self._store("start_session"):
            if self.membership.session(external) is not None:
                raise pool_invalid("session", "a session not started yet", describe(external))
            project_id = None if name is None else self.membership.project(name)
            if name is not None and project_id is None:
                raise NotFound(name)
            self.membership.start_session(external, project_id)

    def assign_session(self, session: object, project: object, /) -> None:
        external, name = _known(session), _known(project)
        with self._lock, self._store("assign_session"):
            row = self.membership.session(external)
            if row is None:
                raise NotFound(external)
            project_id = self.membership.project(name)
            if project_id is None:
                raise NotFound(name)
            if row.project_id != project_id:
                self.membership.assign(row.id, project_id)

    def remove_session(self, session: object, /) -> None:
        external = _known(session)
        with self._lock, self._store("remove_session"):
            row = self.membership.session(external)
            if row is None:
                raise NotFound(external)
            if row.project_id is not None:
                self.membership.remove(row.id)

    # -- write side -----------------------------------------------------------------------------

    def _episode_payload(self, caller: SessionRow, text: str) -> dict[str, Any]:
        return {"sessionId": caller.id, "createdAt": int(time.time()), "text": text}

    def _entity_payload(self, caller: SessionRow, entity: Mapping[str, str]) -> dict[str, Any]:
        """An entity's payload: tagged with the caller's project now (or none), for good."""
        return {**entity, "projectId": caller.project_id}

    def write_episode(self, session: object, text: object, /) -> str:
        with self._lock:
            caller = self._caller(session, "write_episode")
            checked = _name(text, "text")
            episode_id = str(uuid.uuid4())
            (vector,) = self._embed([checked])
            with self._store("write_episode"):
                self.vectors.upsert(EPISODES, [(episode_id, vector, self._episode_payload(caller, checked))])
            return episode_id

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        with self._lock:
            caller = self._caller(session, "extract_entities")
            checked = _entities(entities)
            if not checked:
                return []
            ids = [str(uuid.uuid4()) for _ in checked]
            vectors = self._embed([f"{e['name']} ({e['type']}): {e['notes']}" for e in checked])
            points = [
                (entity_id, vector, self._entity_payload(caller, entity))
                for entity_id, vector, entity in zip(ids, vectors, checked, strict=True)
            ]
            with self._store("extract_entities"):
                self.vectors.upsert(ENTITIES, points)
            return ids

    # -- read side ------------------------------------------------------------------------------

    def _episode_scope(self, caller: SessionRow, operation: str) -> list[int]:
        """The internal ids of the sessions whose episodes ``caller`` searches: the sessions now
        in its project, or the sessions now in no project."""
        with self._store(operation):
            if caller.project_id is not None:
                return self.membership.project_sessions(caller.project_id)
            return self.membership.shared_sessions()

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        """The filter of ``caller``'s episode scope; None when the scope has no session."""
        scope = self._episode_scope(caller, operation)
        return any_of("sessionId", scope) if scope else None

    def _entity_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        """The filter of ``caller``'s entity scope; None for a session in no project."""
        return None if caller.project_id is None else equal("projectId", caller.project_id)

    def _query(self, text: object, limit: object) -> tuple[str, int]:
        if type(text) is not str:
            raise pool_invalid("text", "a string", describe(text))
        return text, _limit(limit)

    def _search(
        self, collection: str, field: str, text: str, where: Filter | None, limit: int, operation: str
    ) -> list[PoolHit]:
        (vector,) = self._embed([text])
        with self._store(operation):
            points = self.vectors.search(collection, vector, where, limit)
        return [PoolHit(point.id, str(point.payload[field]), point.score) for point in points]

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        with self._lock:
            caller = self._caller(session, "search_episodes")
            query, checked = self._query(text, limit)
            where = self._episode_filter(caller, "search_episodes")
            if where is None:
                return []
            return self._search(EPISODES, "text", query, where, checked, "search_episodes")

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        with self._lock:
            caller = self._caller(session, "search_entities")
            query, checked = self._query(text, limit)
            where = self._entity_filter(caller, "search_entities")
            if where is None:
                return []
            return self._search(ENTITIES, "name", query, where, checked, "search_entities")
