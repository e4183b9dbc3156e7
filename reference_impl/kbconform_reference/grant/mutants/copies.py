"""Mutants of the kb-grant reference, copies, moves and writes: a copy that trusts its source or
shares its grants, one page read, a move that deletes first, a failed copy that leaves an empty
knowledge base, a delete of the catalogue first, documents written one by one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.errors import NotFound
from kbconform_reference._arguments import describe
from kbconform_reference._mutant_base import Delegating
from kbconform_reference.grant.catalogue import KbRow, Tenant
from kbconform_reference.grant.index import Point, VectorIndex
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService, _name


class CopyTrustsSource(KbGrantService):
    """A copy checks that its source exists, not that the caller may read it."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        if self._copying:
            row = self.catalogue.kb(_name(kb, "kb"))
            if row is None:
                raise NotFound(describe(kb))
            return row
        return super()._readable(tenant, kb)

    _copying = False

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        self._copying = True
        try:
            return super().copy_kb(caller, source, store)
        finally:
            self._copying = False


class CopySharesGrants(KbGrantService):
    """A copy carries the source's grants along: the source's grantees read the copy."""

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        copy = super().copy_kb(caller, source, store)
        with self._lock:
            original, made = self.catalogue.kb(str(source)), self.catalogue.kb(copy)
            assert original is not None
            assert made is not None
            self.catalogue._db.execute(
                "INSERT OR IGNORE INTO grants (kb, grantee) SELECT ?, grantee FROM grants WHERE kb = ? "
                "AND grantee != ?",
                (made.id, original.id, made.owner),
            )
        return copy


class _FirstPage(Delegating[VectorIndex]):
    """A store whose reads of a knowledge base's documents return the first page only (ten)."""

    def points(self, model: str, kb: int, /) -> list[Point]:
        return self.inner.points(model, kb)[:10]


class CopyAndMoveReadOnePage(KbGrantService):
    """A copy or a move reads the source's documents in one page of ten (a scroll never
    continued): the rest are left behind, and lost by a move."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__({k: _FirstPage(v) for k, v in stores.items()}, models, **options)


class MoveDeletesSourceFirst(KbGrantService):
    """A move deletes the source's documents first and then writes the target: a target that
    fails loses them all."""

    def _move(self, row: KbRow, target: str) -> None:
        read = self._call(row.store, "move_kb", lambda index: index.points(row.model, row.id))
        self._call(row.store, "move_kb", lambda index: index.delete_kb(row.model, row.id))
        self.catalogue.rebind(row.id, target)
        self._write(target, row.model, read, "move_kb", visible=True)


class FailedCopyLeavesEmptyKb(KbGrantService):
    """A copy creates its knowledge base first and fills it after: a copy whose store fails
    leaves a new, empty (or half-filled) knowledge base behind."""

    def _copy(self, row: KbRow, external: str, owner: int, target: str) -> None:
        copy = self.catalogue.create_kb(external, owner, target, row.model)
        self._write(target, row.model, self._copies(row, copy), "copy_kb", visible=True)


class DeleteCatalogueFirst(KbGrantService):
    """A delete drops the knowledge base from the catalogue first and then deletes its documents
    from the store: a store that fails leaves the knowledge base gone for everyone while the
    call raises BackendUnavailable (and its documents orphaned on the store)."""

    def delete_kb(self, caller: object, kb: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "delete_kb")
            row = self._administered(tenant, kb, "delete_kb")
            self.catalogue.discard(row.id)
            self._call(row.store, "delete_kb", lambda index: index.delete_kb(row.model, row.id))


class IngestWritesEachDocument(KbGrantService):
    """An ingest writes its documents one store call each, with no undo: a store that fails
    midway keeps the documents written before it while the call raises."""

    def _write(
        self, store: str, model: str, points: Sequence[Point], operation: str, *, visible: bool
    ) -> None:
        if operation != "ingest":
            super()._write(store, model, points, operation, visible=visible)
            return
        for point in points:
            self._call(store, operation, lambda index, point=point: index.upsert(model, [point]))  # type: ignore[misc]


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-copy-trusts-source",
        CopyTrustsSource,
        "a copy checks that its source exists, not that the caller reads it",
        ("grant-09",),
    ),
    Mutant(
        "grant-copy-shares-grants",
        CopySharesGrants,
        "a copy carries the source's grants along",
        ("grant-04", "grant-09", "grant-14", "iso-01[list-kbs]"),
    ),
    Mutant(
        "grant-copy-and-move-read-one-page",
        CopyAndMoveReadOnePage,
        "a copy or move reads the source's first ten documents only",
        ("grant-10",),
    ),
    Mutant(
        "grant-move-deletes-source-first",
        MoveDeletesSourceFirst,
        "a move deletes the source before it writes the target: a failing target loses everything",
        ("grant-11",),
    ),
    Mutant(
        "grant-failed-copy-leaves-empty-kb",
        FailedCopyLeavesEmptyKb,
        "a copy creates its knowledge base before filling it: a failed copy leaves it behind",
        ("grant-11", "grant-14"),
    ),
    Mutant(
        "grant-delete-catalogue-first",
        DeleteCatalogueFirst,
        "a delete drops the catalogue row before the store's documents: a failing store leaves "
        "the knowledge base gone while the call raises",
        ("grant-16",),
    ),
    Mutant(
        "grant-ingest-writes-each-document",
        IngestWritesEachDocument,
        "an ingest writes each document in its own store call with no undo: a store failing "
        "midway keeps the first documents while the call raises",
        ("grant-16",),
    ),
)
