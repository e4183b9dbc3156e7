"""Mutants of the tenant-namespace reference that read their input leniently: unknown fields
dropped instead of refused (the contract suite)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbconform.contract import load
from kbconform.identity import Principal
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import DeletionResult, IngestResult, KnowledgeBase


def _known(record: Any, schema: str, *dropped: str) -> Any:
    """A lenient reader: unknown fields (and ``dropped``) silently removed instead of refused."""
    if not isinstance(record, Mapping):
        return record
    known = set(load(schema)["properties"]) - set(dropped)
    return {key: value for key, value in record.items() if key in known}


class LenientIngest(KnowledgeBase):
    def ingest(
        self, principal: Principal, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        return super().ingest(
            principal, [_known(r, "parsed-chunk-v1", "embedding") for r in records], *args, **kwargs
        )


class LenientRestore(KnowledgeBase):
    def restore(self, principal: Principal, records: Iterable[Mapping[str, Any]]) -> int:
        return super().restore(principal, [_known(r, "backup-record-v1") for r in records])


class LenientDeletion(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        return super().apply_deletion_signal(principal, _known(signal, "deletion-signal-v1"))


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "lenient-ingest",
        LenientIngest,
        "ingest drops unknown fields and embeddings instead of refusing the record",
        ("contract-01",),
    ),
    Mutant(
        "lenient-restore",
        LenientRestore,
        "restore drops unknown fields instead of refusing",
        ("contract-02",),
    ),
    Mutant(
        "lenient-deletion",
        LenientDeletion,
        "deletion signals with unknown fields are applied",
        ("contract-03",),
    ),
)
