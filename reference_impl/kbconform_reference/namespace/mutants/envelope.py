"""Mutants of the tenant-namespace reference that trust a write's request envelope (schemas/stamping.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.identity import Principal
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import IngestResult, KnowledgeBase


class _Trusting(KnowledgeBase):
    """Uses the envelope's ``field`` as the server would use its own value, on every write that
    takes an envelope (ingest and sync)."""

    field = ""

    def _write(
        self,
        operation: str,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        *,
        visibility: Any = None,
        stale: str | None = None,
        envelope: Mapping[str, Any] | None = None,
    ) -> IngestResult:
        claimed = (envelope or {}).get(self.field)
        if claimed is None:
            return super()._write(
                operation, principal, records, visibility=visibility, stale=stale, envelope=envelope
            )
        if self.field == "visibility":
            visibility = claimed
        elif self.field == "repoSlug":
            records = [{**r, "repoSlug": claimed} for r in records]
        elif self.field == "tenantId":
            principal = Principal(claimed, principal.agent_identity, principal.readable_namespaces)
            records = [{**r, "tenantId": claimed} for r in records]
        else:
            principal = dataclasses.replace(principal, agent_identity=claimed)
        return super()._write(operation, principal, records, visibility=visibility, stale=stale)


class EnvelopeTenantTrusted(_Trusting):
    field = "tenantId"


class EnvelopeRepoTrusted(_Trusting):
    field = "repoSlug"


class EnvelopeVisibilityTrusted(_Trusting):
    field = "visibility"


class EnvelopeAgentTrusted(_Trusting):
    field = "originAgentIdentity"


class AnonymousEnvelopeTenant(KnowledgeBase):
    """Without a principal, an ingest runs as the tenant its envelope names."""

    def ingest(
        self,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
        *,
        visibility: Any = None,
    ) -> IngestResult:
        claimed = (envelope or {}).get("tenantId")
        if principal is None and isinstance(claimed, str):
            principal = Principal(claimed)
        return super().ingest(principal, records, envelope, visibility=visibility)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "envelope-tenant-trusted",
        EnvelopeTenantTrusted,
        "ingest and sync write into the tenant the request names (a sync deletes its stale chunks)",
        ("spoof-08[tenantId]", "sync-06[tenantId]"),
    ),
    Mutant(
        "envelope-repo-trusted",
        EnvelopeRepoTrusted,
        "ingest and sync stamp the repository the request names",
        ("spoof-08[repoSlug]", "sync-06[repoSlug]"),
    ),
    Mutant(
        "envelope-visibility-trusted",
        EnvelopeVisibilityTrusted,
        "ingest and sync stamp the visibility the request names",
        ("spoof-08[visibility]", "sync-06[visibility]"),
    ),
    Mutant(
        "envelope-agent-trusted",
        EnvelopeAgentTrusted,
        "ingest and sync stamp the origin agent the request names",
        ("spoof-08[originAgentIdentity]", "sync-06[originAgentIdentity]"),
    ),
    Mutant(
        "anonymous-envelope-tenant",
        AnonymousEnvelopeTenant,
        "an ingest without a principal runs as the tenant its request names",
        ("spoof-09",),
    ),
)
