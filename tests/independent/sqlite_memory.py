"""An independent memory-scope backend: memories in SQLite under a namespace path, from the spec.

Not the reference (``kbconform_reference.memory``: Qdrant, a scope of any keys): this backend
declares ``scopeMatch: prefix`` over the keys ``tenant``, ``user`` and ``thread``, so a scope is
a namespace path, and stores each memory's path as one string, the labels each followed by
``/`` (``acme/alice/``), with ``/`` reserved (``reservedCharacters``) so that no label can fake
a boundary. A read is one SQL statement whose WHERE clause is the caller's path as a prefix of
the stored one, compared with ``substr`` on the exact text (no LIKE, so ``%`` and ``_`` are
plain characters), and by-id calls check the same prefix (``byIdScope: checked``: a wider path
reaches a memory written under a deeper one). Metadata is a JSON column the scope never reads;
a where clause is decided in Python by the grammar's own meaning
(``kbconform.adapter.where_matches``) over the rows the scope's statement returned. A search
ranks those rows by the share of their words the query has (a memory's own text first), then
oldest first. Every write is one SQLite transaction; the store fault switch is consulted before
every statement sent to the store, and a failure rolls the transaction back whole. From the kit
it takes only the errors, ``where_matches`` and the profile's constants: it is the control that
keeps the memory-scope model honest, in prefix mode, which no reference declares.
"""

from __future__ import annotations

import builtins
import json
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import BackendOptions, where_matches
from kbconform.errors import BackendUnavailable, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, memory_invalid

KEYS = ("tenant", "user", "thread")
SEPARATOR = "/"
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "isolationProfile": "memory-scope",
    "adapter": {"name": "independent-sqlite-memory", "version": "0.0.1"},
    "backend": {"name": "SQLite namespace paths, word-overlap ranking", "version": "test"},
    "scopeKeys": list(KEYS),
    "scopeMatch": "prefix",
    "byIdScope": "checked",
    "reservedCharacters": SEPARATOR,
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


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    text: str


def _path(scope: object) -> str:
    """The namespace path a scope names (``acme/alice/``), or Unauthenticated: a mapping of a
    leading run of KEYS, in order, to non-empty strings without the separator."""
    if not isinstance(scope, Mapping) or not scope or tuple(scope) != KEYS[: len(scope)]:
        raise Unauthenticated("memory-scope")
    labels = list(scope.values())
    if not all(type(label) is str and label and SEPARATOR not in label for label in labels):
        raise Unauthenticated("memory-scope")
    return "".join(label + SEPARATOR for label in labels)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class SqliteMemory:
    def __init__(self, store_fails: Callable[[], bool] | None) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.db.execute(
            "CREATE TABLE memories (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
            " path TEXT NOT NULL, text TEXT NOT NULL, metadata TEXT NOT NULL)"
        )
        self.fails = store_fails
        self.lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """One statement to the store, behind the fault switch."""
        if self.fails is not None and self.fails():
            raise BackendUnavailable("memory-scope", "the store failed")
        return self.db.execute(sql, args).fetchall()

    def _write(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """One transaction: every statement or none."""
        self._run("BEGIN")
        try:
            for sql, args in statements:
                self._run(sql, args)
            self._run("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _rows(self, path: str) -> list[Any]:
        return self._run(
            "SELECT id, text, metadata FROM memories WHERE substr(path, 1, ?) = ? ORDER BY seq",
            (len(path), path),
        )

    @staticmethod
    def _text(text: object) -> str:
        if type(text) is not str or not text:
            raise memory_invalid("text", "a non-empty string", repr(text))
        return text

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self.lock:
            path = _path(scope)
            checked = self._text(text)
            if not isinstance(metadata, Mapping):
                raise memory_invalid("metadata", "an object", repr(metadata))
            memory = str(uuid.uuid4())
            row = (memory, path, checked, json.dumps(dict(metadata)))
            self._write([("INSERT INTO memories (id, path, text, metadata) VALUES (?, ?, ?, ?)", row)])
            return memory

    def list(self, scope: object, /) -> builtins.list[Hit]:
        with self.lock:
            return [Hit(i, text) for i, text, _ in self._rows(_path(scope))]

    def search(self, scope: object, text: object, limit: object, where: object, /) -> builtins.list[Hit]:
        with self.lock:
            path = _path(scope)
            if type(text) is not str:
                raise memory_invalid("text", "a string", repr(text))
            if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
                raise memory_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
            try:
                where_matches({}, where)  # the clause is checked before the store is asked
            except KbconformError:
                raise memory_invalid("where", "a client where clause", repr(where)) from None
            rows = [r for r in self._rows(path) if where_matches(json.loads(r[2]), where)]
            query = _words(text)

            def rank(indexed: tuple[int, Any]) -> tuple[int, float, int]:
                position, (_, stored, _) = indexed
                words = _words(stored)
                share = len(words & query) / len(words | query) if words | query else 0.0
                return (0 if stored == text else 1, -share, position)

            ranked = sorted(enumerate(rows), key=rank)[:limit]
            return [Hit(row[0], row[1]) for _, row in ranked]

    def _found(self, scope: object, memory: object) -> str:
        """The id of ``memory`` when the scope's path is a prefix of its own; else NotFound."""
        path = _path(scope)
        if type(memory) is not str:
            raise NotFound(repr(memory))
        rows = self._run(
            "SELECT id FROM memories WHERE id = ? AND substr(path, 1, ?) = ?", (memory, len(path), path)
        )
        if not rows:
            raise NotFound(memory)
        return str(rows[0][0])

    def get(self, scope: object, memory: object, /) -> Hit:
        with self.lock:
            found = self._found(scope, memory)
            [(text,)] = self._run("SELECT text FROM memories WHERE id = ?", (found,))
            return Hit(found, text)

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        """The text, and the keys ``metadata`` sets (None: none given) in the row's metadata; the
        row's path (its scope) is never written."""
        with self.lock:
            found = self._found(scope, memory)
            checked = self._text(text)
            if metadata is None:
                self._write([("UPDATE memories SET text = ? WHERE id = ?", (checked, found))])
                return
            if not isinstance(metadata, Mapping):
                raise memory_invalid("metadata", "an object", repr(metadata))
            [(stored,)] = self._run("SELECT metadata FROM memories WHERE id = ?", (found,))
            merged = json.dumps({**json.loads(stored), **metadata})
            self._write(
                [("UPDATE memories SET text = ?, metadata = ? WHERE id = ?", (checked, merged, found))]
            )

    def delete(self, scope: object, memory: object, /) -> None:
        with self.lock:
            found = self._found(scope, memory)
            self._write([("DELETE FROM memories WHERE id = ?", (found,))])

    def delete_all(self, scope: object, /) -> None:
        with self.lock:
            path = _path(scope)
            self._write([("DELETE FROM memories WHERE substr(path, 1, ?) = ?", (len(path), path))])


class Adapter:
    manifest = MANIFEST

    def open(self, options: BackendOptions, /) -> SqliteMemory:
        return SqliteMemory(options.store_fails)

    def close(self, backend: SqliteMemory, /) -> None:
        backend.close()

    def shutdown(self) -> None:
        pass


def make() -> Adapter:
    return Adapter()
