"""Mutants of the tenant-namespace reference that break all-or-nothing writes when the store fails part-way.

They run in memory mode, whose store takes 64 rows a page, so the atomicity suite's batches of 200
rows are written in four store calls and a fault can open between two of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import KnowledgeBase, _Undo
from kbconform_reference.namespace.stores import Rows


class WritesPagesWithoutRollback(KnowledgeBase):
    """The reference before rollback: ingest and restore write page by page and keep the pages
    that landed before the store failed."""

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        if write is None:
            super()._apply(operation, prior, write, delete)
            return
        with self._store_call(operation):
            self._upsert(write)


class DeletesPagesWithoutRollback(KnowledgeBase):
    """Deletion signals delete page by page and keep the deletes that landed before the store failed."""

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        if write is not None:
            super()._apply(operation, prior, write, delete)
            return
        with self._store_call(operation):
            self._delete(delete)


class RollbackKeepsNewRows(KnowledgeBase):
    """A rollback writes the prior rows back but leaves the rows the batch added."""

    def _undo(self, undo: _Undo) -> None:
        self._upsert(undo.prior)


class RollbackRestampsIngestedAt(KnowledgeBase):
    """A rollback writes the prior rows back stamped anew: every row the failed write touched
    reads as ingested at the rollback."""

    def _undo(self, undo: _Undo) -> None:
        stamp = self.now()
        metadatas = tuple({**m, "ingestedAt": stamp} for m in undo.prior.metadatas)
        prior = Rows(undo.prior.ids, undo.prior.documents, metadatas, undo.prior.embeddings)
        super()._undo(_Undo(undo.operation, undo.added, prior, undo.acts))


class ReadsDuringPendingRollback(KnowledgeBase):
    """Reads skip the pending rollback (only writes replay it): a half-written batch is readable
    until the next write."""

    def _settle(self, operation: str) -> None:
        if operation in ("ingest", "restore", "apply_deletion_signal"):
            super()._settle(operation)


class SyncDeletesWithoutRollback(KnowledgeBase):
    """A sync writes its records all or nothing, then deletes the stale chunks page by page
    and keeps the deletes that landed before the store failed (two steps, one undo log)."""

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        if operation != "sync" or not delete:
            super()._apply(operation, prior, write, delete)
            return
        super()._apply(operation, prior, write)
        with self._store_call(operation):
            self._delete(delete)


_INGEST = ("atomic-01[lasting]", "atomic-01[transient]")
_RESTORE = ("atomic-02[lasting]", "atomic-02[transient]")
_DELETE = ("atomic-03[lasting]", "atomic-03[transient]")
_SYNC = ("atomic-04[lasting]", "atomic-04[transient]")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "writes-pages-without-rollback",
        WritesPagesWithoutRollback,
        "ingest, restore and sync keep the pages written before the store failed",
        (*_INGEST, *_RESTORE, *_SYNC),
    ),
    Mutant(
        "deletes-pages-without-rollback",
        DeletesPagesWithoutRollback,
        "a deletion signal keeps the pages deleted before the store failed",
        _DELETE,
    ),
    Mutant(
        "rollback-keeps-new-rows",
        RollbackKeepsNewRows,
        "the rollback of a failed write restores overwritten rows but keeps the new ones",
        (*_INGEST, *_RESTORE, *_SYNC),
    ),
    Mutant(
        "rollback-restamps-ingested-at",
        RollbackRestampsIngestedAt,
        "the rollback of a failed write writes the prior rows back with a new ingestedAt",
        (*_INGEST, *_RESTORE, *_DELETE, *_SYNC),
    ),
    Mutant(
        "reads-during-pending-rollback",
        ReadsDuringPendingRollback,
        "a rollback the store refused is replayed before writes only: reads see the half-written batch",
        ("atomic-01[lasting]", "atomic-02[lasting]", "atomic-03[lasting]", "atomic-04[lasting]"),
    ),
    Mutant(
        "sync-deletes-without-rollback",
        SyncDeletesWithoutRollback,
        "a sync keeps the stale chunks it deleted before the store failed (its writes roll back)",
        _SYNC,
    ),
)
