"""Mutants of the project-pool reference, pages (schemas/pages.md) and writes a failing store
leaves half made: membership pages unscoped or a partial page dropped, entities stored one by
one, a move in two steps."""

from __future__ import annotations

import uuid

from kbconform.errors import NotFound
from kbconform_reference.pool.membership import SessionRow
from kbconform_reference.pool.mutants._base import Mutant
from kbconform_reference.pool.qdrant import ENTITIES
from kbconform_reference.pool.service import ProjectPool, _entities, _known

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


MUTANTS: tuple[Mutant, ...] = (
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
)
