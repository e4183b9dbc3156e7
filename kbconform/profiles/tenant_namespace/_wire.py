"""The tenant-namespace profile's harness-v1 operations: the facades of
:class:`~kbconform.adapter.Backend` and the optional ones; the principal crosses as data."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbconform.harness import Handler, HarnessBackend, Served, WireTable
from kbconform.harness._wire import (
    Answer,
    DeletionResult,
    Hit,
    IngestResult,
    SpoofWarning,
    SyncResult,
    hit_from_wire,
    hit_to_wire,
    principal_from_wire,
    principal_to_wire,
)


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
        result = self._call("sync", principal, repoSlug=repo_slug, records=list(records), **sent)
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
        "sync": _as_principal(lambda b, p, a: _synced(b.sync(p, a["repoSlug"], a["records"], *_envelope(a)))),
        "maintain": _as_principal(lambda b, p, a: _maintained(b, p, a["operation"])),
    },
    backend=TenantHarnessBackend,
)
