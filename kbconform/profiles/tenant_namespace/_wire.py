"""The tenant-namespace profile's harness-v1 operations: the facades of
:class:`~kbconform.adapter.Backend` and the optional ones; the principal crosses as data."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbconform.errors import ContractViolation
from kbconform.harness import Handler, HarnessBackend, Served, WireTable, json_form
from kbconform.identity import Principal

# -- principals -------------------------------------------------------------------------------


def principal_to_wire(principal: object) -> Any:
    """The principal as harness-v1 data. A real Principal that is valid by its own rules
    crosses as its four fields. Anything else crosses as the identity it claims, so that a
    backend behind a harness meets it as data: a JSON value as itself (a tenant id string, a
    dict with a principal's keys misspelt), an object with a principal's fields (one changed in
    place to an invalid tenant id included) as those fields. A claim the wire cannot tell from
    a valid principal (a subclass, a look-alike whose fields are valid) and a value with no
    JSON form cross as no identity (``None``)."""
    plain = principal is None or isinstance(principal, (str, int, float, bool, list, dict))
    claimed = json_form(principal) if plain else _fields(principal)
    if isinstance(principal_from_wire(claimed), Principal) and not _valid(principal):
        return None
    return claimed


def _valid(principal: object) -> bool:
    """Whether ``principal`` is a real Principal still valid by its own rules (a frozen one
    can be changed in place: it is built again from its fields)."""
    if type(principal) is not Principal:
        return False
    try:
        Principal(
            principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
        )
    except ContractViolation:
        return False
    return True


def _fields(principal: object) -> Any:
    """The identity an object with a principal's attributes claims, as harness-v1 data, or
    ``None`` when it lacks one of them."""
    try:
        namespaces = principal.readable_namespaces  # type: ignore[attr-defined]
        claimed = {
            "tenantId": principal.tenant_id,  # type: ignore[attr-defined]
            "agentIdentity": principal.agent_identity,  # type: ignore[attr-defined]
            "role": principal.role,  # type: ignore[attr-defined]
            "readableNamespaces": sorted(namespaces)
            if isinstance(namespaces, (set, frozenset))
            else namespaces,
        }
    except (AttributeError, TypeError):
        return None
    return json_form(claimed)


def principal_from_wire(data: Any) -> object:
    """The caller a harness-v1 principal names: ``None`` for null, the :class:`Principal` a
    valid one describes, and for any other value the value itself, a malformed principal the
    backend must refuse as no identity (``KB_UNAUTHENTICATED``)."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"tenantId", "agentIdentity", "role", "readableNamespaces"}:
        return data
    namespaces = data["readableNamespaces"]
    try:
        if not isinstance(namespaces, list) or namespaces != sorted(set(namespaces)):
            return data
        return Principal(data["tenantId"], data["agentIdentity"], frozenset(namespaces), data["role"])
    except (ContractViolation, TypeError):
        return data


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    document: str | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpoofWarning:
    field: str
    chunk_id: str


@dataclass(frozen=True, slots=True)
class IngestResult:
    ids: Sequence[str]
    warnings: Sequence[SpoofWarning] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    ids: Sequence[str]
    warnings: Sequence[SpoofWarning] = ()
    deleted_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class DeletionResult:
    deleted_ids: Sequence[str]
    resolver_calls: Sequence[tuple[str, str, str]] = field(default=())


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    sources: Sequence[Hit]


def hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "document": hit.document, "metadata": dict(hit.metadata)}


def hit_from_wire(data: Mapping[str, Any]) -> Hit:
    return Hit(data["id"], data["document"], data["metadata"])


# -- the client and the served operations ---------------------------------------------------


class TenantHarnessBackend(HarnessBackend):
    """A tenant-namespace backend behind a harness (:class:`~kbconform.adapter.Backend`)."""

    def _call(self, op: str, principal: object, **params: Any) -> Mapping[str, Any]:
        return self._request(
            op, {"backend": self.handle, "principal": principal_to_wire(principal), **params}
        )

    def ingest(
        self,
        principal: object,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
        /,
    ) -> IngestResult:
        result = self._call("ingest", principal, records=list(records), **_sent("ingest", envelope))
        warnings = [SpoofWarning(w["field"], w["chunkId"]) for w in result["warnings"]]
        return IngestResult(list(result["ids"]), warnings)

    def query(
        self, principal: object, text: str, n_results: int, where: Mapping[str, Any] | None, /
    ) -> builtins.list[Hit]:
        result = self._call("query", principal, text=text, nResults=n_results, where=where)
        return [hit_from_wire(hit) for hit in result["hits"]]

    def get(self, principal: object, chunk_id: str, /) -> Hit:
        return hit_from_wire(self._call("get", principal, id=chunk_id)["hit"])

    def list(self, principal: object, limit: int, offset: int, /) -> builtins.list[Hit]:
        result = self._call("list", principal, limit=limit, offset=offset)
        return [hit_from_wire(hit) for hit in result["hits"]]

    def count(self, principal: object, /) -> int:
        return int(self._call("count", principal)["count"])

    def ask(self, principal: object, question: str, n_results: int, /) -> Answer:
        result = self._call("ask", principal, question=question, nResults=n_results)
        return Answer(result["text"], [hit_from_wire(hit) for hit in result["sources"]])

    def apply_deletion_signal(self, principal: object, signal: Mapping[str, Any], /) -> DeletionResult:
        result = self._call("applyDeletionSignal", principal, signal=signal)
        calls = [(c["repoSlug"], c["baseRevision"], c["headRevision"]) for c in result["resolverCalls"]]
        if self.resolver is not None:
            self.resolver.calls.extend(calls)
        return DeletionResult(list(result["deletedIds"]), calls)

    def export(self, principal: object, /) -> builtins.list[Mapping[str, Any]]:
        return list(self._call("export", principal)["records"])

    def restore(self, principal: object, records: Sequence[Mapping[str, Any]], /) -> int:
        return int(self._call("restore", principal, records=list(records))["restored"])

    def sync(
        self,
        principal: object,
        repo_slug: str,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
        /,
    ) -> SyncResult:
        sent = _sent("sync", envelope)
        # No repository (None) is the key absent, as a client that names none sends it; never null.
        repo = {} if repo_slug is None else {"repoSlug": repo_slug}
        result = self._call("sync", principal, **repo, records=list(records), **sent)
        warnings = [SpoofWarning(w["field"], w["chunkId"]) for w in result["warnings"]]
        return SyncResult(list(result["ids"]), warnings, list(result["deletedIds"]))

    def maintain(self, principal: object, operation: str, /) -> None:
        self._call("maintain", principal, operation=operation)

    def scan(
        self, root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str, /
    ) -> builtins.list[Mapping[str, Any]]:
        result = self._request(
            "scan",
            {
                "backend": self.handle,
                "root": str(root),
                "config": None if config is None else str(config),
                "tenantId": tenant_id,
                "repoSlug": repo_slug,
                "rootKind": root_kind,
            },
        )
        return list(result["records"])


def _hits(found: Any) -> dict[str, Any]:
    return {"hits": [hit_to_wire(hit) for hit in found]}


def _ingested(result: Any) -> dict[str, Any]:
    warnings = [{"field": w.field, "chunkId": w.chunk_id} for w in result.warnings]
    return {"ids": list(result.ids), "warnings": warnings}


def _sent(operation: str, envelope: object) -> dict[str, Any]:
    """The ``envelope`` param of a write request: present only when the call passed one."""
    if envelope is None:
        return {}
    if not isinstance(envelope, Mapping):
        raise TypeError(
            f"{operation}()'s envelope is a mapping of request-level fields, not {type(envelope).__name__}"
        )
    return {"envelope": dict(envelope)}


def _envelope(params: Mapping[str, Any]) -> tuple[Any, ...]:
    """The envelope argument of ingest or sync: passed only when the request carries one."""
    return (params["envelope"],) if "envelope" in params else ()


def _synced(result: Any) -> dict[str, Any]:
    return {**_ingested(result), "deletedIds": list(result.deleted_ids)}


def _maintained(backend: Any, principal: Any, operation: Any) -> dict[str, Any]:
    backend.maintain(principal, operation)
    return {}


def _answered(answer: Any) -> dict[str, Any]:
    return {"text": answer.text, "sources": [hit_to_wire(hit) for hit in answer.sources]}


def _delete(served: Served, params: Mapping[str, Any]) -> dict[str, Any]:
    resolver = served.resolver
    before = len(resolver.calls) if resolver is not None else 0
    principal = principal_from_wire(params["principal"])
    result = served.backend.apply_deletion_signal(principal, params["signal"])
    calls = resolver.calls[before:] if resolver is not None else []
    return {
        "deletedIds": list(result.deleted_ids),
        "resolverCalls": [{"repoSlug": r, "baseRevision": b, "headRevision": h} for r, b, h in calls],
    }


def _scan(served: Served, params: Mapping[str, Any]) -> dict[str, Any]:
    config = params["config"]
    records = served.backend.scan(
        Path(params["root"]),
        None if config is None else Path(config),
        params["tenantId"],
        params["repoSlug"],
        params["rootKind"],
    )
    return {"records": list(records)}


def _as_principal(answer: Any) -> Handler:
    """A facade that takes the principal first: ``answer(backend, principal, params)``."""
    return lambda served, params: answer(served.backend, principal_from_wire(params["principal"]), params)


WIRE = WireTable(
    handlers={
        "ingest": _as_principal(lambda b, p, a: _ingested(b.ingest(p, a["records"], *_envelope(a)))),
        "query": _as_principal(lambda b, p, a: _hits(b.query(p, a["text"], a["nResults"], a["where"]))),
        "get": _as_principal(lambda b, p, a: {"hit": hit_to_wire(b.get(p, a["id"]))}),
        "list": _as_principal(lambda b, p, a: _hits(b.list(p, a["limit"], a["offset"]))),
        "count": _as_principal(lambda b, p, a: {"count": b.count(p)}),
        "ask": _as_principal(lambda b, p, a: _answered(b.ask(p, a["question"], a["nResults"]))),
        "applyDeletionSignal": _delete,
        "export": _as_principal(lambda b, p, a: {"records": [dict(r) for r in b.export(p)]}),
        "restore": _as_principal(lambda b, p, a: {"restored": b.restore(p, a["records"])}),
        "scan": _scan,
        "sync": _as_principal(
            lambda b, p, a: _synced(b.sync(p, a.get("repoSlug"), a["records"], *_envelope(a)))
        ),
        "maintain": _as_principal(lambda b, p, a: _maintained(b, p, a["operation"])),
    },
    backend=TenantHarnessBackend,
)
