"""Mutants of the project-pool reference: each one invariant of ``schemas/project-pool.md`` broken.

Each mutant is a :class:`ProjectPool` subclass that breaks the way such designs really break
(most of them are readings of the system the profile models): a ``should`` built from an empty
list, a cached membership, a soft-deleted row still counted, an id truthiness test. ``MUTANTS``
is registered as the mutant set ``reference-pool`` (entry-point group ``kbconform.mutants``);
``kbconform mutants --set reference-pool`` runs it. Importing this module needs no Qdrant: a
mutant's backend imports ``qdrant_client`` when it is opened.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbconform.adapter import BackendOptions
from kbconform.errors import BackendUnavailable, NotFound, Unauthenticated
from kbconform_reference import _mutant_base
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.pool.adapter import PoolAdapter
from kbconform_reference.pool.membership import Membership, SessionRow
from kbconform_reference.pool.qdrant import ENTITIES, EPISODES, any_of, equal, is_null, unchecked_any_of
from kbconform_reference.pool.service import PoolHit, ProjectPool, _entities, _known

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


def _external(session: object) -> str | None:
    """``session`` when it is a usable external id (a non-empty str), else None."""
    return session if type(session) is str and session else None


# -- filters ------------------------------------------------------------------------------------


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
        external = _external(session)
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


# -- membership -----------------------------------------------------------------------------------


class MembershipCachedPerSession(ProjectPool):
    """A session's project is read once, on its first call, and kept: moves never reach it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cache: dict[str, SessionRow] = {}

    def _caller(self, session: object, operation: str) -> SessionRow:
        external = _external(session)
        if external is not None and external in self._cache:
            return self._cache[external]
        row = super()._caller(session, operation)
        self._cache[str(session)] = row
        return row


class RemovedMembershipStillCounted(ProjectPool):
    """A project's pool counts every membership row, the closed (soft-deleted) ones too: a
    session taken out of a project, or moved on, stays in its pool."""

    def _episode_scope(self, caller: SessionRow, operation: str) -> list[int]:
        if caller.project_id is None:
            return super()._episode_scope(caller, operation)
        with self._store(operation):
            rows = self.membership._db.execute(
                "SELECT DISTINCT session_id FROM memberships WHERE project_id = ?", (caller.project_id,)
            )
            return [int(row[0]) for row in rows]


class AssignKeepsFormerMembership(ProjectPool):
    """Assigning a session adds a membership without closing the one it had: the session is in
    both projects' pools, and keeps reading the first one."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.membership._db.execute("DROP INDEX one_open_membership")

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
                self.membership._join(row.id, project_id)


class FirstMessageWindow(ProjectPool):
    """A session started in a project is put in it only after its first episode is written (the
    modelled UI's assignment after the first reply): until then it is in no project."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._pending: dict[str, str] = {}

    def start_session(self, session: object, project: object, /) -> None:
        if project is None:
            super().start_session(session, None)
            return
        name = _known(project)
        with self._store("start_session"):
            if self.membership.project(name) is None:
                raise NotFound(name)
        super().start_session(session, None)
        self._pending[str(session)] = name

    def write_episode(self, session: object, text: object, /) -> str:
        episode = super().write_episode(session, text)
        project = self._pending.pop(str(session), None)
        if project is not None:
            super().assign_session(session, project)
        return episode

    def assign_session(self, session: object, project: object, /) -> None:
        super().assign_session(session, project)
        self._pending.pop(str(session), None)

    def remove_session(self, session: object, /) -> None:
        super().remove_session(session)
        self._pending.pop(str(session), None)


class ProjectZeroIsNoProject(ProjectPool):
    """Project context is resolved with a truthiness test (``if project_id``): the sessions of
    project 0 are read as sessions in no project."""

    def _caller(self, session: object, operation: str) -> SessionRow:
        row = super()._caller(session, operation)
        return SessionRow(row.id, row.project_id if row.project_id else None)


class AssignCreatesUnknownSession(ProjectPool):
    """Assigning an unknown session starts it in the project (an upsert), instead of NotFound."""

    def assign_session(self, session: object, project: object, /) -> None:
        external = _external(session)
        if external is not None and self.membership.session(external) is None:
            self.start_session(external, project)
            return
        super().assign_session(session, project)


# -- history and tags -----------------------------------------------------------------------------


class EpisodesTaggedWithProject(ProjectPool):
    """Episodes are tagged with the writer's project at write time and searched by that tag: a
    session's history stays where it was written when the session moves."""

    def _episode_payload(self, caller: SessionRow, text: str) -> dict[str, Any]:
        return {**super()._episode_payload(caller, text), "projectId": caller.project_id}

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        if caller.project_id is None:
            return is_null("projectId")
        return equal("projectId", caller.project_id)


class EntityTagsRewrittenOnMove(ProjectPool):
    """Moving a session re-tags the entities extracted from it (a payload update), so its old
    entities follow it into the new project, or into none."""

    def _entity_payload(self, caller: SessionRow, entity: Any) -> dict[str, Any]:
        return {**super()._entity_payload(caller, entity), "sessionId": caller.id}

    def _retag(self, session: object, operation: str) -> None:
        row = self.membership.session(str(session))
        assert row is not None
        with self._store(operation):
            self.vectors.set_payload(ENTITIES, {"projectId": row.project_id}, equal("sessionId", row.id))

    def assign_session(self, session: object, project: object, /) -> None:
        super().assign_session(session, project)
        self._retag(session, "assign_session")

    def remove_session(self, session: object, /) -> None:
        super().remove_session(session)
        self._retag(session, "remove_session")


# -- identity -------------------------------------------------------------------------------------


class UnknownSessionSearchesUnfiltered(ProjectPool):
    """A session id that names no session finds no project and no session to filter by, and is
    searched with no filter at all (the modelled code's fall-through)."""

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_episodes(session, text, limit)
        except Unauthenticated:
            if _external(session) is None:
                raise
            query, checked = self._query(text, limit)
            return self._search(EPISODES, "text", query, None, checked, "search_episodes")

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_entities(session, text, limit)
        except Unauthenticated:
            if _external(session) is None:
                raise
            query, checked = self._query(text, limit)
            return self._search(ENTITIES, "name", query, None, checked, "search_entities")


class UnknownSessionStartedOnWrite(ProjectPool):
    """A write from a session id never started starts that session (in no project) and stores
    the write: an unknown session is served as a new one."""

    def _adopt(self, session: object) -> None:
        external = _external(session)
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


# -- faults ---------------------------------------------------------------------------------------


class EmptyOnStoreError(ProjectPool):
    """A store that fails is answered with no hits instead of BackendUnavailable."""

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_episodes(session, text, limit)
        except BackendUnavailable:
            return []

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_entities(session, text, limit)
        except BackendUnavailable:
            return []


# -- smoke ----------------------------------------------------------------------------------------


class NoFilterAnywhere(ProjectPool):
    """Smoke: every search of every known session runs over the whole collection."""

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        return unchecked_any_of("sessionId", [])

    def _entity_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        return unchecked_any_of("projectId", [])


# -- the call contract ----------------------------------------------------------------------------


class LimitCoerced(ProjectPool):
    """A search limit is not checked, only passed through ``int()`` to Qdrant: 0, -1 and 1001
    reach the store as they are (and ``"3"``, ``True`` and ``2.0`` are answered in process)."""

    def _query(self, text: object, limit: object) -> tuple[str, int]:
        if not isinstance(text, str):
            return super()._query(text, limit)
        return text, int(limit)  # type: ignore[call-overload]  # the bug: whatever int() takes


class EntityFieldsDefaulted(ProjectPool):
    """An extracted entity missing a field, or with an empty or non-string one, is stored with
    the field defaulted to an empty string (``entity.get(key) or ""``) instead of refused."""

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        if isinstance(entities, Sequence) and not isinstance(entities, (str, bytes)):
            entities = [
                {key: str(entity.get(key) or "-") for key in ("name", "type", "notes")}
                if isinstance(entity, Mapping)
                else entity
                for entity in entities
            ]
        return super().extract_entities(session, entities)


# -- the catalogue --------------------------------------------------------------------------------


# -- pages (schemas/pages.md) -------------------------------------------------------------------

#: The page the paged membership reads below read sessions in.
MEMBERSHIP_PAGE = 50


class MembershipPagesUnscoped(ProjectPool):
    """Reads a project's sessions a page of :data:`MEMBERSHIP_PAGE` at a time; the pages after
    the first are read without the project (every open membership)."""

    def _episode_scope(self, caller: SessionRow, operation: str) -> list[int]:
        if caller.project_id is None:
            return super()._episode_scope(caller, operation)
        sessions: list[int] = []
        with self._store(operation):
            while True:
                project = "project_id = ? AND " if not sessions else ""  # the bug: page one only
                rows = self.membership._db.execute(
                    f"SELECT session_id FROM memberships WHERE {project}removed_at IS NULL "
                    "ORDER BY session_id LIMIT ? OFFSET ?",
                    (*([caller.project_id] if not sessions else []), MEMBERSHIP_PAGE, len(sessions)),
                ).fetchall()
                sessions += [int(row[0]) for row in rows]
                if len(rows) < MEMBERSHIP_PAGE:
                    return sessions


class MembershipDropsPartialPage(ProjectPool):
    """Reads a project's sessions in ``count // MEMBERSHIP_PAGE`` full pages (at least one): the
    sessions of the last, partial page are left out."""

    def _episode_scope(self, caller: SessionRow, operation: str) -> list[int]:
        if caller.project_id is None:
            return super()._episode_scope(caller, operation)
        with self._store(operation):
            everyone = self.membership.project_sessions(caller.project_id)
        pages = max(1, len(everyone) // MEMBERSHIP_PAGE)  # the bug: floor division
        return everyone[: pages * MEMBERSHIP_PAGE]


# -- identifiers and claims inside the data -------------------------------------------------------


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


# -- writes a failing store leaves half made -----------------------------------------------------


class EntitiesStoredOneByOne(ProjectPool):
    """Each extracted entity is its own upsert, one store call each: a store that fails at the
    second leaves the first stored while the call raises BackendUnavailable."""

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        with self._lock:
            caller = self._caller(session, "extract_entities")
            ids = []
            for entity in _entities(entities):
                (vector,) = self._embed([f"{entity['name']} ({entity['type']}): {entity['notes']}"])
                entity_id = str(uuid.uuid4())
                with self._store("extract_entities"):
                    self.vectors.upsert(ENTITIES, [(entity_id, vector, self._entity_payload(caller, entity))])
                ids.append(entity_id)
            return ids


class MoveInTwoSteps(ProjectPool):
    """A move out of one project into another is two store calls, a leave then a join: a store
    that fails at the join leaves the session in no project (the shared pool)."""

    def assign_session(self, session: object, project: object, /) -> None:
        external, name = _known(session), _known(project)
        with self._lock:
            with self._store("assign_session"):
                row = self.membership.session(external)
                project_id = self.membership.project(name)
                if row is None or project_id is None:
                    raise NotFound(external if row is None else name)
                if row.project_id is None or row.project_id == project_id:
                    if row.project_id != project_id:
                        self.membership.assign(row.id, project_id)
                    return
                self.membership.remove(row.id)
            with self._store("assign_session"):
                self.membership.assign(row.id, project_id)


class Mutant(_mutant_base.Mutant[ProjectPool]):
    """A broken project-pool backend, served by this module's ``by_name``."""

    __slots__ = ()


def _both(test: str) -> tuple[str, str]:
    return (f"{test}[search-episodes]", f"{test}[search-entities]")


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
        (*_both("iso-02"), "pool-04", "pool-06"),
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
    Mutant(
        "pool-membership-cached-per-session",
        MembershipCachedPerSession,
        "a session's project is read on its first call and cached: moves never reach it",
        ("pool-01", "pool-02", "pool-09"),
    ),
    Mutant(
        "pool-removed-membership-still-counted",
        RemovedMembershipStillCounted,
        "a project's pool counts soft-deleted membership rows: a removed session stays in it",
        ("pool-02", "pool-09"),
    ),
    Mutant(
        "pool-assign-keeps-former-membership",
        AssignKeepsFormerMembership,
        "assigning a session does not close its former membership: it is in both projects",
        ("iso-01[search-episodes]", "pool-01", "pool-08"),
    ),
    Mutant(
        "pool-first-message-window",
        FirstMessageWindow,
        "start_session(s, P) puts s in P only after its first episode is written",
        ("iso-01[search-episodes]", "pool-05"),
    ),
    Mutant(
        "pool-project-zero-is-no-project",
        ProjectZeroIsNoProject,
        "project context is resolved with 'if project_id:': project 0's sessions are in no project",
        (*_both("iso-01"), "pool-08", "pool-09"),
    ),
    Mutant(
        "pool-assign-creates-unknown-session",
        AssignCreatesUnknownSession,
        "assigning an unknown session starts it in the project instead of raising NotFound",
        ("pool-06",),
    ),
    Mutant(
        "pool-episodes-tagged-with-project",
        EpisodesTaggedWithProject,
        "episodes are tagged with the project at write time: history does not follow its session",
        ("pool-01", "pool-02", "pool-09"),
    ),
    Mutant(
        "pool-entity-tags-rewritten-on-move",
        EntityTagsRewrittenOnMove,
        "moving a session re-tags the entities extracted from it",
        ("pool-03", "pool-09"),
    ),
    Mutant(
        "pool-unknown-session-searches-unfiltered",
        UnknownSessionSearchesUnfiltered,
        "a session id that names no session is searched with no filter",
        (*_both("iso-02"), "pool-06"),
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
        _both("iso-02"),
    ),
    Mutant(
        "pool-empty-on-store-error",
        EmptyOnStoreError,
        "a failing store is answered with no hits",
        _both("iso-03"),
    ),
    Mutant(
        "pool-limit-coerced",
        LimitCoerced,
        "a search limit is passed through int(): strings, bools and floats are answered, and "
        "limits out of range reach the store",
        ("pool-10",),
    ),
    Mutant(
        "pool-entity-fields-defaulted",
        EntityFieldsDefaulted,
        "an entity missing a field, or with an empty or non-string one, is stored with the field "
        "defaulted instead of refused",
        ("pool-10",),
    ),
    Mutant(
        "pool-membership-pages-unscoped",
        MembershipPagesUnscoped,
        "a project's sessions are read in pages; the pages after the first ignore the project",
        ("pool-11",),
    ),
    Mutant(
        "pool-membership-drops-partial-page",
        MembershipDropsPartialPage,
        "a project's sessions are read in full pages only: the last, partial page is left out",
        ("pool-11",),
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
    Mutant(
        "pool-entities-stored-one-by-one",
        EntitiesStoredOneByOne,
        "each extracted entity is its own store call: a store failing midway leaves the first "
        "entities stored while the call raises",
        ("pool-12",),
    ),
    Mutant(
        "pool-move-in-two-steps",
        MoveInTwoSteps,
        "a move between projects is a leave then a join, two store calls: a store failing at the "
        "join leaves the session in the shared pool",
        ("pool-12",),
    ),
    Mutant(
        "pool-no-filter-anywhere",
        NoFilterAnywhere,
        "smoke: every search runs over the whole collection",
        (),
        smoke=True,
    ),
)


class MutantAdapter(ServesMutant[Mutant], PoolAdapter):
    """The project-pool reference adapter, opening the mutant instead of the reference."""

    def _pool(self, options: BackendOptions) -> ProjectPool:
        return self.mutant.kind(store_fails=options.store_fails)


#: ``kbconform_reference.pool.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
