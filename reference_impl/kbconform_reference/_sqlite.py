"""An in-memory SQLite database of one backend, written to one transaction at a time."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


class Database:
    """A fresh in-memory SQLite database made from ``schema``, foreign keys enforced. Callers
    serialize their calls."""

    def __init__(self, schema: str) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(schema)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN ... COMMIT, or ROLLBACK when the block raises: a write lands whole or not at all."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
