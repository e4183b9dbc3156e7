"""Mutants of the tenant-namespace reference that leave something unchecked: principals that are
not exactly a Principal or were changed in place, a client clause taken as it came, a get by id
or an ask's search without the tenant scope."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

import numpy as np

from kbconform.errors import ContractViolation, NotFound, Unauthenticated
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import FACADES, PRINCIPAL_AS_DATA, Mutant, closed
from kbconform_reference.namespace.records import as_hit, as_hits
from kbconform_reference.namespace.service import Answer, Hit, KnowledgeBase


def _valid(principal: Principal) -> bool:
    try:
        Principal(
            principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
        )
    except ContractViolation:
        return False
    return True


class SubclassedPrincipal(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        if not isinstance(principal, Principal) or not _valid(principal):
            raise Unauthenticated(operation)
        return principal  # a subclass passes, with whatever it overrides


class TamperedPrincipal(KnowledgeBase):
    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        if type(principal) is not Principal:
            raise Unauthenticated(operation)
        return principal  # checked once, when it was made


_WIDENING = (
    "a $not operator",
    "a repoSlug negation",
    "a tenantId equality",
    "a tenantId list",
    "a tenantId negation",
    "a tenantId two levels down",
    "a visibility negation",
    "a visibility three levels down",
    "an $or around a tenantId",
    "an empty $and",
    "an empty $or",
    "an empty clause",
    "an originAgentIdentity equality",
)


class WhereUnchecked(KnowledgeBase):
    """The client clause is AND-combined with the scope as it came, never checked."""

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if where is None:
            return super().query(principal, text, n_results)
        checked = self._authenticated(principal, "query")
        scoped = {"$and": [*read_filter.scope(checked), where]}
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        with self._store_call("query"):
            found = self.store.query(embedding, n_results, scoped)
        return self._checked(checked, "query", (as_hit(m) for m in found))


class GetByIdUnscoped(KnowledgeBase):
    """Ids are taken as unguessable: get looks the id up without the tenant scope (visibility
    is still checked)."""

    def get(self, principal: Principal, chunk_id: str) -> Hit:
        checked = self._authenticated(principal, "get")
        with self._store_call("get"):
            rows = self.store.get(ids=[chunk_id])
        for hit in as_hits(rows):
            if read_filter.in_scope(checked, {**hit.metadata, "tenantId": checked.tenant_id}):
                return hit
        raise NotFound(chunk_id)


class AskSearchesUnfiltered(KnowledgeBase):
    def ask(self, principal: Principal, question: str, n_results: int = 5) -> Answer:
        self._authenticated(principal, "ask")
        embedding = np.asarray(self.embedder([question]), dtype=np.float32)[0]
        with self._store_call("ask"):
            hits = [as_hit(m) for m in self.store.query(embedding, n_results, None)]
        return Answer(question, "\n\n".join(h.document for h in hits if h.document), tuple(hits))


class PrincipalCoerced(KnowledgeBase):
    """A tenant id string, or a mapping of a principal's fields (a decoded session), is turned
    into a Principal instead of refused."""

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        if isinstance(principal, str):
            principal = Principal(principal)
        elif isinstance(principal, Mapping):
            principal = Principal(**principal)
        return KnowledgeBase._authenticated(principal, operation)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "subclassed-principal",
        SubclassedPrincipal,
        "a Principal subclass authenticates, with the rights it overrides",
        closed("a Principal subclass that reads every tenant"),
        in_process_only=PRINCIPAL_AS_DATA,
    ),
    Mutant(
        "tampered-principal",
        TamperedPrincipal,
        "a Principal is not checked again: one changed in place after it was made is used as it is",
        (
            *closed("a Principal changed in place to an invalid tenant id"),
            *closed("a Principal changed in place to read a mutable set"),
        ),
        in_process_only=PRINCIPAL_AS_DATA,
    ),
    Mutant(
        "where-unchecked",
        WhereUnchecked,
        "a client where clause is AND-combined with the scope unchecked: reserved keys and bad shapes pass",
        tuple(f"leak-03[{shape}]" for shape in _WIDENING),
    ),
    Mutant(
        "get-by-id-unscoped",
        GetByIdUnscoped,
        "get looks an id up without the tenant scope: a foreign id reads",
        ("leak-01[get]", "iso-01[get]"),
    ),
    Mutant(
        "ask-searches-unfiltered",
        AskSearchesUnfiltered,
        "ask answers from an unfiltered search of every tenant",
        ("leak-01[ask]", "iso-01[ask]"),
    ),
    Mutant(
        "principal-coerced",
        PrincipalCoerced,
        "a tenant id string or a mapping of a principal's fields is coerced into a Principal",
        (
            *closed("a dict that looks like a principal"),
            *closed("a tenant id string"),
            *(f"iso-02[{f}]" for f in FACADES),
        ),
    ),
)
