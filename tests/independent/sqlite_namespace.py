"""An independent tenant-namespace backend: one SQLite table, written from the spec docs.

Not the reference and not built on it: the chunks live in one SQLite table with the scope stamps
in columns, every read is one SQL statement with the read filter in its WHERE clause
(``schemas/read-filter.md``), every write and delete runs in one SQLite transaction that a store
fault rolls back whole (``schemas/stamping.md``, ``schemas/deletion-signaling.md``), and a query
ranks by exact cosine over the float32 vectors of a word-hashing embedding of its own. It uses
the adapter helpers the guide offers a Python backend (validation, stamps and spoofs, deletion
signal checks, chunk ids): the store design, the filter, the deletion matching, the write rules
and export and restore are its own. It is the control that keeps the suites' model honest: it
must pass every suite it declares, at the thorough profile too.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kbconform.adapter import (
    BackendOptions,
    RevisionResolver,
    boundary_repo,
    check_deletion_signal,
    check_sync,
    check_where,
    envelope_claims,
    server_stamps,
    signal_paths,
    spoofed_fields,
)
from kbconform.contract import explain, is_valid
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
from kbconform.identity import Principal, chunk_id

SHARED = "neo-shared"
CONFIG_VERSION = "sqlite-1"
DIMENSIONS = 48
THRESHOLD, WINDOW = 12, 600.0
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "adapter": {"name": "independent-sqlite", "version": "0.0.1"},
    "backend": {"name": "one SQLite table, exact cosine", "version": "test"},
    "readFacades": ["query", "get", "list", "count", "ask"],
    "isolationModel": "metadata-filter",
    "spoofModes": ["overwrite", "reject"],
    "sharedNamespace": SHARED,
    "sharedNamespaceReaders": "granted",
    "idProfile": "kbconform-v1",
    "features": {
        "client-where": True,
        "revision-boundary": True,
        "fault-injection": True,
        "escalation": {"threshold": THRESHOLD, "windowSeconds": WINDOW},
        "workspace-scan": "parsing happens in the client, not in this store",
        "envelope": True,
        "sync": True,
        "maintenance": ["reembed"],
    },
}
#: The record fields the server stamps: never taken from the record.
_STAMPED = ("tenantId", "repoSlug", "visibility", "originAgentIdentity", "ingestedAt", "tenantConfigVersion")
_WORD = re.compile(r"\w+")


def _embed(text: str) -> list[float]:
    """Word hashing into DIMENSIONS buckets, L2-normalized (the zero text: a fixed unit vector)."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        bucket, sign = digest[0] % DIMENSIONS, 1.0 if digest[1] % 2 else -1.0
        vector[bucket] += sign
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0.0:
        vector[0], norm = 1.0, 1.0
    return [struct.unpack("f", struct.pack("f", x / norm))[0] for x in vector]  # float32 values


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


def _unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"{len(blob) // 4}f", blob))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


_MISSING = object()


def _holds(metadata: Mapping[str, Any], clause: Mapping[str, Any]) -> bool:
    """Whether stored ``metadata`` satisfies one checked client clause (schemas/client-where.md);
    a key the row lacks equals nothing."""
    for key, condition in clause.items():
        if key == "$and":
            if not all(_holds(metadata, part) for part in condition):
                return False
        elif key == "$or":
            if not any(_holds(metadata, part) for part in condition):
                return False
        else:
            operator, operand = (
                next(iter(condition.items())) if isinstance(condition, Mapping) else ("$eq", condition)
            )
            if not _compare(metadata.get(key, _MISSING), operator, operand):
                return False
    return True


def _same_kind(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    numbers = isinstance(a, int | float) and isinstance(b, int | float)
    return numbers or (isinstance(a, str) and isinstance(b, str))


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator in ("$in", "$nin"):
        found = any(_same_kind(value, o) and value == o for o in operand)
        return found if operator == "$in" else not found
    equal = _same_kind(value, operand) and value == operand
    if operator in ("$eq", "$ne"):
        return equal if operator == "$eq" else not equal
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (value, operand))
    if not numbers:  # the order operators compare numbers only
        return False
    return {
        "$gt": value > operand,
        "$gte": value >= operand,
        "$lt": value < operand,
        "$lte": value <= operand,
    }[operator]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    document: str | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpoofNote:
    field: str
    chunk_id: str


@dataclass(frozen=True, slots=True)
class Ingested:
    ids: tuple[str, ...]
    warnings: tuple[SpoofNote, ...]


@dataclass(frozen=True, slots=True)
class Deleted:
    deleted_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Synced:
    ids: tuple[str, ...]
    warnings: tuple[SpoofNote, ...]
    deleted_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    sources: tuple[Hit, ...]


_SCHEMA = """
CREATE TABLE chunks (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    repo TEXT NOT NULL,
    path TEXT NOT NULL,
    visibility TEXT NOT NULL,
    agent TEXT,
    document TEXT,
    metadata TEXT NOT NULL,
    embedding BLOB NOT NULL
);
CREATE INDEX chunks_scope ON chunks (tenant, repo, path);
"""


class NamespaceFacades:
    """What the independent tenant-namespace backends do alike whatever their store: ``ask``
    over ``query``, ``ingest`` and ``sync`` over the store's ``_write``, who writes into the
    shared namespace, the metadata a row keeps, and escalation. A backend gives ``_principal``,
    ``query``, ``_write`` and the ``_spoofs``/``_escalated`` fields."""

    _spoofs: dict[tuple[str, str | None], list[float]]
    _escalated: set[tuple[str, str | None]]

    def ask(self, principal: Principal, question: str, n_results: int, /) -> Answer:
        hits = self.query(principal, question, n_results, None)
        return Answer("\n\n".join(hit.document for hit in hits if hit.document), tuple(hits))

    @staticmethod
    def _may_write(principal: Principal, operation: str) -> None:
        if principal.tenant_id == SHARED and principal.role != "operator":
            raise Forbidden(operation, "only an operator writes into the shared namespace")

    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any]) -> dict[str, Any]:
        """The stored metadata: the record's own scalar fields (customMeta as one JSON string
        under ``meta``, the hash inputs joined), then the server's stamps over everything."""
        kept = {
            key: value
            for key, value in record.items()
            if key not in ("content", "customMeta", "hashInputs", "schemaVersion", *_STAMPED)
        }
        kept["meta"] = json.dumps(record.get("customMeta") or {}, sort_keys=True, ensure_ascii=False)
        kept["hashInputs"] = "+".join(record["hashInputs"])
        return {**kept, **stamps}

    def ingest(
        self, principal: Principal, records: Sequence[Mapping[str, Any]], envelope: object = None, /
    ) -> Ingested:
        checked = self._principal(principal, "ingest")
        ids, notes, _ = self._write("ingest", checked, records, envelope, None)
        return Ingested(ids, notes)

    def sync(
        self,
        principal: Principal,
        repo_slug: str,
        records: Sequence[Mapping[str, Any]],
        envelope: object = None,
        /,
    ) -> Synced:
        checked = self._principal(principal, "sync")
        self._may_write(checked, "sync")
        check_sync(repo_slug, records)
        return Synced(*self._write("sync", checked, records, envelope, repo_slug))

    def _escalated_now(self, principal: Principal, spoofed: int) -> bool:
        """Whether the principal was switched to reject before this write; then counts its
        ``spoofed`` records (escalation: that many within the window switch it)."""
        key, now = (principal.tenant_id, principal.agent_identity), time.monotonic()
        escalated = key in self._escalated
        self._spoofs[key] = [t for t in self._spoofs.get(key, []) if t > now - WINDOW] + [now] * spoofed
        if len(self._spoofs[key]) >= THRESHOLD:
            self._escalated.add(key)
        return escalated


@dataclass
class SqliteNamespace(NamespaceFacades):
    """One backend: an in-memory SQLite database of its own."""

    spoof_mode: str = "overwrite"
    resolver: RevisionResolver | None = None
    store_fails: Callable[[], bool] | None = None
    _db: sqlite3.Connection = field(init=False)
    _lock: threading.RLock = field(init=False, default_factory=threading.RLock)
    #: Each principal's spoofed records, by time; principals switched to reject (escalation).
    _spoofs: dict[tuple[str, str | None], list[float]] = field(init=False, default_factory=dict)
    _escalated: set[tuple[str, str | None]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    # -- the store: every statement is one store call, consulted first --------------------------

    def _sql(self, statement: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable("sqlite", "the store failed")
        try:
            return self._db.execute(statement, tuple(args)).fetchall()
        except sqlite3.Error as error:
            raise BackendUnavailable("sqlite", f"{type(error).__name__}: {error}") from error

    def _transaction(self, work: Callable[[], Any]) -> Any:
        """``work`` in one transaction: any error rolls every statement of it back."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                result = work()
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            return result

    # -- identity ---------------------------------------------------------------------------------

    @staticmethod
    def _principal(principal: object, operation: str) -> Principal:
        if type(principal) is not Principal:
            raise Unauthenticated(operation)
        try:  # its fields checked again: a frozen dataclass can still be changed in place
            return Principal(
                principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
            )
        except ContractViolation:
            raise Unauthenticated(operation) from None

    @staticmethod
    def _scope(principal: Principal) -> tuple[str, list[Any]]:
        """The read filter as SQL: the readable tenants, and team, public or the agent's own
        private chunks (a private chunk with no agent matches no one)."""
        tenants = list(principal.readable_tenants)
        marks = ", ".join("?" for _ in tenants)
        clause = f"tenant IN ({marks}) AND (visibility IN ('team', 'public')"
        if principal.agent_identity is None:
            return clause + ")", tenants
        return clause + " OR (visibility = 'private' AND agent = ?))", [*tenants, principal.agent_identity]

    # -- reads ------------------------------------------------------------------------------------

    def _rows(
        self, principal: Principal, where: str = "", args: Sequence[Any] = (), page: Sequence[int] = ()
    ) -> list[tuple[Any, ...]]:
        """The rows in scope (and ``where``), by id; ``page``: (limit, offset)."""
        scope, scoped = self._scope(principal)
        paged = " LIMIT ? OFFSET ?" if page else ""
        return self._sql(
            f"SELECT id, document, metadata, embedding FROM chunks WHERE {scope}{where} ORDER BY id{paged}",
            [*scoped, *args, *page],
        )

    @staticmethod
    def _hit(row: tuple[Any, ...]) -> Hit:
        return Hit(row[0], row[1], json.loads(row[2]))

    def query(self, principal: Principal, text: str, n_results: int, where: Any, /) -> list[Hit]:
        checked = self._principal(principal, "query")
        clauses = [] if where is None else check_where(where)
        with self._lock:
            rows = [row for row in self._rows(checked) if all(_holds(json.loads(row[2]), c) for c in clauses)]
        target = _embed(text)
        ranked = sorted(rows, key=lambda row: (-_cosine(target, _unpack(row[3])), row[0]))
        return [self._hit(row) for row in ranked[: max(n_results, 0)]]

    def get(self, principal: Principal, chunk_id: str, /) -> Hit:
        checked = self._principal(principal, "get")
        with self._lock:
            rows = self._rows(checked, " AND id = ?", [chunk_id])
        if not rows:
            raise NotFound(chunk_id)
        return self._hit(rows[0])

    def list(self, principal: Principal, limit: int, offset: int, /) -> list[Hit]:
        checked = self._principal(principal, "list")
        if type(limit) is not int or type(offset) is not int or limit < 1 or offset < 0:
            raise ContractViolation(
                contract="list",
                problems=(Problem("", "range", "limit >= 1 and offset >= 0", f"{limit}, {offset}"),),
            )
        with self._lock:
            return [self._hit(row) for row in self._rows(checked, page=(limit, offset))]

    def count(self, principal: Principal, /) -> int:
        checked = self._principal(principal, "count")
        scope, scoped = self._scope(checked)
        with self._lock:
            return int(self._sql(f"SELECT COUNT(*) FROM chunks WHERE {scope}", scoped)[0][0])

    # -- writes -----------------------------------------------------------------------------------

    def _write(
        self,
        operation: str,
        checked: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: object,
        stale_repo: str | None,
    ) -> tuple[tuple[str, ...], tuple[SpoofNote, ...], tuple[str, ...]]:
        """Validate, stamp and write ``records`` in one transaction; with ``stale_repo`` (a sync),
        also delete the tenant's chunks of that repository at paths no record carries. An
        envelope's claims are ignored: what is stored is what the same write without one stores."""
        self._may_write(checked, operation)
        records = list(records)
        problems = tuple(
            Problem(f"/{index}{p.pointer}", p.keyword, p.expected, p.got)
            for index, record in enumerate(records)
            if not is_valid(record, "parsed-chunk-v1")
            for p in explain(record, "parsed-chunk-v1")
        )
        if problems:
            raise ContractViolation(contract="parsed-chunk-v1", problems=problems)
        if envelope is not None:
            envelope_claims(checked, envelope, records)  # refuses one that is no object
        stamps = [server_stamps(checked, r, config_version=CONFIG_VERSION) for r in records]
        spoofs = [(i, f, c, s) for i, r in enumerate(records) for f, c, s in spoofed_fields(r, stamps[i])]
        with self._lock:
            escalated = self._escalated_now(checked, len({i for i, *_ in spoofs}))
        if spoofs and (self.spoof_mode == "reject" or escalated):
            raise SpoofRejected(checked.tenant_id, tuple(spoofs))
        ids = [chunk_id(r, checked.tenant_id, r["repoSlug"]) for r in records]
        last = {chunk: index for index, chunk in enumerate(ids)}  # equal ids: the last record lands

        def write() -> tuple[str, ...]:
            for chunk, index in last.items():
                self._put(operation, checked, chunk, records[index], stamps[index])
            if stale_repo is None:
                return ()
            kept = {r["sourcePath"] for r in records}
            rows = self._sql(
                "SELECT id, path FROM chunks WHERE tenant = ? AND repo = ?", [checked.tenant_id, stale_repo]
            )
            stale = sorted(i for i, path in rows if path not in kept and i not in last)
            for chunk in stale:
                self._sql("DELETE FROM chunks WHERE id = ? AND tenant = ?", [chunk, checked.tenant_id])
            return tuple(stale)

        deleted = self._transaction(write)
        return tuple(ids), tuple(SpoofNote(f, ids[i]) for i, f, _, _ in spoofs), deleted

    def _put(
        self,
        operation: str,
        checked: Principal,
        chunk: str,
        record: Mapping[str, Any],
        stamps: Mapping[str, Any],
    ) -> None:
        """Write one chunk, refusing an id another tenant's chunk, or another agent's private
        chunk, holds (a private chunk with no agent is no one's)."""
        old = self._sql(
            "SELECT tenant, visibility, agent, document, metadata FROM chunks WHERE id = ?", [chunk]
        )
        ingested_at = _now()
        if old:
            tenant, visibility, agent, document, metadata = old[0]
            if tenant != checked.tenant_id:
                raise Forbidden(operation, f"chunk id {chunk} is taken; nothing was written")
            if visibility == "private" and (agent is None or agent != checked.agent_identity):
                raise Forbidden(operation, f"chunk id {chunk} is private to another agent")
            first = json.loads(metadata).get("ingestedAt")
            if first and document == record["content"]:
                ingested_at = first
        meta = {**self._metadata(record, stamps), "ingestedAt": ingested_at}
        self._sql(
            "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                chunk,
                checked.tenant_id,
                record["repoSlug"],
                record["sourcePath"],
                meta["visibility"],
                meta.get("originAgentIdentity"),
                record["content"],
                json.dumps(meta),
                _pack(_embed(record["content"])),
            ],
        )

    def maintain(self, principal: Principal, operation: str, /) -> None:
        checked = self._principal(principal, "maintain")
        self._operator(checked, "maintain")
        if operation != "reembed":
            raise ContractViolation(
                contract="maintain", problems=(Problem("", "enum", "one of ['reembed']", repr(operation)),)
            )

        def reembed() -> None:
            for chunk, document in self._sql("SELECT id, document FROM chunks WHERE document IS NOT NULL"):
                self._sql("UPDATE chunks SET embedding = ? WHERE id = ?", [_pack(_embed(document)), chunk])

        self._transaction(reembed)

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any], /) -> Deleted:
        checked = self._principal(principal, "apply_deletion_signal")
        self._may_write(checked, "apply_deletion_signal")
        signal = check_deletion_signal(signal)
        tombstoned, written = signal_paths(signal)
        targets = set(tombstoned)
        if "baseRevision" in signal:
            repo = boundary_repo(signal)
            if self.resolver is None:
                raise RevisionBoundaryUnavailable("apply_deletion_signal", "no revision resolver")
            resolved = self.resolver.deleted_paths(repo, signal["baseRevision"], signal["headRevision"])
            targets |= {(repo, str(path)) for path in resolved}
        tenant = checked.tenant_id

        def delete() -> list[str]:
            doomed: set[str] = set()
            manifest = signal.get("manifestSnapshot")
            keep = set(manifest["pathsAfterPush"]) if manifest is not None else set()
            if manifest is not None:
                rows = self._sql(
                    "SELECT id, path FROM chunks WHERE tenant = ? AND repo = ?",
                    [tenant, manifest["repoSlug"]],
                )
                doomed |= {
                    i for i, path in rows if path not in keep and (manifest["repoSlug"], path) not in written
                }
            for repo, path in sorted(targets - written):
                rows = self._sql(
                    "SELECT id FROM chunks WHERE tenant = ? AND repo = ? AND path = ?", [tenant, repo, path]
                )
                doomed |= {row[0] for row in rows}
            for chunk in sorted(doomed):
                self._sql("DELETE FROM chunks WHERE id = ? AND tenant = ?", [chunk, tenant])
            return sorted(doomed)

        return Deleted(tuple(self._transaction(delete)))

    # -- backup -----------------------------------------------------------------------------------

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if principal.role != "operator":
            raise Forbidden(operation, "operators only")

    def export(self, principal: Principal, /) -> list[dict[str, Any]]:
        checked = self._principal(principal, "export")
        self._operator(checked, "export")
        with self._lock:
            rows = self._sql("SELECT id, document, metadata, embedding FROM chunks ORDER BY id")
        return [
            {"id": i, "embedding": _unpack(blob), "metadata": json.loads(meta), "document": document}
            for i, document, meta, blob in rows
        ]

    def restore(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> int:
        checked = self._principal(principal, "restore")
        self._operator(checked, "restore")
        records = list(records)
        problems: list[Problem] = []
        for index, record in enumerate(records):
            if not is_valid(record, "backup-record-v1"):
                problems += [
                    Problem(f"/{index}{p.pointer}", p.keyword, p.expected, p.got)
                    for p in explain(record, "backup-record-v1")
                ]
                continue
            metadata, embedding = record["metadata"], record["embedding"]
            for stamp in ("tenantId", "repoSlug", "sourcePath", "visibility"):
                if not isinstance(metadata.get(stamp), str):
                    problems.append(
                        Problem(
                            f"/{index}/metadata/{stamp}", "required", f"a {stamp}", repr(metadata.get(stamp))
                        )
                    )
            if metadata.get("visibility") not in (None, "team", "private", "public"):
                problems.append(
                    Problem(
                        f"/{index}/metadata/visibility",
                        "enum",
                        "team, private or public",
                        repr(metadata["visibility"]),
                    )
                )
            for key, value in metadata.items():
                if not isinstance(value, str | int | float | bool):
                    problems.append(
                        Problem(
                            f"/{index}/metadata/{key}", "type", "a string, number or boolean", repr(value)
                        )
                    )
            if len(embedding) != DIMENSIONS:
                problems.append(
                    Problem(f"/{index}/embedding", "length", f"{DIMENSIONS} numbers", str(len(embedding)))
                )
        if problems:
            raise ContractViolation(contract="backup-record-v1", problems=tuple(problems))

        def write() -> None:
            for record in records:
                metadata = record["metadata"]
                self._sql(
                    "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        record["id"],
                        metadata["tenantId"],
                        metadata["repoSlug"],
                        metadata["sourcePath"],
                        metadata["visibility"],
                        metadata.get("originAgentIdentity"),
                        record.get("document"),
                        json.dumps(dict(metadata)),
                        _pack(record["embedding"]),
                    ],
                )

        self._transaction(write)
        return len(records)


class Adapter:
    """``tests.independent.sqlite_namespace:make``."""

    manifest = MANIFEST

    def open(self, options: BackendOptions) -> SqliteNamespace:
        return SqliteNamespace(options.spoof_mode, options.resolver, options.store_fails)

    def close(self, backend: SqliteNamespace) -> None:
        backend.close()

    def shutdown(self) -> None:
        return None


def make() -> Adapter:
    return Adapter()


__all__ = ["MANIFEST", "Adapter", "SqliteNamespace", "make"]
