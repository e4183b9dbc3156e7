"""The store-tenancy profile's harness-v1 operations (``schemas/store-tenancy.md``): the
credential crosses as sent (a token string, or any other JSON value, which is no credential),
and so do the tenant, database and every value a backend must check itself."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.harness import HarnessBackend, WireTable, done
from kbconform.profiles.store_tenancy.protocol import Collection, Record


def _sent(value: object) -> object:
    """``value`` as it crosses: a JSON scalar or None as it is, a list or an object of them
    element by element; anything with no JSON form (bytes, an object) as None."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        return {str(key): _sent(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_sent(item) for item in value]
    return None


def _collection(found: Mapping[str, Any]) -> Collection:
    return Collection(str(found["id"]), str(found["name"]), dict(found.get("metadata") or {}))


def _record(found: Mapping[str, Any]) -> Record:
    return Record(str(found["id"]), str(found["document"]))


class TenancyHarnessBackend(HarnessBackend):
    """A store-tenancy backend behind a harness."""

    def _at(self, op: str, credential: object, tenant: object, database: object, **params: Any) -> Any:
        where = {"credential": _sent(credential), "tenant": _sent(tenant), "database": _sent(database)}
        sent = {key: _sent(value) for key, value in params.items()}
        return self._request(op, {"backend": self.handle, **where, **sent})

    def provision(self, plan: Mapping[str, Any], /) -> None:
        self._request("provisionStore", {"backend": self.handle, "plan": _sent(plan)})

    def create_collection(
        self, credential: object, tenant: str, database: str, name: str, metadata: Mapping[str, Any], /
    ) -> str:
        return str(
            self._at("createCollection", credential, tenant, database, name=name, metadata=metadata)["id"]
        )

    def get_collection(self, credential: object, tenant: str, database: str, name: str, /) -> Collection:
        return _collection(self._at("getCollection", credential, tenant, database, name=name)["collection"])

    def list_collections(
        self, credential: object, tenant: str, database: str, limit: int | None, offset: int, /
    ) -> builtins.list[Collection]:
        found = self._at("listCollections", credential, tenant, database, limit=limit, offset=offset)
        return [_collection(item) for item in found["collections"]]

    def count_collections(self, credential: object, tenant: str, database: str, /) -> int:
        return int(self._at("countCollections", credential, tenant, database)["count"])

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
        self._at(
            "modifyCollection",
            credential,
            tenant,
            database,
            collection=collection,
            name=name,
            metadata=metadata,
        )

    def delete_collection(self, credential: object, tenant: str, database: str, name: str, /) -> None:
        self._at("deleteCollection", credential, tenant, database, name=name)

    def fork_collection(
        self, credential: object, tenant: str, database: str, collection: str, name: str, /
    ) -> str:
        return str(
            self._at("forkCollection", credential, tenant, database, collection=collection, name=name)["id"]
        )

    def _records(
        self, op: str, credential: object, tenant: str, database: str, collection: str, *rows: Any
    ) -> None:
        ids, embeddings, documents = rows
        self._at(
            op,
            credential,
            tenant,
            database,
            collection=collection,
            ids=ids,
            embeddings=embeddings,
            documents=documents,
        )

    def add(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._records("addRecords", credential, tenant, database, collection, *rows)

    def upsert(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._records("upsertRecords", credential, tenant, database, collection, *rows)

    def update(self, credential: object, tenant: str, database: str, collection: str, *rows: Any) -> None:
        self._records("updateRecords", credential, tenant, database, collection, *rows)

    def get(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str] | None, /
    ) -> builtins.list[Record]:
        found = self._at("getRecords", credential, tenant, database, collection=collection, ids=ids)
        return [_record(item) for item in found["records"]]

    def query(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        embedding: Sequence[float],
        n: int,
        /,
    ) -> builtins.list[Record]:
        found = self._at(
            "queryRecords", credential, tenant, database, collection=collection, embedding=embedding, n=n
        )
        return [_record(item) for item in found["records"]]

    def delete(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str], /
    ) -> None:
        self._at("deleteRecords", credential, tenant, database, collection=collection, ids=ids)

    def count(self, credential: object, tenant: str, database: str, collection: str, /) -> int:
        return int(self._at("countRecords", credential, tenant, database, collection=collection)["count"])


def _shown(collection: Any) -> dict[str, Any]:
    return {"id": collection.id, "name": collection.name, "metadata": dict(collection.metadata or {})}


def _records(found: Any) -> dict[str, Any]:
    return {"records": [{"id": record.id, "document": record.document} for record in found]}


def _where(a: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    return a["credential"], a["tenant"], a["database"]


def _rows(a: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    return a["collection"], a["ids"], a["embeddings"], a["documents"]


WIRE = WireTable(
    handlers={
        "provisionStore": lambda s, a: done(s.backend.provision(a["plan"])),
        "createCollection": lambda s, a: {
            "id": s.backend.create_collection(*_where(a), a["name"], a["metadata"])
        },
        "getCollection": lambda s, a: {"collection": _shown(s.backend.get_collection(*_where(a), a["name"]))},
        "listCollections": lambda s, a: {
            "collections": [
                _shown(c) for c in s.backend.list_collections(*_where(a), a["limit"], a["offset"])
            ]
        },
        "countCollections": lambda s, a: {"count": s.backend.count_collections(*_where(a))},
        "modifyCollection": lambda s, a: done(
            s.backend.modify_collection(*_where(a), a["collection"], a["name"], a["metadata"])
        ),
        "deleteCollection": lambda s, a: done(s.backend.delete_collection(*_where(a), a["name"])),
        "forkCollection": lambda s, a: {
            "id": s.backend.fork_collection(*_where(a), a["collection"], a["name"])
        },
        "addRecords": lambda s, a: done(s.backend.add(*_where(a), *_rows(a))),
        "upsertRecords": lambda s, a: done(s.backend.upsert(*_where(a), *_rows(a))),
        "updateRecords": lambda s, a: done(s.backend.update(*_where(a), *_rows(a))),
        "getRecords": lambda s, a: _records(s.backend.get(*_where(a), a["collection"], a["ids"])),
        "queryRecords": lambda s, a: _records(
            s.backend.query(*_where(a), a["collection"], a["embedding"], a["n"])
        ),
        "deleteRecords": lambda s, a: done(s.backend.delete(*_where(a), a["collection"], a["ids"])),
        "countRecords": lambda s, a: {"count": s.backend.count(*_where(a), a["collection"])},
    },
    backend=TenancyHarnessBackend,
    named={"getCollection": "name", "deleteCollection": "name"},
)
