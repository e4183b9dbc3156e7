"""An independent tenant-namespace backend on LanceDB, a store that versions its tables.

Not the reference and not built on it: the chunks live in one LanceDB table (a directory of its
own per backend) with the scope stamps and the metadata keys a client clause may name as typed
columns; every read is a LanceDB filter string, the scope written with ``sql_literal`` and the
client clause with ``where_literal`` (``schemas/client-where.md``, SQL stores); a write notes
the table's version first, and a store failure part-way restores that version as a new commit
(``AsyncTable.restore`` after checking it out: a commit, not the view a checkout alone gives),
under the one writer lock, so no later write or delete is undone (``schemas/stamping.md``, all
or nothing). A batch's equal ids land as the last record of each, in one commit: appended when
the table holds none of its ids, else merged on id; deletions match each (repository, path)
pair exactly, a repository's paths read in one scan; a list page is one query, the scope
ordered by id in the store and cut there by offset and limit, since a LanceDB scan has no order
of its own. The store is driven through LanceDB's asynchronous API on one event loop of the
backend's own, every call with a deadline.
Query ranks the scoped, filtered rows by exact cosine in Python (ties by id). It uses the
adapter helpers the guide offers a Python backend, and the word-hashing embedding and result
records of ``sqlite_namespace``; the store design, the filters, the rollback and the deletion
matching are its own. It is a control that keeps the suites' model honest.
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import json
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import lancedb
import numpy as np
import numpy.typing as npt
import pyarrow as pa
from lancedb.query import ColumnOrdering

from kbconform.adapter import (
    BackendOptions,
    RevisionResolver,
    boundary_repo,
    check_deletion_signal,
    envelope_claims,
    server_stamps,
    signal_paths,
    spoofed_fields,
    sql_literal,
    where_literal,
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
from kbconform_reference.servers import scratch_dir
from tests.independent.sqlite_namespace import (
    DIMENSIONS,
    SHARED,
    THRESHOLD,
    WINDOW,
    Deleted,
    Hit,
    NamespaceFacades,
    SpoofNote,
    _embed,
)

T = TypeVar("T")
CONFIG_VERSION = "lancedb-1"
#: Every this many writes the table's fragments are compacted (``Table.optimize``): each write
#: adds a fragment or a deletion file, and a read scans every fragment twice (its filter columns,
#: then the chosen rows' other columns); a compaction costs about three reads, and the suites
#: make 16 to 34 reads a write.
COMPACT_EVERY = 3
#: The most paths one deletion scan names (``path IN (...)``).
BATCH = 200
#: How long one store call may take, in seconds, before the store counts as unavailable.
STORE_TIMEOUT = 60.0
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "adapter": {"name": "independent-lancedb", "version": "0.0.1"},
    "backend": {"name": "one LanceDB table, versions restored on failure", "version": lancedb.__version__},
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
#: The metadata keys stored as their own columns too (named as the key), for a client clause;
#: a value of another kind is NULL there, and any other key is lacked by every row as a clause
#: sees it.
COLUMNS: dict[str, Literal["string", "number", "boolean"]] = {
    "sourcePath": "string",
    "kind": "string",
    "name": "string",
    "rootKind": "string",
    "parserId": "string",
    "parserVersion": "string",
    "className": "string",
    "extends": "string",
    "line_start": "number",
    "line_end": "number",
}
_ARROW = {"string": pa.string(), "number": pa.float64(), "boolean": pa.bool_()}
SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("tenant", pa.string(), nullable=False),
        pa.field("repo", pa.string(), nullable=False),
        pa.field("path", pa.string(), nullable=False),
        pa.field("visibility", pa.string(), nullable=False),
        pa.field("agent", pa.string()),
        pa.field("document", pa.string()),
        pa.field("metadata", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), DIMENSIONS), nullable=False),
        *(pa.field(key, _ARROW[kind]) for key, kind in COLUMNS.items()),
    ]
)
#: The columns a read answers with (a hit), those a write checks an id it replaces by, and
#: those a deletion or a sync matches paths by: a scan materializes no other column.
HIT = ("id", "document", "metadata")
HELD = ("id", "tenant", "visibility", "agent", "document", "metadata")
PATHS = ("id", "path")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _typed(value: object, kind: str) -> object:
    """``value`` if it is of the column's kind, else NULL (a clause then sees the key lacked)."""
    if kind == "boolean":
        return value if isinstance(value, bool) else None
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def _row(
    chunk: str, document: str | None, metadata: Mapping[str, Any], vector: Sequence[float]
) -> dict[str, Any]:
    return {
        "id": chunk,
        "tenant": metadata["tenantId"],
        "repo": metadata["repoSlug"],
        "path": metadata["sourcePath"],
        "visibility": metadata["visibility"],
        "agent": metadata.get("originAgentIdentity"),
        "document": document,
        "metadata": json.dumps(dict(metadata), ensure_ascii=False),
        "vector": [float(x) for x in vector],
        **{key: _typed(metadata.get(key), kind) for key, kind in COLUMNS.items()},
    }


def _cosines(a: npt.NDArray[np.float64], vectors: Sequence[npt.NDArray[np.float32]]) -> builtins.list[float]:
    """The cosine of ``a`` with each of ``vectors`` (0 where a norm is 0), as one matrix product."""
    matrix = np.asarray(vectors, dtype=np.float64).reshape(-1, DIMENSIONS)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(a)
    dots = matrix @ a
    scores: builtins.list[float] = np.divide(dots, norms, out=np.zeros_like(dots), where=norms != 0).tolist()
    return scores


def _ids_in(ids: Sequence[str]) -> str:
    return f"id IN ({', '.join(sql_literal(i) for i in ids)})"


@dataclass
class LanceNamespace(NamespaceFacades):
    """One backend: a LanceDB table in a directory of its own."""

    spoof_mode: str = "overwrite"
    resolver: RevisionResolver | None = None
    store_fails: Callable[[], bool] | None = None
    _dir: str = field(init=False)
    _table: Any = field(init=False)
    _loop: asyncio.AbstractEventLoop = field(init=False)
    _thread: threading.Thread = field(init=False)
    _lock: threading.RLock = field(init=False, default_factory=threading.RLock)
    _spoofs: dict[tuple[str, str | None], builtins.list[float]] = field(init=False, default_factory=dict)
    _escalated: set[tuple[str, str | None]] = field(init=False, default_factory=set)
    _writes: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        # on a memory file system where there is one: each commit's fsync then costs no disk flush
        self._dir = tempfile.mkdtemp(prefix="kbconform-lancedb-", dir=scratch_dir())
        # LanceDB's asynchronous API on one event loop of the backend's own: a read is one hop to
        # the loop (the synchronous API makes several per read, each a thread switch)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="lancedb", daemon=True)
        self._thread.start()

        async def create() -> Any:
            return await (await lancedb.connect_async(self._dir)).create_table("chunks", schema=SCHEMA)

        self._table = self._run(create)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STORE_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    # -- the store: every call consults the fault switch first ----------------------------------

    def _run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work`` run on the backend's loop, its answer waited for (at most STORE_TIMEOUT)."""

        async def run() -> T:
            return await work()

        done = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return done.result(STORE_TIMEOUT)
        except concurrent.futures.TimeoutError:
            done.cancel()
            raise BackendUnavailable("lancedb", f"no answer in {STORE_TIMEOUT:g} s") from None

    def _call(self, work: Callable[[], Awaitable[T]]) -> T:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable("lancedb", "the store failed")
        try:
            return self._run(work)
        except (OSError, RuntimeError, ValueError, pa.ArrowException) as error:
            raise BackendUnavailable("lancedb", f"{type(error).__name__}: {error}") from error

    def _select(
        self, where: str, columns: Sequence[str] | None = None, vectors: bool = False
    ) -> builtins.list[dict[str, Any]]:
        """Every row matching ``where``, sorted by id: its ``columns`` (default: every one), and
        its vector too when ``vectors`` (a numpy row: a fixed-size list read as Python floats is
        the slowest part of a read)."""
        wanted = [name for name in SCHEMA.names if name != "vector"] if columns is None else [*columns]
        columns = [*wanted, "vector"] if vectors else wanted
        found: pa.Table = self._call(lambda: self._table.query().where(where).select(columns).to_arrow())
        rows = found.drop_columns(["vector"]).to_pylist() if vectors else found.to_pylist()
        if vectors:
            matrix = found.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, DIMENSIONS)
            for row, vector in zip(rows, matrix, strict=True):
                row["vector"] = vector
        return sorted(rows, key=lambda row: row["id"])

    def _upsert(self, rows: builtins.list[dict[str, Any]], held: bool = True) -> None:
        """Write ``rows`` in one commit: appended when the table holds none of their ids
        (``held`` False, as read under the writer lock), else merged on id, which replaces the
        rows held and adds the others (a merge joins the batch with the table: several times an
        append's cost)."""
        if rows:
            data = pa.Table.from_pylist(rows, schema=SCHEMA)
            if not held:
                self._call(lambda: self._table.add(data))
                return
            self._call(
                lambda: (
                    self._table.merge_insert("id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute(data)
                )
            )

    def _delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._call(lambda: self._table.delete(_ids_in(ids)))

    def _atomic(self, work: Callable[[], Any]) -> Any:
        """``work`` under the writer lock; a failure part-way restores the version it started
        from, as a new commit (nothing written since can be lost: no other writer ran)."""
        with self._lock:
            version = self._run(self._table.version)
            try:
                done = work()
            except BaseException:
                if self._run(self._table.version) != version:
                    self._run(lambda: self._restore(version))
                raise
            self._writes += 1
            if self._writes % COMPACT_EVERY == 0:  # many small commits make every scan slower
                self._run(self._table.optimize)
            return done

    async def _restore(self, version: int) -> None:
        await self._table.checkout(version)
        await self._table.restore()

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
    def _scope(principal: Principal) -> str:
        """The read filter as a LanceDB filter string: the readable tenants, and team, public or
        the agent's own private chunks (a NULL agent equals no one)."""
        tenants = ", ".join(sql_literal(t) for t in sorted(principal.readable_tenants))
        clause = f"tenant IN ({tenants}) AND (visibility IN ('team', 'public')"
        if principal.agent_identity is None:
            return clause + ")"
        return clause + f" OR (visibility = 'private' AND agent = {sql_literal(principal.agent_identity)}))"

    # -- reads ------------------------------------------------------------------------------------

    @staticmethod
    def _hit(row: Mapping[str, Any]) -> Hit:
        return Hit(row["id"], row["document"], json.loads(row["metadata"]))

    def query(self, principal: Principal, text: str, n_results: int, where: Any, /) -> builtins.list[Hit]:
        checked = self._principal(principal, "query")
        scope = self._scope(checked)
        if where is not None:
            scope = f"({scope}) AND {where_literal(where, columns=COLUMNS)}"
        rows = self._select(scope, HIT, vectors=True)
        target = np.asarray(_embed(text), dtype=np.float64)
        scores = _cosines(target, [row["vector"] for row in rows])
        ranked = [row for _, row in sorted(zip(scores, rows, strict=True), key=lambda p: (-p[0], p[1]["id"]))]
        return [self._hit(row) for row in ranked[: max(n_results, 0)]]

    def get(self, principal: Principal, chunk_id: str, /) -> Hit:
        checked = self._principal(principal, "get")
        rows = self._select(f"({self._scope(checked)}) AND id = {sql_literal(chunk_id)}", HIT)
        if not rows:
            raise NotFound(chunk_id)
        return self._hit(rows[0])

    def list(self, principal: Principal, limit: int, offset: int, /) -> builtins.list[Hit]:
        checked = self._principal(principal, "list")
        if type(limit) is not int or type(offset) is not int or limit < 1 or offset < 0:
            raise ContractViolation(
                contract="list",
                problems=(Problem("", "range", "limit >= 1 and offset >= 0", f"{limit}, {offset}"),),
            )
        # one query, so one version: the scope ordered by id in the store, the page cut there
        query = self._table.query().where(self._scope(checked)).select(builtins.list(HIT))
        page = query.order_by([ColumnOrdering(column_name="id")]).offset(offset).limit(limit)
        found: pa.Table = self._call(page.to_arrow)
        return [self._hit(row) for row in found.to_pylist()]

    def count(self, principal: Principal, /) -> int:
        checked = self._principal(principal, "count")
        return int(self._call(lambda: self._table.count_rows(self._scope(checked))))

    # -- writes -----------------------------------------------------------------------------------

    def _write(
        self,
        operation: str,
        checked: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: object,
        stale_repo: str | None,
    ) -> tuple[tuple[str, ...], tuple[SpoofNote, ...], tuple[str, ...]]:
        """Validate, stamp and write ``records`` all or nothing; with ``stale_repo`` (a sync), also
        delete the tenant's chunks of that repository at paths no record carries."""
        self._may_write(checked, operation)
        records = builtins.list(records)
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
            old = {row["id"]: row for row in self._select(_ids_in(builtins.list(last)), HELD)} if last else {}
            rows = []
            for chunk, index in last.items():
                rows.append(
                    self._put(operation, checked, old.get(chunk), chunk, records[index], stamps[index])
                )
            stale: builtins.list[str] = []
            if stale_repo is not None:
                kept = {r["sourcePath"] for r in records}
                mine = f"tenant = {sql_literal(checked.tenant_id)} AND repo = {sql_literal(stale_repo)}"
                stale = [
                    r["id"]
                    for r in self._select(mine, PATHS)
                    if r["path"] not in kept and r["id"] not in last
                ]
            self._upsert(rows, held=bool(old))
            self._delete(stale)
            return tuple(stale)

        deleted = self._atomic(write)
        return tuple(ids), tuple(SpoofNote(f, ids[i]) for i, f, _, _ in spoofs), deleted

    @staticmethod
    def _put(
        operation: str,
        checked: Principal,
        old: Mapping[str, Any] | None,
        chunk: str,
        record: Mapping[str, Any],
        stamps: Mapping[str, Any],
    ) -> dict[str, Any]:
        """One chunk's row, refusing an id another tenant's chunk, or another agent's private
        chunk, holds (a private chunk with no agent is no one's)."""
        ingested_at = _now()
        if old is not None:
            if old["tenant"] != checked.tenant_id:
                raise Forbidden(operation, f"chunk id {chunk} is taken; nothing was written")
            if old["visibility"] == "private" and (
                old["agent"] is None or old["agent"] != checked.agent_identity
            ):
                raise Forbidden(operation, f"chunk id {chunk} is private to another agent")
            first = json.loads(old["metadata"]).get("ingestedAt")
            if first and old["document"] == record["content"]:
                ingested_at = first
        meta = {**LanceNamespace._metadata(record, stamps), "ingestedAt": ingested_at}
        return _row(chunk, record["content"], meta, _embed(record["content"]))

    def maintain(self, principal: Principal, operation: str, /) -> None:
        checked = self._principal(principal, "maintain")
        self._operator(checked, "maintain")
        if operation != "reembed":
            raise ContractViolation(
                contract="maintain", problems=(Problem("", "enum", "one of ['reembed']", repr(operation)),)
            )

        def reembed() -> None:
            rows = self._select("document IS NOT NULL")
            self._upsert([{**r, "vector": _embed(r["document"])} for r in rows])

        self._atomic(reembed)

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
        tenant = f"tenant = {sql_literal(checked.tenant_id)}"

        def delete() -> builtins.list[str]:
            doomed: set[str] = set()
            manifest = signal.get("manifestSnapshot")
            if manifest is not None:
                keep, repo = set(manifest["pathsAfterPush"]), manifest["repoSlug"]
                rows = self._select(f"{tenant} AND repo = {sql_literal(repo)}", PATHS)
                doomed |= {
                    r["id"] for r in rows if r["path"] not in keep and (repo, r["path"]) not in written
                }
            by_repo: dict[str, builtins.list[str]] = {}
            for repo, path in sorted(targets - written):
                by_repo.setdefault(repo, []).append(path)
            for repo, paths in by_repo.items():  # one repository per filter: each pair exactly
                for start in range(0, len(paths), BATCH):  # a batch of paths per scan
                    named = ", ".join(sql_literal(path) for path in paths[start : start + BATCH])
                    where = f"{tenant} AND repo = {sql_literal(repo)} AND path IN ({named})"
                    doomed |= {r["id"] for r in self._select(where, PATHS)}
            self._delete(sorted(doomed))
            return sorted(doomed)

        return Deleted(tuple(self._atomic(delete)))

    # -- backup -----------------------------------------------------------------------------------

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if principal.role != "operator":
            raise Forbidden(operation, "operators only")

    def export(self, principal: Principal, /) -> builtins.list[dict[str, Any]]:
        checked = self._principal(principal, "export")
        self._operator(checked, "export")
        rows = self._select("id IS NOT NULL", HIT, vectors=True)
        return [
            {
                "id": r["id"],
                "embedding": [float(x) for x in r["vector"].tolist()],
                "metadata": json.loads(r["metadata"]),
                "document": r["document"],
            }
            for r in rows
        ]

    def restore(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> int:
        checked = self._principal(principal, "restore")
        self._operator(checked, "restore")
        records = builtins.list(records)
        problems: builtins.list[Problem] = []
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
        last = {record["id"]: record for record in records}
        rows = [_row(i, r.get("document"), r["metadata"], r["embedding"]) for i, r in last.items()]
        self._atomic(lambda: self._upsert(rows))
        return len(records)


class Adapter:
    """``tests.independent.lancedb_namespace:make``."""

    manifest = MANIFEST

    def open(self, options: BackendOptions) -> LanceNamespace:
        return LanceNamespace(options.spoof_mode, options.resolver, options.store_fails)

    def close(self, backend: LanceNamespace) -> None:
        backend.close()

    def shutdown(self) -> None:
        return None


def make() -> Adapter:
    return Adapter()


__all__ = ["COLUMNS", "MANIFEST", "Adapter", "LanceNamespace", "make"]
