"""Mutants of the project-pool reference, membership and history: a membership cached or
still counted after removal, a former membership kept, a first-message window, project 0 read as
no project, unknown sessions made on assignment, episodes tagged with a project, entity tags
rewritten on a move."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbconform.errors import NotFound
from kbconform_reference.pool.membership import SessionRow
from kbconform_reference.pool.mutants._base import Mutant, both, external_id
from kbconform_reference.pool.qdrant import ENTITIES, equal, is_null
from kbconform_reference.pool.service import ProjectPool, _known

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


class MembershipCachedPerSession(ProjectPool):
    """A session's project is read once, on its first call, and kept: moves never reach it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cache: dict[str, SessionRow] = {}

    def _caller(self, session: object, operation: str) -> SessionRow:
        external = external_id(session)
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
        external = external_id(session)
        if external is not None and self.membership.session(external) is None:
            self.start_session(external, project)
            return
        super().assign_session(session, project)


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


MUTANTS: tuple[Mutant, ...] = (
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
        (*both("iso-01"), "pool-08", "pool-09"),
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
)
