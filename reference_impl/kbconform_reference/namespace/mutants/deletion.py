"""Mutants of the tenant-namespace reference, deletion signals: a tombstone that matches too much
(another tenant, another repository, a prefix, a suffix, another case or normal form), manifests
reconciled against the wrong scope or none, revision boundaries swapped or skipped, deleted_ids
that do not say what was deleted."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from kbconform.errors import RevisionBoundaryUnavailable
from kbconform.identity import Principal
from kbconform_reference.namespace import deletion
from kbconform_reference.namespace.mutants._base import Mutant, all_hits
from kbconform_reference.namespace.service import DeletionResult, KnowledgeBase
from kbconform_reference.namespace.stores import Rows


class CrossTenantTombstone(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        doomed = [
            hit.id
            for hit in all_hits(self)
            if (hit.metadata.get("repoSlug"), hit.metadata.get("sourcePath")) in set(result.paths)
        ]
        self.store.delete(doomed)
        return result


class FilesNotProtected(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        return super().apply_deletion_signal(principal, {k: v for k, v in signal.items() if k != "files"})


def _tenant_rows(kb: KnowledgeBase, principal: Any) -> Rows:
    """Every row of the principal's tenant (authenticated first; a failing store is an error)."""
    tenant = kb._authenticated(principal, "apply_deletion_signal").tenant_id
    with kb._store_call("apply_deletion_signal"):
        return kb.store.get(where={"tenantId": {"$eq": tenant}})


def _reported(result: DeletionResult, ids: Iterable[str]) -> DeletionResult:
    return dataclasses.replace(result, deleted_ids=tuple(sorted(ids)))


class _LooseTombstones(KnowledgeBase):
    """After the exact deletes, every row of the tenant that ``_matches`` a tombstone goes too."""

    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        raise NotImplementedError

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        named = [
            (e.get("repoSlug", signal.get("repoSlug")), e["sourcePath"]) for e in signal.get("deleted", [])
        ]
        rows = _tenant_rows(self, principal)
        extra = [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if any(
                self._matches(str(m["repoSlug"]), str(m["sourcePath"]), r, p)
                for r, p in named
                if r is not None
            )
        ]
        self.store.delete(extra)
        return _reported(result, {*result.deleted_ids, *extra})


class TombstoneIgnoresRepo(_LooseTombstones):
    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        return path == named_path


class TombstoneMatchesPrefix(_LooseTombstones):
    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        return repo == named_repo and path.startswith(named_path)


class TombstoneMatchesSuffix(_LooseTombstones):
    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        return repo == named_repo and path.endswith(named_path)


class TombstoneIgnoresCase(_LooseTombstones):
    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        return repo == named_repo and path.casefold() == named_path.casefold()


class PathsComparedInNfc(_LooseTombstones):
    @staticmethod
    def _matches(repo: str, path: str, named_repo: str, named_path: str) -> bool:
        return repo == named_repo and unicodedata.normalize("NFC", path) == unicodedata.normalize(
            "NFC", named_path
        )


def _written(signal: Mapping[str, Any]) -> set[tuple[str, str]]:
    return {(f.get("repoSlug", signal.get("repoSlug")), f["sourcePath"]) for f in signal.get("files", [])}


class ManifestAcrossRepos(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        manifest = signal.get("manifestSnapshot")
        if manifest is None:
            return result
        keep, written = set(manifest["pathsAfterPush"]), _written(signal)
        rows = _tenant_rows(self, principal)
        extra = [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if m["sourcePath"] not in keep and (m["repoSlug"], m["sourcePath"]) not in written
        ]
        self.store.delete(extra)
        return _reported(result, {*result.deleted_ids, *extra})


class EmptyManifestDeletesNothing(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        self._authenticated(principal, "apply_deletion_signal")
        signal = deletion.check_signal(signal)
        if signal.get("manifestSnapshot", {}).get("pathsAfterPush") != []:
            return super().apply_deletion_signal(principal, signal)
        rest = {k: v for k, v in signal.items() if k != "manifestSnapshot"}  # "no paths": no manifest
        if "deleted" in rest or "baseRevision" in rest:
            return super().apply_deletion_signal(principal, rest)
        return DeletionResult((), ())


class EmptyManifestDeletesTenant(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        if (signal.get("manifestSnapshot") or {}).get("pathsAfterPush") != []:
            return result
        written = _written(signal)
        rows = _tenant_rows(self, principal)
        extra = [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if (m["repoSlug"], m["sourcePath"]) not in written
        ]
        self.store.delete(extra)
        return _reported(result, {*result.deleted_ids, *extra})


class NoMatchDeletesTenant(KnowledgeBase):
    """The store's delete with an empty id list and the tenant filter deletes the whole filter."""

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        if not result.deleted_ids:
            self.store.delete(_tenant_rows(self, principal).ids)
        return result


class TombstoneRepoDefaultsToLegacy(KnowledgeBase):
    """A tombstone without its own repoSlug goes to the pre-repo default repo, not the signal's."""

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        if not isinstance(signal, Mapping) or not isinstance(signal.get("deleted"), list):
            return super().apply_deletion_signal(principal, signal)
        deleted = [{"repoSlug": "default", **e} if isinstance(e, Mapping) else e for e in signal["deleted"]]
        return super().apply_deletion_signal(principal, {**signal, "deleted": deleted})


class _Resolved:
    """A resolver seen through a mutant's mistake."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner


class _SwappedRevisions(_Resolved):
    def deleted_paths(self, repo_slug: str, base: str, head: str) -> Any:
        return self.inner.deleted_paths(repo_slug, head, base)  # (head, base): the diff read backwards


class _SkippedWhenUnavailable(_Resolved):
    def deleted_paths(self, repo_slug: str, base: str, head: str) -> Any:
        if self.inner is None:
            return []
        try:
            return self.inner.deleted_paths(repo_slug, base, head)
        except RevisionBoundaryUnavailable:
            return []  # logged upstream as a warning, and the push goes on


class RevisionsSwapped(KnowledgeBase):
    """The resolver is asked for (head, base) instead of (base, head)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.resolver is not None:
            self.resolver = _SwappedRevisions(self.resolver)


class UnresolvableBoundarySkipped(KnowledgeBase):
    """A boundary the resolver cannot resolve (or no resolver) counts as no deleted paths."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resolver = _SkippedWhenUnavailable(self.resolver)


class ManifestOverridesTombstones(KnowledgeBase):
    """A manifest is taken as the whole truth: a push that carries one has its tombstones dropped."""

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        if isinstance(signal, Mapping) and "manifestSnapshot" in signal and "deleted" in signal:
            signal = {k: v for k, v in signal.items() if k != "deleted"}
        return super().apply_deletion_signal(principal, signal)


class DeletedIdsByPath(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        before = _tenant_rows(self, principal)
        result = super().apply_deletion_signal(principal, signal)
        paths = {path for _, path in result.paths}
        same = [i for i, m in zip(before.ids, before.metadatas, strict=True) if m["sourcePath"] in paths]
        return _reported(result, {*result.deleted_ids, *same})


class DeletedIdsOnePerPath(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        before = _tenant_rows(self, principal)
        where = {
            i: (m["repoSlug"], m["sourcePath"]) for i, m in zip(before.ids, before.metadatas, strict=True)
        }
        result = super().apply_deletion_signal(principal, signal)
        one = {where.get(i, (i, i)): i for i in result.deleted_ids}  # a dict by path keeps one id
        return _reported(result, one.values())


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "cross-tenant-tombstone",
        CrossTenantTombstone,
        "a tombstone deletes the path in every tenant",
        ("delete-01",),
    ),
    Mutant("files-not-protected", FilesNotProtected, "a push deletes the files it writes", ("delete-06",)),
    Mutant(
        "tombstone-ignores-repo",
        TombstoneIgnoresRepo,
        "a tombstone deletes its path in every repo of the tenant",
        ("delete-10", "delete-14"),
    ),
    Mutant(
        "tombstone-matches-prefix",
        TombstoneMatchesPrefix,
        "a tombstone deletes every path it is a prefix of (docs/a deletes docs/a.md, docs/a/x.md)",
        ("delete-11", "delete-14", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "tombstone-matches-suffix",
        TombstoneMatchesSuffix,
        "a tombstone deletes every path ending with it (a.md deletes old/a.md)",
        ("delete-11",),
    ),
    Mutant(
        "tombstone-ignores-case",
        TombstoneIgnoresCase,
        "a tombstone matches paths case-insensitively (Docs/A.md deletes docs/a.md)",
        ("delete-11", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "paths-compared-in-nfc",
        PathsComparedInNfc,
        "a tombstone matches paths after NFC normalization (the NFD name deletes the NFC one)",
        ("delete-11", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "manifest-across-repos",
        ManifestAcrossRepos,
        "a manifest snapshot reconciles every repo of the tenant, not its own",
        ("delete-03", "delete-12", "delete-13", "delete-14"),
    ),
    Mutant(
        "empty-manifest-deletes-nothing",
        EmptyManifestDeletesNothing,
        "an empty pathsAfterPush is read as no manifest, and the repo stays",
        ("delete-13", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "empty-manifest-deletes-tenant",
        EmptyManifestDeletesTenant,
        "an empty pathsAfterPush deletes every repo of the tenant",
        ("delete-13", "delete-14"),
    ),
    Mutant(
        "no-match-deletes-tenant",
        NoMatchDeletesTenant,
        "a signal that matches nothing deletes the whole tenant (an empty id list read as no id filter)",
        ("delete-14", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "deleted-ids-by-path",
        DeletedIdsByPath,
        "deleted_ids also names the chunks of the same path in the tenant's other repos, which stay",
        ("delete-10", "delete-12", "delete-13"),
    ),
    Mutant(
        "deleted-ids-one-per-path",
        DeletedIdsOnePerPath,
        "deleted_ids names one chunk per deleted file, though every section of it was deleted",
        ("delete-10", "delete-12", "delete-13", "delete-14"),
    ),
    Mutant(
        "tombstone-repo-defaults-to-legacy",
        TombstoneRepoDefaultsToLegacy,
        "a tombstone without a repoSlug names the legacy default repo, not the signal's repoSlug",
        ("delete-02",),
    ),
    Mutant(
        "revisions-swapped",
        RevisionsSwapped,
        "the resolver is asked for the revision boundary as (head, base)",
        ("delete-04", "delete-07"),
    ),
    Mutant(
        "unresolvable-boundary-skipped",
        UnresolvableBoundarySkipped,
        "a revision boundary that cannot be resolved (or no resolver) counts as no deleted paths",
        ("delete-05",),
    ),
    Mutant(
        "manifest-overrides-tombstones",
        ManifestOverridesTombstones,
        "a push with a manifest snapshot drops its tombstones: a tombstoned path the manifest lists stays",
        ("delete-07",),
    ),
)
