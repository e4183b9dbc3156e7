"""The reference knowledge base: every facade takes the principal explicitly.

Write side: validate (parsed-chunk-v1), refuse or overwrite spoofs, compute tenant-aware ids and
embeddings server-side, stamp, write the batch. Read side: one filter built from the principal
(``read_filter``), a final in-scope check on every hit, and exact search when the allowed set is
small. Lifecycle: deletion signals scoped to the tenant; export and restore for operators. No
principal is an error, never an unfiltered read; a store error is an error, never a fallback.

All or nothing: ingest, restore and deletion signals write and delete in pages of the store's
``max_batch`` rows, one store call a page, so a store can fail after some pages landed. Before
the first write, one ``get`` captures every row the call touches (document, metadata,
embedding): the undo log. A store failure part-way rolls back (the ids that were new are
deleted, the prior rows written back) and raises ``BackendUnavailable``. When the rollback
fails too (the store is still down), the undo log stays pending on the instance, and every
facade, reads included, first replays it and raises ``BackendUnavailable`` while it cannot: no
later call reads or writes over a half-written batch. Writes on one instance are serialized.

Limits: the undo log lives in this process. A crash or kill in the middle of a write, or the
process ending while a rollback is pending, leaves whatever pages landed in the store; another
process (or another instance) on the same collection does not see the pending log; and a read
running at the same time as a write may see part of it (only later calls are covered).
"""

from __future__ import annotations

import builtins
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import rfc8785

from kbconform import workspace
from kbconform.adapter import RevisionResolver, check_sync, envelope_claims
from kbconform.contract import explain, is_plain, is_valid, plain
from kbconform.errors import (
    BackendUnavailable,
    ContractViolation,
    Forbidden,
    NotFound,
    Problem,
    RevisionBoundaryUnavailable,
    SpoofRejected,
    Unauthenticated,
)
from kbconform.identity import RESERVED_FIELDS, Principal, Profile, chunk_id
from kbconform_reference._store_calls import store_call
from kbconform_reference.embedding import HashingEmbedding
from kbconform_reference.namespace import deletion, read_filter
from kbconform_reference.namespace.stamping import SpoofMonitor, SpoofWarning, server_stamps, spoofs
from kbconform_reference.namespace.stores import Match, Rows, VectorStore, exact_top_k
from kbconform_reference.namespace.stores._protocol import (
    ACTING,
    Acting,
    Metadata,
    Reach,
    Where,
    acting,
    exact_scopes,
    scopes_reads,
)

LOG = logging.getLogger("kbconform_reference")
Visibility = Literal["team", "private", "public"]
_OPTIONAL_FIELDS = ("line_start", "line_end", "className", "extends")


@dataclass(frozen=True, slots=True)
class Settings:
    """Server configuration (never from a request)."""

    shared_namespaces: frozenset[str] = frozenset({"neo-shared"})
    #: Who reads the shared namespaces: those granted them, or every tenant.
    shared_readers: Literal["granted", "every-tenant"] = "granted"
    spoof_mode: Literal["overwrite", "reject"] = "overwrite"
    escalation_threshold: int = 20
    escalation_window: float = 60.0
    visibility: Visibility = "team"
    config_version: str = "1"
    id_profile: Profile = "kbconform-v1"
    exact_search_limit: int = 2000


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk as a read returns it: id, stored text, stored metadata, similarity (1 - distance)."""

    id: str
    document: str | None
    metadata: Mapping[str, Any]
    score: float | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What ingest (and sync, which also reports the stale chunks it deleted) returns."""

    ids: tuple[str, ...]
    written: int
    unchanged: int
    warnings: tuple[SpoofWarning, ...] = ()
    deleted_ids: tuple[str, ...] = ()


SyncResult = IngestResult
#: The maintenance operations (feature ``maintenance``): every embedding computed again.
MAINTENANCE = ("reembed",)


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    text: str
    sources: tuple[Hit, ...]


@dataclass(frozen=True, slots=True)
class DeletionResult:
    deleted_ids: tuple[str, ...]
    paths: tuple[tuple[str, str], ...]


@dataclass
class Stats:
    """Counters a test or an operator can read; ``dropped`` counts hits the final check removed."""

    dropped: int = 0
    escalations: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass(frozen=True, slots=True)
class _Undo:
    """What puts back every row one write touched: ``added`` (ids that were absent) are deleted
    and ``prior`` (the touched rows as they were, embeddings included) written back. Replaying
    it is idempotent, so a rollback cut short can start again from the beginning."""

    operation: str
    added: tuple[str, ...]
    prior: Rows
    acts: Acting | None = None  # whom the write was made for: its rollback is made for them too


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class KnowledgeBase:
    """The service. ``store`` is any :class:`VectorStore`; everything else has a safe default."""

    def __init__(
        self,
        store: VectorStore,
        *,
        settings: Settings | None = None,
        embedder: Callable[[Sequence[str]], np.ndarray] | None = None,
        resolver: RevisionResolver | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], str] = _utc_now,
    ) -> None:
        self.store = store
        self.settings = settings or Settings()
        self.embedder = embedder or HashingEmbedding()
        self.resolver = resolver
        self.now = now
        self.stats = Stats()
        self.monitor = SpoofMonitor(
            self.settings.escalation_threshold, self.settings.escalation_window, clock
        )
        self._writing = threading.RLock()  # one write (or rollback) at a time on this instance
        self._pending: builtins.list[_Undo] = []  # undo logs whose rollback failed, oldest first

    # -- guards ---------------------------------------------------------------------------------

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        """Exactly a :class:`Principal` (a subclass may override what it reads), its fields
        checked again by the Principal's own rules (a frozen one can still be changed in place);
        the service goes on with that checked copy. Anything else is :class:`Unauthenticated`."""
        if type(principal) is not Principal:
            raise Unauthenticated(operation)
        try:
            return Principal(
                principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
            )
        except ContractViolation:
            raise Unauthenticated(operation) from None

    def _reader(self, principal: Principal) -> Principal:
        """The principal a read is filtered for: as granted, or with every shared namespace when
        the configuration makes them readable by every tenant."""
        if self.settings.shared_readers == "granted":
            return principal
        return principal.with_namespaces(principal.readable_namespaces | self.settings.shared_namespaces)

    def _may_write(self, principal: Principal, operation: str) -> None:
        if principal.tenant_id in self.settings.shared_namespaces and not principal.is_operator:
            raise Forbidden(
                operation, f"only an operator may write into the shared namespace {principal.tenant_id!r}"
            )

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if not principal.is_operator:
            raise Forbidden(operation, "only an operator may do this")

    @staticmethod
    def _as(operation: str, principal: Principal, reach: Reach) -> AbstractContextManager[None]:
        """The store calls inside the block are made for ``principal`` (:data:`ACTING`)."""
        return acting(Acting(operation, principal, reach))

    def _read_where(self, principal: Principal, client: Mapping[str, Any] | None = None) -> Where | None:
        """The clause a read sends the store: the read filter AND the client's clause, or only
        the client's clause (checked) to a store that applies the read filter itself."""
        if not scopes_reads(self.store):
            return read_filter.build_where(principal, client)
        return None if client is None else {"$and": read_filter.check_where(client)}

    def _store_call(self, operation: str) -> AbstractContextManager[None]:
        """One store call: any error of the store is BackendUnavailable (the store consults the
        fault switch itself; :func:`~kbconform_reference._store_calls.store_call`)."""
        return store_call(None, operation)

    # -- all or nothing -------------------------------------------------------------------------

    def _settle(self, operation: str) -> None:
        """Replay the undo logs of earlier writes whose rollback failed, newest first; raise
        BackendUnavailable while the store cannot take them. Every facade calls this before its
        first store call, so no call reads, or writes over, a half-written batch."""
        if not self._pending:
            return
        with self._writing:
            while self._pending:
                undo = self._pending[-1]
                try:
                    with acting(undo.acts):
                        self._undo(undo)
                except Exception as error:
                    raise BackendUnavailable(
                        operation,
                        f"an earlier {undo.operation} failed part-way and is not rolled back yet "
                        f"({type(error).__name__}: {error})",
                    ) from error
                self._pending.pop()

    def _pages(self, total: int) -> Iterator[slice]:
        size = max(1, int(self.store.max_batch))
        return (slice(start, start + size) for start in range(0, total, size))

    def _upsert(self, rows: Rows) -> None:
        """Write ``rows`` (with embeddings), one store call per page of ``max_batch`` rows."""
        if not rows.ids:
            return
        assert rows.embeddings is not None
        for page in self._pages(len(rows.ids)):
            self.store.upsert(
                rows.ids[page], rows.embeddings[page], rows.documents[page], rows.metadatas[page]
            )

    def _delete(self, ids: Sequence[str]) -> None:
        """Delete ``ids``, one store call per page of ``max_batch`` ids."""
        for page in self._pages(len(ids)):
            self.store.delete(ids[page])

    def _undo(self, undo: _Undo) -> None:
        self._delete(undo.added)
        self._upsert(undo.prior)

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        """Write ``write``, then delete ``delete``, page by page: all or nothing.

        ``prior`` is every row the call touches as it was before the first write (one ``get``
        with embeddings). A store failure part-way rolls back and raises BackendUnavailable; when
        the rollback fails too, the undo log stays pending (:meth:`_settle`). The caller holds
        ``self._writing``.
        """
        known = set(prior.ids)
        added = tuple(dict.fromkeys(i for i in (write.ids if write is not None else ()) if i not in known))
        undo = _Undo(operation, added, prior, ACTING.get())
        try:
            if write is not None:
                self._upsert(write)
            self._delete(delete)
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            try:
                self._undo(undo)
            except Exception:
                self._pending.append(undo)
                raise BackendUnavailable(
                    operation,
                    f"{reason}; the rollback failed too: every later call replays it first, and "
                    "raises BackendUnavailable until the store answers",
                ) from error
            except BaseException:
                self._pending.append(undo)
                raise
            raise BackendUnavailable(operation, f"{reason}; rolled back, nothing was written") from error
        except BaseException:  # interrupted between pages: roll back before the next call
            self._pending.append(undo)
            raise

    # -- parsing --------------------------------------------------------------------------------

    @staticmethod
    def scan(
        root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str = "bare-repo"
    ) -> builtins.list[dict[str, Any]]:
        """The parsed-chunk-v1 records of a workspace, through kbconform's source/parser registry."""
        return workspace.scan(
            root,
            workspace.read_config(config) if config is not None else None,
            tenant_id=tenant_id,
            repo_slug=repo_slug,
            root_kind=root_kind,
        )

    # -- write side -----------------------------------------------------------------------------

    def ingest(
        self,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
        *,
        visibility: Visibility | None = None,
    ) -> IngestResult:
        """Validate, stamp and write a batch of parsed-chunk-v1 records; all or nothing.
        ``envelope``: the request-level fields the client claims; never used for identity."""
        principal = self._authenticated(principal, "ingest")
        return self._write("ingest", principal, records, visibility=visibility, envelope=envelope)

    def _envelope(self, principal: Principal, envelope: object, records: Sequence[Mapping[str, Any]]) -> None:
        """A claim of the envelope refuses the write in reject mode and is ignored, with a
        warning in the log, in overwrite mode (the server's stamps are written)."""
        claims = envelope_claims(principal, envelope, records, self.settings.visibility)
        if not claims:
            return
        if self.settings.spoof_mode == "reject" or self.monitor.escalated(principal):
            raise SpoofRejected(principal.tenant_id, tuple((-1, f"envelope.{f}", c, v) for f, c, v in claims))
        for name, claimed, server in claims:
            LOG.warning(
                "the request envelope claims %s %r; the server stamps %r (tenant %s)",
                name,
                claimed,
                server,
                principal.tenant_id,
                extra={"kb_event": "envelope-ignored", "field": name, "tenantId": principal.tenant_id},
            )

    def sync(
        self,
        principal: Principal,
        repo_slug: str,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
    ) -> SyncResult:
        """Replace the tenant's corpus of one repository: ingest ``records`` and delete every chunk
        of the tenant in ``repo_slug`` at a path no record carries; all or nothing. ``envelope``:
        as ingest's."""
        principal = self._authenticated(principal, "sync")
        self._may_write(principal, "sync")
        check_sync(repo_slug, records)
        return self._write("sync", principal, records, stale=repo_slug, envelope=envelope)

    def _stale(self, principal: Principal, repo_slug: str, keep: set[str]) -> builtins.list[str]:
        """The ids of the tenant's chunks in ``repo_slug`` at a path outside ``keep``."""
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": repo_slug}}]})
        return [
            i
            for i, m in zip(rows.ids, rows.metadatas, strict=True)
            if m["tenantId"] == principal.tenant_id
            and m["repoSlug"] == repo_slug
            and m["sourcePath"] not in keep
        ]

    def maintain(self, principal: Principal, operation: str) -> None:
        """``reembed``: compute every row's embedding again from its stored text (an operator's)."""
        principal = self._authenticated(principal, "maintain")
        if operation not in MAINTENANCE:
            raise ContractViolation(
                contract="maintain",
                problems=(
                    Problem("/operation", "enum", f"one of {', '.join(MAINTENANCE)}", repr(operation)),
                ),
            )
        self._operator(principal, "maintain")
        with self._as("maintain", principal, "operator"), self._writing:
            self._settle("maintain")
            with self._store_call("maintain"):
                prior = self.store.get(embeddings=True)
            if not prior.ids:
                return
            texts = [document or "" for document in prior.documents]
            embeddings = np.asarray(self.embedder(texts), dtype=np.float32)
            rows = Rows(prior.ids, prior.documents, prior.metadatas, embeddings)
            self._apply("maintain", prior, write=rows)

    def _write(
        self,
        operation: str,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        *,
        visibility: Visibility | None = None,
        stale: str | None = None,
        envelope: Mapping[str, Any] | None = None,
    ) -> IngestResult:
        """Ingest ``records`` for ``operation``; with ``stale``, a sync of that repository, which
        also deletes the tenant's chunks of it at the paths the records leave out; ``envelope``:
        the request-level fields the write was sent (:meth:`_envelope`)."""
        self._may_write(principal, operation)
        records = list(records)
        problems = [
            Problem(f"/{index}{p.pointer}", p.keyword, p.expected, p.got)
            for index, record in enumerate(records)
            if not is_valid(record, "parsed-chunk-v1")
            for p in explain(record, "parsed-chunk-v1")
        ]
        if problems:
            raise ContractViolation(contract="parsed-chunk-v1", problems=tuple(problems))
        # The JSON validation read: enum members as their values (RFC 8785 refuses plain enums).
        records = [record if is_plain(record) else plain(record) for record in records]
        if envelope is not None:  # checked once the records are known to be records
            self._envelope(principal, envelope, records)
        visibility = visibility or self.settings.visibility
        if visibility == "private" and principal.agent_identity is None:
            raise Forbidden(operation, "private chunks need a principal with an agent identity")
        stamped = [
            server_stamps(principal, r, visibility=visibility, config_version=self.settings.config_version)
            for r in records
        ]
        spoofed = [(i, f, c, s) for i, r in enumerate(records) for f, c, s in spoofs(r, stamped[i])]
        reject = self.settings.spoof_mode == "reject" or self.monitor.escalated(principal)
        if spoofed and reject:
            raise SpoofRejected(principal.tenant_id, tuple(spoofed))
        ids = [self._id(r, principal.tenant_id) for r in records]
        warnings = tuple(
            SpoofWarning(
                i, f, ids[i], c, s, principal.tenant_id, records[i]["repoSlug"], principal.agent_identity
            )
            for i, f, c, s in spoofed
        )
        for warning in warnings:
            LOG.warning(
                "spoofed %s overwritten: client %r, server %r (chunk %s, tenant %s, repo %s, agent %s)",
                warning.field,
                warning.client_value,
                warning.server_value,
                warning.chunk_id,
                warning.tenant_id,
                warning.repo_slug,
                warning.agent,
                extra={
                    "kb_event": "spoof-overwritten",
                    "field": warning.field,
                    "tenantId": warning.tenant_id,
                },
            )
        if self.monitor.record(principal, len({w.index for w in warnings})):
            with self.stats.lock:
                self.stats.escalations += 1

        last = dict(zip(ids, range(len(ids)), strict=True))  # equal ids: equal hash inputs, one row
        unique = sorted(set(last.values()))
        with self._as(operation, principal, "write"), self._writing:
            self._settle(operation)
            with self._store_call(operation):  # the undo log: every row the batch may touch
                existing = self.store.get(ids=[ids[i] for i in unique], embeddings=True)
                stale_ids = (
                    [] if stale is None else self._stale(principal, stale, {r["sourcePath"] for r in records})
                )
                doomed = [i for i in stale_ids if i not in last]  # a row the sync writes is not stale
            before = dict(zip(existing.ids, existing.metadatas, strict=True))
            documents = dict(zip(existing.ids, existing.documents, strict=True))
            rows: list[tuple[str, str, dict[str, Any]]] = []
            for index in unique:
                row_id, record = ids[index], records[index]
                old = before.get(row_id)
                if old is not None and old.get("tenantId") != principal.tenant_id:
                    raise Forbidden(operation, f"chunk id {row_id} is taken; nothing was written")
                if old is not None and not self._may_overwrite(principal, old):
                    raise Forbidden(
                        operation, f"chunk id {row_id} is another agent's private chunk; nothing was written"
                    )
                first = old.get("ingestedAt") if old is not None else None  # a restore may drop it
                metadata = self._metadata(record, stamped[index], str(first) if first else self.now())
                if old is not None and dict(old) == metadata and documents.get(row_id) == record["content"]:
                    continue
                rows.append((row_id, record["content"], metadata))
            written = None
            if rows:
                embeddings = np.asarray(self.embedder([content for _, content, _ in rows]), dtype=np.float32)
                written = Rows(
                    tuple(r[0] for r in rows),
                    tuple(r[1] for r in rows),
                    tuple(r[2] for r in rows),
                    embeddings,
                )
            if written is not None or doomed:
                touched = builtins.list(written.ids if written is not None else ()) + doomed
                with self._store_call(operation):  # the undo log: every row written or deleted
                    prior = (
                        self.store.get(ids=touched, embeddings=True) if doomed else _only(existing, touched)
                    )
                self._apply(operation, prior, write=written, delete=doomed)
        return IngestResult(tuple(ids), len(rows), len(unique) - len(rows), warnings, tuple(sorted(doomed)))

    @staticmethod
    def _may_overwrite(principal: Principal, stored: Mapping[str, Any]) -> bool:
        """A private chunk is written over only by its origin agent (a team chunk by any agent of
        the tenant): ids leave out the agent, so two agents' records can hash alike. One without
        an origin agent is nobody's: a principal without an agent identity never matches it."""
        return stored.get("visibility") != "private" or (
            principal.agent_identity is not None
            and stored.get("originAgentIdentity") == principal.agent_identity
        )

    def _id(self, record: Mapping[str, Any], tenant_id: str) -> str:
        return chunk_id(record, tenant_id, record["repoSlug"], self.settings.id_profile)

    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        custom = {k: v for k, v in (record.get("customMeta") or {}).items() if k not in RESERVED_FIELDS}
        metadata: dict[str, Any] = {
            "rootKind": record["rootKind"],
            "sourcePath": record["sourcePath"],
            "kind": record["kind"],
            "name": record["name"],
            "parserId": record["parserId"],
            "parserVersion": record["parserVersion"],
            "hashInputs": json.dumps(record["hashInputs"]),
            "customMeta": rfc8785.dumps(custom).decode("utf-8"),
        }
        metadata.update({key: record[key] for key in _OPTIONAL_FIELDS if key in record})
        metadata.update(stamps)  # identity and stamps last: nothing of the client's lands on them
        metadata["ingestedAt"] = ingested_at
        return metadata

    # -- read side ------------------------------------------------------------------------------

    def _checked(self, principal: Principal, operation: str, found: Iterable[Hit]) -> list[Hit]:
        kept = []
        for hit in found:
            if read_filter.in_scope(principal, hit.metadata):
                kept.append(hit)
                continue
            with self.stats.lock:
                self.stats.dropped += 1
            LOG.error(
                "final check dropped chunk %s of tenant %r from %s for tenant %r",
                hit.id,
                hit.metadata.get("tenantId"),
                operation,
                principal.tenant_id,
                extra={"kb_event": "out-of-scope-hit-dropped"},
            )
        return kept

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The ``n_results`` chunks nearest to ``text`` within the principal's scope."""
        principal = self._reader(self._authenticated(principal, "query"))
        scoped = self._read_where(principal, where)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        limit = self.settings.exact_search_limit
        with self._as("query", principal, "read"):
            self._settle("query")
            with self._store_call("query"):
                if exact_scopes(self.store) >= limit:  # the store ranks a small scope exactly itself
                    matches = self.store.query(embedding, n_results, scoped)
                elif len((allowed := self.store.get(where=scoped, limit=limit + 1)).ids) <= limit:
                    # a small allowed set: exact top-k over exactly those rows
                    rows = self.store.get(ids=allowed.ids, embeddings=True) if allowed.ids else allowed
                    matches = exact_top_k(rows, embedding, n_results)
                else:
                    matches = self.store.query(embedding, n_results, scoped)
        return self._checked(principal, "query", (_hit(m) for m in matches))

    def get(self, principal: Principal, chunk_id: str) -> Hit:
        """One chunk by id; a foreign id raises exactly what a missing one does."""
        principal = self._reader(self._authenticated(principal, "get"))
        with self._as("get", principal, "read"):
            self._settle("get")
            with self._store_call("get"):
                rows = self.store.get(ids=[chunk_id], where=self._read_where(principal))
        hits = self._checked(principal, "get", _hits(rows))
        if not hits:
            raise NotFound(chunk_id)
        return hits[0]

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """A page of the chunks in scope, in the store's order."""
        principal = self._reader(self._authenticated(principal, "list"))
        self._settle("list")  # each rollback it replays is made for its own principal
        if limit < 1 or offset < 0:
            raise ContractViolation(
                contract="list",
                problems=(Problem("/limit", "minimum", "limit >= 1 and offset >= 0", f"{limit}, {offset}"),),
            )
        clause = self._read_where(principal, where)
        with self._as("list", principal, "read"), self._store_call("list"):
            rows = self.store.get(where=clause, limit=limit, offset=offset)
        return self._checked(principal, "list", _hits(rows))

    def count(self, principal: Principal, where: Mapping[str, Any] | None = None) -> int:
        """How many chunks are in scope."""
        principal = self._reader(self._authenticated(principal, "count"))
        clause = self._read_where(principal, where)
        with self._as("count", principal, "read"):
            self._settle("count")
            with self._store_call("count"):
                rows = self.store.get(where=clause)
        return len(self._checked(principal, "count", _hits(rows)))

    def ask(self, principal: Principal, question: str, n_results: int = 5) -> Answer:
        """Search, then answer from the stored text of the hits only (no files, no other tenant)."""
        principal = self._authenticated(principal, "ask")
        self._settle("ask")
        hits = self.query(principal, question, n_results)
        text = "\n\n".join(hit.document for hit in hits if hit.document)
        return Answer(question, text, tuple(hits))

    # -- deletion -------------------------------------------------------------------------------

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        """Apply tombstones, manifest and revision boundary within the principal's tenant."""
        principal = self._authenticated(principal, "apply_deletion_signal")
        self._may_write(principal, "apply_deletion_signal")
        signal = deletion.check_signal(signal)
        tombstoned, written = deletion.explicit_paths(signal)
        targets = set(tombstoned)
        if "baseRevision" in signal:
            repo = deletion.boundary_repo(signal)
            if self.resolver is None:
                raise RevisionBoundaryUnavailable(
                    "apply_deletion_signal", "no revision resolver is configured"
                )
            resolved = self.resolver.deleted_paths(repo, signal["baseRevision"], signal["headRevision"])
            targets |= {(repo, path) for path in resolved}
        with self._as("apply_deletion_signal", principal, "write"), self._writing:
            self._settle("apply_deletion_signal")
            doomed, targets = self._doomed(principal, signal, targets, written)
            if doomed:
                with self._store_call("apply_deletion_signal"):  # the undo log: every row to delete
                    prior = self.store.get(ids=doomed, embeddings=True)
                self._apply("apply_deletion_signal", prior, delete=doomed)
        return DeletionResult(tuple(sorted(doomed)), tuple(sorted(targets)))

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        """The ids of the tenant's rows a signal deletes, and its (repo, path) targets: ``targets``
        and the paths the manifest leaves out, less ``written``."""
        targets = set(targets)
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        with self._store_call("apply_deletion_signal"):
            manifest = signal.get("manifestSnapshot")
            if manifest is not None:
                keep = set(manifest["pathsAfterPush"])
                rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": manifest["repoSlug"]}}]})
                targets |= {
                    (str(manifest["repoSlug"]), str(m["sourcePath"]))
                    for m in rows.metadatas
                    if m["sourcePath"] not in keep
                }
            targets -= written
            doomed: builtins.list[str] = []
            for repo in sorted({r for r, _ in targets}):
                paths = sorted(p for r, p in targets if r == repo)
                clause = {"$and": [tenant, {"repoSlug": {"$eq": repo}}, {"sourcePath": {"$in": paths}}]}
                rows = self.store.get(where=clause)
                doomed.extend(
                    i
                    for i, m in zip(rows.ids, rows.metadatas, strict=True)
                    if m["tenantId"] == principal.tenant_id
                )
        return doomed, targets

    # -- backup ---------------------------------------------------------------------------------

    def export(self, principal: Principal) -> builtins.list[dict[str, Any]]:
        """Every stored row as a backup-record-v1 record (embeddings exactly as stored), by id."""
        principal = self._authenticated(principal, "export")
        self._operator(principal, "export")
        with self._as("export", principal, "operator"):
            self._settle("export")
            with self._store_call("export"):
                rows = self.store.get(embeddings=True)
        order = sorted(range(len(rows.ids)), key=lambda i: rows.ids[i])
        assert rows.embeddings is not None
        return [
            {
                "id": rows.ids[i],
                "embedding": [float(x) for x in rows.embeddings[i].astype(np.float32)],
                "metadata": dict(rows.metadatas[i]),
                "document": rows.documents[i],
            }
            for i in order
        ]

    def export_jsonl(self, principal: Principal, stream: IO[bytes]) -> int:
        """Write the export as canonical JSON Lines; returns the number of records."""
        records = self.export(principal)
        for record in records:
            stream.write(rfc8785.dumps(record) + b"\n")
        return len(records)

    def restore(self, principal: Principal, records: Iterable[Mapping[str, Any]]) -> int:
        """Validate every record, then write them all with their embeddings and stamps as given."""
        principal = self._authenticated(principal, "restore")
        self._operator(principal, "restore")
        records = list(records)
        problems: builtins.list[Problem] = []
        for index, record in enumerate(records):
            if not is_valid(record, "backup-record-v1"):
                problems.extend(
                    Problem(f"/{index}{p.pointer}", p.keyword, p.expected, p.got)
                    for p in explain(record, "backup-record-v1")
                )
                continue
            problems.extend(self._restorable(index, record))
        if problems:
            raise ContractViolation(contract="backup-record-v1", problems=tuple(problems))
        if records:
            last = builtins.list({r["id"]: r for r in records}.values())  # one id twice: the last lands
            written = Rows(
                tuple(r["id"] for r in last),
                tuple(r["document"] for r in last),
                tuple(r["metadata"] for r in last),
                np.asarray([r["embedding"] for r in last], dtype=np.float32),
            )
            with self._as("restore", principal, "operator"), self._writing:
                self._settle("restore")
                with self._store_call("restore"):  # the undo log: every row the batch overwrites
                    prior = self.store.get(ids=builtins.list(written.ids), embeddings=True)
                self._apply("restore", prior, write=written)
        return len(records)

    def _restorable(self, index: int, record: Mapping[str, Any]) -> builtins.list[Problem]:
        """Beyond the schema: a restored row must stay filterable and fit the store."""
        found = []
        metadata = record["metadata"]
        for key in ("tenantId", "repoSlug", "sourcePath", "visibility"):
            if key not in metadata:
                found.append(
                    Problem(
                        f"/{index}/metadata", "required", f"a {key!r} stamp (rows are scoped by it)", "absent"
                    )
                )
        if metadata.get("visibility") not in (None, "team", "private", "public"):
            found.append(
                Problem(
                    f"/{index}/metadata/visibility",
                    "enum",
                    "team, private or public",
                    repr(metadata["visibility"]),
                )
            )
        for key, value in metadata.items():
            if not isinstance(value, (str, int, float, bool)):
                found.append(
                    Problem(f"/{index}/metadata/{key}", "type", "a string, number or boolean", repr(value))
                )
        dimensions = getattr(self.embedder, "dimensions", None)
        if dimensions is not None and len(record["embedding"]) != dimensions:
            found.append(
                Problem(
                    f"/{index}/embedding",
                    "dimensions",
                    f"{dimensions} numbers",
                    f"{len(record['embedding'])}",
                )
            )
        return found


def _only(rows: Rows, ids: Iterable[str]) -> Rows:
    """The rows of ``rows`` whose id is in ``ids``, in ``rows``' order."""
    wanted = set(ids)
    keep = [i for i, row_id in enumerate(rows.ids) if row_id in wanted]
    if len(keep) == len(rows.ids):
        return rows
    embeddings = rows.embeddings[keep] if rows.embeddings is not None else None
    metadatas: tuple[Metadata, ...] = tuple(rows.metadatas[i] for i in keep)
    return Rows(
        tuple(rows.ids[i] for i in keep), tuple(rows.documents[i] for i in keep), metadatas, embeddings
    )


def _hit(match: Match) -> Hit:
    return Hit(match.id, match.document, dict(match.metadata), 1.0 - match.distance)


def _hits(rows: Rows) -> list[Hit]:
    return [Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)]
