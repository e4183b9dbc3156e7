"""Mutants of the tenant-namespace reference that prove tests no other mutant names: byte equivalence, restore
and deletion-signal validation, and deleting shared content.

tests/plugin/test_proven.py holds every catalogue id to a mutant or a written reason.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kbconform.errors import ContractViolation
from kbconform.identity import Principal, chunk_id
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import DeletionResult, IngestResult, KnowledgeBase


class ScanIgnoresConfig(KnowledgeBase):
    """A workspace scan always uses the default registry, whatever the configuration says."""

    @staticmethod
    def scan(
        root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str = "bare-repo"
    ) -> builtins.list[dict[str, Any]]:
        return KnowledgeBase.scan(root, None, tenant_id, repo_slug, root_kind)


class ScanReversesRecords(KnowledgeBase):
    """A workspace scan returns its records last first: order is part of the bytes."""

    @staticmethod
    def scan(
        root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str = "bare-repo"
    ) -> builtins.list[dict[str, Any]]:
        return KnowledgeBase.scan(root, config, tenant_id, repo_slug, root_kind)[::-1]


class IdsLeaveOutTheRepo(KnowledgeBase):
    """Chunk ids hash the tenant but not the repository."""

    def _id(self, record: Mapping[str, Any], tenant_id: str) -> str:
        return chunk_id(record, tenant_id, "repo", self.settings.id_profile)


class RestoreWritesTheValidRecords(KnowledgeBase):
    """Restore writes every valid record of a batch, then refuses the batch for its invalid ones."""

    def restore(self, principal: Principal, records: Iterable[Mapping[str, Any]]) -> int:
        written, refused = 0, None
        for record in records:
            try:
                written += super().restore(principal, [record])
            except ContractViolation as error:
                refused = refused or error
        if refused is not None:
            raise refused
        return written


class DeletionCodesLost(KnowledgeBase):
    """An invalid deletion signal is refused, but with the generic code instead of its own."""

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        try:
            return super().apply_deletion_signal(principal, signal)
        except ContractViolation as error:
            raise ContractViolation(contract=error.contract, problems=error.problems) from None


class MemberDeletesShared(KnowledgeBase):
    """A member of the shared namespace may apply deletion signals to its content (not write it)."""

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        checked = self._authenticated(principal, "apply_deletion_signal")
        if checked.tenant_id in self.settings.shared_namespaces:
            checked = checked.with_role("operator")
        return super().apply_deletion_signal(checked, signal)


class CustomMetaSpoofsUnwarned(KnowledgeBase):
    """Overwrite mode stamps over spoofed customMeta fields without a warning (tenantId still warns)."""

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        result = super().ingest(principal, records, *args, **kwargs)
        kept = tuple(w for w in result.warnings if not w.field.startswith("customMeta."))
        return dataclasses.replace(result, warnings=kept)


class RejectModeOverwrites(KnowledgeBase):
    """Opened in reject mode, ingest overwrites spoofs (with warnings) instead of refusing the batch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = dataclasses.replace(self.settings, spoof_mode="overwrite")


_GUARDED = (
    "customMeta.ingestedAt",
    "customMeta.originAgentIdentity",
    "customMeta.repoSlug",
    "customMeta.tenantConfigVersion",
    "customMeta.tenantId",
    "customMeta.visibility",
)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "scan-ignores-config",
        ScanIgnoresConfig,
        "a workspace scan uses the default registry whatever the configuration says",
        ("bytes-02[custom]", "bytes-03"),
    ),
    Mutant(
        "scan-reverses-records",
        ScanReversesRecords,
        "a workspace scan returns its records last first",
        ("bytes-02[custom]", "bytes-02[mini]", "bytes-03"),
    ),
    Mutant(
        "ids-leave-out-the-repo",
        IdsLeaveOutTheRepo,
        "chunk ids hash the tenant but not the repository",
        ("bytes-01[custom]", "bytes-01[mini]"),
    ),
    Mutant(
        "restore-writes-the-valid-records",
        RestoreWritesTheValidRecords,
        "restore writes every valid record of a batch before refusing it for the invalid ones",
        tuple(
            f"backup-03[{case}]"
            for case in (
                "a record with a string embedding",
                "a record with an empty id",
                "a record with an unknown field",
                "a record without an embedding",
            )
        ),
    ),
    Mutant(
        "deletion-codes-lost",
        DeletionCodesLost,
        "an invalid deletion signal is refused with the generic code, not its own",
        tuple(
            f"delete-08[{case}]"
            for case in (
                "a base without a head",
                "a manifest without its repo",
                "a path both tombstoned and written",
                "a tombstone with an absolute path",
                "an empty tombstone list",
                "no mechanism at all",
            )
        ),
    ),
    Mutant(
        "member-deletes-shared",
        MemberDeletesShared,
        "a member of the shared namespace may delete its content",
        ("delete-09",),
    ),
    Mutant(
        "custom-meta-spoofs-unwarned",
        CustomMetaSpoofsUnwarned,
        "overwrite mode stamps over spoofed customMeta fields without a warning",
        tuple(f"spoof-01[overwrite-{field}]" for field in _GUARDED),
    ),
    Mutant(
        "reject-mode-overwrites",
        RejectModeOverwrites,
        "reject mode overwrites spoofs instead of refusing the batch",
        (*(f"spoof-01[reject-{field}]" for field in (*_GUARDED, "tenantId")), "spoof-02[reject]"),
    ),
)
