"""Mutants of the kb-grant reference, a search's authorization and scope: rights checked after
retrieval, Forbidden where NotFound is due, a scope that falls back to the first readable
knowledge base, an unknown tenant read unfiltered or created, a search cache that leaves out the
caller."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.adapter import GrantHit, KbInfo
from kbconform.errors import Forbidden, NotFound
from kbconform_reference._arguments import describe
from kbconform_reference.grant.catalogue import _COLUMNS, KbRow, Tenant, _row
from kbconform_reference.grant.index import VectorIndex
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService, _name


class AuthorizesAfterRetrieval(KbGrantService):
    """The stores are asked first, for every knowledge base named that exists; read access is
    checked on the way out: a refused search has asked the stores (and a failing store answers
    BackendUnavailable before NotFound)."""

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        existing = [row for name in names if (row := self.catalogue.kb(name)) is not None]
        if existing:
            self._retrieve(
                self._groups(existing), existing[0].model, [1.0] * self.models[existing[0].model], 1
            )
        return super()._authorize(tenant, names)


class ForbiddenWhereNotFound(KbGrantService):
    """A knowledge base that exists but is not shared with the caller is Forbidden (403), a
    missing one NotFound (404): the answer tells which ids exist."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        row = self.catalogue.kb(kb) if type(kb) is str else None
        if row is not None and not self.catalogue.readable(tenant.id, [row.external]):
            raise Forbidden("read", "the knowledge base is not shared with you")
        return super()._readable(tenant, kb)

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]


class PivotsToFirstReadable(KbGrantService):
    """Knowledge bases the caller may not read are dropped from the scope, and a scope left
    empty falls back to the caller's first knowledge base (``kbs[0]`` of its own list): never
    NotFound while the caller reads anything."""

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        readable = self.catalogue.readable(tenant.id, names)
        kept = [readable[name] for name in names if name in readable]
        if kept:
            return kept
        own = self.catalogue.readable_by(tenant.id)
        if not own:
            raise NotFound(describe(names[0]))
        return own[:1]


class UnknownTenantUnfiltered(KbGrantService):
    """A caller id that names no tenant (a string, not empty) falls through the tenant lookup
    and is served unfiltered: it reads every knowledge base it names, and lists them all."""

    def _caller(self, caller: object, operation: str) -> Tenant:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            return Tenant(-1, caller)
        return super()._caller(caller, operation)

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        if tenant.id == -1:
            row = self.catalogue.kb(_name(kb, "kb"))
            if row is None:
                raise NotFound(describe(kb))
            return row
        return super()._readable(tenant, kb)

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        if tenant.id == -1:
            return [self._readable(tenant, name) for name in names]
        return super()._authorize(tenant, names)

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            rows = self.catalogue._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE k.state = 'live'"
            )
            return [self._info(_row(row), "list_kbs") for row in rows]
        return super().list_kbs(caller)


class UnknownTenantCreatedOnFirstCall(KbGrantService):
    """A caller id never created is created on its first call (an upsert of the tenant), and
    served as a new tenant instead of Unauthenticated."""

    def _caller(self, caller: object, operation: str) -> Tenant:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            return self.catalogue.create_tenant(caller)
        return super()._caller(caller, operation)


class SearchCacheWithoutCaller(KbGrantService):
    """A search (knowledge bases, vector, limit) answered before is answered again from a cache
    keyed by the request alone, whoever asks; every write and every grant change empties it."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self._answers: dict[str, list[GrantHit]] = {}

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        with self._lock:
            self._caller(caller, "search")  # identity is still checked
            key = repr((kbs, embedding, limit))  # the bug: no caller
            if key not in self._answers:
                self._answers[key] = super().search(caller, kbs, embedding, limit)
            return list(self._answers[key])

    def _forget(self) -> None:
        with self._lock:
            self._answers.clear()

    def create_tenant(self, tenant: object, /) -> None:
        self._forget()
        super().create_tenant(tenant)

    def create_kb(self, caller: object, store: object, model: object, /) -> str:
        self._forget()
        return super().create_kb(caller, store, model)

    def share_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        self._forget()
        super().share_kb(caller, kb, grantee)

    def revoke_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        self._forget()
        super().revoke_kb(caller, kb, grantee)

    def delete_kb(self, caller: object, kb: object, /) -> None:
        self._forget()
        super().delete_kb(caller, kb)

    def ingest(self, caller: object, kb: object, documents: object, /) -> list[str]:
        self._forget()
        return super().ingest(caller, kb, documents)

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        self._forget()
        return super().copy_kb(caller, source, store)

    def move_kb(self, caller: object, kb: object, store: object, /) -> None:
        self._forget()
        super().move_kb(caller, kb, store)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-authorizes-after-retrieval",
        AuthorizesAfterRetrieval,
        "the stores are asked before read access is checked: a refused search consults them",
        ("grant-03",),
    ),
    Mutant(
        "grant-forbidden-where-not-found",
        ForbiddenWhereNotFound,
        "a foreign knowledge base is Forbidden, a missing one NotFound: existence is revealed",
        ("grant-02", "iso-01[get-kb]"),
    ),
    Mutant(
        "grant-pivots-to-first-readable",
        PivotsToFirstReadable,
        "unreadable knowledge bases are dropped from a search, an empty scope falls back to the "
        "caller's first knowledge base",
        ("grant-02", "iso-01[search-kbs]"),
    ),
    Mutant(
        "grant-unknown-tenant-unfiltered",
        UnknownTenantUnfiltered,
        "a caller id naming no tenant is served unfiltered",
        ("iso-02[search-kbs]", "iso-02[get-kb]", "iso-02[list-kbs]", "grant-14"),
    ),
    Mutant(
        "grant-unknown-tenant-created-on-first-call",
        UnknownTenantCreatedOnFirstCall,
        "a caller id never created is created on its first call",
        ("iso-02[search-kbs]", "iso-02[get-kb]", "iso-02[list-kbs]", "grant-14"),
    ),
    Mutant(
        "grant-search-cache-without-caller",
        SearchCacheWithoutCaller,
        "a search is cached by its knowledge bases, vector and limit, not by caller, until the next write",
        ("grant-14",),
    ),
)
