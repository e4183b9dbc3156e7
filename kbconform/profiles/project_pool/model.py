"""The project-pool policy model: from the history of calls, what every call must do.

:class:`PoolPolicy` holds projects, sessions and their membership, and every stored episode and
entity as ``schemas/project-pool.md`` says they are stored. It answers, for any caller: the exact
hits (id, text) each search returns, and which error each call raises. It never asks the
backend: a suite calls the backend, compares, and then tells the model that the call landed
(:meth:`PoolPolicy.commit_episode` and the others); a call that raised changes nothing.

Each method names its rule (P1 to P14). A call that breaks two rules at once (an existing
session started in an unknown project, an unknown session writing empty text) has no order in
the contract: the model answers the first check it makes, and the suites never make such a call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import MAX_LIMIT
from kbconform.conformance import Refused, scope_problems
from kbconform.errors import ContractViolation, NotFound, Unauthenticated
from kbconform.profiles.project_pool.protocol import POOL_INVALID

__all__ = ["PoolPolicy"]

#: The fields of an extracted entity, each a non-empty string.
ENTITY_FIELDS = ("name", "type", "notes")


@dataclass(frozen=True, slots=True)
class Episode:
    """An episode as stored: the session that wrote it and its text."""

    id: str
    session: str
    text: str


@dataclass(frozen=True, slots=True)
class Entity:
    """An entity as stored: its name (what a search hit's text is), and the project it was
    tagged with when it was extracted (None: in no project), which never changes (P7)."""

    id: str
    name: str
    project: str | None


def _invalid(why: str) -> Refused:
    return Refused(ContractViolation, f"{POOL_INVALID}: {why}")


@dataclass
class PoolPolicy:
    """The exact model of the project-pool profile for one backend."""

    projects: set[str] = field(default_factory=set)
    #: Every session started, by external id, and the project it is in now (None: none).
    sessions: dict[str, str | None] = field(default_factory=dict)
    episodes: dict[str, Episode] = field(default_factory=dict)
    entities: dict[str, Entity] = field(default_factory=dict)

    # -- identity --------------------------------------------------------------------------------

    def identify(self, session: object) -> Refused | None:
        """Why ``session`` is no identity (``Unauthenticated``), or None for a started session:
        None, not a ``str``, empty, or a session never started (P10, P11)."""
        if session is None:
            return Refused(Unauthenticated, "no session")
        if not isinstance(session, str):
            return Refused(Unauthenticated, f"a session id that is not a string: {type(session).__name__}")
        if not session:
            return Refused(Unauthenticated, "an empty session id")
        if session not in self.sessions:
            return Refused(Unauthenticated, f"the session {session!r} was never started")
        return None

    def project_of(self, session: str) -> str | None:
        """The project ``session`` is in now (None: none)."""
        return self.sessions[session]

    def members(self, project: str | None) -> set[str]:
        """The sessions now in ``project`` (None: the sessions in no project, the shared pool)."""
        return {session for session, now in self.sessions.items() if now == project}

    # -- membership (the operator's: no caller) ---------------------------------------------------

    def create_project(self, project: str) -> Refused | None:
        """A name that exists is refused with ``KB_POOL_INVALID``."""
        if not isinstance(project, str) or not project:
            return _invalid("a project name is a non-empty string")
        if project in self.projects:
            return _invalid(f"the project {project!r} exists")
        return None

    def commit_create_project(self, project: str) -> None:
        self.projects.add(project)

    def start_session(self, session: str, project: str | None) -> Refused | None:
        """An existing session is ``KB_POOL_INVALID``; an unknown project ``NotFound``."""
        if not isinstance(session, str) or not session:
            return _invalid("a session id is a non-empty string")
        if session in self.sessions:
            return _invalid(f"the session {session!r} exists")
        if project is not None and project not in self.projects:
            return Refused(NotFound, f"no project {project!r}")
        return None

    def commit_start_session(self, session: str, project: str | None) -> None:
        """P9: a session started in a project is in it from its very first call."""
        self.sessions[session] = project

    def assign_session(self, session: str, project: str) -> Refused | None:
        """Unknown session or project: ``NotFound`` (P10)."""
        if session not in self.sessions:
            return Refused(NotFound, f"no session {session!r}")
        if project not in self.projects:
            return Refused(NotFound, f"no project {project!r}")
        return None

    def commit_assign_session(self, session: str, project: str) -> None:
        """P5: the session's next call is in ``project``, and so are its existing episodes."""
        self.sessions[session] = project

    def remove_session(self, session: str) -> Refused | None:
        """Unknown session: ``NotFound`` (P10)."""
        if session not in self.sessions:
            return Refused(NotFound, f"no session {session!r}")
        return None

    def commit_remove_session(self, session: str) -> None:
        """P6: the session and its episodes are back in the shared pool at once."""
        self.sessions[session] = None

    # -- writes ----------------------------------------------------------------------------------

    def write_episode(self, session: object, text: object) -> Refused | None:
        """No identity: ``Unauthenticated``; empty text: ``KB_POOL_INVALID``."""
        refused = self.identify(session)
        if refused is not None:
            return refused
        if not isinstance(text, str) or not text:
            return _invalid("an episode's text is a non-empty string")
        return None

    def commit_episode(self, session: str, text: str, episode: str) -> None:
        """P9: stored into the session's pool of this moment, which it follows when it moves."""
        self.episodes[episode] = Episode(episode, session, text)

    def extract_entities(self, session: object, entities: object) -> Refused | None:
        """No identity: ``Unauthenticated``; an entity that is not ``{name, type, notes}`` of
        non-empty strings: ``KB_POOL_INVALID``, and nothing of the batch is stored."""
        refused = self.identify(session)
        if refused is not None:
            return refused
        if not isinstance(entities, Sequence) or isinstance(entities, str):
            return _invalid("entities are a list")
        for index, entity in enumerate(entities):
            if not isinstance(entity, Mapping) or any(
                not isinstance(entity.get(name), str) or not entity.get(name) for name in ENTITY_FIELDS
            ):
                return _invalid(f"entity {index} is not {{name, type, notes}} of non-empty strings")
        return None

    def commit_entities(
        self, session: str, entities: Sequence[Mapping[str, str]], ids: Sequence[str]
    ) -> None:
        """P7: each entity is tagged with the session's project of this moment, for good."""
        project = self.project_of(session)
        for entity, entity_id in zip(entities, ids, strict=True):
            self.entities[entity_id] = Entity(entity_id, entity["name"], project)

    def check_ids(self, returned: object, count: int) -> list[str]:
        """Problems with the ids a write returned: ``count`` of them, each a non-empty string,
        all different, and none the id of anything stored before (ids are unique in the backend)."""
        if not isinstance(returned, Sequence) or isinstance(returned, str):
            return [f"expected {count} ids; got {returned!r}"]
        ids = list(returned)
        if len(ids) != count:
            return [f"expected {count} ids; got {len(ids)}: {ids!r}"]
        bad = [i for i in ids if not isinstance(i, str) or not i]
        if bad:
            return [f"ids that are not non-empty strings: {bad!r}"]
        problems = []
        if len(set(ids)) != len(ids):
            problems.append(f"one id twice in {ids!r}")
        taken = sorted(i for i in ids if i in self.episodes or i in self.entities)
        if taken:
            problems.append(f"ids already given to other episodes or entities: {taken}")
        return problems

    # -- reads -----------------------------------------------------------------------------------

    def search_episodes(self, session: object) -> Refused | dict[str, str]:
        """The session's episode scope, id to text: the episodes of every session now in its
        project (P3), or of every session in no project when it is in none (P1); never another
        project's or the shared pool's from a project (P4)."""
        refused = self.identify(session)
        if refused is not None:
            return refused
        assert isinstance(session, str)
        pool = self.members(self.project_of(session))
        return {e.id: e.text for e in self.episodes.values() if e.session in pool}

    def search_entities(self, session: object) -> Refused | dict[str, str]:
        """The session's entity scope, id to name: the entities tagged with its project (P3);
        nothing when it is in no project (P2), and entities tagged with none are no one's."""
        refused = self.identify(session)
        if refused is not None:
            return refused
        assert isinstance(session, str)
        project = self.project_of(session)
        if project is None:
            return {}
        return {e.id: e.name for e in self.entities.values() if e.project == project}

    def search(self, facade: str, session: object) -> Refused | dict[str, str]:
        """The scope of the read facade ``facade`` (``search-episodes`` or ``search-entities``)."""
        if facade == "search-episodes":
            return self.search_episodes(session)
        if facade == "search-entities":
            return self.search_entities(session)
        raise ValueError(f"not a project-pool read facade: {facade!r}")

    def size(self, facade: str) -> int:
        """How many items ``facade`` searches among: every episode, or every entity."""
        return len(self.episodes if facade == "search-episodes" else self.entities)

    @property
    def stored(self) -> dict[str, str]:
        """Every episode's and entity's id, with its text (an entity's name)."""
        return {
            **{e.id: e.text for e in self.episodes.values()},
            **{e.id: e.name for e in self.entities.values()},
        }

    @staticmethod
    def hit_problems(scope: Mapping[str, str], hits: Iterable[Any], limit: int) -> list[str]:
        """How a search's ``hits`` differ from what the model allows (P13): no id twice, every
        hit in ``scope`` with its text exactly as stored, and ``min(limit, len(scope))`` of them;
        with ``limit`` at least the scope's size, that is exactly the scope."""
        assert 1 <= limit <= MAX_LIMIT, f"a search limit is 1 to {MAX_LIMIT}; the suite asked {limit}"
        return scope_problems(scope, hits, limit)
