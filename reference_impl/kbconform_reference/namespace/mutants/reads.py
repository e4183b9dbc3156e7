"""Mutants of the tenant-namespace reference, read side and identity: the read filter dropped,
applied after the top k or replaced by the client's, reads without a principal or with anything
shaped like one, a foreign id's existence told, errors read as no results (the leak, isolation
and fail-closed suites)."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from kbconform.errors import BackendUnavailable, Forbidden, NotFound
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import (
    MAINTENANCE,
    PRINCIPAL_AS_DATA,
    WRITES,
    Mutant,
    all_hits,
    closed,
)
from kbconform_reference.namespace.service import Hit, KnowledgeBase, Settings


class UnfilteredQuery(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        self._authenticated(principal, "query")
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in self.store.query(embedding, n_results, None)
        ]


class FilterAfterTopK(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        matches = self.store.query(embedding, n_results, None)
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in matches
            if read_filter.in_scope(principal, m.metadata)
        ]


class CappedQuery(KnowledgeBase):
    """A query returns at most five hits whatever its limit (a candidate pool of its own, shared
    by no one): recall, not a crossing."""

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        return super().query(principal, text, min(n_results, 5), where)


class ClientWhereOverrides(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        if not where:
            return super().query(principal, text, n_results)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        return [
            Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance)
            for m in self.store.query(embedding, n_results, where)
        ]


class UnfilteredList(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        self._authenticated(principal, "list")
        return (
            super().list(principal, limit, offset)
            if limit < 1 or offset < 0
            else all_hits(self, limit, offset)
        )


class PrivateListedToTenant(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        checked = self._authenticated(principal, "list")
        if limit < 1 or offset < 0:
            return super().list(principal, limit, offset)
        return all_hits(self, limit, offset, {"tenantId": {"$in": list(checked.readable_tenants)}})


class UnfilteredCount(KnowledgeBase):
    def count(self, principal: Any, where: Any = None) -> int:
        self._authenticated(principal, "count")
        return len(self.store.get().ids)


class ExistenceOracle(KnowledgeBase):
    def get(self, principal: Any, chunk_id: str) -> Hit:
        try:
            return super().get(principal, chunk_id)
        except NotFound:
            if self.store.get(ids=[chunk_id]).ids:
                raise Forbidden("get", "that chunk belongs to another tenant") from None
            raise


class MissingIdentityReadsAll(KnowledgeBase):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        if principal is None:
            return all_hits(self, limit, offset)
        return super().list(principal, limit, offset, where)


class AnonymousWritesAsShared(KnowledgeBase):
    """Without a principal, writes, export, restore, sync and maintenance run in single-tenant
    mode: as an operator of the shared namespace (reads still refuse)."""

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        if principal is None and operation in (*WRITES, *MAINTENANCE):
            return Principal(sorted(Settings().shared_namespaces)[0], role="operator")
        return KnowledgeBase._authenticated(principal, operation)


class DuckTypedPrincipal(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Any:
        if getattr(principal, "tenant_id", None) is None:  # anything shaped like a principal passes
            return KnowledgeBase._authenticated(principal, operation)
        return principal


class SharedVisibleToAll(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        checked = KnowledgeBase._authenticated(principal, operation)
        return checked.with_namespaces(checked.readable_namespaces | Settings().shared_namespaces)


class AnswersFromFiles(KnowledgeBase):
    """A query that names a file is answered from the deployment's files too (a lexical rescue
    over the server's disk): the file is the first hit, with what the server holds of it."""

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        hits = super().query(principal, text, n_results, where)
        if "." in text.rsplit("/", 1)[-1]:
            hits = [Hit(text, f"the deployment's {text}", {"sourcePath": text}, 1.0), *hits][:n_results]
        return hits


class EmptyOnStoreError(KnowledgeBase):
    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        try:
            return super().query(principal, text, n_results, where)
        except BackendUnavailable:
            return []

    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        try:
            return super().list(principal, limit, offset, where)
        except BackendUnavailable:
            return []


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "unfiltered-query",
        UnfilteredQuery,
        "query drops the tenant filter",
        ("leak-01[query]", "iso-01[query]"),
    ),
    Mutant(
        "filter-after-top-k",
        FilterAfterTopK,
        "query filters after an unfiltered top-k",
        ("leak-02", "iso-01[query]", "iso-01[ask]"),
    ),
    Mutant(
        "capped-query",
        CappedQuery,
        "query returns at most five hits whatever its limit",
        ("leak-02", "iso-01[query]", "iso-01[ask]"),
    ),
    Mutant(
        "client-where-overrides",
        ClientWhereOverrides,
        "a client where clause replaces the tenant filter",
        ("leak-03[a tenantId equality]", "leak-03[an $or around a tenantId]"),
    ),
    Mutant(
        "unfiltered-list",
        UnfilteredList,
        "list reads every tenant's rows",
        ("leak-01[list]", "closed-03", "iso-01[list]"),
    ),
    Mutant(
        "private-listed-to-tenant",
        PrivateListedToTenant,
        "list filters by tenant only: every agent reads another agent's private chunks",
        ("leak-06",),
    ),
    Mutant(
        "unfiltered-count",
        UnfilteredCount,
        "count counts every tenant's rows",
        ("leak-01[count]", "iso-01[count]"),
    ),
    Mutant(
        "existence-oracle",
        ExistenceOracle,
        "get says Forbidden for a foreign id, NotFound for a missing one",
        ("leak-04",),
    ),
    Mutant(
        "missing-identity-reads-all",
        MissingIdentityReadsAll,
        "list without a principal reads everything",
        ("iso-02[list]",),
    ),
    Mutant(
        "answers-from-files",
        AnswersFromFiles,
        "a query naming a file is answered from the deployment's files too",
        ("leak-15", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "anonymous-writes-as-shared",
        AnonymousWritesAsShared,
        "writes, export, restore, sync and maintenance without a principal run as the shared "
        "namespace's operator",
        closed("None"),
    ),
    Mutant(
        "duck-typed-principal",
        DuckTypedPrincipal,
        "any object with a principal's attributes authenticates",
        (
            *closed("an object with a principal's attributes"),
            *(f"iso-02[{facade}]" for facade in ("query", "get", "list", "count", "ask")),
        ),
        in_process_only=PRINCIPAL_AS_DATA,
    ),
    Mutant(
        "shared-visible-to-all",
        SharedVisibleToAll,
        "every principal reads the shared namespace",
        ("leak-05", *(f"iso-01[{facade}]" for facade in ("query", "get", "list", "count", "ask"))),
    ),
    Mutant(
        "empty-on-store-error",
        EmptyOnStoreError,
        "a failing store reads as no results",
        ("closed-02", "iso-03[query]", "iso-03[list]", "iso-03[ask]"),
    ),
)
