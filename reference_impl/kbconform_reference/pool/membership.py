"""Who is in which project: projects, sessions and memberships in SQLite (stdlib, in memory).

As in the system the profile models, the membership database keeps its own integer ids: a
session is known outside by its external id and inside by ``sessions.id``; a project by its
name outside and ``projects.id`` inside. Ids count from 0 (the first project is project 0), so
a truthiness test on an id is a bug the suites see, not one that waits for a first project.

A membership is a row of ``memberships``; taking a session out of its project closes its row
(``removed_at``) and keeps it as history. At most one open row per session: a session is in one
project, or in none (the shared pool). Nothing here is cached: every read goes to the database.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kbconform_reference._sqlite import Database

_SCHEMA = """
CREATE TABLE projects (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    isolated INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY,
    external_id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL
);
CREATE TABLE memberships (
    session_id INTEGER NOT NULL REFERENCES sessions (id),
    project_id INTEGER NOT NULL REFERENCES projects (id),
    added_at REAL NOT NULL,
    removed_at REAL
);
CREATE UNIQUE INDEX one_open_membership ON memberships (session_id) WHERE removed_at IS NULL;
"""


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A known session: its internal id and the internal id of its project now (None: none)."""

    id: int
    project_id: int | None


class Membership(Database):
    """The membership database of one backend. Callers serialize their calls."""

    def __init__(self) -> None:
        super().__init__(_SCHEMA)

    # -- reads ----------------------------------------------------------------------------------

    def session(self, external_id: str) -> SessionRow | None:
        """The session whose external id is ``external_id``, or None when there is none."""
        row = self._db.execute(
            "SELECT s.id, m.project_id FROM sessions s "
            "LEFT JOIN memberships m ON m.session_id = s.id AND m.removed_at IS NULL "
            "WHERE s.external_id = ?",
            (external_id,),
        ).fetchone()
        return None if row is None else SessionRow(int(row[0]), None if row[1] is None else int(row[1]))

    def project(self, name: str) -> int | None:
        """The internal id of the project named ``name``, or None."""
        row = self._db.execute("SELECT id FROM projects WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def project_sessions(self, project_id: int) -> list[int]:
        """The internal ids of the sessions in project ``project_id`` now."""
        rows = self._db.execute(
            "SELECT session_id FROM memberships WHERE project_id = ? AND removed_at IS NULL "
            "ORDER BY session_id",
            (project_id,),
        )
        return [int(row[0]) for row in rows]

    def shared_sessions(self) -> list[int]:
        """The internal ids of the sessions in no project now (the shared pool)."""
        rows = self._db.execute(
            "SELECT id FROM sessions WHERE id NOT IN "
            "(SELECT session_id FROM memberships WHERE removed_at IS NULL) ORDER BY id"
        )
        return [int(row[0]) for row in rows]

    # -- writes (each one transaction) ------------------------------------------------------------

    def create_project(self, name: str) -> int:
        """A new project; its internal id."""
        with self._transaction():
            return self._insert("projects", "name, created_at", (name, time.time()))

    def start_session(self, external_id: str, project_id: int | None) -> int:
        """A new session, in ``project_id`` (None: in no project) from the start; its internal id."""
        with self._transaction():
            session_id = self._insert("sessions", "external_id, created_at", (external_id, time.time()))
            if project_id is not None:
                self._join(session_id, project_id)
            return session_id

    def assign(self, session_id: int, project_id: int) -> None:
        """Move the session into ``project_id``: its open membership (if any) is closed first."""
        with self._transaction():
            self._leave(session_id)
            self._join(session_id, project_id)

    def remove(self, session_id: int) -> None:
        """Close the session's open membership, if any."""
        with self._transaction():
            self._leave(session_id)

    def _insert(self, table: str, columns: str, values: tuple[object, ...]) -> int:
        """Insert a row whose id is the next one counting from 0; return that id."""
        (next_id,) = self._db.execute(f"SELECT COALESCE(MAX(id) + 1, 0) FROM {table}").fetchone()
        marks = ", ".join("?" for _ in values)
        self._db.execute(f"INSERT INTO {table} (id, {columns}) VALUES (?, {marks})", (next_id, *values))
        return int(next_id)

    def _join(self, session_id: int, project_id: int) -> None:
        self._db.execute(
            "INSERT INTO memberships (session_id, project_id, added_at) VALUES (?, ?, ?)",
            (session_id, project_id, time.time()),
        )

    def _leave(self, session_id: int) -> None:
        self._db.execute(
            "UPDATE memberships SET removed_at = ? WHERE session_id = ? AND removed_at IS NULL",
            (time.time(), session_id),
        )
