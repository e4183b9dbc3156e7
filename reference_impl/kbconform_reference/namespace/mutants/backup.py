"""Mutants of the tenant-namespace reference, backup and restore: lossy or partial exports,
exports that are not the store, restores that write part of a batch, restore unscoped or open
to members."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.records import as_hits
from kbconform_reference.namespace.service import DeletionResult, Hit, IngestResult, KnowledgeBase


class LossyExport(KnowledgeBase):
    def export(self, principal: Principal) -> builtins.list[dict[str, Any]]:
        return [{**r, "embedding": [round(x, 4) for x in r["embedding"]]} for r in super().export(principal)]


class RestoresUntilInvalid(KnowledgeBase):
    def restore(self, principal: Principal, records: Iterable[Mapping[str, Any]]) -> int:
        written = 0
        for record in records:
            written += super().restore(principal, [record])
        return written


class ExportForMembers(KnowledgeBase):
    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if operation != "export":
            KnowledgeBase._operator(principal, operation)


class RestoreForMembers(KnowledgeBase):
    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if operation != "restore":
            KnowledgeBase._operator(principal, operation)


LEGACY = {"tenantId": "default", "repoSlug": "default", "sourcePath": "unknown", "visibility": "public"}


class UnscopedRestoreToLegacy(KnowledgeBase):
    """Rows without scope stamps go to the pre-tenancy default namespace, which everyone reads."""

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        checked = KnowledgeBase._authenticated(principal, operation)
        return checked.with_namespaces(checked.readable_namespaces | {LEGACY["tenantId"]})

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        filled = [
            {**r, "metadata": {**LEGACY, **r["metadata"]}}
            if isinstance(r, Mapping) and isinstance(r.get("metadata"), Mapping)
            else r
            for r in records
        ]
        return super().restore(principal, filled)


class VisibilityTableFromIngest(KnowledgeBase):
    """get checks visibility in a table ingest fills; restore writes rows and not the table."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.visibility: dict[str, str] = {}

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        result = super().ingest(principal, records, *args, **kwargs)
        rows = self.store.get(ids=list(dict.fromkeys(result.ids)))
        self.visibility.update(
            {i: str(m["visibility"]) for i, m in zip(rows.ids, rows.metadatas, strict=True)}
        )
        return result

    def get(self, principal: Any, chunk_id: str) -> Hit:
        principal = self._authenticated(principal, "get")
        with self._store_call("get"):
            rows = self.store.get(
                ids=[chunk_id], where={"tenantId": {"$in": list(principal.readable_tenants)}}
            )
        for hit in as_hits(rows):
            seen = {**hit.metadata, "visibility": self.visibility.get(hit.id, hit.metadata.get("visibility"))}
            if read_filter.in_scope(principal, seen):
                return hit
        raise NotFound(chunk_id)


class ExportKeepsDeletedRows(KnowledgeBase):
    """export reads a journal of every row written, which deletion signals never touch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.journal: dict[str, dict[str, Any]] = {}

    def _log(self, ids: Sequence[str]) -> None:
        rows = self.store.get(ids=list(dict.fromkeys(ids)), embeddings=True)
        assert rows.embeddings is not None or not rows.ids
        for n, row_id in enumerate(rows.ids):
            assert rows.embeddings is not None
            self.journal[row_id] = {
                "id": row_id,
                "embedding": [float(x) for x in rows.embeddings[n].astype(np.float32)],
                "metadata": dict(rows.metadatas[n]),
                "document": rows.documents[n],
            }

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        result = super().ingest(principal, records, *args, **kwargs)
        self._log(result.ids)
        return result

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        records = builtins.list(records)
        written = super().restore(principal, records)
        self._log([r["id"] for r in records])
        return written

    def export(self, principal: Any) -> builtins.list[dict[str, Any]]:
        super().export(principal)  # the same rights check
        return [self.journal[i] for i in sorted(self.journal)]


class ExportFirstPageOnly(KnowledgeBase):
    def export(self, principal: Any) -> builtins.list[dict[str, Any]]:
        return super().export(principal)[:100]  # one page of the store's listing


class NullDocumentRestoredEmpty(KnowledgeBase):
    """restore writes a null document as "" (the store's text column is NOT NULL)."""

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        return super().restore(
            principal,
            [
                {**r, "document": ""} if isinstance(r, Mapping) and r.get("document", "") is None else r
                for r in records
            ],
        )


class RestoreWarmsGetCache(KnowledgeBase):
    """restore warms a cache by id that get serves from: rows an operator restored are not
    checked against the reader's scope."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.warm: dict[str, Hit] = {}

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        records = builtins.list(records)
        written = super().restore(principal, records)
        self.warm.update({r["id"]: Hit(r["id"], r["document"], dict(r["metadata"])) for r in records})
        return written

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        self.warm.clear()
        return super().ingest(principal, records, *args, **kwargs)

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        self.warm.clear()
        return super().apply_deletion_signal(principal, signal)

    def get(self, principal: Any, chunk_id: str) -> Hit:
        self._authenticated(principal, "get")
        if chunk_id in self.warm:
            return self.warm[chunk_id]
        return super().get(principal, chunk_id)


MUTANTS: tuple[Mutant, ...] = (
    Mutant("lossy-export", LossyExport, "export rounds embeddings to 4 decimals", ("backup-01",)),
    Mutant(
        "restores-until-invalid",
        RestoresUntilInvalid,
        "restore writes the valid records before the invalid one",
        ("backup-03[a record without an embedding]",),
    ),
    Mutant("export-for-members", ExportForMembers, "members may export", ("backup-05[export]",)),
    Mutant(
        "restore-for-members",
        RestoreForMembers,
        "members may restore, rows stamped for other tenants included",
        ("backup-05[restore]",),
    ),
    Mutant(
        "unscoped-restore-to-legacy",
        UnscopedRestoreToLegacy,
        "restored rows missing a scope stamp land in a legacy default namespace every principal reads",
        ("contract-04",),
    ),
    Mutant(
        "visibility-table-from-ingest",
        VisibilityTableFromIngest,
        "get checks visibility in a table filled at ingest; a restored visibility change is not read",
        ("backup-06", "shadow-04"),
    ),
    Mutant(
        "export-keeps-deleted-rows",
        ExportKeepsDeletedRows,
        "export reads a journal of writes: deleted rows and stale text come back",
        ("backup-07",),
    ),
    Mutant(
        "export-first-page-only",
        ExportFirstPageOnly,
        "export returns the first page of 100 rows",
        ("backup-07",),
    ),
    Mutant(
        "null-document-restored-empty",
        NullDocumentRestoredEmpty,
        "restore writes a null document as an empty string",
        ("backup-02",),
    ),
    Mutant(
        "restore-warms-get-cache",
        RestoreWarmsGetCache,
        "restore warms a get cache by id that skips the reader's scope: restored foreign ids read",
        ("backup-04",),
    ),
)
