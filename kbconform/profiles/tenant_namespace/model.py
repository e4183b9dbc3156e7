"""The policy model: from the history of operations, what every call must return.

:class:`Policy` holds every stored chunk as the contract says it must be stored, and answers, for
any principal: which chunks each read facade returns (ids, text, stamps), what ``count`` says,
what an export holds, what a deletion signal deletes, which warnings an ingest returns, and which
error a call raises. It never asks the backend: a suite calls the backend, compares, and then
tells the model that the call landed (:meth:`Policy.commit_ingest` and the others), or that it
failed with the expected error, in which case nothing changes.

The rules are the ones written in ``schemas/*.md`` and the adapter protocol's docstrings; each
method names its rule. Ids: with a declared id profile the model computes them exactly; without
one it learns each id from the first ingest of its hash inputs and holds the backend to it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import Manifest, check_sync, envelope_claims
from kbconform.conformance import ANOTHER_AGENT, ANOTHER_TENANT, AS_OPERATOR, Refused
from kbconform.errors import (
    ContractViolation,
    Forbidden,
    KbconformError,
    RevisionBoundaryUnavailable,
    SpoofRejected,
)
from kbconform.identity import RESERVED_FIELDS, Principal, chunk_id

#: Visibilities every reader in scope may read; ``private`` is for the origin agent only.
READABLE = ("team", "public")
#: The stamps a restored record must carry: rows are scoped by them (schemas/backup.md).
SCOPE_STAMPS = ("tenantId", "repoSlug", "sourcePath", "visibility")
#: The stamps a read returns that the model compares exactly.
COMPARED = ("tenantId", "repoSlug", "sourcePath", "visibility", "originAgentIdentity")
#: The visibility the server stamps on ingest unless configured otherwise (schemas/stamping.md).
INGEST_VISIBILITY = "team"
#: The stamps whose values are the server's own (its tenant configuration, its clock): every
#: ingested chunk carries both (schemas/stamping.md). The model cannot predict them: it learns
#: each from the backend the first time it sees it and holds the backend to it from then on.
SERVER_STAMPS = ("tenantConfigVersion", "ingestedAt")
#: How a write whose request envelope claims another identity may be refused whole, nothing
#: written (schemas/stamping.md): as a spoof, as forbidden, or as a value the backend does not
#: take at all. Otherwise it lands as the same write without the envelope.
ENVELOPE_REFUSALS: tuple[type[KbconformError], ...] = (SpoofRejected, Forbidden, ContractViolation)

Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Row:
    """One stored chunk as the contract says it is stored."""

    id: str
    document: str | None
    stamps: Mapping[str, Any]

    @property
    def tenant(self) -> Any:
        return self.stamps.get("tenantId")

    @property
    def repo(self) -> Any:
        return self.stamps.get("repoSlug")

    @property
    def path(self) -> Any:
        return self.stamps.get("sourcePath")

    def readable_by(self, principal: Principal) -> bool:
        """schemas/read-filter.md: the principal's tenant and readable shared namespaces; team
        and public chunks for every reader in scope, private ones for their origin agent."""
        if self.tenant not in principal.readable_tenants:
            return False
        visibility = self.stamps.get("visibility")
        if visibility in READABLE:
            return True
        return visibility == "private" and self.origin_is(principal)

    def origin_is(self, principal: Principal) -> bool:
        """Whether ``principal``'s agent is the row's origin agent: a principal without an agent
        identity never matches a missing origin (read-filter.md). A private row is read and
        written over only so (stamping.md)."""
        return (
            principal.agent_identity is not None
            and self.stamps.get("originAgentIdentity") == principal.agent_identity
        )


@dataclass(frozen=True, slots=True)
class Ingest:
    """What an ingest that lands returns: an id per record (None: not known before the call, the
    model learns it), the guarded fields each record spoofed, and the rows it writes."""

    principal: Principal
    records: tuple[Mapping[str, Any], ...]
    ids: tuple[str | None, ...]
    keys: tuple[Key, ...]
    spoofed: tuple[tuple[str, ...], ...]
    warns: bool


def _key(record: Mapping[str, Any], tenant: str) -> Key:
    """What a chunk id is a function of: the tenant, the repository and the hashed fields."""
    hashed = {name: record.get(name) for name in record["hashInputs"]}
    return (tenant, str(record["repoSlug"]), json.dumps(hashed, sort_keys=True, ensure_ascii=False))


@dataclass
class Policy:
    """The exact model of the isolation policy for one backend."""

    #: The shared namespaces, the declared id profile (None: ids are learned), and the number
    #: of spoofed records after which a principal is switched to reject mode (None: never).
    shared: frozenset[str] = frozenset()
    id_profile: str | None = None
    escalation_threshold: int | None = None
    #: The declared design reads the shared namespaces for every principal, granted or not
    #: (``"sharedNamespaceReaders": "every-tenant"``).
    shared_for_all: bool = False
    rows: dict[str, Row] = field(default_factory=dict)
    #: Ids learned (or computed) per identity key, and back: the backend is held to them.
    ids_by_key: dict[Key, str] = field(default_factory=dict)
    keys_by_id: dict[str, Key] = field(default_factory=dict)
    #: Spoofed records sent per (tenant, agent), landed or not: escalation switches a principal
    #: to reject mode. Never forgotten: a backend may forget spoofs older than its window, and
    #: the suites never wait a window out (schemas/stamping.md), so the model's budget is the
    #: smallest one.
    spoofs: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    #: The server stamps learned per ingested chunk (a restored chunk holds what it was given,
    #: so it has no entry), and the configuration version learned per tenant.
    learned: dict[str, dict[str, Any]] = field(default_factory=dict)
    config_versions: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def for_manifest(cls, manifest: Manifest) -> Policy:
        """The model of a backend with this manifest's shared namespace, id profile and escalation."""
        namespace = manifest.shared_namespace
        threshold = None
        if manifest.supports("escalation"):
            escalation = manifest.feature("escalation")
            if isinstance(escalation, Mapping) and isinstance(escalation.get("threshold"), int):
                threshold = int(escalation["threshold"])
        return cls(
            frozenset({namespace}) if namespace else frozenset(),
            manifest.id_profile,
            threshold,
            shared_for_all=manifest.shared_for_all,
        )

    # -- reads -----------------------------------------------------------------------------------

    def reader(self, principal: Principal) -> Principal:
        """``principal`` as the declared design reads: with every shared namespace when the
        design makes them readable by every tenant, else as granted."""
        if not self.shared_for_all or self.shared <= principal.readable_namespaces:
            return principal
        return principal.with_namespaces(principal.readable_namespaces | self.shared)

    def scope(self, principal: Principal) -> dict[str, Row]:
        """Every chunk ``principal`` reads, by id: what list pages add up to, what count says,
        what a query with enough results returns, what get finds."""
        reader = self.reader(principal)
        return {i: row for i, row in self.rows.items() if row.readable_by(reader)}

    def foreign(self, principal: Principal) -> dict[str, Row]:
        """Every chunk ``principal`` must never read."""
        reader = self.reader(principal)
        return {i: row for i, row in self.rows.items() if not row.readable_by(reader)}

    def stamp_problems(self, chunk: str, metadata: Mapping[str, Any]) -> list[str]:
        """How the server stamps of ``chunk`` as read break schemas/stamping.md, learning the
        values it has not seen yet: an ingested chunk carries ``tenantConfigVersion``, one value
        for every chunk of its tenant (the configuration does not change during a test), and
        ``ingestedAt``, the value it got when its content was first written, kept by every
        identical re-send. A restored chunk holds what it was given (compared elsewhere)."""
        row, learned = self.rows.get(chunk), self.learned.get(chunk)
        if row is None or learned is None:
            return []
        problems = []
        for name in SERVER_STAMPS:
            value = metadata.get(name)
            if value is None or value == "":
                problems.append(f"no {name}: the server stamps it on every ingested chunk")
                continue
            known = self.config_versions if name == "tenantConfigVersion" else learned
            key = row.tenant if name == "tenantConfigVersion" else name
            first = known.setdefault(key, value)
            if value != first:
                whose = (
                    f"tenant {row.tenant}'s other chunks" if known is self.config_versions else "this content"
                )
                problems.append(f"{name} {value!r}, but {first!r} for {whose}")
        return problems

    # -- writes ----------------------------------------------------------------------------------

    def _may_write(self, principal: Principal) -> Refused | None:
        if principal.tenant_id in self.shared and not principal.is_operator:
            return Refused(Forbidden, "a member writes into the shared namespace", AS_OPERATOR, "written")
        return None

    def spoofed_fields(self, principal: Principal, record: Mapping[str, Any]) -> tuple[str, ...]:
        """schemas/stamping.md: each guarded field the record claims otherwise than the server."""
        server: dict[str, Any] = {
            "tenantId": principal.tenant_id,
            "repoSlug": record["repoSlug"],
            "visibility": INGEST_VISIBILITY,
            "originAgentIdentity": principal.agent_identity,
        }
        found = ["tenantId"] if record["tenantId"] != principal.tenant_id else []
        custom = record.get("customMeta") or {}
        for name in sorted(RESERVED_FIELDS & set(custom)):
            if name in ("ingestedAt", "tenantConfigVersion") or custom[name] != server.get(name):
                found.append(f"customMeta.{name}")
        return tuple(found)

    def spoof_budget(self, principal: Principal) -> int | None:
        """How many more spoofed records ``principal`` may send before escalation (None: no limit)."""
        threshold = self.escalation_threshold
        if threshold is None:
            return None
        return max(0, threshold - 1 - self.spoofs[(principal.tenant_id, principal.agent_identity)])

    def _id(self, record: Mapping[str, Any], key: Key) -> str | None:
        profile = self.id_profile
        if profile is not None:
            return chunk_id(record, key[0], key[1], profile)  # type: ignore[arg-type]  # a declared profile
        return self.ids_by_key.get(key)

    def ids_for(self, principal: Principal, records: Sequence[Mapping[str, Any]]) -> list[str | None]:
        """The id each record gets under ``principal`` (None: not known before the call)."""
        return [self._id(r, _key(r, principal.tenant_id)) for r in records]

    def ingest(
        self, principal: Principal, records: Sequence[Mapping[str, Any]], mode: str
    ) -> Refused | Ingest:
        """The outcome of ``ingest``: Backend.ingest and schemas/stamping.md."""
        refused = self._may_write(principal)
        if refused:
            return refused
        spoofed = tuple(self.spoofed_fields(principal, r) for r in records)
        if mode == "reject" and any(spoofed):
            return Refused(SpoofRejected, "the batch claims another identity (reject mode)")
        keys = tuple(_key(r, principal.tenant_id) for r in records)
        ids = tuple(self._id(r, k) for r, k in zip(records, keys, strict=True))
        for chunk in ids:
            row = self.rows.get(chunk) if chunk is not None else None
            if row is None:
                continue
            if row.tenant != principal.tenant_id:
                return Refused(Forbidden, f"{chunk} belongs to another tenant", ANOTHER_TENANT, "written")
            if row.stamps.get("visibility") == "private" and not row.origin_is(principal):
                return Refused(
                    Forbidden, f"{chunk} is another agent's private chunk", ANOTHER_AGENT, "written"
                )
        return Ingest(principal, tuple(records), ids, keys, spoofed, mode == "overwrite")

    def check_ids(self, plan: Ingest, returned: Sequence[str]) -> list[str]:
        """Problems with the ids an ingest returned: one per record, equal exactly when the keys
        are equal, the predicted ones where known, never another key's id."""
        problems = []
        if len(returned) != len(plan.records):
            return [f"ingest returned {len(returned)} ids for {len(plan.records)} records"]
        seen: dict[Key, str] = {}
        for index, (key, predicted, got) in enumerate(zip(plan.keys, plan.ids, returned, strict=True)):
            if predicted is not None and got != predicted:
                problems.append(f"record {index}: id {got!r}, the contract gives {predicted!r}")
            owner = self.keys_by_id.get(got)
            if owner is not None and owner != key:
                problems.append(f"record {index}: id {got!r} is already the id of other hash inputs")
            first = seen.setdefault(key, got)
            if first != got:
                problems.append(f"record {index}: equal hash inputs got two ids, {first!r} and {got!r}")
        by_id: dict[str, Key] = {}
        for key, got in zip(plan.keys, returned, strict=True):
            if by_id.setdefault(got, key) != key:
                problems.append(f"two records with different hash inputs got the same id {got!r}")
        return problems

    def expected_warnings(self, plan: Ingest, returned: Sequence[str]) -> set[tuple[str, str]]:
        """(field, chunk id) of every warning an overwrite-mode ingest returns."""
        if not plan.warns:
            return set()
        return {(f, returned[i]) for i, fields in enumerate(plan.spoofed) for f in fields}

    def commit_ingest(self, plan: Ingest, returned: Sequence[str]) -> None:
        """The ingest landed: the last record of the batch per id is stored, stamped."""
        principal = plan.principal
        for record, key, chunk in zip(plan.records, plan.keys, returned, strict=True):
            old = self.rows.get(chunk)
            if old is None or old.document != record["content"] or chunk not in self.learned:
                self.learned[chunk] = {}  # a first write of this content: its stamps are new
            self.ids_by_key[key] = chunk
            self.keys_by_id[chunk] = key
            stamps: dict[str, Any] = {
                "tenantId": principal.tenant_id,
                "repoSlug": record["repoSlug"],
                "sourcePath": record["sourcePath"],
                "visibility": INGEST_VISIBILITY,
            }
            if principal.agent_identity is not None:
                stamps["originAgentIdentity"] = principal.agent_identity
            self.rows[chunk] = Row(chunk, record["content"], stamps)

    @staticmethod
    def envelope_claims(
        principal: Principal, envelope: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> list[tuple[str, object, object]]:
        """What a write's request envelope claims beyond the server's own values, as
        ``(field, claimed, server)``: a write with any claim may be refused whole
        (:data:`ENVELOPE_REFUSALS`), else it is what the write without the envelope is."""
        return envelope_claims(principal, envelope, records, INGEST_VISIBILITY)

    def count_spoofs(
        self,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        mode: str,
        envelope: Mapping[str, Any] | None = None,
    ) -> None:
        """An ingest of ``records`` was sent in ``mode``: in overwrite mode its spoofed records
        count towards escalation, whatever came of the call, and an ``envelope`` that claims
        another identity counts as one more. A backend may count the spoofs of a batch that a
        store fault or a refusal stopped (the reference counts them before it writes), and may
        count envelopes, so the model's budget stays the smallest one (schemas/stamping.md)."""
        if mode != "overwrite":
            return
        spoofing = sum(1 for record in records if self.spoofed_fields(principal, record))
        if envelope is not None and self.envelope_claims(principal, envelope, records):
            spoofing += 1
        self.spoofs[(principal.tenant_id, principal.agent_identity)] += spoofing

    def deletion(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        resolve: Mapping[tuple[str, str, str], Iterable[str]] | None,
    ) -> Refused | set[str]:
        """The ids a deletion signal deletes: schemas/deletion-signaling.md. Paths match exactly
        (case, normalization and prefixes are other paths), within the principal's tenant."""
        refused = self._may_write(principal)
        if refused:
            return refused
        default = signal.get("repoSlug")

        def pairs(name: str) -> set[tuple[Any, Any]]:
            return {(e.get("repoSlug", default), e["sourcePath"]) for e in signal.get(name, [])}

        tombstoned, written = pairs("deleted"), pairs("files")
        if tombstoned & written:
            return Refused(ContractViolation, "a path both tombstoned and written")
        targets = set(tombstoned)
        if "baseRevision" in signal:
            repo = default or signal["manifestSnapshot"]["repoSlug"]
            found = (
                None
                if resolve is None
                else resolve.get((repo, signal["baseRevision"], signal["headRevision"]))
            )
            if found is None:
                return Refused(RevisionBoundaryUnavailable, "the boundary cannot be resolved")
            targets |= {(repo, path) for path in found}
        tenant = principal.tenant_id
        manifest = signal.get("manifestSnapshot")
        if manifest is not None:
            keep = set(manifest["pathsAfterPush"])
            targets |= {
                (row.repo, row.path)
                for row in self.rows.values()
                if row.tenant == tenant and row.repo == manifest["repoSlug"] and row.path not in keep
            }
        targets -= written
        return {i for i, row in self.rows.items() if row.tenant == tenant and (row.repo, row.path) in targets}

    def sync(
        self, principal: Principal, repo: object, records: Sequence[Mapping[str, Any]], mode: str
    ) -> Refused | tuple[Ingest, set[str]]:
        """The outcome of ``sync``: SupportsSync.sync and schemas/maintenance.md. What ingest
        does with the records, and the principal's tenant's chunks of ``repo`` at a path no
        record carries deleted (repositories and paths compare exactly)."""
        refused = self._may_write(principal)
        if refused:
            return refused
        try:
            check_sync(repo, records)
        except ContractViolation:
            return Refused(ContractViolation, "the sync's repository is invalid or a record names another")
        plan = self.ingest(principal, records, mode)
        if isinstance(plan, Refused):
            return plan
        keep = {record["sourcePath"] for record in records}
        tenant = principal.tenant_id
        doomed = {
            i
            for i, row in self.rows.items()
            if row.tenant == tenant and row.repo == repo and row.path not in keep
        }
        return plan, doomed - set(plan.ids)  # a row the sync writes is not stale

    def commit_deletion(self, doomed: Iterable[str]) -> None:
        for chunk in doomed:
            del self.rows[chunk]
            self.learned.pop(chunk, None)

    def export(self, principal: Principal) -> Refused | dict[str, Row]:
        """Every stored chunk, for operators only (Backend.export)."""
        if not principal.is_operator:
            return Refused(Forbidden, "a member exports", AS_OPERATOR, "read")
        return dict(self.rows)

    def restore(self, principal: Principal, records: Sequence[Mapping[str, Any]]) -> Refused | list[Row]:
        """The rows a restore writes, as given: schemas/backup.md. A record without a scope stamp
        is refused, and nothing of the batch is written."""
        if not principal.is_operator:
            return Refused(Forbidden, "a member restores", AS_OPERATOR, "written")
        rows = []
        for record in records:
            metadata = record["metadata"]
            if any(stamp not in metadata for stamp in SCOPE_STAMPS):
                return Refused(ContractViolation, "a restored record lacks a scope stamp")
            stamps = {name: metadata[name] for name in COMPARED if name in metadata}
            rows.append(Row(record["id"], record["document"], stamps))
        return rows

    def maintain(self, principal: Principal, operation: object, offered: Iterable[str]) -> Refused | None:
        """The outcome of ``maintain`` (SupportsMaintain.maintain): an operator's maintenance
        changes no row; a member's, or an operation the manifest does not name, is refused."""
        if operation not in tuple(offered):
            return Refused(ContractViolation, "a maintenance operation the manifest does not name")
        if not principal.is_operator:
            return Refused(Forbidden, "a member runs whole-corpus maintenance")
        return None

    def commit_restore(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self.rows[row.id] = row
            self.learned.pop(row.id, None)


def differences(row: Row, document: str | None, metadata: Mapping[str, Any]) -> list[str]:
    """How a chunk as read differs from the model's row: its text and every compared stamp."""
    found = []
    if document != row.document:
        found.append(f"text {document!r}, stored {row.document!r}")
    for name in COMPARED:
        if metadata.get(name) != row.stamps.get(name):
            found.append(f"{name} {metadata.get(name)!r}, stored {row.stamps.get(name)!r}")
    return found
