"""Mutants of the tenant-namespace reference, write side: spoofs trusted, overwritten without a
warning or escalated wrongly, writes into the shared namespace or over another agent's private
chunk, ids that leave out a part or join parts ambiguously, re-ingests that keep or restamp the
wrong thing, client metadata on top of stamps."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

import numpy as np

from kbconform.errors import KbconformError
from kbconform.identity import RESERVED_FIELDS, Principal, chunk_id, legacy_id
from kbconform_reference._mutant_base import Delegating
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import IngestResult, KnowledgeBase
from kbconform_reference.namespace.stamping import SpoofMonitor
from kbconform_reference.namespace.stores import Rows, VectorStore


class TrustsClientTenant(KnowledgeBase):
    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        principal = self._authenticated(principal, "ingest")
        claimed = {str(r.get("tenantId")) for r in records}
        if len(claimed) == 1:
            with suppress(KbconformError):
                principal = principal.with_tenant(claimed.pop()).with_role("operator")
        return super().ingest(principal, records, *args, **kwargs)


class SilentOverwrite(KnowledgeBase):
    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        return dataclasses.replace(super().ingest(principal, records, *args, **kwargs), warnings=())


class RejectWritesCleanRecordsFirst(KnowledgeBase):
    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        if self.settings.spoof_mode == "reject" and isinstance(principal, Principal):
            clean = [
                r for r in records if r.get("tenantId") == principal.tenant_id and not r.get("customMeta")
            ]
            if clean and len(clean) < len(records):
                super().ingest(principal, clean, *args, **kwargs)
        return super().ingest(principal, records, *args, **kwargs)


class NoEscalation(KnowledgeBase):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.monitor.escalated = lambda principal: False  # type: ignore[method-assign]


class _PerRequestMonitor(SpoofMonitor):
    def record(self, principal: Principal, count: int) -> bool:
        return super().record(principal, min(count, 1))  # the bug: a request, not its records


class EscalationCountsRequests(KnowledgeBase):
    """The spoof monitor counts requests that spoofed, not spoofed records."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        monitor = self.monitor
        self.monitor = _PerRequestMonitor(monitor.threshold, monitor.window, monitor._clock)


class MemberWritesShared(KnowledgeBase):
    def _may_write(self, principal: Principal, operation: str) -> None:
        return None


class PrivateOverwrittenByAnyAgent(KnowledgeBase):
    @staticmethod
    def _may_overwrite(principal: Any, stored: Any) -> bool:
        return True


class AgentlessMatchesNoOrigin(KnowledgeBase):
    """The origin agent compared as given: a principal without an agent identity matches a
    private chunk without an origin agent, and writes over it."""

    @staticmethod
    def _may_overwrite(principal: Principal, stored: Mapping[str, Any]) -> bool:
        return bool(
            stored.get("visibility") != "private"
            or stored.get("originAgentIdentity") == principal.agent_identity
        )


class TenantlessIds(KnowledgeBase):
    def _id(self, record: Mapping[str, Any], tenant_id: str) -> str:
        return legacy_id(record)


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


class NoConfigVersion(KnowledgeBase):
    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        metadata = KnowledgeBase._metadata(record, stamps, ingested_at)
        del metadata["tenantConfigVersion"]  # spoofs are still checked against it; it is never stored
        return metadata


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


class _TenantScopedLookups(Delegating[VectorStore]):
    """A store whose lookups by id see only ``tenant``'s rows while ``tenant`` is set."""

    def __init__(self, inner: VectorStore) -> None:
        super().__init__(inner)
        self.tenant: str | None = None

    def get(self, *, ids: Any = None, where: Any = None, **kwargs: Any) -> Rows:
        if self.tenant is not None and ids is not None and where is None:
            where = {"tenantId": {"$eq": self.tenant}}
        rows: Rows = self.inner.get(ids=ids, where=where, **kwargs)
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


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "trusts-client-tenant",
        TrustsClientTenant,
        "ingest stamps the tenant a batch claims",
        ("spoof-02[overwrite]", "shadow-02"),
    ),
    Mutant(
        "silent-overwrite",
        SilentOverwrite,
        "spoofs are overwritten without a warning",
        ("spoof-01[overwrite-tenantId]",),
    ),
    Mutant(
        "reject-writes-clean-records-first",
        RejectWritesCleanRecordsFirst,
        "reject mode writes the batch's clean records before refusing it",
        ("spoof-03",),
    ),
    Mutant("no-escalation", NoEscalation, "repeated spoofers are never switched to reject", ("spoof-04",)),
    Mutant(
        "escalation-counts-requests",
        EscalationCountsRequests,
        "the escalation threshold counts spoofing requests, not spoofed records",
        ("spoof-04",),
    ),
    Mutant(
        "member-writes-shared",
        MemberWritesShared,
        "a member may write into the shared namespace",
        ("spoof-05",),
    ),
    Mutant(
        "private-overwritten-by-any-agent",
        PrivateOverwrittenByAnyAgent,
        "another agent of the tenant writes over an agent's private chunk, which turns team-visible",
        ("shadow-04",),
    ),
    Mutant(
        "agentless-writes-over-originless-private",
        AgentlessMatchesNoOrigin,
        "a principal without an agent identity writes over a private chunk that has no origin agent",
        ("shadow-04",),
    ),
    Mutant(
        "tenantless-ids", TenantlessIds, "chunk ids leave out the tenant", ("shadow-01", "bytes-01[mini]")
    ),
    Mutant(
        "reingest-keeps-stale-embedding",
        ReingestKeepsStaleEmbedding,
        "re-ingested content replaces the text but keeps the old embedding",
        ("shadow-07",),
    ),
    Mutant(
        "reingest-keeps-first-write",
        ReingestKeepsFirstWrite,
        "an id that exists is never written again: changed content is dropped",
        ("shadow-07", "backup-07"),
    ),
    Mutant(
        "reingest-restamps-ingested-at",
        ReingestRestampsIngestedAt,
        "every re-send of identical content rewrites ingestedAt",
        ("shadow-07",),
    ),
    Mutant(
        "reingest-restamps-ingested-at-to-the-second",
        ReingestRestampsIngestedAtToTheSecond,
        "ingestedAt is read to the second and every re-send of identical content rewrites it",
        ("shadow-07",),
    ),
    Mutant(
        "no-config-version",
        NoConfigVersion,
        "ingest never stores tenantConfigVersion",
        ("spoof-07", "shadow-07"),
    ),
    Mutant(
        "repoless-ids",
        RepolessIds,
        "chunk ids leave out the repo: one record in two repos of a tenant is one chunk",
        ("shadow-05",),
    ),
    Mutant(
        "dash-joined-ids",
        DashJoinedIds,
        "ids hash tenant, repo and fields joined by '-': tenant a-b + repo c is tenant a + repo b-c",
        ("shadow-06",),
    ),
    Mutant(
        "slash-joined-ids",
        SlashJoinedIds,
        "ids hash tenant, repo and fields joined by '/': repo a/b + path c.md is repo a + path b/c.md",
        ("shadow-06",),
    ),
    Mutant(
        "origin-agent-from-claim",
        OriginAgentFromClaim,
        "a principal without an agent identity gets the originAgentIdentity its record claims",
        ("spoof-06",),
    ),
    Mutant(
        "custom-meta-flattened",
        CustomMetaFlattened,
        "customMeta lands at the top of the stored metadata over identity keys (sourcePath, rootKind)",
        ("spoof-06",),
    ),
    Mutant(
        "taken-id-looked-up-in-tenant",
        TakenIdLookedUpInTenant,
        "ingest looks its ids up within the writer's tenant: an id another tenant holds is taken over",
        ("shadow-03",),
    ),
)
