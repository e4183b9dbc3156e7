"""An independent memory-scope backend: named scope keys over SQLite, each text's vector stored
once and shared by every memory of every scope that holds that text. From the spec.

Neither reference's design (``kbconform_reference.memory``: a Qdrant point per memory with its
scope in the payload) nor ``sqlite_memory.py``'s (a namespace path compared as a prefix): this
backend declares ``scopeMatch: keys`` over ``org``, ``user`` and ``session``, and keeps a
memory's scope as rows of a ``scope_keys`` table, one per key it was written under. A scope
matches a memory when, for each key the caller names, a row of that memory holds exactly that
key and value (SQLite's binary comparison of TEXT: case, form and length all count). A memory's
text and vector live in ``contents``, addressed by the SHA-256 of the text and counted by the
memories that hold it: two memories of one text, in one scope or in two, share one row, and a
delete or an update releases its share, the row going with the last. Ids come from an
``AUTOINCREMENT`` column, never handed out again. A search ranks the scope's memories by the
cosine of their shared vector to the query's (a hashing embedding of words), a memory's own
text first, then the oldest. A where clause is decided in Python by the grammar's meaning
(``kbconform.adapter.where_matches``) over the rows the scope's statement returned. Every write
is one SQLite transaction; the store fault switch is consulted before every statement, and a
failure rolls the transaction back whole. From the kit it takes only the errors,
``where_matches`` and the profile's constants.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import math
import re
import sqlite3
import struct
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import BackendOptions, where_matches
from kbconform.errors import BackendUnavailable, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, memory_invalid

KEYS = ("org", "user", "session")
DIMENSIONS = 64
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "isolationProfile": "memory-scope",
    "adapter": {"name": "independent-sqlite-shared-vectors", "version": "0.0.1"},
    "backend": {"name": "SQLite scope-key rows, content-addressed vectors", "version": "test"},
    "scopeKeys": list(KEYS),
    "scopeMatch": "keys",
    "byIdScope": "checked",
    "readFacades": ["search", "list"],
    "features": {
        "fault-injection": True,
        "get": True,
        "update": True,
        "update-metadata": True,
        "delete": True,
        "delete-all": True,
        "filter": True,
    },
}
_WORD = re.compile(r"\w+")
_SCHEMA = (
    "CREATE TABLE contents (digest TEXT PRIMARY KEY, text TEXT NOT NULL, vector BLOB NOT NULL,"
    " holders INTEGER NOT NULL)",
    "CREATE TABLE memories (seq INTEGER PRIMARY KEY AUTOINCREMENT, digest TEXT NOT NULL"
    " REFERENCES contents (digest), metadata TEXT NOT NULL)",
    "CREATE TABLE scope_keys (seq INTEGER NOT NULL REFERENCES memories (seq), key TEXT NOT NULL,"
    " value TEXT NOT NULL, PRIMARY KEY (seq, key))",
    "CREATE INDEX scope_key_values ON scope_keys (key, value)",
)
_PREFIX = "mem-"


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    text: str


def _scope(scope: object) -> dict[str, str]:
    """The caller's scope: a non-empty mapping of declared keys to non-empty strings; anything
    else is Unauthenticated."""
    if not isinstance(scope, Mapping) or not scope:
        raise Unauthenticated("memory-scope")
    for key, value in scope.items():
        if key not in KEYS or type(value) is not str or not value:
            raise Unauthenticated("memory-scope")
    return dict(scope)


def _vector(text: str) -> bytes:
    """A hashing embedding of the text's words, unit length, packed as floats."""
    weights = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        weights[digest[0] % DIMENSIONS] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(w * w for w in weights)) or 1.0
    return struct.pack(f"{DIMENSIONS}d", *(w / norm for w in weights))


def _cosine(a: bytes, b: bytes) -> float:
    return sum(
        x * y
        for x, y in zip(struct.unpack(f"{DIMENSIONS}d", a), struct.unpack(f"{DIMENSIONS}d", b), strict=True)
    )


def _seq(memory: object) -> int | None:
    """The row a memory id names (``mem-`` and its sequence number in decimal), or None."""
    if type(memory) is not str or not memory.startswith(_PREFIX):
        return None
    digits = memory[len(_PREFIX) :]
    return int(digits) if digits.isdigit() and str(int(digits)) == digits else None


class SharedVectorMemory:
    def __init__(self, store_fails: Callable[[], bool] | None) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        for statement in _SCHEMA:
            self.db.execute(statement)
        self.fails = store_fails
        self.lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """One statement to the store, behind the fault switch."""
        if self.fails is not None and self.fails():
            raise BackendUnavailable("memory-scope", "the store failed")
        return self.db.execute(sql, args).fetchall()

    def _transaction(self, write: Callable[[], Any]) -> Any:
        """``write()`` in one transaction: every statement or none."""
        self._run("BEGIN")
        try:
            done = write()
            self._run("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return done

    # -- contents, shared by every memory holding a text ----------------------------------------

    def _hold(self, text: str) -> str:
        """The digest of ``text``'s row, made or with one more holder."""
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self._run(
            "INSERT INTO contents (digest, text, vector, holders) VALUES (?, ?, ?, 1)"
            " ON CONFLICT (digest) DO UPDATE SET holders = holders + 1",
            (digest, text, _vector(text)),
        )
        return digest

    def _release(self, digest: str) -> None:
        """One holder fewer; the row goes with its last."""
        self._run("UPDATE contents SET holders = holders - 1 WHERE digest = ?", (digest,))
        self._run("DELETE FROM contents WHERE digest = ? AND holders <= 0", (digest,))

    # -- scopes -----------------------------------------------------------------------------------

    def _matching(self, caller: Mapping[str, str], extra: str = "", args: tuple[Any, ...] = ()) -> list[Any]:
        """The rows of the memories ``caller`` matches (seq, text, vector, metadata, digest),
        oldest first: one condition per key it names, each an exact row of ``scope_keys``."""
        conditions = " AND ".join(
            "EXISTS (SELECT 1 FROM scope_keys k WHERE k.seq = m.seq AND k.key = ? AND k.value = ?)"
            for _ in caller
        )
        bound = tuple(item for pair in caller.items() for item in pair)
        return self._run(
            "SELECT m.seq, c.text, c.vector, m.metadata, m.digest FROM memories m"
            f" JOIN contents c ON c.digest = m.digest WHERE {conditions}{extra} ORDER BY m.seq",
            (*bound, *args),
        )

    def _found(self, scope: object, memory: object) -> Any:
        """The row of ``memory`` when the caller's scope matches it; else NotFound, as for an id
        no memory has."""
        caller = _scope(scope)
        seq = _seq(memory)
        if seq is None:
            raise NotFound(repr(memory))
        rows = self._matching(caller, " AND m.seq = ?", (seq,))
        if not rows:
            raise NotFound(str(memory))
        return rows[0]

    @staticmethod
    def _text(text: object) -> str:
        if type(text) is not str or not text:
            raise memory_invalid("text", "a non-empty string", repr(text))
        return text

    # -- writes -----------------------------------------------------------------------------------

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self.lock:
            caller = _scope(scope)
            checked = self._text(text)
            if not isinstance(metadata, Mapping):
                raise memory_invalid("metadata", "an object", repr(metadata))
            data = json.dumps(dict(metadata))

            def write() -> str:
                digest = self._hold(checked)
                self._run("INSERT INTO memories (digest, metadata) VALUES (?, ?)", (digest, data))
                [(seq,)] = self._run("SELECT last_insert_rowid()")
                for key, value in caller.items():
                    self._run("INSERT INTO scope_keys (seq, key, value) VALUES (?, ?, ?)", (seq, key, value))
                return f"{_PREFIX}{seq}"

            memory: str = self._transaction(write)
            return memory

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        """The text (a share of its contents row), and the keys ``metadata`` sets; the memory's
        scope rows are never written."""
        with self.lock:
            seq, _, _, stored, digest = self._found(scope, memory)
            checked = self._text(text)
            if metadata is not None and not isinstance(metadata, Mapping):
                raise memory_invalid("metadata", "an object", repr(metadata))
            merged = json.dumps({**json.loads(stored), **(metadata or {})})

            def write() -> None:
                held = self._hold(checked)
                self._run("UPDATE memories SET digest = ?, metadata = ? WHERE seq = ?", (held, merged, seq))
                self._release(digest)

            self._transaction(write)

    def _forget(self, rows: list[Any]) -> None:
        for seq, _, _, _, digest in rows:
            self._run("DELETE FROM scope_keys WHERE seq = ?", (seq,))
            self._run("DELETE FROM memories WHERE seq = ?", (seq,))
            self._release(digest)

    def delete(self, scope: object, memory: object, /) -> None:
        with self.lock:
            row = self._found(scope, memory)
            self._transaction(lambda: self._forget([row]))

    def delete_all(self, scope: object, /) -> None:
        with self.lock:
            caller = _scope(scope)
            self._transaction(lambda: self._forget(self._matching(caller)))

    # -- reads ------------------------------------------------------------------------------------

    def get(self, scope: object, memory: object, /) -> Hit:
        with self.lock:
            seq, text, _, _, _ = self._found(scope, memory)
            return Hit(f"{_PREFIX}{seq}", text)

    def list(self, scope: object, /) -> builtins.list[Hit]:
        with self.lock:
            return [Hit(f"{_PREFIX}{row[0]}", row[1]) for row in self._matching(_scope(scope))]

    def search(self, scope: object, text: object, limit: object, where: object, /) -> builtins.list[Hit]:
        with self.lock:
            caller = _scope(scope)
            if type(text) is not str:
                raise memory_invalid("text", "a string", repr(text))
            if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
                raise memory_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
            try:
                where_matches({}, where)  # the clause is checked before the store is asked
            except KbconformError:
                raise memory_invalid("where", "a client where clause", repr(where)) from None
            rows = [row for row in self._matching(caller) if where_matches(json.loads(row[3]), where)]
            query = _vector(text)
            ranked = sorted(rows, key=lambda row: (row[1] != text, -_cosine(row[2], query), row[0]))
            return [Hit(f"{_PREFIX}{row[0]}", row[1]) for row in ranked[:limit]]


class Adapter:
    manifest = MANIFEST

    def open(self, options: BackendOptions, /) -> SharedVectorMemory:
        return SharedVectorMemory(options.store_fails)

    def close(self, backend: SharedVectorMemory, /) -> None:
        backend.close()

    def shutdown(self) -> None:
        pass


def make() -> Adapter:
    return Adapter()
