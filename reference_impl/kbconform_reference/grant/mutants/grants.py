"""Mutants of the kb-grant reference, grants and rights: a grant cached, a grantee that may
administer, grants kept past a delete, an owner that revokes itself, ids reused after a delete,
a list that shows what was shared."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.adapter import KbInfo
from kbconform.errors import NotFound
from kbconform_reference._arguments import describe
from kbconform_reference.grant.catalogue import _COLUMNS, Catalogue, KbRow, Tenant, _row
from kbconform_reference.grant.index import VectorIndex
from kbconform_reference.grant.mutants._base import Mutant, OtherCatalogue
from kbconform_reference.grant.service import KbGrantService, _name


class GrantCached(KbGrantService):
    """A grant, once read, is kept per (tenant, knowledge base): a revoke never reaches it."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self._seen: dict[tuple[int, str], KbRow] = {}

    def _remember(self, tenant: Tenant, rows: Mapping[str, KbRow]) -> dict[str, KbRow]:
        for external, row in rows.items():
            self._seen[(tenant.id, external)] = row
        return {
            external: row
            for (holder, external), row in self._seen.items()
            if holder == tenant.id and self.catalogue.kb(external) is not None
        }

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        name = _name(kb, "kb")
        known = self._remember(tenant, self.catalogue.readable(tenant.id, [name]))
        if name not in known:
            raise NotFound(describe(kb))
        return known[name]

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]


class GranteeMayAdminister(KbGrantService):
    """Administering a knowledge base checks read access only: a grantee shares, revokes,
    ingests, moves and deletes."""

    def _administered(self, tenant: Tenant, kb: object, operation: str) -> KbRow:
        return self._readable(tenant, kb)


class _KeptGrants(Catalogue):
    """Deleting a knowledge base marks it gone for its owner; grants stay, and a grantee's
    reads go through the grants table without looking at the knowledge base's state."""

    def discard(self, kb: int) -> None:
        with self._transaction():
            self._db.execute("UPDATE kbs SET state = 'gone' WHERE id = ?", (kb,))

    def _visible(self, tenant: int, where: str, args: Mapping[str, object]) -> list[KbRow]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE {where} AND "
            "((k.owner = :tenant AND k.state = 'live') OR "
            "EXISTS (SELECT 1 FROM grants g WHERE g.kb = k.id AND g.grantee = :tenant)) ORDER BY k.id",
            {**args, "tenant": tenant},
        )
        return [_row(row) for row in rows]

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        marks = ", ".join(f":e{index}" for index in range(len(externals)))
        named = {f"e{index}": external for index, external in enumerate(externals)}
        return {row.external: row for row in self._visible(tenant, f"k.external IN ({marks})", named)}

    def readable_by(self, tenant: int) -> list[KbRow]:
        return self._visible(tenant, "1 = 1", {})


class DeleteKeepsGrants(OtherCatalogue):
    """Deleting a knowledge base keeps its grants, and grantees still read it (empty)."""

    catalogue_kind = _KeptGrants


class _OwnerAsGrant(Catalogue):
    """The owner's own read access is one more grant row: a revoke naming the owner deletes it,
    and the owner no longer reads its knowledge base."""

    def __init__(self) -> None:
        super().__init__()
        self._ousted: set[int] = set()

    def revoke(self, kb: int, grantee: int) -> None:
        super().revoke(kb, grantee)
        owner = self._db.execute("SELECT owner FROM kbs WHERE id = ?", (kb,)).fetchone()
        if owner is not None and int(owner[0]) == grantee:
            self._ousted.add(kb)

    def _kept(self, tenant: int, rows: list[KbRow]) -> list[KbRow]:
        return [row for row in rows if not (row.owner == tenant and row.id in self._ousted)]

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        found = super().readable(tenant, externals)
        return {row.external: row for row in self._kept(tenant, list(found.values()))}

    def readable_by(self, tenant: int) -> list[KbRow]:
        return self._kept(tenant, super().readable_by(tenant))


class OwnerRevokesItself(OtherCatalogue):
    """Ownership is kept as a grant row (:class:`_OwnerAsGrant`)."""

    catalogue_kind = _OwnerAsGrant


class _ReusedIds(Catalogue):
    """Knowledge bases get ``INTEGER PRIMARY KEY`` ids without ``AUTOINCREMENT``, and a delete
    removes the row: the newest knowledge base's id is given again after it is deleted."""

    def __init__(self) -> None:
        super().__init__()
        self._db.executescript(
            "PRAGMA foreign_keys = OFF; DROP TABLE grants; DROP TABLE kbs;"
            "CREATE TABLE kbs (id INTEGER PRIMARY KEY, external TEXT NOT NULL UNIQUE, owner INTEGER NOT NULL,"
            " store TEXT NOT NULL, model TEXT NOT NULL, state TEXT NOT NULL);"
            "CREATE TABLE grants (kb INTEGER NOT NULL, grantee INTEGER NOT NULL, PRIMARY KEY (kb, grantee));"
        )

    def discard(self, kb: int) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM grants WHERE kb = ?", (kb,))
            self._db.execute("DELETE FROM kbs WHERE id = ?", (kb,))


class DeleteReusesIds(OtherCatalogue):
    """Deleting a knowledge base drops its catalogue row and leaves its documents to a purge
    that never comes; ids are reused, so the next knowledge base made inherits them."""

    catalogue_kind = _ReusedIds

    def delete_kb(self, caller: object, kb: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "delete_kb")
            row = self._administered(tenant, kb, "delete_kb")
            self.catalogue.discard(row.id)


class ListShowsShared(KbGrantService):
    """``list_kbs`` shows the caller's own knowledge bases and every one that is shared with
    anybody (a 'shared' flag read as shared with everyone)."""

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        with self._lock:
            tenant = self._caller(caller, "list_kbs")
            rows = self.catalogue._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE k.state = 'live' "
                "AND (k.owner = ? OR EXISTS (SELECT 1 FROM grants g WHERE g.kb = k.id)) ORDER BY k.id",
                (tenant.id,),
            )
            return [self._info(_row(row), "list_kbs") for row in rows]


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-grant-cached",
        GrantCached,
        "a grant once read is kept: a revoke never takes effect",
        ("grant-04", "grant-13", "grant-14"),
    ),
    Mutant(
        "grant-grantee-may-administer",
        GranteeMayAdminister,
        "administering checks read access only: a grantee shares, ingests, moves and deletes",
        ("grant-04", "grant-12", "grant-14"),
    ),
    Mutant(
        "grant-delete-keeps-grants",
        DeleteKeepsGrants,
        "a deleted knowledge base keeps its grants and its grantees still read it",
        ("grant-12", "grant-13", "iso-01[list-kbs]", "grant-14"),
    ),
    Mutant(
        "grant-owner-revokes-itself",
        OwnerRevokesItself,
        "the owner's read access is a grant row: revoking the owner as grantee locks it out of "
        "its own knowledge base",
        ("grant-04", "grant-14"),
    ),
    Mutant(
        "grant-delete-reuses-ids",
        DeleteReusesIds,
        "a delete drops the catalogue row only and ids are reused: a new knowledge base inherits "
        "the deleted one's documents",
        ("grant-12",),
    ),
    Mutant(
        "grant-list-shows-shared",
        ListShowsShared,
        "list_kbs shows every knowledge base shared with anybody",
        ("iso-01[list-kbs]",),
    ),
)
