"""Mutants: the reference with exactly one invariant broken, to prove the suites can fail.

Each mutant is a :class:`KnowledgeBase` subclass over the exact in-memory store, with a
description of what it breaks and the suite tests that must fail against it. Two smokes break
everything: one accepts every call and returns nothing, one refuses every call. A suite run
against any of them must fail. ``MUTANTS`` is registered as the mutant set ``reference``
(entry-point group ``kbconform.mutants``); run every set with ``kbconform mutants``.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any

import numpy as np

from kbconform.adapter import BackendOptions
from kbconform.contract import load
from kbconform.errors import BackendUnavailable, Forbidden, KbconformError, NotFound
from kbconform.identity import Principal, legacy_id
from kbconform_reference import _mutant_base, read_filter
from kbconform_reference import _mutants_callers as _callers
from kbconform_reference import _mutants_envelope as _envelope
from kbconform_reference import _mutants_faults as _faults
from kbconform_reference import _mutants_identifiers as _identifiers
from kbconform_reference import _mutants_lifecycle as _lifecycle
from kbconform_reference import _mutants_lifecycle_orders as _orders
from kbconform_reference import _mutants_maintenance as _maintenance
from kbconform_reference import _mutants_pages as _pages
from kbconform_reference import _mutants_proof as _proof
from kbconform_reference import _mutants_read as _read
from kbconform_reference import _mutants_state as _state
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.adapter import ReferenceAdapter
from kbconform_reference.service import Answer, DeletionResult, Hit, IngestResult, KnowledgeBase, Settings
from kbconform_reference.stamping import SpoofMonitor


def _all_hits(
    kb: KnowledgeBase, limit: int | None = None, offset: int = 0, where: Any = None
) -> builtins.list[Hit]:
    rows = kb.store.get(where=where, limit=limit, offset=offset)
    return [Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)]


# -- read side ----------------------------------------------------------------------------------


class UnfilteredQuery(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        self._authenticated(principal, "query")
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in self.store.query(embedding, n_results, None)
        ]


class FilterAfterTopK(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        matches = self.store.query(embedding, n_results, None)
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in matches
            if read_filter.in_scope(principal, m.metadata)
        ]


class ClientWhereOverrides(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        if not where:
            return super().query(principal, text, n_results)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in self.store.query(embedding, n_results, where)
        ]


class UnfilteredList(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        self._authenticated(principal, "list")
        return (
            super().list(principal, limit, offset)
            if limit < 1 or offset < 0
            else _all_hits(self, limit, offset)
        )


class PrivateListedToTenant(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        checked = self._authenticated(principal, "list")
        if limit < 1 or offset < 0:
            return super().list(principal, limit, offset)
        return _all_hits(self, limit, offset, {"tenantId": {"$in": list(checked.readable_tenants)}})


class UnfilteredCount(KnowledgeBase):
    def count(self, principal: Any, where: Any = None) -> int:
        self._authenticated(principal, "count")
        return len(self.store.get().ids)


class ExistenceOracle(KnowledgeBase):
    def get(self, principal: Any, chunk_id: str) -> Hit:
        try:
            return super().get(principal, chunk_id)
        except NotFound:
            if self.store.get(ids=[chunk_id]).ids:
                raise Forbidden("get", "that chunk belongs to another tenant") from None
            raise


class MissingIdentityReadsAll(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        if principal is None:
            return _all_hits(self, limit, offset)
        return super().list(principal, limit, offset, where)


class AnonymousWritesAsShared(KnowledgeBase):
    """Without a principal, writes, export, restore, sync and maintenance run in single-tenant
    mode: as an operator of the shared namespace (reads still refuse)."""

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        if principal is None and operation in (*_read.WRITES, *_read.MAINTENANCE):
            return Principal(sorted(Settings().shared_namespaces)[0], role="operator")
        return KnowledgeBase._authenticated(principal, operation)


class DuckTypedPrincipal(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Any:
        if getattr(principal, "tenant_id", None) is None:  # anything shaped like a principal passes
            return KnowledgeBase._authenticated(principal, operation)
        return principal


class SharedVisibleToAll(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        checked = KnowledgeBase._authenticated(principal, operation)
        return checked.with_namespaces(checked.readable_namespaces | Settings().shared_namespaces)


class AnswersFromFiles(KnowledgeBase):
    """A query that names a file is answered from the deployment's files too (a lexical rescue
    over the server's disk): the file is the first hit, with what the server holds of it."""

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        hits = super().query(principal, text, n_results, where)
        if "." in text.rsplit("/", 1)[-1]:
            hits = [Hit(text, f"the deployment's {text}", {"sourcePath": text}, 1.0), *hits][:n_results]
        return hits


class EmptyOnStoreError(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        try:
            return super().query(principal, text, n_results, where)
        except BackendUnavailable:
            return []

    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        try:
            return super().list(principal, limit, offset, where)
        except BackendUnavailable:
            return []


# -- write side and ids ---------------------------------------------------------------------


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


# -- deletion ------------------------------------------------------------------------------


class CrossTenantTombstone(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        result = super().apply_deletion_signal(principal, signal)
        doomed = [
            hit.id
            for hit in _all_hits(self)
            if (hit.metadata.get("repoSlug"), hit.metadata.get("sourcePath")) in set(result.paths)
        ]
        self.store.delete(doomed)
        return result


class FilesNotProtected(KnowledgeBase):
    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        return super().apply_deletion_signal(principal, {k: v for k, v in signal.items() if k != "files"})


# -- backup --------------------------------------------------------------------------------


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


# -- contract ------------------------------------------------------------------------------


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


# -- smokes --------------------------------------------------------------------------------


class AcceptsEverything:
    """Every call succeeds and nothing is kept: a backend that 'passes' vacuous checks."""

    def ingest(self, principal: Any, records: Sequence[Mapping[str, Any]]) -> IngestResult:
        return IngestResult(tuple(f"id-{n}" for n in range(len(records))), 0, 0)

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        return []

    def get(self, principal: Any, chunk_id: str) -> Hit:
        return Hit(chunk_id, None, {})

    def list(self, principal: Any, limit: int = 100, offset: int = 0) -> builtins.list[Hit]:
        return []

    def count(self, principal: Any) -> int:
        return 0

    def ask(self, principal: Any, question: str, n_results: int = 5) -> Answer:
        return Answer(question, "", ())

    def scan(self, *args: Any) -> builtins.list[dict[str, Any]]:
        return []

    def apply_deletion_signal(self, principal: Any, signal: Mapping[str, Any]) -> DeletionResult:
        return DeletionResult((), ())

    def export(self, principal: Any) -> builtins.list[dict[str, Any]]:
        return []

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        return len(list(records))


class RejectsEverything(AcceptsEverything):
    """Every call is refused: a backend that 'passes' every negative check."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattribute__(name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise Forbidden(name, "this backend refuses everything")

        return refuse


# -- the catalogue -------------------------------------------------------------------------


class Mutant(_mutant_base.Mutant[Any]):
    """A broken backend of the reference, served by this module's ``by_name``."""

    __slots__ = ()


#: Why a mutant that accepts a Python object posing as a Principal cannot be reached behind
#: harness-v1: a principal crosses it as data, a JSON value or a principal's fields, so the
#: backend gets a Principal built from valid fields, None, or the malformed data itself
#: (schemas/harness-v1.md), never the object.
PRINCIPAL_AS_DATA = (
    "a principal crosses harness-v1 as data: a Python object posing as a Principal reaches the "
    "backend as its fields or as no identity"
)

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
    Mutant(
        "unfiltered-query",
        UnfilteredQuery,
        "query drops the tenant filter",
        ("leak-01[query]", "iso-01[query]"),
    ),
    Mutant(
        "filter-after-top-k",
        FilterAfterTopK,
        "query filters after an unfiltered top-k",
        ("leak-02", "iso-01[query]", "iso-01[ask]"),
    ),
    Mutant(
        "client-where-overrides",
        ClientWhereOverrides,
        "a client where clause replaces the tenant filter",
        ("leak-03[a tenantId equality]", "leak-03[an $or around a tenantId]"),
    ),
    Mutant(
        "unfiltered-list",
        UnfilteredList,
        "list reads every tenant's rows",
        ("leak-01[list]", "closed-03", "iso-01[list]"),
    ),
    Mutant(
        "private-listed-to-tenant",
        PrivateListedToTenant,
        "list filters by tenant only: every agent reads another agent's private chunks",
        ("leak-06",),
    ),
    Mutant(
        "unfiltered-count",
        UnfilteredCount,
        "count counts every tenant's rows",
        ("leak-01[count]", "iso-01[count]"),
    ),
    Mutant(
        "existence-oracle",
        ExistenceOracle,
        "get says Forbidden for a foreign id, NotFound for a missing one",
        ("leak-04",),
    ),
    Mutant(
        "missing-identity-reads-all",
        MissingIdentityReadsAll,
        "list without a principal reads everything",
        ("iso-02[list]",),
    ),
    Mutant(
        "answers-from-files",
        AnswersFromFiles,
        "a query naming a file is answered from the deployment's files too",
        ("leak-15", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "anonymous-writes-as-shared",
        AnonymousWritesAsShared,
        "writes, export, restore, sync and maintenance without a principal run as the shared "
        "namespace's operator",
        _read.closed("None"),
    ),
    Mutant(
        "duck-typed-principal",
        DuckTypedPrincipal,
        "any object with a principal's attributes authenticates",
        (
            *_read.closed("an object with a principal's attributes"),
            *(f"iso-02[{facade}]" for facade in ("query", "get", "list", "count", "ask")),
        ),
        in_process_only=PRINCIPAL_AS_DATA,
    ),
    Mutant(
        "shared-visible-to-all",
        SharedVisibleToAll,
        "every principal reads the shared namespace",
        ("leak-05", *(f"iso-01[{facade}]" for facade in ("query", "get", "list", "count", "ask"))),
    ),
    Mutant(
        "empty-on-store-error",
        EmptyOnStoreError,
        "a failing store reads as no results",
        ("closed-02", "iso-03[query]", "iso-03[list]", "iso-03[ask]"),
    ),
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
        "cross-tenant-tombstone",
        CrossTenantTombstone,
        "a tombstone deletes the path in every tenant",
        ("delete-01",),
    ),
    Mutant("files-not-protected", FilesNotProtected, "a push deletes the files it writes", ("delete-06",)),
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
        "accepts-everything", AcceptsEverything, "smoke: every call succeeds, nothing is kept", (), smoke=True
    ),
    Mutant("rejects-everything", RejectsEverything, "smoke: every call is refused", (), smoke=True),
    *(
        Mutant(*entry, in_process_only=PRINCIPAL_AS_DATA if entry[0] in _read.PRINCIPAL_OBJECTS else None)
        for entry in (
            *_read.MUTANTS,
            *_lifecycle.MUTANTS,
            *_maintenance.MUTANTS,
            *_envelope.MUTANTS,
            *_faults.MUTANTS,
            *_state.MUTANTS,
            *_proof.MUTANTS,
            *_pages.MUTANTS,
            *_callers.MUTANTS,
            *_orders.MUTANTS,
            *_identifiers.MUTANTS,
        )
    ),
)


class MutantAdapter(ServesMutant[Mutant], ReferenceAdapter):
    """The reference adapter (memory mode), opening the mutant instead of the service."""

    def __init__(self, mutant: Mutant) -> None:
        super().__init__(mutant, "memory")

    def open(self, options: BackendOptions) -> Any:
        if self.mutant.smoke:
            return self.mutant.kind()
        base = super().open(options)
        return self.mutant.kind(base.store, settings=base.settings, resolver=base.resolver)


#: ``kbconform_reference.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
