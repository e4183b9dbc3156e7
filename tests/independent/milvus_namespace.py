"""A tenant-namespace backend on Milvus Lite, tenants kept apart by a partition key.

Not the reference and not built on it: the chunks of one backend live in one Milvus collection
(every backend of an adapter a collection of its own in one local Milvus Lite database file, the
server the ``milvus-lite`` wheel starts: nothing is downloaded at run time), whose partition key
is the tenant, so a read whose filter names the tenant is served from that tenant's partitions
only (``isolationModel: partition-key``). The partition key is no isolation by itself: every read
still carries the whole read filter of ``schemas/read-filter.md`` as a Milvus boolean expression.
Milvus Lite takes no filter templates (``filter_params``), so every string in an expression is a
literal written by :func:`milvus_literal`, which escapes what Milvus's parser reads as an escape
and refuses a character it cannot spell; an id no literal can spell is no chunk's id.

Milvus has no transactions: a write notes the rows it will replace (read once, with their
vectors: the rows a sync or a deletion looked up are not read again by id) and, if the store
fails part way, puts them back and deletes what it added (under the one writer lock, so no other write is
undone; the compensation itself does not consult the fault switch, it is the store recovering).
Query is Milvus's own nearest-neighbour search (an exact ``FLAT`` index, cosine), filtered by the
scope inside the search, so a small tenant still gets its k nearest; a client ``where`` clause is
decided by ``where_matches`` on the scoped candidates. List pages are cut from the scope sorted
by id. It uses the adapter helpers the guide offers a Python backend, and the word-hashing
embedding and result records of ``sqlite_namespace``. It is a control that keeps the suites'
model honest, and the recipe of ``docs/adapter-guide.md`` (*Milvus*).
"""

from __future__ import annotations

import builtins
import itertools
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from pymilvus import DataType, MilvusClient, MilvusException

from kbconform.adapter import (
    BackendOptions,
    RevisionResolver,
    boundary_repo,
    check_deletion_signal,
    check_where,
    envelope_claims,
    server_stamps,
    signal_paths,
    spoofed_fields,
    where_matches,
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

CONFIG_VERSION = "milvus-lite-1"
#: The most rows one Milvus search or query page returns (its ``limit`` + ``offset`` cap).
PAGE = 16384
#: The most ids one filter names (``id in [...]``).
BATCH = 200
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "adapter": {"name": "independent-milvus-lite", "version": "0.0.1"},
    "backend": {
        "name": "Milvus Lite, the tenant as partition key",
        "version": metadata.version("milvus-lite"),
    },
    "readFacades": ["query", "get", "list", "count", "ask"],
    "isolationModel": "partition-key",
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
#: What Milvus's expression parser reads after a backslash in a string literal, and how.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_OUTPUT = ["id", "tenant", "repo", "path", "visibility", "agent", "record"]


def milvus_literal(value: str) -> str:
    """``value`` as a double-quoted string literal of a Milvus boolean expression.

    Milvus Lite has no filter templates, so a value reaches a filter only through this: a
    backslash, a double quote, a newline, a tab and a carriage return are escaped; any other
    control character has no spelling Milvus's parser reads back (``\\x``, ``\\u`` and octal
    escapes are refused there), and is refused here as ``ValueError``."""
    if any(ord(c) < 0x20 and c not in _ESCAPES for c in value):
        raise ValueError(f"no Milvus string literal spells {value!r}")
    return '"' + "".join(_ESCAPES.get(c, c) for c in value) + '"'


def _literals(values: Iterable[str]) -> str:
    return "[" + ", ".join(milvus_literal(v) for v in values) + "]"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _row(
    chunk: str, document: str | None, metadata: Mapping[str, Any], vector: Sequence[float]
) -> dict[str, Any]:
    return {
        "id": chunk,
        "tenant": metadata["tenantId"],
        "repo": metadata["repoSlug"],
        "path": metadata["sourcePath"],
        "visibility": metadata["visibility"],
        "agent": metadata.get("originAgentIdentity") or "",
        "record": {"document": document, "metadata": dict(metadata)},
        "embedding": [float(x) for x in vector],
    }


def _schema() -> Any:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=512)
    schema.add_field("tenant", DataType.VARCHAR, max_length=256, is_partition_key=True)
    for name in ("repo", "path", "visibility", "agent"):
        schema.add_field(name, DataType.VARCHAR, max_length=8192)
    schema.add_field("record", DataType.JSON)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=DIMENSIONS)
    return schema


class Store:
    """One Milvus Lite database file (its server started by the first client), shared by every
    backend of an adapter, each backend a collection of its own."""

    def __init__(self) -> None:
        # on a memory file system where there is one: each flush then costs no disk write
        self._dir = tempfile.mkdtemp(prefix="kbconform-milvus-", dir=scratch_dir())
        self.client = MilvusClient(f"{self._dir}/kb.db")
        self._names = itertools.count()

    def create(self) -> str:
        name = f"chunks_{next(self._names)}"
        index = self.client.prepare_index_params()
        index.add_index("embedding", index_type="FLAT", metric_type="COSINE")
        self.client.create_collection(name, schema=_schema(), num_partitions=16, consistency_level="Strong")
        # Milvus Lite builds an index as it is asked (its state is at once Finished): the client
        # need not poll it, which costs half a second of sleep a collection, a backend
        self.client.create_index(name, index, sync=False)
        self.client.load_collection(name)
        return name

    def drop(self, name: str) -> None:
        self.client.drop_collection(name)

    def close(self) -> None:
        self.client.close()
        shutil.rmtree(self._dir, ignore_errors=True)


@dataclass
class MilvusNamespace(NamespaceFacades):
    """One backend: a Milvus collection of its own, the tenant its partition key."""

    store: Store
    spoof_mode: str = "overwrite"
    resolver: RevisionResolver | None = None
    store_fails: Callable[[], bool] | None = None
    _name: str = field(init=False)
    _lock: threading.RLock = field(init=False, default_factory=threading.RLock)
    _spoofs: dict[tuple[str, str | None], builtins.list[float]] = field(init=False, default_factory=dict)
    _escalated: set[tuple[str, str | None]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self._name = self.store.create()

    def close(self) -> None:
        self.store.drop(self._name)

    # -- the store: every call consults the fault switch first ----------------------------------

    def _call(self, work: Callable[[MilvusClient], Any]) -> Any:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable("milvus", "the store failed")
        try:
            return work(self.store.client)
        except (MilvusException, OSError) as error:
            raise BackendUnavailable("milvus", f"{type(error).__name__}: {error}") from error

    def _select(self, where: str, vectors: bool = False) -> builtins.list[dict[str, Any]]:
        """Every row matching ``where``, sorted by id: one query, or page by page when the scope
        holds more than one query returns (an iterator costs a round trip more per call)."""
        fields = [*_OUTPUT, "embedding"] if vectors else _OUTPUT

        def read(client: MilvusClient) -> builtins.list[dict[str, Any]]:
            rows = [
                dict(row) for row in client.query(self._name, filter=where, output_fields=fields, limit=PAGE)
            ]
            if len(rows) < PAGE:
                return rows
            pages, rows = (
                client.query_iterator(self._name, batch_size=PAGE, filter=where, output_fields=fields),
                [],
            )
            try:
                while page := pages.next():
                    rows += [dict(row) for row in page]
            finally:
                pages.close()
            return rows

        return sorted(self._call(read), key=lambda row: row["id"])

    def _upsert(self, rows: builtins.list[dict[str, Any]]) -> None:
        if rows:
            self._call(lambda client: client.upsert(self._name, rows))

    def _delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), BATCH):  # one long `in` list is slow to parse and plan
            part = ids[start : start + BATCH]
            self._call(lambda client, part=part: client.delete(self._name, filter=f"id in {_literals(part)}"))

    def _rows(self, ids: Sequence[str], vectors: bool = False) -> builtins.list[dict[str, Any]]:
        """The rows holding ``ids``, a batch of ids per query."""
        found: builtins.list[dict[str, Any]] = []
        for start in range(0, len(ids), BATCH):
            found += self._select(f"id in {_literals(ids[start : start + BATCH])}", vectors)
        return sorted(found, key=lambda row: row["id"])

    def _atomic(
        self,
        ids: Iterable[str],
        work: Callable[[builtins.list[dict[str, Any]]], Any],
        known: Iterable[dict[str, Any]] = (),
    ) -> Any:
        """``work(before)``, which writes or deletes only rows whose ids are ``ids``, under the
        writer lock: ``before`` is the rows holding them as they were, with their vectors (those
        in ``known``, read with their vectors under the lock, are not read again); a failure
        part way puts them back and deletes the ones it added (Milvus has no transaction)."""
        with self._lock:
            wanted = sorted(set(ids))
            held = {row["id"]: row for row in known if row["id"] in set(wanted)}
            read = self._rows([i for i in wanted if i not in held], vectors=True)
            before = sorted([*held.values(), *read], key=lambda row: row["id"])
            try:
                return work(before)
            except BaseException:
                self._compensate(wanted, before)
                raise

    def _compensate(self, ids: Sequence[str], before: builtins.list[dict[str, Any]]) -> None:
        client, kept = self.store.client, {row["id"] for row in before}
        added = [i for i in ids if i not in kept]
        for start in range(0, len(added), BATCH):
            client.delete(self._name, filter=f"id in {_literals(added[start : start + BATCH])}")
        if before:
            client.upsert(self._name, before)

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
        """The read filter as a Milvus expression: the readable tenants (the partition key, so
        only their partitions are read), and team, public or the agent's own private chunks."""
        clause = (
            f'tenant in {_literals(sorted(principal.readable_tenants))} and (visibility in ["team", "public"]'
        )
        if principal.agent_identity is None:
            return clause + ")"
        agent = milvus_literal(principal.agent_identity)
        return clause + f' or (visibility == "private" and agent == {agent}))'

    # -- reads ------------------------------------------------------------------------------------

    @staticmethod
    def _hit(row: Mapping[str, Any]) -> Hit:
        record = row["record"]
        return Hit(row["id"], record["document"], record["metadata"])

    def query(self, principal: Principal, text: str, n_results: int, where: Any, /) -> builtins.list[Hit]:
        checked = self._principal(principal, "query")
        if where is not None:
            check_where(where)
        if n_results < 1:
            return []
        # with a client clause, every scoped candidate is ranked and the clause decides
        limit = PAGE if where is not None else min(n_results, PAGE)
        found = self._call(
            lambda client: client.search(
                self._name,
                data=[_embed(text)],
                filter=self._scope(checked),
                limit=limit,
                output_fields=_OUTPUT,
                search_params={"metric_type": "COSINE"},
            )
        )
        ranked = sorted(found[0], key=lambda hit: (-hit["distance"], hit["id"]))
        hits = [self._hit(hit["entity"]) for hit in ranked]
        return [hit for hit in hits if where_matches(hit.metadata, where)][:n_results]

    def get(self, principal: Principal, chunk_id: str, /) -> Hit:
        checked = self._principal(principal, "get")
        try:
            literal = milvus_literal(chunk_id)
        except ValueError:
            raise NotFound(chunk_id) from None  # no chunk has an id no literal spells
        rows = self._select(f"({self._scope(checked)}) and id == {literal}")
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
        return [self._hit(row) for row in self._select(self._scope(checked))[offset : offset + limit]]

    def count(self, principal: Principal, /) -> int:
        checked = self._principal(principal, "count")
        found = self._call(
            lambda client: client.query(self._name, filter=self._scope(checked), output_fields=["count(*)"])
        )
        return int(found[0]["count(*)"])

    # -- writes -----------------------------------------------------------------------------------

    def _repo(self, tenant: str, repo: str) -> str:
        return f"tenant == {milvus_literal(tenant)} and repo == {milvus_literal(repo)}"

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
        with self._lock:
            stale: builtins.list[str] = []
            mine: builtins.list[dict[str, Any]] = []  # the repository's rows, read once
            if stale_repo is not None:
                kept = {r["sourcePath"] for r in records}
                mine = self._select(self._repo(checked.tenant_id, stale_repo), vectors=True)
                stale = [r["id"] for r in mine if r["path"] not in kept and r["id"] not in last]

            def write(before: builtins.list[dict[str, Any]]) -> tuple[str, ...]:
                old = {row["id"]: row for row in before if row["id"] in last}
                rows = [
                    self._put(operation, checked, old.get(chunk), chunk, records[index], stamps[index])
                    for chunk, index in last.items()
                ]
                self._upsert(rows)
                self._delete(stale)
                return tuple(stale)

            deleted = self._atomic([*last, *stale], write, known=mine)
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
                not old["agent"] or old["agent"] != checked.agent_identity
            ):
                raise Forbidden(operation, f"chunk id {chunk} is private to another agent")
            first = old["record"]["metadata"].get("ingestedAt")
            if first and old["record"]["document"] == record["content"]:
                ingested_at = first
        meta = {**MilvusNamespace._metadata(record, stamps), "ingestedAt": ingested_at}
        return _row(chunk, record["content"], meta, _embed(record["content"]))

    def maintain(self, principal: Principal, operation: str, /) -> None:
        checked = self._principal(principal, "maintain")
        self._operator(checked, "maintain")
        if operation != "reembed":
            raise ContractViolation(
                contract="maintain", problems=(Problem("", "enum", "one of ['reembed']", repr(operation)),)
            )
        with self._lock:
            rows = self._select('id != ""', vectors=True)
            fresh = [
                {**r, "embedding": _embed(r["record"]["document"])}
                for r in rows
                if r["record"]["document"] is not None
            ]
            self._atomic([r["id"] for r in fresh], lambda _: self._upsert(fresh), known=rows)

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
        with self._lock:
            doomed: set[str] = set()
            found: builtins.list[dict[str, Any]] = []  # every row looked up, with its vector
            manifest = signal.get("manifestSnapshot")
            if manifest is not None:
                keep, repo = set(manifest["pathsAfterPush"]), manifest["repoSlug"]
                rows = self._select(self._repo(checked.tenant_id, repo), vectors=True)
                found += rows
                doomed |= {
                    r["id"] for r in rows if r["path"] not in keep and (repo, r["path"]) not in written
                }
            by_repo: dict[str, builtins.list[str]] = {}
            for repo, path in sorted(targets - written):
                by_repo.setdefault(repo, []).append(path)
            for repo, paths in by_repo.items():  # one repository per filter: each pair exactly
                for start in range(0, len(paths), BATCH):  # a batch of paths per round trip
                    part = _literals(paths[start : start + BATCH])
                    where = f"{self._repo(checked.tenant_id, repo)} and path in {part}"
                    rows = self._select(where, vectors=True)
                    found += rows
                    doomed |= {r["id"] for r in rows}
            ordered = sorted(doomed)
            self._atomic(ordered, lambda _: self._delete(ordered), known=found)
        return Deleted(tuple(ordered))

    # -- backup -----------------------------------------------------------------------------------

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if principal.role != "operator":
            raise Forbidden(operation, "operators only")

    def export(self, principal: Principal, /) -> builtins.list[dict[str, Any]]:
        checked = self._principal(principal, "export")
        self._operator(checked, "export")
        return [
            {
                "id": r["id"],
                "embedding": [float(x) for x in r["embedding"]],
                "metadata": r["record"]["metadata"],
                "document": r["record"]["document"],
            }
            for r in self._select('id != ""', vectors=True)
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
            problems += self._restorable(index, record)
        if problems:
            raise ContractViolation(contract="backup-record-v1", problems=tuple(problems))
        last = {record["id"]: record for record in records}
        rows = [_row(i, r.get("document"), r["metadata"], r["embedding"]) for i, r in last.items()]
        self._atomic(last, lambda _: self._upsert(rows))
        return len(records)

    @staticmethod
    def _restorable(index: int, record: Mapping[str, Any]) -> builtins.list[Problem]:
        """What this store cannot hold of a valid backup record: the stamps its columns need, and
        an embedding of another length."""
        metadata, embedding, problems = record["metadata"], record["embedding"], []
        for stamp in ("tenantId", "repoSlug", "sourcePath", "visibility"):
            if not isinstance(metadata.get(stamp), str):
                problems.append(
                    Problem(f"/{index}/metadata/{stamp}", "required", f"a {stamp}", repr(metadata.get(stamp)))
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
        if len(embedding) != DIMENSIONS:
            problems.append(
                Problem(f"/{index}/embedding", "length", f"{DIMENSIONS} numbers", str(len(embedding)))
            )
        return problems


class Adapter:
    """``tests.independent.milvus_namespace:make``: one Milvus Lite database for every backend."""

    manifest = MANIFEST

    def __init__(self) -> None:
        self._store: Store | None = None

    def open(self, options: BackendOptions) -> MilvusNamespace:
        if self._store is None:
            self._store = Store()
        return MilvusNamespace(self._store, options.spoof_mode, options.resolver, options.store_fails)

    def close(self, backend: MilvusNamespace) -> None:
        backend.close()

    def shutdown(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def make() -> Adapter:
    return Adapter()


__all__ = ["MANIFEST", "Adapter", "MilvusNamespace", "make", "milvus_literal"]
