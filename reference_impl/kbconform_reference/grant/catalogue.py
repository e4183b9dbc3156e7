"""Tenants, knowledge bases and grants: the kb-grant reference's catalogue, in SQLite (in memory).

As in the system the profile models, the catalogue keeps its own integer ids: a tenant is known
outside by its name and inside by ``tenants.id``; a knowledge base outside by its external id
(a random, never reused string) and inside by ``kbs.id``, the id its documents carry in the
vector stores. Both are ``AUTOINCREMENT``: an id is never given twice, even after a delete, so
documents a store still holds for a deleted knowledge base can never reappear in a new one.

A knowledge base's row is ``pending`` while a copy fills it, ``live`` once it may be read, and
``gone`` when deleted or when the copy failed (rows are never removed: ids stay spent). Only
``live`` rows are ever read. Nothing here is cached: every read goes to the database, so a
grant or a revoke takes effect on the next call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbconform_reference._sqlite import Database

_SCHEMA = """
CREATE TABLE tenants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE kbs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    external TEXT NOT NULL UNIQUE,
    owner INTEGER NOT NULL REFERENCES tenants (id),
    store TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'live', 'gone'))
);
CREATE TABLE grants (
    kb INTEGER NOT NULL REFERENCES kbs (id),
    grantee INTEGER NOT NULL REFERENCES tenants (id),
    PRIMARY KEY (kb, grantee)
);
"""

_COLUMNS = "k.id, k.external, k.owner, t.name, k.store, k.model"
_READABLE = "(k.owner = :tenant OR EXISTS (SELECT 1 FROM grants g WHERE g.kb = k.id AND g.grantee = :tenant))"


@dataclass(frozen=True, slots=True)
class Tenant:
    """A known tenant: its internal id and its name."""

    id: int
    name: str


@dataclass(frozen=True, slots=True)
class KbRow:
    """A live knowledge base: internal id, external id, owner (id and name), store and model."""

    id: int
    external: str
    owner: int
    owner_name: str
    store: str
    model: str


def _row(values: Sequence[object]) -> KbRow:
    kb, external, owner, name, store, model = values
    return KbRow(int(str(kb)), str(external), int(str(owner)), str(name), str(store), str(model))


class Catalogue(Database):
    """The catalogue of one backend. Callers serialize their calls."""

    def __init__(self) -> None:
        super().__init__(_SCHEMA)

    # -- reads ----------------------------------------------------------------------------------

    def tenant(self, name: str) -> Tenant | None:
        """The tenant named ``name``, or None."""
        row = self._db.execute("SELECT id, name FROM tenants WHERE name = ?", (name,)).fetchone()
        return None if row is None else Tenant(int(row[0]), str(row[1]))

    def kb(self, external: str) -> KbRow | None:
        """The live knowledge base ``external``, whoever may read it (None: no such one)."""
        row = self._db.execute(
            f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner "
            "WHERE k.external = ? AND k.state = 'live'",
            (external,),
        ).fetchone()
        return None if row is None else _row(row)

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        """Those of ``externals`` that ``tenant`` may read (its own, or granted to it), by id."""
        if not externals:
            return {}
        marks = ", ".join(f":e{index}" for index in range(len(externals)))
        named = {f"e{index}": external for index, external in enumerate(externals)}
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner "
            f"WHERE k.external IN ({marks}) AND k.state = 'live' AND {_READABLE}",
            {**named, "tenant": tenant},
        )
        return {row.external: row for row in map(_row, rows)}

    def readable_by(self, tenant: int) -> list[KbRow]:
        """Every live knowledge base ``tenant`` may read, in creation order."""
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner "
            f"WHERE k.state = 'live' AND {_READABLE} ORDER BY k.id",
            {"tenant": tenant},
        )
        return [_row(row) for row in rows]

    def granted(self, kb: int, grantee: int) -> bool:
        row = self._db.execute("SELECT 1 FROM grants WHERE kb = ? AND grantee = ?", (kb, grantee)).fetchone()
        return row is not None

    # -- writes (each one transaction) ------------------------------------------------------------

    def create_tenant(self, name: str) -> Tenant:
        with self._transaction():
            cursor = self._db.execute("INSERT INTO tenants (name) VALUES (?)", (name,))
        return Tenant(int(cursor.lastrowid or 0), name)

    def create_kb(self, external: str, owner: int, store: str, model: str, *, pending: bool = False) -> int:
        """A new knowledge base (``pending``: not readable until :meth:`publish`); its internal id."""
        with self._transaction():
            cursor = self._db.execute(
                "INSERT INTO kbs (external, owner, store, model, state) VALUES (?, ?, ?, ?, ?)",
                (external, owner, store, model, "pending" if pending else "live"),
            )
        return int(cursor.lastrowid or 0)

    def publish(self, kb: int) -> None:
        """A pending knowledge base becomes live."""
        with self._transaction():
            self._db.execute("UPDATE kbs SET state = 'live' WHERE id = ? AND state = 'pending'", (kb,))

    def discard(self, kb: int) -> None:
        """The knowledge base is gone (deleted, or a copy that failed), and so are its grants."""
        with self._transaction():
            self._db.execute("DELETE FROM grants WHERE kb = ?", (kb,))
            self._db.execute("UPDATE kbs SET state = 'gone' WHERE id = ?", (kb,))

    def share(self, kb: int, grantee: int) -> None:
        with self._transaction():
            self._db.execute("INSERT OR IGNORE INTO grants (kb, grantee) VALUES (?, ?)", (kb, grantee))

    def revoke(self, kb: int, grantee: int) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM grants WHERE kb = ? AND grantee = ?", (kb, grantee))

    def rebind(self, kb: int, store: str) -> None:
        with self._transaction():
            self._db.execute("UPDATE kbs SET store = ? WHERE id = ?", (store, kb))
