"""The tenant-namespace knowledge base's lifecycle: deletion signals within the principal's
tenant, export and restore for operators."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import IO, Any

import numpy as np
import rfc8785

from kbconform.contract import explain, is_valid
from kbconform.errors import ContractViolation, Problem, RevisionBoundaryUnavailable
from kbconform.identity import Principal
from kbconform_reference.namespace import deletion
from kbconform_reference.namespace._core import Core, only
from kbconform_reference.namespace.records import DeletionResult
from kbconform_reference.namespace.stores import Rows


class Lifecycle(Core):
    """apply_deletion_signal, export, export_jsonl and restore."""

    # -- deletion -------------------------------------------------------------------------------

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any]) -> DeletionResult:
        """Apply tombstones, manifest and revision boundary within the principal's tenant."""
        principal = self._authenticated(principal, "apply_deletion_signal")
        self._may_write(principal, "apply_deletion_signal")
        signal = deletion.check_signal(signal)
        tombstoned, written = deletion.explicit_paths(signal)
        targets = set(tombstoned)
        if "baseRevision" in signal:
            repo = deletion.boundary_repo(signal)
            if self.resolver is None:
                raise RevisionBoundaryUnavailable(
                    "apply_deletion_signal", "no revision resolver is configured"
                )
            resolved = self.resolver.deleted_paths(repo, signal["baseRevision"], signal["headRevision"])
            targets |= {(repo, path) for path in resolved}
        with self._as("apply_deletion_signal", principal, "write"), self._writing:
            self._settle("apply_deletion_signal")
            self._looked_up = ()
            doomed, targets = self._doomed(principal, signal, targets, written)
            looked_up: tuple[Rows, ...] = self._looked_up
            self._looked_up = ()
            if doomed:
                if set(doomed) <= {row_id for part in looked_up for row_id in part.ids}:
                    prior = only(doomed, *looked_up)  # the undo log, as the rows were looked up
                else:
                    with self._store_call("apply_deletion_signal"):  # the undo log: every row to delete
                        prior = self.store.get(ids=doomed, embeddings=True)
                self._apply("apply_deletion_signal", prior, delete=doomed)
        return DeletionResult(tuple(sorted(doomed)), tuple(sorted(targets)))

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        """The ids of the tenant's rows a signal deletes, and its (repo, path) targets: ``targets``
        and the paths the manifest leaves out, less ``written``. The rows are read with their
        embeddings, once each (the manifest's repository in one read, each other repository
        by its paths), and kept in ``_looked_up``: the undo log of the deletion."""
        targets = set(targets)
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        looked_up: builtins.list[Rows] = []
        with self._store_call("apply_deletion_signal"):
            manifest = signal.get("manifestSnapshot")
            held: Rows | None = None  # every row of the tenant in the manifest's repository
            if manifest is not None:
                keep = set(manifest["pathsAfterPush"])
                clause = {"$and": [tenant, {"repoSlug": {"$eq": manifest["repoSlug"]}}]}
                held = self.store.get(where=clause, embeddings=True)
                targets |= {
                    (str(manifest["repoSlug"]), str(m["sourcePath"]))
                    for m in held.metadatas
                    if m["sourcePath"] not in keep
                }
            targets -= written
            doomed: builtins.list[str] = []
            for repo in sorted({r for r, _ in targets}):
                paths = sorted(p for r, p in targets if r == repo)
                if held is not None and manifest is not None and repo == manifest["repoSlug"]:
                    rows, wanted = held, set(paths)  # read above: its rows at these paths
                else:
                    clause = {"$and": [tenant, {"repoSlug": {"$eq": repo}}, {"sourcePath": {"$in": paths}}]}
                    rows, wanted = self.store.get(where=clause, embeddings=True), None
                looked_up.append(rows)
                doomed.extend(
                    i
                    for i, m in zip(rows.ids, rows.metadatas, strict=True)
                    if m["tenantId"] == principal.tenant_id and (wanted is None or m["sourcePath"] in wanted)
                )
        self._looked_up = tuple(looked_up)
        return doomed, targets

    # -- backup ---------------------------------------------------------------------------------

    def export(self, principal: Principal) -> builtins.list[dict[str, Any]]:
        """Every stored row as a backup-record-v1 record (embeddings exactly as stored), by id."""
        principal = self._authenticated(principal, "export")
        self._operator(principal, "export")
        with self._as("export", principal, "operator"):
            self._settle("export")
            with self._store_call("export"):
                rows = self.store.get(embeddings=True)
        order = sorted(range(len(rows.ids)), key=lambda i: rows.ids[i])
        assert rows.embeddings is not None
        return [
            {
                "id": rows.ids[i],
                "embedding": [float(x) for x in rows.embeddings[i].astype(np.float32)],
                "metadata": dict(rows.metadatas[i]),
                "document": rows.documents[i],
            }
            for i in order
        ]

    def export_jsonl(self, principal: Principal, stream: IO[bytes]) -> int:
        """Write the export as canonical JSON Lines; returns the number of records."""
        records = self.export(principal)
        for record in records:
            stream.write(rfc8785.dumps(record) + b"\n")
        return len(records)

    def restore(self, principal: Principal, records: Iterable[Mapping[str, Any]]) -> int:
        """Validate every record, then write them all with their embeddings and stamps as given."""
        principal = self._authenticated(principal, "restore")
        self._operator(principal, "restore")
        records = list(records)
        problems: builtins.list[Problem] = []
        for index, record in enumerate(records):
            if not is_valid(record, "backup-record-v1"):
                problems.extend(
                    Problem(f"/{index}{p.pointer}", p.keyword, p.expected, p.got)
                    for p in explain(record, "backup-record-v1")
                )
                continue
            problems.extend(self._restorable(index, record))
        if problems:
            raise ContractViolation(contract="backup-record-v1", problems=tuple(problems))
        if records:
            last = builtins.list({r["id"]: r for r in records}.values())  # one id twice: the last lands
            written = Rows(
                tuple(r["id"] for r in last),
                tuple(r["document"] for r in last),
                tuple(r["metadata"] for r in last),
                np.asarray([r["embedding"] for r in last], dtype=np.float32),
            )
            with self._as("restore", principal, "operator"), self._writing:
                self._settle("restore")
                with self._store_call("restore"):  # the undo log: every row the batch overwrites
                    prior = self.store.get(ids=builtins.list(written.ids), embeddings=True)
                self._apply("restore", prior, write=written)
        return len(records)

    def _restorable(self, index: int, record: Mapping[str, Any]) -> builtins.list[Problem]:
        """Beyond the schema: a restored row must stay filterable and fit the store."""
        found = []
        metadata = record["metadata"]
        for key in ("tenantId", "repoSlug", "sourcePath", "visibility"):
            if key not in metadata:
                found.append(
                    Problem(
                        f"/{index}/metadata", "required", f"a {key!r} stamp (rows are scoped by it)", "absent"
                    )
                )
        if metadata.get("visibility") not in (None, "team", "private", "public"):
            found.append(
                Problem(
                    f"/{index}/metadata/visibility",
                    "enum",
                    "team, private or public",
                    repr(metadata["visibility"]),
                )
            )
        for key, value in metadata.items():
            if not isinstance(value, (str, int, float, bool)):
                found.append(
                    Problem(f"/{index}/metadata/{key}", "type", "a string, number or boolean", repr(value))
                )
        dimensions = getattr(self.embedder, "dimensions", None)
        if dimensions is not None and len(record["embedding"]) != dimensions:
            found.append(
                Problem(
                    f"/{index}/embedding",
                    "dimensions",
                    f"{dimensions} numbers",
                    f"{len(record['embedding'])}",
                )
            )
        return found
