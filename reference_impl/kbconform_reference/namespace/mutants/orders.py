"""Mutants of the tenant-namespace reference that break only in one order of lifecycle steps.

A store that deletes softly (rows marked gone, hidden from every read) and skips an upsert whose
content is unchanged writes nothing when a deleted chunk is ingested again with the same
content: the chunk stays deleted. Only a delete followed by the very same ingest shows it
(state-01 starts every program with one). An export kept until the next write, where a restore
does not count as one, answers an export after a restore with what the store held before it:
only an export, a restore and an export again show it (state-01's set-up ends so).
"""

from __future__ import annotations

import builtins
import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kbconform.identity import Principal
from kbconform_reference._mutant_base import Delegating
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import KnowledgeBase
from kbconform_reference.namespace.stores import Match, Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import Metadata, Where


def _unstamped(metadata: Metadata) -> dict[str, Any]:
    """A row's metadata but its ingest time: what an unchanged re-ingest leaves as it was."""
    return {key: value for key, value in metadata.items() if key != "ingestedAt"}


class _SoftDeleting(Delegating[VectorStore]):
    """A store whose delete only marks rows gone (hidden from every read), and whose upsert
    skips a row whose document and metadata (but its ingest time) are unchanged, gone or not."""

    def __init__(self, inner: VectorStore) -> None:
        super().__init__(inner)
        self.gone: set[str] = set()

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        stored = self.inner.get(ids=list(ids))
        held = {
            i: (d, _unstamped(m))
            for i, d, m in zip(stored.ids, stored.documents, stored.metadatas, strict=True)
        }
        keep = [  # the bug: an unchanged row is skipped even when it is gone, so it stays gone
            n for n, i in enumerate(ids) if held.get(i) != (documents[n], _unstamped(metadatas[n]))
        ]
        if keep:
            self.inner.upsert(
                [ids[n] for n in keep],
                embeddings[keep],
                [documents[n] for n in keep],
                [metadatas[n] for n in keep],
            )
            self.gone -= {ids[n] for n in keep}

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        rows = self.inner.get(ids=ids, where=where, embeddings=embeddings)
        shown = [n for n, i in enumerate(rows.ids) if i not in self.gone][offset:]
        shown = shown if limit is None else shown[:limit]
        return Rows(
            tuple(rows.ids[n] for n in shown),
            tuple(rows.documents[n] for n in shown),
            tuple(rows.metadatas[n] for n in shown),
            None if rows.embeddings is None else rows.embeddings[shown],
        )

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        found = self.inner.query(embedding, n_results + len(self.gone), where)
        return [m for m in found if m.id not in self.gone][:n_results]

    def delete(self, ids: Sequence[str]) -> None:
        self.gone |= set(ids)


class SoftDeleteSkipsUnchanged(KnowledgeBase):
    """The reference over a store that deletes softly and skips unchanged upserts."""

    def __init__(self, store: VectorStore, **options: Any) -> None:
        super().__init__(_SoftDeleting(store), **options)


class ExportKeptPastRestore(KnowledgeBase):
    """An export is kept and served again until the next ingest, deletion, sync or maintenance;
    a restore, which operators run rarely, does not drop it."""

    _kept: builtins.list[dict[str, Any]] | None = None

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        if operation != "restore":  # the bug: a restore leaves the kept export in place
            self._kept = None
        super()._apply(operation, prior, write, delete)

    def export(self, principal: Principal) -> builtins.list[dict[str, Any]]:
        if self._kept is None:
            self._kept = super().export(principal)
        else:
            self._operator(self._authenticated(principal, "export"), "export")
        return copy.deepcopy(self._kept)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "soft-delete-skips-unchanged",
        SoftDeleteSkipsUnchanged,
        "deletes mark rows gone, and an ingest of unchanged content writes nothing: a deleted "
        "chunk ingested again stays deleted",
        ("state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "export-kept-past-restore",
        ExportKeptPastRestore,
        "an export is kept until the next write, and a restore does not count as one",
        ("state-01[overwrite]", "state-01[reject]"),
    ),
)
