"""The tenant-namespace knowledge base's write side: parsing a workspace, ingest, sync and
maintenance, each batch stamped and written all or nothing."""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import rfc8785

from kbconform import workspace
from kbconform.adapter import check_sync, envelope_claims
from kbconform.contract import explain, is_plain, is_valid, plain
from kbconform.errors import ContractViolation, Forbidden, Problem, SpoofRejected
from kbconform.identity import RESERVED_FIELDS, Principal, chunk_id
from kbconform_reference.namespace._core import Core, only
from kbconform_reference.namespace.records import MAINTENANCE, IngestResult, SyncResult, Visibility
from kbconform_reference.namespace.stamping import SpoofWarning, server_stamps, spoofs
from kbconform_reference.namespace.stores import Rows

LOG = logging.getLogger("kbconform_reference")
_OPTIONAL_FIELDS = ("line_start", "line_end", "className", "extends")


class Writes(Core):
    """ingest, sync, maintain and scan."""

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
        """The ids of the tenant's chunks in ``repo_slug`` at a path outside ``keep``; the rows,
        read with their embeddings, are kept in ``_looked_up`` (the undo log of the deletes)."""
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": repo_slug}}]}, embeddings=True)
        self._looked_up = (rows,)  # the undo log of the rows it deletes
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
            self._looked_up = ()
            with self._store_call(operation):  # the undo log: every row the batch may touch
                existing = self.store.get(ids=[ids[i] for i in unique], embeddings=True)
                stale_ids = (
                    [] if stale is None else self._stale(principal, stale, {r["sourcePath"] for r in records})
                )
                doomed = [i for i in stale_ids if i not in last]  # a row the sync writes is not stale
            looked_up: tuple[Rows, ...] = self._looked_up
            self._looked_up = ()
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
                if set(doomed) <= {row_id for part in looked_up for row_id in part.ids}:
                    prior = only(touched, existing, *looked_up)  # the undo log, as read above
                else:
                    with self._store_call(operation):  # the undo log: every row written or deleted
                        prior = self.store.get(ids=touched, embeddings=True)
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
