"""Mutants of the tenant-namespace reference, read side: the bug classes real systems shipped.

Tenant ids matched by prefix or substring, scope keys joined with a separator the parts contain,
errors that carry another tenant's row, filter checks that look at the top level only, values
read as patterns, a count or an answer built from a visibility-blind result, rights cached
between calls, pages cut before the filter or in an unstable order, an approximate path that
drops the filter."""

from __future__ import annotations

import builtins
import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from kbconform.errors import NotFound
from kbconform.identity import RESERVED_FIELDS, Principal
from kbconform_reference._mutant_base import Delegating
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import FACADES, Mutant
from kbconform_reference.namespace.records import as_hit, as_hits
from kbconform_reference.namespace.service import Answer, Hit, KnowledgeBase
from kbconform_reference.namespace.stores import Match, Rows, VectorStore, exact_top_k
from kbconform_reference.namespace.stores._protocol import Where
from kbconform_reference.namespace.stores._where import matches

Matcher = Callable[[Mapping[str, Any], Where | None], bool]


class _MatchedStore(Delegating[VectorStore]):
    """A store whose ``where`` is evaluated by ``matcher`` over the rows of the store it wraps
    (exact); ``prepare`` sees every stored row before each evaluation."""

    def __init__(self, inner: VectorStore, matcher: Matcher, prepare: Callable[[Rows], None] | None = None):
        super().__init__(inner)
        self._matcher = matcher
        self._prepare = prepare

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        if self._prepare is not None:
            self._prepare(self.inner.get())
        rows = self.inner.get(ids=ids, embeddings=embeddings)
        kept = [i for i in range(len(rows.ids)) if self._matcher(rows.metadatas[i], where)]
        kept = kept[offset : None if limit is None else offset + limit]
        vectors = None
        if rows.embeddings is not None:
            vectors = rows.embeddings[kept] if kept else np.zeros((0, 0), np.float32)
        return Rows(
            tuple(rows.ids[i] for i in kept),
            tuple(rows.documents[i] for i in kept),
            tuple(rows.metadatas[i] for i in kept),
            vectors,
        )

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        return exact_top_k(self.get(where=where, embeddings=True), embedding, n_results)


class _LooseTenant(KnowledgeBase):
    """Reads match a stored ``tenantId`` against the principal's tenants by :meth:`_in_scope`,
    in the store's filter and in the final check alike (one helper, used everywhere)."""

    def __init__(self, store: VectorStore, **kwargs: Any) -> None:
        super().__init__(_MatchedStore(store, self._matches, self._prepare), **kwargs)

    _prepare: Callable[[Rows], None] | None = None

    def _in_scope(self, metadata: Mapping[str, Any], tenants: Sequence[str]) -> bool:
        return metadata.get("tenantId") in tenants

    def _matches(self, metadata: Mapping[str, Any], where: Where | None) -> bool:
        for key, condition in (where or {}).items():
            if key in ("$and", "$or"):
                found = (self._matches(metadata, part) for part in condition)
                if not (all(found) if key == "$and" else any(found)):
                    return False
            elif not self._holds(metadata, key, condition):
                return False
        return True

    def _holds(self, metadata: Mapping[str, Any], key: str, condition: Any) -> bool:
        """Whether one clause of the store's filter holds: the tenant's by :meth:`_in_scope`."""
        if key == "tenantId" and isinstance(condition, Mapping) and "$in" in condition:
            return self._in_scope(metadata, condition["$in"])
        return matches(metadata, {key: condition})

    def _checked(self, principal: Principal, operation: str, found: Iterable[Hit]) -> builtins.list[Hit]:
        return [
            hit
            for hit in found
            if self._in_scope(hit.metadata, principal.readable_tenants)
            and read_filter.in_scope(principal, {**hit.metadata, "tenantId": principal.tenant_id})
        ]


class TenantPrefixScope(_LooseTenant):
    def _in_scope(self, metadata: Mapping[str, Any], tenants: Sequence[str]) -> bool:
        stored = str(metadata.get("tenantId"))
        return any(stored.startswith(t) for t in tenants)  # a key-prefix scan without a delimiter


class TenantInOwnName(_LooseTenant):
    def _in_scope(self, metadata: Mapping[str, Any], tenants: Sequence[str]) -> bool:
        stored = str(metadata.get("tenantId"))
        return any(stored in t for t in tenants)  # `in` on a string, not on a collection


class JoinedScopeKey(_LooseTenant):
    """Rows live in partitions named ``f"{tenant}-{repo}"``; a read visits the partitions of the
    repositories its tenants own, so tenant ``acme`` + repo ``x-y`` is ``acme-x`` + ``y``."""

    def _prepare(self, rows: Rows) -> None:
        self._owned: dict[str, set[str]] = {}
        for m in rows.metadatas:
            self._owned.setdefault(str(m.get("tenantId")), set()).add(
                f"{m.get('tenantId')}-{m.get('repoSlug')}"
            )

    def _in_scope(self, metadata: Mapping[str, Any], tenants: Sequence[str]) -> bool:
        partition = f"{metadata.get('tenantId')}-{metadata.get('repoSlug')}"
        return any(partition in self._owned.get(t, ()) for t in tenants)


@attrs.frozen
class _DetailedNotFound(NotFound):
    """NotFound with a diagnostic field for operators; ``str()`` unchanged."""

    detail: str = ""


class NotFoundCarriesOwner(KnowledgeBase):
    def get(self, principal: Principal, chunk_id: str) -> Hit:
        try:
            return super().get(principal, chunk_id)
        except NotFound:
            rows = self.store.get(ids=[chunk_id])
            detail = "; ".join(
                f"held by {m.get('tenantId')} at {m.get('sourcePath')}" for m in rows.metadatas
            )
            raise _DetailedNotFound(chunk_id, detail) from None


def _shallow_check(where: object) -> builtins.list[dict[str, Any]]:
    """read_filter.check_where without its recursion: keys are checked at the top level and in
    the clauses directly under ``$and``/``$or``; deeper clauses go to the store as they came."""
    parts: builtins.list[object] = [where]
    if isinstance(where, Mapping):
        parts += [p for k in ("$and", "$or") if isinstance(where.get(k), list) for p in where[k]]
    for part in parts:
        if not isinstance(part, Mapping) or not part:
            return read_filter.check_where(part)
        for key, value in part.items():
            if key in ("$and", "$or"):
                if not isinstance(value, list) or not value:
                    return read_filter.check_where(part)
            elif key in RESERVED_FIELDS or not isinstance(key, str) or key.startswith("$"):
                return read_filter.check_where(part)
    assert isinstance(where, Mapping)
    return [dict(where)]


class NestedReservedKey(KnowledgeBase):
    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if where is None:
            return super().query(principal, text, n_results)
        checked = self._authenticated(principal, "query")
        scoped = {"$and": read_filter.scope(checked) + _shallow_check(where)}
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        with self._store_call("query"):
            found = self.store.query(embedding, n_results, scoped)
        return self._checked(checked, "query", (as_hit(m) for m in found))


def _like(pattern: str, value: object) -> bool:
    """SQL LIKE, unescaped: ``%`` is any run of characters, ``_`` any one character."""
    if not isinstance(value, str):
        return False
    translated = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.fullmatch(translated, value, re.DOTALL) is not None


def _like_matches(metadata: Mapping[str, Any], where: Where | None) -> bool:
    if not where:
        return True
    for key, condition in where.items():
        if key in ("$and", "$or"):
            found = (_like_matches(metadata, part) for part in condition)
            if not (all(found) if key == "$and" else any(found)):
                return False
            continue
        operator, operand = (
            next(iter(condition.items())) if isinstance(condition, Mapping) else ("$eq", condition)
        )
        if operator == "$eq" and isinstance(operand, str):
            ok = _like(operand, metadata.get(key))
        elif operator == "$in" and all(isinstance(v, str) for v in operand):
            ok = any(_like(v, metadata.get(key)) for v in operand)
        else:
            ok = matches(metadata, {key: condition})
        if not ok:
            return False
    return True


class WhereValuesAsPatterns(KnowledgeBase):
    def __init__(self, store: VectorStore, **kwargs: Any) -> None:
        super().__init__(_MatchedStore(store, _like_matches), **kwargs)


def _tenant_only(principal: Principal) -> dict[str, Any]:
    return {"tenantId": {"$in": builtins.list(principal.readable_tenants)}}


class CountIgnoresVisibility(KnowledgeBase):
    def count(self, principal: Principal, where: Mapping[str, Any] | None = None) -> int:
        checked = self._authenticated(principal, "count")
        clauses = [_tenant_only(checked)] + ([] if where is None else read_filter.check_where(where))
        with self._store_call("count"):
            return len(self.store.get(where={"$and": clauses}).ids)


class AskTextIgnoresVisibility(KnowledgeBase):
    def ask(self, principal: Principal, question: str, n_results: int = 5) -> Answer:
        answer = super().ask(principal, question, n_results)
        checked = self._authenticated(principal, "ask")
        embedding = np.asarray(self.embedder([question]), dtype=np.float32)[0]
        with self._store_call("ask"):
            hits = self.store.query(embedding, n_results, _tenant_only(checked))
        return Answer(question, "\n\n".join(m.document for m in hits if m.document), answer.sources)


class NamespacesCachedPerTenant(KnowledgeBase):
    """The readable shared namespaces are looked up once per tenant and kept."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._namespaces: dict[str, frozenset[str]] = {}

    def _authenticated(self, principal: object, operation: str) -> Principal:  # type: ignore[override]
        checked = KnowledgeBase._authenticated(principal, operation)
        kept = self._namespaces.setdefault(checked.tenant_id, checked.readable_namespaces)
        return checked.with_namespaces(kept)


class AgentCachedPerTenant(KnowledgeBase):
    """The agent identity is taken once per tenant (a per-tenant session) and kept."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._agents: dict[str, str | None] = {}

    def _authenticated(self, principal: object, operation: str) -> Principal:  # type: ignore[override]
        checked = KnowledgeBase._authenticated(principal, operation)
        return checked.with_agent(self._agents.setdefault(checked.tenant_id, checked.agent_identity))


class PaginateBeforeFilter(KnowledgeBase):
    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if limit < 1 or offset < 0 or where is not None:
            return super().list(principal, limit, offset, where)
        checked = self._authenticated(principal, "list")
        with self._store_call("list"):
            rows = self.store.get(limit=limit, offset=offset)
        return self._checked(checked, "list", as_hits(rows))


class ListOrderUnstable(KnowledgeBase):
    """Pages ordered by ``sourcePath`` alone: rows that tie come back in either order from one
    call to the next, as ties of ``ORDER BY source_path LIMIT .. OFFSET ..`` do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._calls = itertools.count()

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if limit < 1 or offset < 0:
            return super().list(principal, limit, offset, where)
        everything = sorted(super().list(principal, 1_000_000, 0, where), key=lambda h: h.id)
        if next(self._calls) % 2:
            everything.reverse()
        everything.sort(key=lambda h: str(h.metadata.get("sourcePath")))
        return everything[offset : offset + limit]


class ApproximatePathUnfiltered(KnowledgeBase):
    """Above the exact-search limit the ANN query runs over the whole collection; the final
    check then drops what is out of scope, and the tenant gets fewer than k."""

    #: How many candidates the unfiltered query asks for, given the k asked for.
    @staticmethod
    def _candidates(n_results: int) -> int:
        return n_results

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        checked = self._authenticated(principal, "query")
        scoped = read_filter.build_where(checked, where)
        limit = self.settings.exact_search_limit
        with self._store_call("query"):
            small = len(self.store.get(where=scoped, limit=limit + 1).ids) <= limit
        if small:
            return super().query(principal, text, n_results, where)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        with self._store_call("query"):
            found = self.store.query(embedding, self._candidates(n_results), None)
        return self._checked(checked, "query", (as_hit(m) for m in found))[:n_results]


class CandidatesPostFiltered(ApproximatePathUnfiltered):
    """As an HNSW index filtered after its candidate list (pgvector's ef_search, 40 by default,
    without iterative scans): k rows are enough unless the nearest 40 are mostly out of scope."""

    @staticmethod
    def _candidates(n_results: int) -> int:
        return max(40, n_results)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "tenant-prefix-scope",
        TenantPrefixScope,
        "reads match the stored tenant by prefix: acme reads acme-eu's rows",
        (*(f"leak-07[{f}]" for f in FACADES), "leak-14"),
    ),
    Mutant(
        "tenant-in-own-name",
        TenantInOwnName,
        "reads test the stored tenant with `in` on the principal's tenant string: acme-eu reads acme's rows",
        (*(f"leak-07[{f}]" for f in FACADES), "leak-14"),
    ),
    Mutant(
        "joined-scope-key",
        JoinedScopeKey,
        "rows are scoped by tenant and repo joined with '-': acme's x-y and acme-x's y are one partition",
        tuple(f"leak-08[{f}]" for f in FACADES),
    ),
    Mutant(
        "not-found-carries-owner",
        NotFoundCarriesOwner,
        "get's NotFound for a foreign id carries the owner tenant and path in a field (its text unchanged)",
        ("leak-09",),
    ),
    Mutant(
        "nested-reserved-key",
        NestedReservedKey,
        "reserved keys in a client where are looked for only at the top level and one level down",
        ("leak-03[a tenantId two levels down]", "leak-03[a visibility three levels down]"),
    ),
    Mutant(
        "where-values-as-patterns",
        WhereValuesAsPatterns,
        "where values are matched as SQL LIKE patterns ('%', '_' unescaped)",
        ("leak-10",),
    ),
    Mutant(
        "count-ignores-visibility",
        CountIgnoresVisibility,
        "count filters by tenant only: it counts other agents' private chunks",
        ("leak-11[count]",),
    ),
    Mutant(
        "ask-text-ignores-visibility",
        AskTextIgnoresVisibility,
        "ask's text comes from a tenant-only search while its sources are filtered",
        ("leak-11[ask]",),
    ),
    Mutant(
        "namespaces-cached-per-tenant",
        NamespacesCachedPerTenant,
        "readable shared namespaces are cached per tenant on first use: revoked rights still read",
        tuple(f"leak-12[{f}]" for f in FACADES),
    ),
    Mutant(
        "agent-cached-per-tenant",
        AgentCachedPerTenant,
        "the agent identity is cached per tenant on first use: another agent reads its private chunks",
        ("leak-06", *(f"leak-11[{f}]" for f in FACADES)),
    ),
    Mutant(
        "paginate-before-filter",
        PaginateBeforeFilter,
        "list cuts the page from the whole collection, then filters it",
        ("leak-01[list]", "leak-13", "iso-01[list]"),
    ),
    Mutant(
        "list-order-unstable",
        ListOrderUnstable,
        "list pages are ordered by sourcePath alone: rows that tie move between calls",
        ("leak-13",),
    ),
    Mutant(
        "approximate-path-unfiltered",
        ApproximatePathUnfiltered,
        "past the exact-search limit the approximate query runs unfiltered, the final check after it",
        ("scale-01",),
    ),
    Mutant(
        "approximate-candidates-post-filtered",
        CandidatesPostFiltered,
        "past the exact-search limit the approximate query takes the 40 nearest rows of every "
        "tenant and filters them (an HNSW candidate list without iterative scans)",
        ("scale-01",),
    ),
)
