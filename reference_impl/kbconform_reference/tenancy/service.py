"""The store-tenancy reference's backend: a credential checked, its grant and its action checked
against the (tenant, database) a call names, and only then the call made on a Chroma server,
each plan's tenant one of the server's own tenants (``schemas/store-tenancy.md``).

The server is not trusted to keep tenants apart (its data plane resolves a collection by its id
alone: chroma-core/chroma #7462), so a by-id call first finds the id among the collections of the
pair it names, and a collection that is not there is missing (:meth:`TenantStore._resolve`).
Each backend provisions its plan's tenants under a suffix of its own, so backends opened on one
server never see each other's collections.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbconform.errors import BackendUnavailable, Forbidden, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.store_tenancy.protocol import DIMENSION, Collection, Record, store_invalid

#: A request's deadline (seconds): a loaded two-core machine answers far sooner.
TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class User:
    """A provisioned user: its name, the pairs it is granted, the actions it may take."""

    name: str
    pairs: frozenset[tuple[str, str]]
    actions: frozenset[str]


@dataclass(frozen=True, slots=True)
class Located:
    """A collection found for a by-id call: the server's collection, and where the call on it is
    made (the server's tenant and database)."""

    model: Any
    at: dict[str, str]


@dataclass(frozen=True, slots=True)
class Where:
    """The pair a call names, as the plan and as the server call it."""

    tenant: str
    database: str
    server_tenant: str


def connect(host: str, port: int) -> Any:
    """A Chroma HTTP API object for the server at ``host:port``, every request bounded."""
    import httpx
    from chromadb.api.fastapi import FastAPI
    from chromadb.config import Settings, System

    settings = Settings(
        chroma_api_impl="chromadb.api.fastapi.FastAPI",
        chroma_server_host=host,
        chroma_server_http_port=port,
        anonymized_telemetry=False,
    )
    system = System(settings)
    api = system.instance(FastAPI)
    session = getattr(api, "_session", None)
    if not isinstance(session, httpx.Client):
        raise RuntimeError("this chromadb's HTTP client has no httpx session to bound")
    session.timeout = httpx.Timeout(TIMEOUT)
    system.start()
    return api


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise store_invalid(what, "a non-empty string", repr(value))
    return value


def _embedding(value: object, what: str = "embedding") -> list[float]:
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or len(value) != DIMENSION
        or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value
        )
    ):
        raise store_invalid(what, f"{DIMENSION} finite numbers", repr(value))
    return [float(x) for x in value]


def _strings(value: object, what: str) -> list[str]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise store_invalid(what, "a list of strings", repr(value))
    return [_text(item, what) for item in value]


def _metadata(value: object) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        raise store_invalid("metadata", "an object", repr(value))
    return dict(value) or None  # Chroma keeps no empty metadata


class TenantStore:
    """One backend: a plan provisioned on the server, and every call checked before it is made."""

    def __init__(self, api: Any, store_fails: Callable[..., bool] | None = None) -> None:
        self.api = api
        self.store_fails = store_fails
        self.suffix = uuid.uuid4().hex[:10]
        self.users: dict[str, User] = {}
        self.tenants: dict[str, str] = {}

    # -- the operator ---------------------------------------------------------------------------

    def provision(self, plan: Mapping[str, Any], /) -> None:
        with self._store("provision"):
            for tenant, databases in plan["tenants"].items():
                self.tenants[tenant] = f"{tenant}-{self.suffix}"
                self.api.create_tenant(self.tenants[tenant])
                for database in databases:
                    self.api.create_database(database, tenant=self.tenants[tenant])
        for name, user in plan["users"].items():
            pairs = frozenset((g["tenant"], g["database"]) for g in user["grants"])
            self.users[user["token"]] = User(name, pairs, frozenset(user["actions"]))

    # -- who may --------------------------------------------------------------------------------

    def _user(self, credential: object, operation: str) -> User:
        """The user whose token ``credential`` is exactly; Unauthenticated for any other value."""
        user = self.users.get(credential) if isinstance(credential, str) else None
        if user is None:
            raise Unauthenticated(operation)
        return user

    def _where(self, credential: object, tenant: object, database: object, action: str) -> Where:
        """The pair the call names, once its credential, its grant and its action are checked."""
        user = self._user(credential, action)
        if (tenant, database) not in user.pairs:
            raise Forbidden(action, f"{user.name} is not granted {tenant}/{database}")
        if action not in user.actions:
            raise Forbidden(action, f"{user.name} may not {action}")
        assert isinstance(tenant, str)
        assert isinstance(database, str)
        return Where(tenant, database, self.tenants[tenant])

    def _at(self, where: Where) -> dict[str, str]:
        return {"tenant": where.server_tenant, "database": where.database}

    def _resolve(self, where: Where, collection: object, operation: str) -> Located:
        """The server's collection of id ``collection`` if it is in ``where``'s pair; NotFound
        otherwise, another pair's exactly as a missing one."""
        with self._store(operation):
            found = [c for c in self.api.list_collections(**self._at(where)) if str(c.id) == collection]
        if not found:
            raise NotFound(str(collection))
        return Located(found[0], self._at(where))

    def _named(self, where: Where, name: object, operation: str) -> Any:
        with self._store(operation):
            found = [c for c in self.api.list_collections(**self._at(where)) if c.name == name]
        if not found:
            raise NotFound(str(name))
        return found[0]

    @contextmanager
    def _store(self, operation: str) -> Iterator[None]:
        """One call of the server: refused while the store switch is on; its errors as the kit's."""
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable(operation, "the store is switched off")
        from chromadb.errors import ChromaError, NotFoundError

        try:
            yield
        except KbconformError:
            raise
        except NotFoundError as error:
            raise NotFound(str(error)) from None
        except (ChromaError, ValueError, TypeError) as error:
            raise store_invalid(operation, "a call the store accepts", str(error)) from None
        except Exception as error:  # the server unreachable, a deadline passed
            raise BackendUnavailable(operation, f"{type(error).__name__}: {error}") from None

    # -- collections ----------------------------------------------------------------------------

    def create_collection(
        self, credential: object, tenant: str, database: str, name: str, metadata: Mapping[str, Any], /
    ) -> str:
        where = self._where(credential, tenant, database, "create_collection")
        made, kept = _text(name, "name"), _metadata(metadata)
        with self._store("create_collection"):
            return str(self.api.create_collection(made, metadata=kept, **self._at(where)).id)

    def get_collection(self, credential: object, tenant: str, database: str, name: str, /) -> Collection:
        where = self._where(credential, tenant, database, "get_collection")
        return _shown(self._named(where, _text(name, "name"), "get_collection"))

    def list_collections(
        self, credential: object, tenant: str, database: str, limit: int | None, offset: int, /
    ) -> list[Collection]:
        where = self._where(credential, tenant, database, "list_collections")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise store_invalid("limit", "a positive integer or null", repr(limit))
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise store_invalid("offset", "a non-negative integer", repr(offset))
        with self._store("list_collections"):
            return [
                _shown(c) for c in self.api.list_collections(limit=limit, offset=offset, **self._at(where))
            ]

    def count_collections(self, credential: object, tenant: str, database: str, /) -> int:
        where = self._where(credential, tenant, database, "count_collections")
        with self._store("count_collections"):
            return int(self.api.count_collections(**self._at(where)))

    def modify_collection(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        name: str | None,
        metadata: Mapping[str, Any] | None,
        /,
    ) -> None:
        where = self._where(credential, tenant, database, "modify_collection")
        renamed = None if name is None else _text(name, "name")
        kept = None if metadata is None else _metadata(metadata)
        found = self._resolve(where, collection, "modify_collection")
        with self._store("modify_collection"):
            self.api._modify(found.model.id, new_name=renamed, new_metadata=kept, **found.at)

    def delete_collection(self, credential: object, tenant: str, database: str, name: str, /) -> None:
        where = self._where(credential, tenant, database, "delete_collection")
        found = self._named(where, _text(name, "name"), "delete_collection")
        with self._store("delete_collection"):
            self.api.delete_collection(found.name, **self._at(where))

    def fork_collection(
        self, credential: object, tenant: str, database: str, collection: str, name: str, /
    ) -> str:
        """A fork made by the reference: a new collection in the same pair, the records copied
        (a local server has no fork of its own)."""
        where = self._where(credential, tenant, database, "fork_collection")
        made = _text(name, "name")
        found = self._resolve(where, collection, "fork_collection")
        with self._store("fork_collection"):
            rows = self.api._get(found.model.id, include=["embeddings", "documents"], **found.at)
            fork = self.api.create_collection(made, metadata=found.model.metadata or None, **found.at)
            if rows["ids"]:
                self.api._add(
                    list(rows["ids"]),
                    fork.id,
                    [list(map(float, e)) for e in rows["embeddings"]],
                    documents=list(rows["documents"]),
                    **found.at,
                )
        return str(fork.id)

    # -- records --------------------------------------------------------------------------------

    def _rows(
        self, ids: object, embeddings: object, documents: object
    ) -> tuple[list[str], list[list[float]], list[str]]:
        checked, texts = _strings(ids, "ids"), _strings(documents, "documents")
        if not isinstance(embeddings, Sequence) or isinstance(embeddings, str):
            raise store_invalid("embeddings", "a list of embeddings", repr(embeddings))
        vectors = [_embedding(e, "embeddings") for e in embeddings]
        if not checked or not len(checked) == len(vectors) == len(texts):
            raise store_invalid("ids", "ids, embeddings and documents of one non-zero length", repr(ids))
        return checked, vectors, texts

    def _write(
        self, action: str, credential: object, tenant: str, database: str, collection: str, *rows: Any
    ) -> None:
        where = self._where(credential, tenant, database, action)
        ids, vectors, texts = self._rows(*rows)
        found = self._resolve(where, collection, action)
        call = {"add": self.api._add, "upsert": self.api._upsert, "update": self.api._update}[action]
        with self._store(action):
            call(ids=ids, collection_id=found.model.id, embeddings=vectors, documents=texts, **found.at)

    def add(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._write("add", credential, tenant, database, collection, *rows)

    def upsert(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._write("upsert", credential, tenant, database, collection, *rows)

    def update(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._write("update", credential, tenant, database, collection, *rows)

    def get(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str] | None, /
    ) -> list[Record]:
        where = self._where(credential, tenant, database, "get")
        wanted = None if ids is None else _strings(ids, "ids")
        found = self._resolve(where, collection, "get")
        with self._store("get"):
            rows = self.api._get(found.model.id, ids=wanted, include=["documents"], **found.at)
        return [Record(str(i), str(d)) for i, d in zip(rows["ids"], rows["documents"], strict=True)]

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
        vector = _embedding(embedding)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 1000:
            raise store_invalid("n", "an integer from 1 to 1000", repr(n))
        found = self._resolve(where, collection, "query")
        with self._store("query"):
            import numpy

            rows = self.api._query(
                found.model.id,
                numpy.array([vector], dtype=numpy.float32),
                n_results=n,
                include=["documents"],
                **found.at,
            )
        return [Record(str(i), str(d)) for i, d in zip(rows["ids"][0], rows["documents"][0], strict=True)]

    def delete(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str], /
    ) -> None:
        where = self._where(credential, tenant, database, "delete")
        gone = _strings(ids, "ids")
        found = self._resolve(where, collection, "delete")
        with self._store("delete"):
            self.api._delete(found.model.id, ids=gone, **found.at)

    def count(self, credential: object, tenant: str, database: str, collection: str, /) -> int:
        where = self._where(credential, tenant, database, "count")
        found = self._resolve(where, collection, "count")
        with self._store("count"):
            return int(self.api._count(found.model.id, **found.at))

    def close(self) -> None:
        """Delete the backend's tenants' collections (the server keeps its tenants)."""
        for tenant, server_tenant in self.tenants.items():
            del tenant
            try:
                for database in self.api.list_databases(tenant=server_tenant):
                    for c in self.api.list_collections(tenant=server_tenant, database=database.name):
                        self.api.delete_collection(c.name, tenant=server_tenant, database=database.name)
            except Exception:  # a server gone at close leaves nothing to clean
                return


def _shown(model: Any) -> Collection:
    return Collection(str(model.id), str(model.name), dict(model.metadata or {}))
