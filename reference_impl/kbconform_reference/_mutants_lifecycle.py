"""Mutants of the reference, write side and lifecycle: spoof, shadow ids, deletion and backup.

Each entry is ``(name, kind, breaks, killers)``: a :class:`KnowledgeBase` subclass with one
invariant broken, and the suite test ids that must fail against it (see ``mutants.py``). Each
is a bug class that real systems shipped: loose path matching, reconciling the wrong scope,
an index or cache a delete forgets, ids that leave out a part or join parts ambiguously,
client metadata on top of stamps, unscoped restores, exports that are not the store.
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import json
import time
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kbconform.errors import NotFound, RevisionBoundaryUnavailable
from kbconform.identity import RESERVED_FIELDS, Principal, chunk_id
from kbconform_reference import deletion, read_filter
from kbconform_reference.service import DeletionResult, Hit, IngestResult, KnowledgeBase
from kbconform_reference.stores import MemoryStore, Rows


def _tenant_rows(kb: KnowledgeBase, principal: Any) -> Rows:
    """Every row of the principal's tenant (authenticated first; a failing store is an error)."""
    tenant = kb._authenticated(principal, "apply_deletion_signal").tenant_id
    with kb._store_call("apply_deletion_signal"):
        return kb.store.get(where={"tenantId": {"$eq": tenant}})


def _hits(rows: Rows) -> builtins.list[Hit]:
    return [Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)]


def _reported(result: DeletionResult, ids: Iterable[str]) -> DeletionResult:
    return dataclasses.replace(result, deleted_ids=tuple(sorted(ids)))


# -- deletion: what a tombstone matches ---------------------------------------------------------


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


# -- deletion: manifests and signals that match nothing ----------------------------------------


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


# -- deletion: what deleted_ids says ------------------------------------------------------------


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


# -- deletion: an index or cache the delete forgets --------------------------------------------


class QueryIndexOutlivesDelete(KnowledgeBase):
    """query searches a second index that ingest and restore fill and deletes never touch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.index = MemoryStore()

    def _mirror(self, ids: Sequence[str]) -> None:
        rows = self.store.get(ids=list(dict.fromkeys(ids)), embeddings=True)
        if rows.ids:
            assert rows.embeddings is not None
            self.index.upsert(rows.ids, rows.embeddings, rows.documents, rows.metadatas)

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        result = super().ingest(principal, records, *args, **kwargs)
        self._mirror(result.ids)
        return result

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        records = builtins.list(records)
        written = super().restore(principal, records)
        self._mirror([r["id"] for r in records])
        return written

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        scoped = read_filter.build_where(principal, where)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        with self._store_call("query"):
            self.store.get(where=scoped, limit=1)  # the store is asked, then the index answers
            matches = self.index.query(embedding, n_results, scoped)
        found = [Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance) for m in matches]
        return self._checked(principal, "query", found)


class _CacheForgottenByDelete(KnowledgeBase):
    """A read cache that ingest and restore clear and deletion signals forget to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[Any, Any] = {}

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        self.cache.clear()
        return super().ingest(principal, records, *args, **kwargs)

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        self.cache.clear()
        return super().restore(principal, records)


class GetCacheOutlivesDelete(_CacheForgottenByDelete):
    def get(self, principal: Any, chunk_id: str) -> Hit:
        if not isinstance(principal, Principal):
            return super().get(principal, chunk_id)
        key = (principal.tenant_id, principal.agent_identity, principal.readable_tenants, chunk_id)
        if key not in self.cache:
            self.cache[key] = super().get(principal, chunk_id)
        cached: Hit = self.cache[key]
        return cached


class CountCacheOutlivesDelete(_CacheForgottenByDelete):
    def count(self, principal: Any, where: Any = None) -> int:
        if not isinstance(principal, Principal):
            return super().count(principal, where)
        key = (principal.tenant_id, principal.agent_identity, principal.readable_tenants, json.dumps(where))
        if key not in self.cache:
            self.cache[key] = super().count(principal, where)
        cached: int = self.cache[key]
        return cached


class ListCacheOutlivesDelete(_CacheForgottenByDelete):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        if not isinstance(principal, Principal):
            return super().list(principal, limit, offset, where)
        key = (
            principal.tenant_id,
            principal.agent_identity,
            principal.readable_tenants,
            limit,
            offset,
            json.dumps(where),
        )
        if key not in self.cache:
            self.cache[key] = super().list(principal, limit, offset, where)
        cached: builtins.list[Hit] = self.cache[key]
        return builtins.list(cached)


# -- re-ingest ----------------------------------------------------------------------------------


class _Rewrites(KnowledgeBase):
    """After an ingest, ``_rewrite`` gets each written row that existed before, then and now."""

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        with self._store_call("ingest"):
            before = self.store.get(embeddings=True)
        result = super().ingest(principal, records, *args, **kwargs)
        old = {i: n for n, i in enumerate(before.ids)}
        after = self.store.get(ids=[i for i in dict.fromkeys(result.ids) if i in old], embeddings=True)
        assert before.embeddings is not None
        assert after.embeddings is not None
        for n, row_id in enumerate(after.ids):
            then = (
                before.embeddings[old[row_id]],
                before.documents[old[row_id]],
                before.metadatas[old[row_id]],
            )
            now = (after.embeddings[n], after.documents[n], after.metadatas[n])
            embedding, document, metadata = self._rewrite(then, now)
            self.store.upsert([row_id], np.asarray([embedding], dtype=np.float32), [document], [metadata])
        return result

    def _rewrite(self, then: tuple[Any, Any, Any], now: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        raise NotImplementedError


class ReingestKeepsStaleEmbedding(_Rewrites):
    def _rewrite(self, then: tuple[Any, Any, Any], now: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        return (then[0], now[1], now[2])  # text and metadata updated, the vector not recomputed


class ReingestKeepsFirstWrite(_Rewrites):
    def _rewrite(self, then: tuple[Any, Any, Any], now: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        return then  # insert-if-absent: an id that exists is not written again


class ReingestRestampsIngestedAt(_Rewrites):
    def _rewrite(self, then: tuple[Any, Any, Any], now: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
        return (now[0], now[1], {**now[2], "ingestedAt": self.now()})


class ReingestRestampsIngestedAtToTheSecond(KnowledgeBase):
    """A clock read to the second, and every write stamps it: a re-send within the same second
    stamps the same value and writes nothing; a later one rewrites the row with a new value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    def _metadata(  # type: ignore[override]  # a method: the stamp is read from this clock
        self, record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str
    ) -> dict[str, Any]:
        return KnowledgeBase._metadata(record, stamps, self.now())


# -- stamps -------------------------------------------------------------------------------------


class NoConfigVersion(KnowledgeBase):
    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        metadata = KnowledgeBase._metadata(record, stamps, ingested_at)
        del metadata["tenantConfigVersion"]  # spoofs are still checked against it; it is never stored
        return metadata


# -- ids ----------------------------------------------------------------------------------------


class RepolessIds(KnowledgeBase):
    def _id(self, record: Mapping[str, Any], tenant_id: str) -> str:
        return chunk_id(record, tenant_id, "default", self.settings.id_profile)


class _JoinedIds(KnowledgeBase):
    separator = ""

    def _id(self, record: Mapping[str, Any], tenant_id: str) -> str:
        parts = [tenant_id, record["repoSlug"], *(str(record[field]) for field in record["hashInputs"])]
        return hashlib.sha256(self.separator.join(parts).encode("utf-8")).hexdigest()


class DashJoinedIds(_JoinedIds):
    separator = "-"


class SlashJoinedIds(_JoinedIds):
    separator = "/"


class _TenantScopedLookups:
    """A store whose lookups by id see only ``tenant``'s rows while ``tenant`` is set."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.tenant: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def get(self, *, ids: Any = None, where: Any = None, **kwargs: Any) -> Rows:
        if self.tenant is not None and ids is not None and where is None:
            where = {"tenantId": {"$eq": self.tenant}}
        rows: Rows = self._inner.get(ids=ids, where=where, **kwargs)
        return rows


class TakenIdLookedUpInTenant(KnowledgeBase):
    """ingest looks up the ids it will write within the writer's tenant only: an id another
    tenant holds reads as free, and the write takes it over."""

    def __init__(self, store: Any, **kwargs: Any) -> None:
        self.scoped = _TenantScopedLookups(store)
        super().__init__(self.scoped, **kwargs)

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        self.scoped.tenant = principal.tenant_id if isinstance(principal, Principal) else None
        try:
            return super().ingest(principal, records, *args, **kwargs)
        finally:
            self.scoped.tenant = None


# -- stamping -----------------------------------------------------------------------------------


class OriginAgentFromClaim(KnowledgeBase):
    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        metadata = KnowledgeBase._metadata(record, stamps, ingested_at)
        claimed = (record.get("customMeta") or {}).get("originAgentIdentity")
        if "originAgentIdentity" not in stamps and isinstance(claimed, str):
            metadata["originAgentIdentity"] = claimed  # no agent on the principal: the record's word
        return metadata


class CustomMetaFlattened(KnowledgeBase):
    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        metadata = KnowledgeBase._metadata(record, stamps, ingested_at)
        custom = {
            k: v
            for k, v in (record.get("customMeta") or {}).items()
            if k not in RESERVED_FIELDS and isinstance(v, (str, int, float, bool))
        }
        return {**metadata, **custom}  # only the guarded keys are held back


# -- backup -------------------------------------------------------------------------------------

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
        for hit in _hits(rows):
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


MUTANTS: tuple[tuple[str, type, str, tuple[str, ...]], ...] = (
    (
        "tombstone-ignores-repo",
        TombstoneIgnoresRepo,
        "a tombstone deletes its path in every repo of the tenant",
        ("delete-10", "delete-14"),
    ),
    (
        "tombstone-matches-prefix",
        TombstoneMatchesPrefix,
        "a tombstone deletes every path it is a prefix of (docs/a deletes docs/a.md, docs/a/x.md)",
        ("delete-11", "delete-14", "state-01[overwrite]", "state-01[reject]"),
    ),
    (
        "tombstone-matches-suffix",
        TombstoneMatchesSuffix,
        "a tombstone deletes every path ending with it (a.md deletes old/a.md)",
        ("delete-11",),
    ),
    (
        "tombstone-ignores-case",
        TombstoneIgnoresCase,
        "a tombstone matches paths case-insensitively (Docs/A.md deletes docs/a.md)",
        ("delete-11", "state-01[overwrite]", "state-01[reject]"),
    ),
    (
        "paths-compared-in-nfc",
        PathsComparedInNfc,
        "a tombstone matches paths after NFC normalization (the NFD name deletes the NFC one)",
        ("delete-11", "state-01[overwrite]", "state-01[reject]"),
    ),
    (
        "manifest-across-repos",
        ManifestAcrossRepos,
        "a manifest snapshot reconciles every repo of the tenant, not its own",
        ("delete-03", "delete-12", "delete-13", "delete-14"),
    ),
    (
        "empty-manifest-deletes-nothing",
        EmptyManifestDeletesNothing,
        "an empty pathsAfterPush is read as no manifest, and the repo stays",
        ("delete-13",),
    ),
    (
        "empty-manifest-deletes-tenant",
        EmptyManifestDeletesTenant,
        "an empty pathsAfterPush deletes every repo of the tenant",
        ("delete-13", "delete-14"),
    ),
    (
        "no-match-deletes-tenant",
        NoMatchDeletesTenant,
        "a signal that matches nothing deletes the whole tenant (an empty id list read as no id filter)",
        ("delete-14",),
    ),
    (
        "deleted-ids-by-path",
        DeletedIdsByPath,
        "deleted_ids also names the chunks of the same path in the tenant's other repos, which stay",
        ("delete-10", "delete-12", "delete-13"),
    ),
    (
        "deleted-ids-one-per-path",
        DeletedIdsOnePerPath,
        "deleted_ids names one chunk per deleted file, though every section of it was deleted",
        ("delete-10", "delete-12", "delete-13", "delete-14"),
    ),
    (
        "query-index-outlives-delete",
        QueryIndexOutlivesDelete,
        "query and ask search a second index that deletes never reach",
        ("delete-15[query]", "delete-15[ask]"),
    ),
    (
        "get-cache-outlives-delete",
        GetCacheOutlivesDelete,
        "get reads through a cache that deletion signals do not clear",
        ("delete-15[get]", "iso-03[get]"),
    ),
    (
        "count-cache-outlives-delete",
        CountCacheOutlivesDelete,
        "count is cached, and deletion signals do not clear the cache",
        ("delete-15[count]", "iso-03[count]"),
    ),
    (
        "reingest-keeps-stale-embedding",
        ReingestKeepsStaleEmbedding,
        "re-ingested content replaces the text but keeps the old embedding",
        ("shadow-07",),
    ),
    (
        "reingest-keeps-first-write",
        ReingestKeepsFirstWrite,
        "an id that exists is never written again: changed content is dropped",
        ("shadow-07", "backup-07"),
    ),
    (
        "reingest-restamps-ingested-at",
        ReingestRestampsIngestedAt,
        "every re-send of identical content rewrites ingestedAt",
        ("shadow-07",),
    ),
    (
        "reingest-restamps-ingested-at-to-the-second",
        ReingestRestampsIngestedAtToTheSecond,
        "ingestedAt is read to the second and every re-send of identical content rewrites it",
        ("shadow-07",),
    ),
    (
        "no-config-version",
        NoConfigVersion,
        "ingest never stores tenantConfigVersion",
        ("spoof-07", "shadow-07"),
    ),
    (
        "repoless-ids",
        RepolessIds,
        "chunk ids leave out the repo: one record in two repos of a tenant is one chunk",
        ("shadow-05",),
    ),
    (
        "dash-joined-ids",
        DashJoinedIds,
        "ids hash tenant, repo and fields joined by '-': tenant a-b + repo c is tenant a + repo b-c",
        ("shadow-06",),
    ),
    (
        "slash-joined-ids",
        SlashJoinedIds,
        "ids hash tenant, repo and fields joined by '/': repo a/b + path c.md is repo a + path b/c.md",
        ("shadow-06",),
    ),
    (
        "origin-agent-from-claim",
        OriginAgentFromClaim,
        "a principal without an agent identity gets the originAgentIdentity its record claims",
        ("spoof-06",),
    ),
    (
        "custom-meta-flattened",
        CustomMetaFlattened,
        "customMeta lands at the top of the stored metadata over identity keys (sourcePath, rootKind)",
        ("spoof-06",),
    ),
    (
        "unscoped-restore-to-legacy",
        UnscopedRestoreToLegacy,
        "restored rows missing a scope stamp land in a legacy default namespace every principal reads",
        ("contract-04",),
    ),
    (
        "visibility-table-from-ingest",
        VisibilityTableFromIngest,
        "get checks visibility in a table filled at ingest; a restored visibility change is not read",
        ("backup-06", "shadow-04"),
    ),
    (
        "export-keeps-deleted-rows",
        ExportKeepsDeletedRows,
        "export reads a journal of writes: deleted rows and stale text come back",
        ("backup-07",),
    ),
    (
        "export-first-page-only",
        ExportFirstPageOnly,
        "export returns the first page of 100 rows",
        ("backup-07",),
    ),
    (
        "tombstone-repo-defaults-to-legacy",
        TombstoneRepoDefaultsToLegacy,
        "a tombstone without a repoSlug names the legacy default repo, not the signal's repoSlug",
        ("delete-02",),
    ),
    (
        "revisions-swapped",
        RevisionsSwapped,
        "the resolver is asked for the revision boundary as (head, base)",
        ("delete-04", "delete-07"),
    ),
    (
        "unresolvable-boundary-skipped",
        UnresolvableBoundarySkipped,
        "a revision boundary that cannot be resolved (or no resolver) counts as no deleted paths",
        ("delete-05",),
    ),
    (
        "manifest-overrides-tombstones",
        ManifestOverridesTombstones,
        "a push with a manifest snapshot drops its tombstones: a tombstoned path the manifest lists stays",
        ("delete-07",),
    ),
    (
        "list-cache-outlives-delete",
        ListCacheOutlivesDelete,
        "list pages are cached, and deletion signals do not clear the cache",
        ("delete-15[list]", "iso-03[list]"),
    ),
    (
        "taken-id-looked-up-in-tenant",
        TakenIdLookedUpInTenant,
        "ingest looks its ids up within the writer's tenant: an id another tenant holds is taken over",
        ("shadow-03",),
    ),
    (
        "null-document-restored-empty",
        NullDocumentRestoredEmpty,
        "restore writes a null document as an empty string",
        ("backup-02",),
    ),
    (
        "restore-warms-get-cache",
        RestoreWarmsGetCache,
        "restore warms a get cache by id that skips the reader's scope: restored foreign ids read",
        ("backup-04",),
    ),
)
