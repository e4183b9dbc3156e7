"""Mutants of the project-pool reference, the caller's identity and claims inside the data: an
unknown or missing session searching unfiltered or started on write, names cleaned before they
are compared, an entity's project read from its notes."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any

from kbconform.errors import Unauthenticated
from kbconform_reference.pool.membership import Membership, SessionRow
from kbconform_reference.pool.mutants._base import Mutant, both, external_id
from kbconform_reference.pool.qdrant import ENTITIES, EPISODES
from kbconform_reference.pool.service import PoolHit, ProjectPool


class UnknownSessionSearchesUnfiltered(ProjectPool):
    """A session id that names no session finds no project and no session to filter by, and is
    searched with no filter at all (the modelled code's fall-through)."""

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_episodes(session, text, limit)
        except Unauthenticated:
            if external_id(session) is None:
                raise
            query, checked = self._query(text, limit)
            return self._search(EPISODES, "text", query, None, checked, "search_episodes")

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_entities(session, text, limit)
        except Unauthenticated:
            if external_id(session) is None:
                raise
            query, checked = self._query(text, limit)
            return self._search(ENTITIES, "name", query, None, checked, "search_entities")


class UnknownSessionStartedOnWrite(ProjectPool):
    """A write from a session id never started starts that session (in no project) and stores
    the write: an unknown session is served as a new one."""

    def _adopt(self, session: object) -> None:
        external = external_id(session)
        if external is not None and self.membership.session(external) is None:
            self.start_session(external, None)

    def write_episode(self, session: object, text: object, /) -> str:
        self._adopt(session)
        return super().write_episode(session, text)

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        self._adopt(session)
        return super().extract_entities(session, entities)


class MissingSessionSearchesAll(ProjectPool):
    """A search without a session (None) is run with no filter, as an internal caller would."""

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        if session is None:
            query, checked = self._query(text, limit)
            return self._search(EPISODES, "text", query, None, checked, "search_episodes")
        return super().search_episodes(session, text, limit)

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        if session is None:
            query, checked = self._query(text, limit)
            return self._search(ENTITIES, "name", query, None, checked, "search_entities")
        return super().search_entities(session, text, limit)


def _cleaned(name: str) -> str:
    """A name as a form layer "cleans" it on the way in: NFKC, trimmed."""
    return unicodedata.normalize("NFKC", name).strip()


class _CleanedNames(Membership):
    """Session ids and project names are stored and looked up cleaned (:func:`_cleaned`)."""

    def session(self, external_id: str) -> SessionRow | None:
        return super().session(_cleaned(external_id))

    def project(self, name: str) -> int | None:
        return super().project(_cleaned(name))

    def create_project(self, name: str) -> int:
        return super().create_project(_cleaned(name))

    def start_session(self, external_id: str, project_id: int | None) -> int:
        return super().start_session(_cleaned(external_id), project_id)


class NamesCleaned(ProjectPool):
    """Session ids and project names are normalized (NFKC) and trimmed before the membership
    database sees them: ``a `` is ``a``, and the NFC and NFD forms of a name are one session."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.membership.close()
        self.membership = _CleanedNames()


_NAMED_PROJECT = re.compile(r"project: ([^;]+)")


class EntityProjectFromNotes(ProjectPool):
    """An entity whose notes name a project that exists (``project: alpha``) is filed under
    that project, as an extractor that links entities to the project they mention would."""

    def _entity_payload(self, caller: SessionRow, entity: Mapping[str, str]) -> dict[str, Any]:
        payload = super()._entity_payload(caller, entity)
        named = _NAMED_PROJECT.search(entity.get("notes", ""))
        if named is not None:
            project_id = self.membership.project(named.group(1))
            if project_id is not None:
                payload["projectId"] = project_id
        return payload


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pool-unknown-session-searches-unfiltered",
        UnknownSessionSearchesUnfiltered,
        "a session id that names no session is searched with no filter",
        (*both("iso-02"), "pool-06"),
    ),
    Mutant(
        "pool-unknown-session-started-on-write",
        UnknownSessionStartedOnWrite,
        "a write from a session never started starts it and stores the write",
        ("pool-06", "pool-09"),
    ),
    Mutant(
        "pool-missing-session-searches-all",
        MissingSessionSearchesAll,
        "a search without a session runs with no filter",
        both("iso-02"),
    ),
    Mutant(
        "pool-names-cleaned",
        NamesCleaned,
        "session ids and project names are NFKC-normalized and trimmed: twins are one session or project",
        ("pool-08", "pool-09"),
    ),
    Mutant(
        "pool-entity-project-from-notes",
        EntityProjectFromNotes,
        "an entity whose notes name an existing project is filed under that project",
        ("pool-08", "pool-09"),
    ),
)
