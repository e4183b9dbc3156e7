"""An independent project-pool backend: a relational membership model in SQLite, from the spec docs.

Not the reference and not the in-memory double (``tests/plugin/pool_adapter.py``, dictionaries
of internal ids): each opened backend is its own in-memory SQLite database with a table of
projects and one of sessions (external names in, ``INTEGER PRIMARY KEY`` ids out), a membership
table whose rows say which project a session is in now (a move deletes the session's row and
inserts a new one, so every assignment is a fresh row; a removal deletes it), and the episodes
and entities in tables of their own with the scoping columns (an episode its session's internal
id, an entity also the project's internal id it was tagged with, or NULL). Every search is one
SQL statement whose WHERE clause is the scope, joined through the membership and compared on
internal ids only (``schemas/project-pool.md``, P1 to P16); the rows it returns are ranked in
Python, a row whose text is exactly the search text first, then by the cosine of a hashed
embedding of words and character trigrams of its own (computed at write time, stored as float32
bytes), then oldest first. A call reads or writes its rows in one statement each, never in
pages of its own, so the manifest declares no ``pageSizes``. Names and texts are stored as the
bytes of their exact code points, so comparing them is comparing bytes: no folding of case,
Unicode form, spaces or separators. Every write (a membership change too) runs in one SQLite
transaction; the store fault switch is consulted before every statement sent to the store (its
BEGIN and COMMIT included), and a failure rolls the transaction back whole. The rollback is
SQLite's own undo of a transaction that never committed, not a call the switch can fail. From
the kit it takes only the errors, ``pool_invalid`` and the profile's constants. It is the
control that keeps the suites' model honest: it must pass every suite it declares, at the
thorough profile too.
"""

from __future__ import annotations

import hashlib
import math
import re
import sqlite3
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kbconform.adapter import MAX_LIMIT, BackendOptions
from kbconform.errors import BackendUnavailable, NotFound, Unauthenticated
from kbconform.profiles.project_pool.protocol import POOL_READ_FACADES, pool_invalid

DIMENSIONS = 64
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "isolationProfile": "project-pool",
    "adapter": {"name": "independent-sqlite-pool", "version": "0.0.1"},
    "backend": {"name": "SQLite membership tables, hashed-embedding cosine", "version": "test"},
    "isolationModel": "metadata-filter",
    "readFacades": list(POOL_READ_FACADES),
    "features": {"fault-injection": True},
}

_SCHEMA = """
CREATE TABLE projects (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name BLOB NOT NULL UNIQUE
);
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    external BLOB NOT NULL UNIQUE
);
CREATE TABLE membership (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL UNIQUE REFERENCES sessions (id),
    project_id INTEGER NOT NULL REFERENCES projects (id)
);
CREATE INDEX membership_by_project ON membership (project_id);
CREATE TABLE episodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions (id),
    text BLOB NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX episodes_by_session ON episodes (session_id);
CREATE TABLE entities (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id INTEGER NOT NULL REFERENCES sessions (id),
    project_id INTEGER REFERENCES projects (id),
    name BLOB NOT NULL,
    type BLOB NOT NULL,
    notes BLOB NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX entities_by_project ON entities (project_id);
"""

#: The episodes of every session whose membership row names the caller's project, or of every
#: session with no membership row when the caller has none (``IS`` compares NULL with NULL).
_EPISODE_SCOPE = """
SELECT e.id, e.text, e.vector
FROM episodes AS e
LEFT JOIN membership AS m ON m.session_id = e.session_id
WHERE m.project_id IS (SELECT c.project_id FROM membership AS c WHERE c.session_id = ?)
"""
#: The entities tagged with the caller's project; a caller with no membership row joins none,
#: and an entity tagged NULL joins no one.
_ENTITY_SCOPE = """
SELECT n.id, n.name, n.vector
FROM entities AS n
JOIN membership AS c ON c.project_id = n.project_id
WHERE c.session_id = ?
"""
_WORD = re.compile(r"\w+")
_ENTITY_FIELDS = ("name", "type", "notes")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Hit:
    """A search hit: the id a write returned and the episode's text or the entity's name."""

    id: str
    text: str


def _bytes(text: str) -> bytes:
    """The exact code points of ``text`` (lone surrogates too), as the store keeps them."""
    return text.encode("utf-8", "surrogatepass")


def _text(stored: bytes) -> str:
    return stored.decode("utf-8", "surrogatepass")


def _embed(text: str) -> bytes:
    """A unit vector of hashed features (lower-cased words, case-kept character trigrams), as
    float32 bytes; the zero vector for a text with no features."""
    vector = [0.0] * DIMENSIONS
    padded = f"\x02{text}\x03"
    features = [f"w:{word}" for word in _WORD.findall(text.lower())]
    features += [f"t:{padded[i : i + 3]}" for i in range(max(len(padded) - 2, 0))]
    for feature in features:
        digest = hashlib.blake2b(_bytes(feature), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "big") % DIMENSIONS
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(value * value for value in vector))
    if norm > 0:
        vector = [value / norm for value in vector]
    return struct.pack(f"<{DIMENSIONS}f", *vector)


def _cosine(query: Sequence[float], stored: bytes) -> float:
    vector = struct.unpack(f"<{DIMENSIONS}f", stored)
    dot = sum(a * b for a, b in zip(query, vector, strict=True))
    norm = math.sqrt(sum(a * a for a in query)) * math.sqrt(sum(b * b for b in vector))
    return dot / norm if norm > 0 else 0.0


def _kind(value: object) -> str:
    """What a rejected argument was, without echoing its content."""
    if isinstance(value, str):
        return "an empty string" if not value else "a string"
    return f"a {type(value).__name__}"


def _identity(operation: str, session: object) -> str:
    """A caller that can name a session at all, checked before the store is asked anything."""
    if type(session) is not str or not session:
        raise Unauthenticated(operation)
    return session


def _name(what: str, value: object) -> str:
    """A project or session name: any non-empty ``str``, compared exactly."""
    if type(value) is not str or not value:
        raise pool_invalid(what, "a non-empty string", _kind(value))
    return value


def _entity(index: int, entity: object) -> tuple[str, str, str]:
    """An entity's three fields; every other key is dropped here, never stored."""
    if not isinstance(entity, Mapping):
        raise pool_invalid(f"entities[{index}]", "an object with name, type and notes", _kind(entity))
    fields: list[str] = []
    for key in _ENTITY_FIELDS:
        value = entity.get(key)
        if type(value) is not str or not value:
            raise pool_invalid(f"entities[{index}].{key}", "a non-empty string", _kind(value))
        fields.append(value)
    return fields[0], fields[1], fields[2]


def _limit(limit: object) -> int:
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        shown = str(limit) if type(limit) is int else _kind(limit)
        raise pool_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", shown)
    return limit


class SqlitePool:
    """One opened backend: its own in-memory SQLite database."""

    def __init__(self, store_fails: Callable[..., bool] | None = None) -> None:
        self._store_fails = store_fails
        self._lock = threading.RLock()
        self._db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._db.executescript(_SCHEMA)  # creating the empty store, before any facade call

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- the store ------------------------------------------------------------------------

    def _call(self, operation: str, sql: str, params: Sequence[object] = ()) -> list[Any]:
        """One statement sent to the store, the fault switch consulted first."""
        if self._store_fails is not None and self._store_fails():
            raise BackendUnavailable(operation, "the store failed")
        try:
            return self._db.execute(sql, tuple(params)).fetchall()
        except sqlite3.Error as error:
            raise BackendUnavailable(operation, f"the store failed: {type(error).__name__}") from None

    def _transaction(self, operation: str, body: Callable[[], _T]) -> _T:
        """``body`` in one transaction: committed whole, or rolled back whole on any error."""
        with self._lock:
            self._call(operation, "BEGIN IMMEDIATE")
            try:
                result = body()
                self._call(operation, "COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            return result

    def _session_id(self, operation: str, session: str) -> int | None:
        rows = self._call(operation, "SELECT id FROM sessions WHERE external = ?", [_bytes(session)])
        return int(rows[0][0]) if rows else None

    def _project_id(self, operation: str, project: str) -> int | None:
        rows = self._call(operation, "SELECT id FROM projects WHERE name = ?", [_bytes(project)])
        return int(rows[0][0]) if rows else None

    def _caller(self, operation: str, session: object) -> int:
        """The caller's internal id; no identity (not a ``str``, empty, never started) is refused."""
        found = self._session_id(operation, _identity(operation, session))
        if found is None:
            raise Unauthenticated(operation)
        return found

    # -- membership: the operator's, no caller ----------------------------------------------

    def create_project(self, project: str, /) -> None:
        name = _name("project", project)

        def write() -> None:
            if self._project_id("create_project", name) is not None:
                raise pool_invalid("project", "a project name not yet taken", "an existing project")
            self._call("create_project", "INSERT INTO projects (name) VALUES (?)", [_bytes(name)])

        self._transaction("create_project", write)

    def start_session(self, session: str, project: str | None, /) -> None:
        name = _name("session", session)
        target = None if project is None else _name("project", project)

        def write() -> None:
            if self._session_id("start_session", name) is not None:
                raise pool_invalid("session", "a session not yet started", "an existing session")
            project_id = None
            if target is not None:
                project_id = self._project_id("start_session", target)
                if project_id is None:
                    raise NotFound(target)
            rows = self._call(
                "start_session", "INSERT INTO sessions (external) VALUES (?) RETURNING id", [_bytes(name)]
            )
            if project_id is not None:  # in the project from its first call on
                self._call(
                    "start_session",
                    "INSERT INTO membership (session_id, project_id) VALUES (?, ?)",
                    [rows[0][0], project_id],
                )

        self._transaction("start_session", write)

    def assign_session(self, session: str, project: str, /) -> None:
        name = _name("session", session)
        target = _name("project", project)

        def write() -> None:
            session_id = self._session_id("assign_session", name)
            if session_id is None:
                raise NotFound(name)
            project_id = self._project_id("assign_session", target)
            if project_id is None:
                raise NotFound(target)
            self._call("assign_session", "DELETE FROM membership WHERE session_id = ?", [session_id])
            self._call(
                "assign_session",
                "INSERT INTO membership (session_id, project_id) VALUES (?, ?)",
                [session_id, project_id],
            )

        self._transaction("assign_session", write)

    def remove_session(self, session: str, /) -> None:
        name = _name("session", session)

        def write() -> None:
            session_id = self._session_id("remove_session", name)
            if session_id is None:
                raise NotFound(name)
            self._call("remove_session", "DELETE FROM membership WHERE session_id = ?", [session_id])

        self._transaction("remove_session", write)

    # -- writes: the caller is a session ----------------------------------------------------

    def write_episode(self, session: str, text: str, /) -> str:
        _identity("write_episode", session)

        def write() -> str:
            caller = self._caller("write_episode", session)
            if type(text) is not str or not text:
                raise pool_invalid("text", "a non-empty string", _kind(text))
            rows = self._call(
                "write_episode",
                "INSERT INTO episodes (session_id, text, vector) VALUES (?, ?, ?) RETURNING id",
                [caller, _bytes(text), _embed(text)],
            )
            return f"episode-{rows[0][0]}"

        return self._transaction("write_episode", write)

    def extract_entities(self, session: str, entities: Sequence[Mapping[str, str]], /) -> list[str]:
        _identity("extract_entities", session)

        def write() -> list[str]:
            caller = self._caller("extract_entities", session)
            if isinstance(entities, (str, bytes, Mapping)) or not isinstance(entities, Sequence):
                raise pool_invalid("entities", "an array of entities", _kind(entities))
            checked = [_entity(index, entity) for index, entity in enumerate(entities)]
            ids: list[str] = []
            for name, kind, notes in checked:  # each tagged with the project the caller is in now
                rows = self._call(
                    "extract_entities",
                    "INSERT INTO entities (session_id, project_id, name, type, notes, vector) "
                    "VALUES (?, (SELECT project_id FROM membership WHERE session_id = ?), ?, ?, ?, ?) "
                    "RETURNING id",
                    [caller, caller, _bytes(name), _bytes(kind), _bytes(notes), _embed(name)],
                )
                ids.append(f"entity-{rows[0][0]}")
            return ids

        return self._transaction("extract_entities", write)

    # -- reads --------------------------------------------------------------------------------

    def _search(
        self, operation: str, scope: str, prefix: str, session: object, text: object, limit: object
    ) -> list[Hit]:
        with self._lock:
            caller = self._caller(operation, session)
            if type(text) is not str:
                raise pool_invalid("text", "a string", _kind(text))
            count = _limit(limit)
            rows = self._call(operation, scope, [caller])
        query = struct.unpack(f"<{DIMENSIONS}f", _embed(text))
        ranked = sorted(
            ((_text(stored), row_id, vector) for row_id, stored, vector in rows),
            key=lambda row: (row[0] != text, -_cosine(query, row[2]), row[1]),
        )
        return [Hit(f"{prefix}-{row_id}", found) for found, row_id, _ in ranked[:count]]

    def search_episodes(self, session: str, text: str, limit: int, /) -> list[Hit]:
        return self._search("search_episodes", _EPISODE_SCOPE, "episode", session, text, limit)

    def search_entities(self, session: str, text: str, limit: int, /) -> list[Hit]:
        return self._search("search_entities", _ENTITY_SCOPE, "entity", session, text, limit)


class Adapter:
    """``tests.independent.sqlite_pool:make``."""

    manifest = MANIFEST

    def open(self, options: BackendOptions) -> SqlitePool:
        return SqlitePool(options.store_fails)

    def close(self, backend: SqlitePool) -> None:
        backend.close()

    def shutdown(self) -> None:
        return None


def make() -> Adapter:
    return Adapter()


__all__ = ["MANIFEST", "Adapter", "Hit", "SqlitePool", "make"]
