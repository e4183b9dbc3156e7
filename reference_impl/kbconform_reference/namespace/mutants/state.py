"""Mutants of the tenant-namespace reference that only a history of operations shows: the L4 state machine's.

The read-side ones share :class:`ScopedInPython`, which reads every row of the store and keeps those a
predicate admits, so that each mutant is one predicate away from the reference's rule.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import Hit, KnowledgeBase
from kbconform_reference.namespace.stores import exact_top_k
from kbconform_reference.namespace.stores._where import matches as where_matches


class ScopedInPython(KnowledgeBase):
    """The reads of the reference, scoped by :meth:`visible` over every stored row."""

    def visible(self, principal: Principal, metadata: Mapping[str, Any]) -> bool:
        return read_filter.in_scope(principal, metadata)

    def _rows(self, principal: Any, operation: str, embeddings: bool = False) -> Any:
        principal = self._authenticated(principal, operation)
        self._settle(operation)  # a rollback the store refused is replayed first, as the reference does
        with self._store_call(operation):
            rows = self.store.get(embeddings=embeddings)
        keep = [i for i, m in enumerate(rows.metadatas) if self.visible(principal, m)]
        return principal, rows, keep

    def _hits(self, rows: Any, keep: Iterable[int]) -> builtins.list[Hit]:
        return [Hit(rows.ids[i], rows.documents[i], dict(rows.metadatas[i])) for i in keep]

    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        _, rows, keep = self._rows(principal, "list")
        keep.sort(key=lambda i: rows.ids[i])
        return self._hits(rows, keep[offset : offset + limit])

    def get(self, principal: Any, chunk_id: str) -> Hit:
        _, rows, keep = self._rows(principal, "get")
        found = self._hits(rows, [i for i in keep if rows.ids[i] == chunk_id])
        if not found:
            raise NotFound(chunk_id)
        return found[0]

    def count(self, principal: Any, where: Any = None) -> int:
        return len(self._rows(principal, "count")[2])

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal, rows, keep = self._rows(principal, "query", embeddings=True)
        if where is not None:
            clause = {"$and": read_filter.check_where(where)}
            keep = [i for i in keep if where_matches(rows.metadatas[i], clause)]
        with self._store_call("query"):
            scoped = self.store.get(ids=[rows.ids[i] for i in keep], embeddings=True)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        matches = exact_top_k(scoped, embedding, n_results) if scoped.ids else []
        return [Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance) for m in matches]


class OperatorReadsEveryTenant(ScopedInPython):
    """Operators may export everything, so the read filter lets them read everything too."""

    def visible(self, principal: Principal, metadata: Mapping[str, Any]) -> bool:
        return principal.is_operator or super().visible(principal, metadata)


class AgentlessReadsOwnerlessPrivate(ScopedInPython):
    """A private row's owner is compared with ``==``: no agent on either side is a match."""

    def visible(self, principal: Principal, metadata: Mapping[str, Any]) -> bool:
        if metadata.get("tenantId") in principal.readable_tenants and metadata.get("visibility") == "private":
            return metadata.get("originAgentIdentity") == principal.agent_identity
        return super().visible(principal, metadata)


class OwnerlessPrivateReadAsTeam(ScopedInPython):
    """A private row without an origin agent falls back to the tenant's default visibility."""

    def visible(self, principal: Principal, metadata: Mapping[str, Any]) -> bool:
        if metadata.get("visibility") == "private" and "originAgentIdentity" not in metadata:
            return metadata.get("tenantId") in principal.readable_tenants
        return super().visible(principal, metadata)


class WhereIgnoresCase(ScopedInPython):
    """Client where values compare case-insensitively (a case-insensitive collation)."""

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        if where is None:
            return super().query(principal, text, n_results)
        with self._store_call("query"):
            stored = {str(m.get("sourcePath")) for m in self.store.get().metadatas}
        folded = {k: _folded(v, stored) for k, v in where.items()}
        return super().query(principal, text, n_results, folded)


def _folded(condition: Any, stored: set[str]) -> Any:
    wanted = condition["$in"] if isinstance(condition, Mapping) and "$in" in condition else [condition]
    lowered = {str(v).lower() for v in wanted}
    return {"$in": sorted({*map(str, wanted), *(s for s in stored if s.lower() in lowered)})}


class RestoreRestampsOrigin(KnowledgeBase):
    """Restore stamps the restoring operator's agent as each row's origin agent."""

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        restamped = []
        for record in records:
            metadata = dict(record.get("metadata") or {})
            if isinstance(principal, Principal) and principal.agent_identity is not None and metadata:
                metadata["originAgentIdentity"] = principal.agent_identity
            restamped.append({**record, "metadata": metadata})
        return super().restore(principal, restamped)


_STATE = ("state-01[overwrite]", "state-01[reject]")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "operator-reads-every-tenant",
        OperatorReadsEveryTenant,
        "an operator's reads skip the tenant filter, since operators may export everything",
        (*_STATE, *(f"iso-01[{facade}]" for facade in ("query", "get", "list", "count", "ask"))),
    ),
    Mutant(
        "agentless-reads-ownerless-private",
        AgentlessReadsOwnerlessPrivate,
        "a principal without an agent reads private rows without an origin agent (None == None)",
        _STATE,
    ),
    Mutant(
        "ownerless-private-read-as-team",
        OwnerlessPrivateReadAsTeam,
        "a private row without an origin agent is read as a team row",
        _STATE,
    ),
    Mutant(
        "where-ignores-case",
        WhereIgnoresCase,
        "client where values match case-insensitively: docs/A.md also finds docs/a.md",
        _STATE,
    ),
    Mutant(
        "restore-restamps-origin",
        RestoreRestampsOrigin,
        "restore stamps the operator's agent as the origin of every row, private ones included",
        _STATE,
    ),
)
