"""Mutants of the reference's sync and maintenance (schemas/maintenance.md)."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.identity import Principal
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import MAINTENANCE, KnowledgeBase, SyncResult
from kbconform_reference.namespace.stores import Rows


class SyncDeletesEveryTenant(KnowledgeBase):
    """A sync's stale chunks are the repository's, whichever tenant holds them."""

    def _stale(self, principal: Principal, repo_slug: str, keep: set[str]) -> builtins.list[str]:
        rows = self.store.get(where={"repoSlug": {"$eq": repo_slug}})
        return [i for i, m in zip(rows.ids, rows.metadatas, strict=True) if m["sourcePath"] not in keep]


class SyncByRepoPrefix(KnowledgeBase):
    """A sync's repository matches every repository whose slug starts with it."""

    def _stale(self, principal: Principal, repo_slug: str, keep: set[str]) -> builtins.list[str]:
        rows = self.store.get(where={"tenantId": {"$eq": principal.tenant_id}})
        return [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if str(m["repoSlug"]).startswith(repo_slug) and m["sourcePath"] not in keep
        ]


class SyncTrustsRecordTenant(KnowledgeBase):
    """A sync replaces the repository of the tenant its first record claims."""

    def sync(
        self, principal: Principal, repo_slug: str, records: Sequence[Mapping[str, Any]], *args: Any
    ) -> SyncResult:
        claimed = records[0].get("tenantId") if records and isinstance(records[0], Mapping) else None
        self._claimed = claimed if isinstance(claimed, str) else None
        return super().sync(principal, repo_slug, records, *args)

    def _stale(self, principal: Principal, repo_slug: str, keep: set[str]) -> builtins.list[str]:
        claimed = getattr(self, "_claimed", None)
        return super()._stale(Principal(claimed) if claimed else principal, repo_slug, keep)


class SyncOverwritesInRejectMode(KnowledgeBase):
    """A sync overwrites spoofed fields even when the backend is in reject mode."""

    def sync(
        self, principal: Principal, repo_slug: str, records: Sequence[Mapping[str, Any]], *args: Any
    ) -> SyncResult:
        settings = self.settings
        self.settings = dataclasses.replace(settings, spoof_mode="overwrite")
        try:
            return super().sync(principal, repo_slug, records, *args)
        finally:
            self.settings = settings


class SyncUnchecked(KnowledgeBase):
    """A sync takes any repository and records of other repositories."""

    def sync(
        self, principal: Principal, repo_slug: str, records: Sequence[Mapping[str, Any]], *args: Any
    ) -> SyncResult:
        principal = self._authenticated(principal, "sync")
        return self._write("sync", principal, records, stale=str(repo_slug), envelope=(*args, None)[0])


class SharedMembersSync(KnowledgeBase):
    """A member of the shared namespace may sync it."""

    def _may_write(self, principal: Principal, operation: str) -> None:
        if operation != "sync":
            super()._may_write(principal, operation)


class MaintenanceForMembers(KnowledgeBase):
    """Any authenticated principal may run maintenance."""

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if operation != "maintain":
            KnowledgeBase._operator(principal, operation)


class MaintainsAnyName(KnowledgeBase):
    """A maintenance operation the backend does not know runs as its first one."""

    def maintain(self, principal: Principal, operation: str) -> None:
        known = operation in MAINTENANCE
        super().maintain(principal, operation if known else MAINTENANCE[0])


class RebuildForgetsVisibility(KnowledgeBase):
    """Re-embedding writes every row back as team-visible: private chunks open to the tenant."""

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        if operation == "maintain" and write is not None:
            metadatas = tuple({**m, "visibility": "team"} for m in write.metadatas)
            write = Rows(write.ids, write.documents, metadatas, write.embeddings)
        super()._apply(operation, prior, write, delete)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "maintains-any-name",
        MaintainsAnyName,
        "a maintenance operation the manifest does not name runs as the first one it does",
        ("maint-04",),
    ),
    Mutant(
        "sync-deletes-every-tenant",
        SyncDeletesEveryTenant,
        "a sync deletes every tenant's stale chunks of the repository",
        ("sync-01", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "sync-by-repo-prefix",
        SyncByRepoPrefix,
        "a sync replaces every repository whose slug starts with its own",
        ("sync-01", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "sync-trusts-record-tenant",
        SyncTrustsRecordTenant,
        "a sync deletes the stale chunks of the tenant its first record claims",
        ("sync-02[overwrite]", "state-01[overwrite]"),
    ),
    Mutant(
        "sync-overwrites-in-reject-mode",
        SyncOverwritesInRejectMode,
        "a sync overwrites spoofs in reject mode",
        ("sync-02[reject]", "state-01[reject]"),
    ),
    Mutant(
        "sync-unchecked",
        SyncUnchecked,
        "a sync takes any repository, and records of another",
        tuple(
            f"sync-03[{case}]"
            for case in (
                "a record of another repository",
                "an empty repository",
                "a repository outside the slug syntax",
                "no repository",
            )
        ),
    ),
    Mutant(
        "shared-members-sync",
        SharedMembersSync,
        "a member of the shared namespace may sync it",
        ("sync-04", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "maintenance-for-members",
        MaintenanceForMembers,
        "any member may run whole-corpus maintenance",
        ("maint-02",),
    ),
    Mutant(
        "rebuild-forgets-visibility",
        RebuildForgetsVisibility,
        "re-embedding turns private chunks team-visible",
        ("maint-01",),
    ),
)
