"""Mutants of the store-tenancy reference: each one rule of ``schemas/store-tenancy.md`` broken
the way stores are reported to break it (a collection resolved by its id alone, chroma-core/chroma
#7462; an authorization that checks the action and never the resource, #7588) or the way a
tenancy layer plausibly would (a tenant taken from the request, a database named without its
tenant, a listing filtered after it is paged, an unknown token let in as anonymous).

``MUTANTS`` is registered as the mutant set ``reference-tenancy`` (entry-point group
``kbconform.mutants``); ``kbconform mutants --set reference-tenancy`` runs it. Each mutant's
backend runs on its adapter's own Chroma server.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from kbconform.adapter import BackendOptions
from kbconform.errors import BackendUnavailable, Forbidden, NotFound
from kbconform.profiles.store_tenancy.protocol import READ, Collection, Record
from kbconform_reference import _mutant_base, _races
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.tenancy.adapter import TenancyAdapter
from kbconform_reference.tenancy.service import Located, TenantStore, User, Where

__all__ = ["MUTANTS", "Mutant", "MutantAdapter", "by_name"]


class Mutant(_mutant_base.Mutant[TenantStore]):
    """A broken store-tenancy backend, served by this module's ``by_name``."""

    __slots__ = ()


def _ids(test: str, *cases: str) -> tuple[str, ...]:
    return tuple(f"{test}[{case}]" for case in cases)


class ResolvedByIdAlone(TenantStore):
    """A by-id call trusts the server to find the collection: the id is sent under the named
    pair and the server resolves it alone (#7462; the local Chroma server does)."""

    def _resolve(self, where: Where, collection: object, operation: str) -> Located:
        try:
            found = uuid.UUID(str(collection))
        except ValueError:
            raise NotFound(str(collection)) from None
        return Located(SimpleNamespace(id=found, name=str(collection), metadata=None), self._at(where))


class ChecksActionOnly(TenantStore):
    """The authorization checks the credential's action and never the resource it names (#7588:
    ``SimpleRBACAuthorizationProvider`` reads no tenant or database)."""

    def _where(self, credential: object, tenant: object, database: object, action: str) -> Where:
        user = self._user(credential, action)
        if action not in user.actions:
            raise Forbidden(action, f"{user.name} may not {action}")
        if tenant not in self.tenants:
            raise NotFound(str(tenant))
        assert isinstance(tenant, str)
        assert isinstance(database, str)
        return Where(tenant, database, self.tenants[tenant])


class GrantByTenant(TenantStore):
    """A grant on one database of a tenant reaches every database of that tenant."""

    def _where(self, credential: object, tenant: object, database: object, action: str) -> Where:
        user = self._user(credential, action)
        if tenant not in {t for t, _ in user.pairs}:
            raise Forbidden(action, f"{user.name} is not granted {tenant}")
        if action not in user.actions:
            raise Forbidden(action, f"{user.name} may not {action}")
        assert isinstance(tenant, str)
        assert isinstance(database, str)
        return Where(tenant, database, self.tenants[tenant])


class TenantFromRequest(TenantStore):
    """The grant checked is the database the credential holds, the tenant taken from the
    request: a database of the same name in another tenant is reached."""

    def _where(self, credential: object, tenant: object, database: object, action: str) -> Where:
        user = self._user(credential, action)
        if database not in {d for _, d in user.pairs} or tenant not in self.tenants:
            raise Forbidden(action, f"{user.name} is not granted {tenant}/{database}")
        if action not in user.actions:
            raise Forbidden(action, f"{user.name} may not {action}")
        assert isinstance(tenant, str)
        assert isinstance(database, str)
        return Where(tenant, database, self.tenants[tenant])


class DatabaseCrossesTenants(TenantStore):
    """A database is made and found by its name alone, in the first tenant provisioned: two
    tenants' databases of one name are one database on the server."""

    def _at(self, where: Where) -> dict[str, str]:
        return {"tenant": next(iter(self.tenants.values())), "database": where.database}

    def provision(self, plan: Mapping[str, Any], /) -> None:
        first = dict(plan)
        first["tenants"] = dict(list(plan["tenants"].items())[:1])
        super().provision(first)
        for tenant in list(plan["tenants"])[1:]:
            self.tenants[tenant] = f"{tenant}-{self.suffix}"
            self.api.create_tenant(self.tenants[tenant])
        for name, user in plan["users"].items():
            pairs = frozenset((g["tenant"], g["database"]) for g in user["grants"])
            self.users[user["token"]] = User(name, pairs, frozenset(user["actions"]))


class ListedBeforeFiltered(TenantStore):
    """The listing pages every collection of the store, then keeps the named pair's: a page
    holds fewer than its limit, and an offset skips other tenants' collections."""

    def list_collections(
        self, credential: object, tenant: str, database: str, limit: int | None, offset: int, /
    ) -> list[Collection]:
        where = self._where(credential, tenant, database, "list_collections")
        everything: list[tuple[Any, tuple[str, str]]] = []
        with self._store("list_collections"):
            for plan_tenant, server_tenant in self.tenants.items():
                for database_model in self.api.list_databases(tenant=server_tenant):
                    found = self.api.list_collections(tenant=server_tenant, database=database_model.name)
                    everything += [(c, (plan_tenant, database_model.name)) for c in found]
        page = everything[offset:] if limit is None else everything[offset : offset + limit]
        return [
            Collection(str(c.id), str(c.name), dict(c.metadata or {}))
            for c, at in page
            if at == (where.tenant, where.database)
        ]


class UnknownTokenAnonymous(TenantStore):
    """A credential no user holds (any value but none at all) is an anonymous reader of every pair."""

    def _user(self, credential: object, operation: str) -> User:
        if credential is not None and (not isinstance(credential, str) or credential not in self.users):
            every = frozenset((t, d) for user in self.users.values() for t, d in user.pairs)
            return User("anonymous", every, frozenset(READ))
        return super()._user(credential, operation)


class NoCredentialDefaultUser(TenantStore):
    """A call with no credential at all is the default user's (the first provisioned)."""

    def _user(self, credential: object, operation: str) -> User:
        return super()._user(next(iter(self.users)) if credential is None else credential, operation)


class TenantOverwritten(TenantStore):
    """A tenant the store does not know is replaced by the credential's own (a singleton
    tenant overwritten from the credential, as Chroma's
    ``overwrite_singleton_tenant_database_access_from_auth``, applied to any unknown tenant)."""

    def _where(self, credential: object, tenant: object, database: object, action: str) -> Where:
        user = self._user(credential, action)
        if tenant not in self.tenants:
            tenant = min(user.pairs)[0]
        return super()._where(credential, tenant, database, action)


class WriteIsAdmin(TenantStore):
    """A user granted any write manages collections too (create, modify, delete, fork)."""

    def _user(self, credential: object, operation: str) -> User:
        user = super()._user(credential, operation)
        if "add" in user.actions:
            admin = {"create_collection", "modify_collection", "delete_collection", "fork_collection"}
            return User(user.name, user.pairs, user.actions | admin)
        return user


class TokenNormalized(TenantStore):
    """A token is compared after trimming, folding case and dropping a ``Bearer`` prefix: a
    malformed token is read as the user's."""

    def _user(self, credential: object, operation: str) -> User:
        if isinstance(credential, str):
            said = credential.strip().removeprefix("Bearer ").strip().lower()
            credential = next((t for t in self.users if t.lower() == said), credential)
        return super()._user(credential, operation)


class AuthorizedAfterWrite(TenantStore):
    """A write is made first and its action checked after: a refused write has landed."""

    def _write(
        self, action: str, credential: object, tenant: str, database: str, collection: str, *rows: Any
    ) -> None:
        user = self._user(credential, action)
        if (tenant, database) in user.pairs:
            at = Where(tenant, database, self.tenants[tenant])
            ids, vectors, texts = self._rows(*rows)
            found = self._resolve(at, collection, action)
            call = {"add": self.api._add, "upsert": self.api._upsert, "update": self.api._update}[action]
            with self._store(action):
                call(ids=ids, collection_id=found.model.id, embeddings=vectors, documents=texts, **found.at)
        self._where(credential, tenant, database, action)


class RecordIdsGlobal(TenantStore):
    """Record ids are one index across the store: an upsert replaces a record of that id in
    whatever collection holds it (it is deleted there first)."""

    def upsert(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._where(credential, tenant, database, "upsert")
        ids = list(rows[0]) if isinstance(rows[0], Sequence) else []
        for server_tenant in self.tenants.values():
            for database_model in self.api.list_databases(tenant=server_tenant):
                at = {"tenant": server_tenant, "database": database_model.name}
                for c in self.api.list_collections(**at):
                    self.api._delete(c.id, ids=ids, **at)
        super().upsert(credential, tenant, database, collection, *rows)


class OutageShowsNothing(TenantStore):
    """A store that fails is read as an empty one: reads answer nothing instead of failing."""

    def list_collections(
        self, credential: object, tenant: str, database: str, limit: int | None, offset: int, /
    ) -> list[Collection]:
        try:
            return super().list_collections(credential, tenant, database, limit, offset)
        except BackendUnavailable:
            return []

    def get(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str] | None, /
    ) -> list[Record]:
        try:
            return super().get(credential, tenant, database, collection, ids)
        except BackendUnavailable:
            return []


class StoreErrorsAsOutages(TenantStore):
    """Malformed calls are left to the server, and its refusals reported as an outage."""

    def _rows(self, ids: object, embeddings: object, documents: object) -> Any:
        return ids, embeddings, documents

    def create_collection(
        self, credential: object, tenant: str, database: str, name: str, metadata: Mapping[str, Any], /
    ) -> str:
        where = self._where(credential, tenant, database, "create_collection")
        try:
            return str(
                self.api.create_collection(name, metadata=dict(metadata) or None, **self._at(where)).id
            )
        except Exception as error:
            raise BackendUnavailable("create_collection", str(error)) from None

    def query(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        embedding: Sequence[float],
        n: int,
        /,
    ) -> list[Record]:
        where = self._where(credential, tenant, database, "query")
        found = self._resolve(where, collection, "query")
        try:
            import numpy

            rows = self.api._query(
                found.model.id, numpy.array([embedding]), n_results=n, include=["documents"], **found.at
            )
        except Exception as error:
            raise BackendUnavailable("query", str(error)) from None
        return [Record(str(i), str(d)) for i, d in zip(rows["ids"][0], rows["documents"][0], strict=True)]

    def _write(
        self, action: str, credential: object, tenant: str, database: str, collection: str, *rows: Any
    ) -> None:
        try:
            super()._write(action, credential, tenant, database, collection, *rows)
        except (Forbidden, NotFound):
            raise
        except Exception as error:
            raise BackendUnavailable(action, str(error)) from None


#: The read facades the concurrency suite calls at once, and its writes (conc-03).
READS = ("get", "list_collections")
WRITES = ("add", "create_collection")
CallerOnSelf = _races.caller_on_self(TenantStore, READS)
SharedResults = _races.shared_results(TenantStore, READS)
WriteCallerOnSelf = _races.caller_on_self(TenantStore, WRITES)
BOTH = ("get-records", "list-collections")

S1 = _ids("st-01", "unknown", "other case", "trailing space", "bearer prefix")
MALFORMED = _ids(
    "st-10",
    "an empty collection name",
    "a collection name that is a number",
    "ids and embeddings of different lengths",
    "an embedding of two numbers",
    "a query embedding of text",
    "a query for no records",
)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "tenancy-resolved-by-id-alone",
        ResolvedByIdAlone,
        "S3: a collection id is resolved by the server alone, whatever pair the call names",
        (
            *_ids(
                "st-04",
                "another tenant's",
                "another tenant's, under a database of the same name",
                "another database's of its tenant",
            ),
            "st-08",
            "iso-01[get-records]",
        ),
    ),
    Mutant(
        "tenancy-checks-action-only",
        ChecksActionOnly,
        "S2: the action is authorized, never the tenant and database it is taken on",
        (
            *_ids(
                "st-02",
                "another tenant",
                "another tenant's database of its own database's name",
                "another database of its tenant",
            ),
            "st-09",
        ),
    ),
    Mutant(
        "tenancy-grant-by-tenant",
        GrantByTenant,
        "S2: a grant on one database of a tenant reaches all of them",
        _ids("st-02", "another database of its tenant"),
    ),
    Mutant(
        "tenancy-tenant-from-request",
        TenantFromRequest,
        "S2: the tenant is read from the request, only the database from the credential's grant",
        _ids("st-02", "another tenant's database of its own database's name"),
    ),
    Mutant(
        "tenancy-database-crosses-tenants",
        DatabaseCrossesTenants,
        "S5, S6: a database is found by its name alone, two tenants' databases of one name one",
        ("iso-01[list-collections]", "st-03", "st-05"),
    ),
    Mutant(
        "tenancy-listed-before-filtered",
        ListedBeforeFiltered,
        "S5: the listing is paged over the whole store and filtered after",
        ("st-03",),
    ),
    Mutant(
        "tenancy-unknown-token-anonymous",
        UnknownTokenAnonymous,
        "S1: a token no user holds reads every pair as an anonymous user",
        (*S1, *_ids("st-01", "empty", "number"), "iso-02[get-records]", "iso-02[list-collections]"),
    ),
    Mutant(
        "tenancy-no-credential-default-user",
        NoCredentialDefaultUser,
        "S1: a call with no credential is the default user's",
        _ids("st-01", "None"),
    ),
    Mutant(
        "tenancy-tenant-overwritten",
        TenantOverwritten,
        "S2: a tenant the store does not know is replaced by the credential's own",
        _ids("st-02", "a tenant that does not exist"),
    ),
    Mutant(
        "tenancy-write-is-admin",
        WriteIsAdmin,
        "S4: a user granted writes manages collections too",
        _ids("st-06", "write"),
    ),
    Mutant(
        "tenancy-token-normalized",
        TokenNormalized,
        "S1: a malformed token (a Bearer prefix, a trailing space, another case) is read as the user's",
        _ids("st-01", "other case", "trailing space", "bearer prefix"),
    ),
    Mutant(
        "tenancy-authorized-after-write",
        AuthorizedAfterWrite,
        "S4, S7: a write lands before its action is checked",
        _ids("st-06", "read"),
    ),
    Mutant(
        "tenancy-record-ids-global",
        RecordIdsGlobal,
        "S3, S6: an upsert replaces a record of its id in every collection of the store",
        ("st-07",),
    ),
    Mutant(
        "tenancy-outage-shows-nothing",
        OutageShowsNothing,
        "fail closed: a store that fails is read as an empty one",
        ("iso-03[get-records]", "iso-03[list-collections]"),
    ),
    Mutant(
        "tenancy-store-errors-as-outages",
        StoreErrorsAsOutages,
        "S8: malformed calls are left to the server and its refusals reported as an outage",
        MALFORMED,
    ),
    Mutant(
        "tenancy-caller-on-self",
        CallerOnSelf,
        "each read keeps its credential on the service object for the call, which another request overwrites",
        (*_ids("conc-01", *BOTH), *_ids("conc-02", *BOTH)),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "tenancy-shared-results",
        SharedResults,
        "each read gathers its results in one buffer on the service object, cleared at each call",
        _ids("conc-01", *BOTH),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "tenancy-write-caller-on-self",
        WriteCallerOnSelf,
        "each add and create keeps its credential on the service object and makes the write as"
        " whichever caller set it last",
        _ids("conc-03", *BOTH),
        in_process_only=_races.OVERLAP_ONLY,
    ),
)


class MutantAdapter(ServesMutant[Mutant], TenancyAdapter):
    """The store-tenancy reference adapter, opening the mutant instead of the reference."""

    def _store(self, options: BackendOptions) -> TenantStore:
        return self.mutant.kind(self._connected(), options.store_fails)


#: ``kbconform_reference.tenancy.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
