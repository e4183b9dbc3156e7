"""The ``store-tenancy`` isolation profile's backend: a vector store's own tenants, databases and
collections, kept apart by the store's authentication and authorization.

A backend whose manifest declares ``"isolationProfile": "store-tenancy"`` is opened by the same
:class:`~kbconform.adapter.Adapter` (``open(options)``, ``close``, ``shutdown``) and offers these
facades. The caller of every facade but :meth:`StoreTenancyBackend.provision` is a
**credential**: a token string of a user the operator provisioned; anything else (None, a token
no user holds, a value that is no string) is no credential. Every call names the ``tenant`` and
``database`` it works in, as a client's request path does. The rules are in
``schemas/store-tenancy.md``; the docstrings here are their Python form.

Every parameter is positional-only. Errors are :mod:`kbconform.errors` errors; anything else
that escapes is a failure. ``KB_STORE_INVALID`` is a :class:`~kbconform.errors.ContractViolation`
with ``contract="store-tenancy"`` (:func:`store_invalid` builds one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kbconform.errors import ContractViolation, Problem

__all__ = [
    "ACTIONS",
    "ADMIN",
    "DIMENSION",
    "PLAN",
    "READ",
    "READ_FACADES",
    "STORE_INVALID",
    "WRITE",
    "Collection",
    "Record",
    "StoreTenancyBackend",
    "facades",
    "store_invalid",
]

#: The code of a malformed store-tenancy call (a :class:`ContractViolation`).
STORE_INVALID = "KB_STORE_INVALID"
#: The read facades a manifest may list: ``get`` (a collection's records) is required.
READ_FACADES = ("get", "list")
#: The length of every embedding the suites send (the kit gives every embedding: a backend
#: never embeds a document itself).
DIMENSION = 3

#: The actions a user may be granted, one per facade that takes a credential.
READ = ("get_collection", "list_collections", "count_collections", "get", "query", "count")
WRITE = (*READ, "add", "upsert", "update", "delete")
ADMIN = (*WRITE, "create_collection", "modify_collection", "delete_collection", "fork_collection")
ACTIONS = ADMIN


def _user(token: str, grants: Sequence[tuple[str, str]], actions: Sequence[str]) -> dict[str, Any]:
    return {
        "token": token,
        "grants": [{"tenant": tenant, "database": database} for tenant, database in grants],
        "actions": list(actions),
    }


#: The one world every run provisions (``provision(PLAN)``), fixed so that a server configured
#: at its start (users and tokens in a file) can hold it before the kit connects: the tenants
#: with their databases, and the users with their token, the (tenant, database) pairs they are
#: granted and the actions they may take there. Two tenants have a database of the same name.
PLAN: Mapping[str, Any] = {
    "tenants": {"kbst-acme": ["main", "archive"], "kbst-beta": ["main"]},
    "users": {
        "alice": _user("kbst-token-alice-7f3a", [("kbst-acme", "main"), ("kbst-acme", "archive")], ADMIN),
        "walter": _user("kbst-token-walter-c41d", [("kbst-acme", "main")], WRITE),
        "rita": _user("kbst-token-rita-09be", [("kbst-acme", "main")], READ),
        "bob": _user("kbst-token-bob-5e62", [("kbst-beta", "main")], ADMIN),
    },
}


def store_invalid(what: str, expected: str, got: str) -> ContractViolation:
    """The error for a malformed call: ``what`` is the argument, ``expected`` what it must be."""
    return ContractViolation(
        contract="store-tenancy", problems=(Problem("", what, expected, got),), code=STORE_INVALID
    )


@dataclass(frozen=True, slots=True)
class Collection:
    """A collection as the store shows it: its id (the store's own, opaque), its name and its
    metadata (an object; empty when it has none)."""

    id: str
    name: str
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Record:
    """A record as a read returns it: its id and its document, exactly as written."""

    id: str
    document: str


@runtime_checkable
class StoreTenancyBackend(Protocol):
    """A vector store whose every call carries a credential and names a tenant and a database.

    A credential reaches a (tenant, database) only when its user is granted that pair, and takes
    there only the actions its user is granted. Refusals: no credential (None, unknown, not a
    string) ``Unauthenticated``; a (tenant, database) the credential is not granted
    ``Forbidden`` or ``NotFound`` (either: nothing of it is shown); an action the user lacks on
    its own pair ``Forbidden``; a collection that is not in the named (tenant, database),
    another tenant's included, ``NotFound`` exactly as a missing one. A refused call changes
    nothing. The order of checks is the backend's: a call refused for two reasons may raise
    either.
    """

    def provision(self, plan: Mapping[str, Any], /) -> None:
        """The operator's call (no credential, never judged): make ``plan``'s tenants, databases
        and users (:data:`PLAN`'s shape: ``tenants`` name to database names; ``users`` name to
        ``token``, ``grants`` of ``{tenant, database}`` and ``actions``), every database empty
        afterwards. Called once, first, on every backend opened."""
        ...

    def create_collection(
        self, credential: object, tenant: str, database: str, name: str, metadata: Mapping[str, Any], /
    ) -> str:
        """A new collection ``name`` in (``tenant``, ``database``); its id. A name already taken
        in that database: ``KB_STORE_INVALID``."""
        ...

    def get_collection(self, credential: object, tenant: str, database: str, name: str, /) -> Collection:
        """The collection called ``name`` in (``tenant``, ``database``); NotFound when there is none."""
        ...

    def list_collections(
        self, credential: object, tenant: str, database: str, limit: int | None, offset: int, /
    ) -> Sequence[Collection]:
        """The collections of (``tenant``, ``database``) in the store's order, ``offset`` of them
        skipped and at most ``limit`` (None: every one) shown."""
        ...

    def count_collections(self, credential: object, tenant: str, database: str, /) -> int:
        """How many collections (``tenant``, ``database``) holds."""
        ...

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
        """Rename the collection of id ``collection`` and/or replace its metadata (None: unchanged)."""
        ...

    def delete_collection(self, credential: object, tenant: str, database: str, name: str, /) -> None:
        """Delete the collection called ``name`` and its records."""
        ...

    def fork_collection(
        self, credential: object, tenant: str, database: str, collection: str, name: str, /
    ) -> str:
        """A copy of the collection of id ``collection``, called ``name``, in the same (tenant,
        database); its id (feature ``fork``)."""
        ...

    def add(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        documents: Sequence[str],
        /,
    ) -> None:
        """Add records to the collection of id ``collection`` (an id already there: the store's
        own choice, refused or ignored, but never another collection changed)."""
        ...

    def upsert(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        documents: Sequence[str],
        /,
    ) -> None:
        """Add the records, replacing any of the same id in that collection."""
        ...

    def update(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        ids: Sequence[str],
        embeddings: Sequence[Sequence[float]],
        documents: Sequence[str],
        /,
    ) -> None:
        """Replace the records of those ids in that collection (an id not there is skipped)."""
        ...

    def get(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str] | None, /
    ) -> Sequence[Record]:
        """The records of that collection with those ids (None: every record), as :class:`Record`."""
        ...

    def query(
        self,
        credential: object,
        tenant: str,
        database: str,
        collection: str,
        embedding: Sequence[float],
        n: int,
        /,
    ) -> Sequence[Record]:
        """The ``n`` records of that collection nearest ``embedding`` (fewer when it holds fewer),
        nearest first."""
        ...

    def delete(
        self, credential: object, tenant: str, database: str, collection: str, ids: Sequence[str], /
    ) -> None:
        """Delete the records of those ids from that collection."""
        ...

    def count(self, credential: object, tenant: str, database: str, collection: str, /) -> int:
        """How many records that collection holds."""
        ...


def facades(manifest: Any) -> list[tuple[str, Any]]:
    """:class:`StoreTenancyBackend`: a backend has every method (one it does not offer, by the
    manifest's features, raises NotImplementedError and is never called)."""
    return [("StoreTenancyBackend", StoreTenancyBackend)]
