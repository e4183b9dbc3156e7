"""Mutants of the tenant-namespace reference that loosen an identifier other than the tenant,
take a claim from inside the data, or treat an id as more than a name.

Every identifier compares exactly (schemas/read-filter.md, schemas/deletion-signaling.md): an
agent identity is compared code point for code point, and a path a revision resolver lists is a
string, not a file system location to resolve. And only the server's stamps say whose a chunk
is (schemas/stamping.md): text inside a record that looks like a scope changes nothing.
"""

from __future__ import annotations

import builtins
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbconform.errors import Forbidden, NotFound
from kbconform.identity import DEFAULT_NAMESPACE, Principal
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.mutants.deletion import _Resolved
from kbconform_reference.namespace.mutants.leaks import _LooseTenant
from kbconform_reference.namespace.service import Hit, IngestResult, KnowledgeBase


def _folded(agent: object) -> object:
    """An agent identity as a "forgiving" comparison sees it: NFKC, case-folded, trimmed."""
    return unicodedata.normalize("NFKC", agent).casefold().strip() if isinstance(agent, str) else agent


class PrivateAgentFolded(_LooseTenant):
    """Private chunks are matched to their agent after folding case, Unicode form and spaces, in
    the store's filter and in the final check alike: ``Agent`` reads ``agent``'s private chunks."""

    def _holds(self, metadata: Mapping[str, Any], key: str, condition: Any) -> bool:
        if key == "originAgentIdentity" and isinstance(condition, Mapping) and "$eq" in condition:
            return _folded(metadata.get(key)) == _folded(condition["$eq"])
        return super()._holds(metadata, key, condition)

    def _checked(self, principal: Principal, operation: str, found: Iterable[Hit]) -> builtins.list[Hit]:
        agent = principal.agent_identity
        return [
            hit
            for hit in found
            if hit.metadata.get("tenantId") in principal.readable_tenants
            and (
                hit.metadata.get("visibility") != "private"
                or (agent is not None and _folded(hit.metadata.get("originAgentIdentity")) == _folded(agent))
            )
        ]


class _NormalizedPaths(_Resolved):
    def deleted_paths(self, repo_slug: str, base: str, head: str) -> Any:
        # the resolver's paths "cleaned" as file system paths: ./a.md and x/../a.md become a.md
        return [posixpath.normpath(p) for p in self.inner.deleted_paths(repo_slug, base, head)]


class RevisionPathsNormalized(KnowledgeBase):
    """The paths a revision boundary resolves to are normalized as file system paths before they
    are matched, so ``./docs/a.md`` deletes ``docs/a.md``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.resolver is not None:
            self.resolver = _NormalizedPaths(self.resolver)


#: The reference's refusal of a write whose id another tenant's chunk holds.
_TAKEN = re.compile(r"chunk id (\S+) is taken")

#: The stamped fields a header line of the text may claim, in the mutant below.
_CLAIMABLE = ("tenantId", "repoSlug", "visibility", "originAgentIdentity")


class HeaderLinesClaimScope(KnowledgeBase):
    """Lines of a chunk's text of the form ``key: value`` are read as metadata (as a front
    matter or mail-header reader would) and laid over the stamps: a record whose text says
    ``tenantId: beta`` lands in beta."""

    @staticmethod
    def _metadata(record: Mapping[str, Any], stamps: Mapping[str, Any], ingested_at: str) -> dict[str, Any]:
        metadata = KnowledgeBase._metadata(record, stamps, ingested_at)
        for line in str(record.get("content", "")).splitlines():
            key, colon, value = line.partition(": ")
            if colon and key in _CLAIMABLE and value:
                metadata[key] = value
        return metadata


class LegacyIdsServedToAll(KnowledgeBase):
    """An id get does not find in the caller's scope is looked up again in the default shared
    namespace's legacy repository, unfiltered (a fallback kept for links made before tenancy,
    whose ids are content hashes anyone can compute)."""

    def get(self, principal: Principal, chunk_id: str) -> Hit:
        try:
            return super().get(principal, chunk_id)
        except NotFound:
            self._authenticated(principal, "get")
            legacy = {
                "$and": [
                    {"tenantId": {"$eq": DEFAULT_NAMESPACE.tenant_id}},
                    {"repoSlug": {"$eq": DEFAULT_NAMESPACE.repo_slug}},
                ]
            }
            with self._store_call("get"):
                rows = self.store.get(ids=[chunk_id], where=legacy)
            if not rows.ids:
                raise
            return Hit(rows.ids[0], rows.documents[0], dict(rows.metadatas[0]))


class RefusalNamesHolder(KnowledgeBase):
    """A write refused because a chunk id is taken says whose chunk holds it, where, and what it
    begins with (a helpful message for an operator, returned to the caller)."""

    def ingest(
        self,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any] | None = None,
        *,
        visibility: Any = None,
    ) -> IngestResult:
        try:
            return super().ingest(principal, records, envelope, visibility=visibility)
        except Forbidden as error:
            taken = _TAKEN.search(error.reason)
            if taken is None:
                raise
            rows = self.store.get(ids=[taken.group(1)])
            held = "; ".join(
                f"held by {m.get('tenantId')} at {m.get('sourcePath')}: {(d or '')[:40]!r}"
                for d, m in zip(rows.documents, rows.metadatas, strict=True)
            )
            raise Forbidden(error.operation, f"{error.reason} ({held})") from None


_MACHINE = ("state-01[overwrite]", "state-01[reject]")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "private-agent-folded",
        PrivateAgentFolded,
        "private chunks are matched to their agent ignoring case, Unicode form and spaces",
        _MACHINE,
    ),
    Mutant(
        "revision-paths-normalized",
        RevisionPathsNormalized,
        "a revision boundary's paths are resolved as file system paths (./a.md deletes a.md)",
        _MACHINE,
    ),
    Mutant(
        "legacy-ids-served-to-all",
        LegacyIdsServedToAll,
        "get falls back to the default namespace's legacy repository, unfiltered, for an id not in scope",
        _MACHINE,
    ),
    Mutant(
        "refusal-names-holder",
        RefusalNamesHolder,
        "a write refused for a taken id says whose chunk holds it, where, and what it begins with",
        _MACHINE,
    ),
    Mutant(
        "header-lines-claim-scope",
        HeaderLinesClaimScope,
        "key: value lines of a chunk's text (tenantId, repoSlug, visibility, agent) override the stamps",
        _MACHINE,
    ),
)
