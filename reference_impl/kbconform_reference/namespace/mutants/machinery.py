"""Mutants of the tenant-namespace reference that lean on a store's own machinery the way real
adapters do, and get it wrong: predicates built as text (a path matched with ``LIKE``, pairs
matched as two ``IN`` lists, an identity spliced into a quoted literal), a client clause read
with SQL's ``NULL`` or case-insensitive keys or after the scoped top-k, a failed write "rolled
back" to a checkpoint, a batch's repeated id kept first, pages of a scan whose order a write
reshuffles, a file's protection keyed on its path alone.

Each is drawn by the state machine (state-01): its set-up writes a pattern path and its twin in
two repositories in one batch holding one id twice, tombstones pairs whose cross product names
others and a path a push writes in another repository, fails a write after those deletes and
gives its operator an agent identity that closes a quote; its client clauses name a key no row
holds and a key that differs from one by case, asking for exactly as many hits as they select;
and its set-up pages through list while a caller outside the reader's scope writes between pages.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from kbconform.identity import Principal
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.mutants.leaks import _LooseTenant, _MatchedStore
from kbconform_reference.namespace.service import Hit, KnowledgeBase
from kbconform_reference.namespace.stores import Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import Where
from kbconform_reference.namespace.stores._where import matches

# -- predicates built as text -----------------------------------------------------------------


@cache
def _like(pattern: str) -> re.Pattern[str]:
    """``pattern`` as SQL ``LIKE`` reads it unescaped: ``_`` any one character, ``%`` any run."""
    parts = ("." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern)
    return re.compile("".join(parts), re.DOTALL)


class _Targets(KnowledgeBase):
    """A deletion's targets looked up by :meth:`_select` over the tenant's rows, instead of one
    exact ``(repository, path)`` match each."""

    def _select(self, metadata: Mapping[str, Any], targets: set[tuple[str, str]]) -> bool:
        raise NotImplementedError

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        _, targets = super()._doomed(principal, signal, targets, written)
        with self._store_call("apply_deletion_signal"):
            rows = self.store.get(where={"tenantId": {"$eq": principal.tenant_id}})
        doomed = [i for i, m in zip(rows.ids, rows.metadatas, strict=True) if self._select(m, targets)]
        return doomed, targets


class TombstoneMatchedWithLike(_Targets):
    """A target's path is matched with ``source_path LIKE ?``, the path its pattern, unescaped:
    a tombstone of ``docs/a_b.md`` deletes ``docs/a-b.md`` too."""

    def _select(self, metadata: Mapping[str, Any], targets: set[tuple[str, str]]) -> bool:
        repo, path = str(metadata["repoSlug"]), str(metadata["sourcePath"])
        return any(r == repo and _like(p).fullmatch(path) for r, p in targets)


class TombstonePairsCrossed(_Targets):
    """A signal's ``(repository, path)`` targets are matched as ``repo_slug IN (...) AND
    source_path IN (...)``: every repository named with every path named, pairs never named."""

    def _select(self, metadata: Mapping[str, Any], targets: set[tuple[str, str]]) -> bool:
        return metadata["repoSlug"] in {r for r, _ in targets} and metadata["sourcePath"] in {
            p for _, p in targets
        }


class FilesProtectedByPathAlone(KnowledgeBase):
    """The files a push writes are kept from its deletes by their path alone: a tombstone of a
    path in another repository deletes nothing when the push writes that path in its own."""

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        paths = {p for _, p in written}
        kept = {(r, p) for r, p in targets if p not in paths}
        return super()._doomed(principal, signal, kept, written)


def _spliced(stored: object, agent: object) -> bool:
    """``originAgentIdentity = '<agent>'`` as a filter string parsed back: the literal ends at
    the agent's first quote, and what follows it is read as more of the predicate (an ``OR``
    with an equality of two equal literals holds for every row)."""
    if not isinstance(agent, str):
        return stored == agent
    literal, quote, rest = agent.partition("'")
    # the template's closing quote ends the text: `... = 'ops ' OR 'a'='a'`
    tautology = re.fullmatch(r"\s*OR\s+'([^']*)'\s*=\s*'([^']*)'\s*", rest + "'")
    return stored == (literal if quote else agent) or bool(tautology and tautology[1] == tautology[2])


class AgentSplicedIntoFilter(_LooseTenant):
    """The private-visibility clause is a filter string with the agent identity spliced between
    quotes, in the store's filter and in the final check alike: an identity that closes the
    quote and ORs a tautology reads its tenant's every private chunk."""

    def _holds(self, metadata: Mapping[str, Any], key: str, condition: Any) -> bool:
        if key == "originAgentIdentity" and isinstance(condition, Mapping) and "$eq" in condition:
            return _spliced(metadata.get(key), condition["$eq"])
        return super()._holds(metadata, key, condition)

    def _checked(self, principal: Principal, operation: str, found: Iterable[Hit]) -> builtins.list[Hit]:
        agent = principal.agent_identity
        return [
            hit
            for hit in found
            if hit.metadata.get("tenantId") in principal.readable_tenants
            and (
                hit.metadata.get("visibility") != "private"
                or (agent is not None and _spliced(hit.metadata.get("originAgentIdentity"), agent))
            )
        ]


# -- client where at the store ----------------------------------------------------------------


def _null_matches(metadata: Mapping[str, Any], where: Where | None) -> bool:
    """Chroma's evaluation, but ``$ne`` and ``$nin`` are SQL's ``col <> ?``: false where the row
    has no such key (``NULL <> ?`` is NULL, and a ``WHERE`` keeps only TRUE)."""
    for key, condition in (where or {}).items():
        if key in ("$and", "$or"):
            found = (_null_matches(metadata, part) for part in condition)
            if not (all(found) if key == "$and" else any(found)):
                return False
        elif not matches(metadata, {key: condition}) or (
            isinstance(condition, Mapping) and {"$ne", "$nin"} & set(condition) and key not in metadata
        ):
            return False
    return True


class WhereNeFalseWhereKeyLacked(KnowledgeBase):
    """A client ``$ne``/``$nin`` is rendered as SQL ``<>``/``NOT IN`` over a nullable column:
    a row that lacks the key matches neither."""

    def __init__(self, store: VectorStore, **kwargs: Any) -> None:
        super().__init__(_MatchedStore(store, _null_matches), **kwargs)


def _folded_matches(metadata: Mapping[str, Any], where: Where | None) -> bool:
    """Chroma's evaluation over keys resolved case-insensitively (a column name unquoted)."""
    folded = {str(k).casefold(): v for k, v in metadata.items()}

    def fold(clause: Any) -> Any:
        if not isinstance(clause, Mapping):
            return clause
        return {
            k if k in ("$and", "$or") or k.startswith("$") else k.casefold(): (
                [fold(c) for c in v] if k in ("$and", "$or") else v
            )
            for k, v in clause.items()
        }

    return matches(folded, fold(where))


class WhereKeysFolded(KnowledgeBase):
    """Client clause keys name columns unquoted, so they resolve case-insensitively:
    ``SourcePath`` reads ``sourcePath``."""

    def __init__(self, store: VectorStore, **kwargs: Any) -> None:
        super().__init__(_MatchedStore(store, _folded_matches), **kwargs)


class WhereAfterScopedTopK(KnowledgeBase):
    """query takes the scoped top-k first and applies the client clause to those k hits."""

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if where is None:
            return super().query(principal, text, n_results)
        self._read_where(self._authenticated(principal, "query"), where)  # a clause still checked
        hits = super().query(principal, text, n_results)
        return [hit for hit in hits if matches(hit.metadata, where)]


# -- rollback and batches ---------------------------------------------------------------------


class RollbackToLastIngest(KnowledgeBase):
    """A failed write is rolled back by restoring the table as the last ingest left it (a
    version or checkpoint taken after each ingest only): deletes made since come back."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._checkpoint: Rows | None = None

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        super()._apply(operation, prior, write, delete)
        if operation == "ingest":
            with contextlib.suppress(Exception):  # a store failing now: the last checkpoint stands
                self._checkpoint = self.store.get(embeddings=True)

    def _undo(self, undo: Any) -> None:
        if self._checkpoint is None:
            return super()._undo(undo)
        kept = set(self._checkpoint.ids)
        self._delete([i for i in self.store.get().ids if i not in kept])
        self._upsert(self._checkpoint)


class BatchKeepsFirstOfAnId(KnowledgeBase):
    """A batch holding one id twice is sent to an upsert that keeps the first row of each id
    (an insert-or-ignore over the batch): the last record of an id is lost."""

    def _write(
        self, operation: str, principal: Principal, records: Sequence[Mapping[str, Any]], **kwargs: Any
    ) -> Any:
        try:
            ids = [self._id(made, principal.tenant_id) for made in records]
        except Exception:  # a record the write refuses: it refuses it as ever
            return super()._write(operation, principal, records, **kwargs)
        first: dict[str, Mapping[str, Any]] = {}
        for chunk, made in zip(ids, records, strict=True):
            first.setdefault(chunk, made)
        return super()._write(operation, principal, [first[chunk] for chunk in ids], **kwargs)


# -- pages ------------------------------------------------------------------------------------


class ListOrderShiftsWithWrites(KnowledgeBase):
    """list pages by offset over a scan with no order of its own: rows come in an order a write
    anywhere in the store (another tenant's too) reshuffles, as a heap's or a segment's does."""

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if limit < 1 or offset < 0:
            return super().list(principal, limit, offset, where)
        everything = super().list(principal, 1_000_000, 0, where)
        with self._store_call("list"):
            generation = len(self.store.get().ids)

        def place(hit: Hit) -> bytes:
            return hashlib.sha256(f"{generation}:{hit.id}".encode()).digest()

        return sorted(everything, key=place)[offset : offset + limit]


_STATE = ("state-01[overwrite]", "state-01[reject]")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "tombstone-matched-with-like",
        TombstoneMatchedWithLike,
        "a tombstoned path is matched with LIKE, unescaped: '_' and '%' reach other files",
        _STATE,
    ),
    Mutant(
        "tombstone-pairs-crossed",
        TombstonePairsCrossed,
        "a signal's (repository, path) pairs are matched as repo IN (...) AND path IN (...)",
        _STATE,
    ),
    Mutant(
        "agent-spliced-into-filter",
        AgentSplicedIntoFilter,
        "the agent identity is spliced between quotes into the private-visibility filter",
        _STATE,
    ),
    Mutant(
        "where-ne-false-where-key-lacked",
        WhereNeFalseWhereKeyLacked,
        "a client $ne or $nin is false on a row that lacks the key (SQL's NULL)",
        _STATE,
    ),
    Mutant(
        "where-keys-folded",
        WhereKeysFolded,
        "a client clause's keys resolve case-insensitively",
        _STATE,
    ),
    Mutant(
        "where-after-scoped-top-k",
        WhereAfterScopedTopK,
        "query applies the client clause to the scoped top-k instead of with it",
        _STATE,
    ),
    Mutant(
        "rollback-to-last-ingest",
        RollbackToLastIngest,
        "a failed write restores the table as the last ingest left it: later deletes come back",
        _STATE,
    ),
    Mutant(
        "batch-keeps-first-of-an-id",
        BatchKeepsFirstOfAnId,
        "a batch holding one id twice stores the first of its records",
        _STATE,
    ),
    Mutant(
        "list-order-shifts-with-writes",
        ListOrderShiftsWithWrites,
        "list pages by offset over an order any write in the store reshuffles",
        _STATE,
    ),
    Mutant(
        "files-protected-by-path-alone",
        FilesProtectedByPathAlone,
        "a push's files keep a path from its deletes in every repository, not their own",
        _STATE,
    ),
)
