"""The store-tenancy profile's world for the shared isolation suite: :data:`PLAN` provisioned,
collections of the same name in two tenants and one in a second database, and the model of who
reads what (a credential reads exactly the collections of the (tenant, database) pairs it is
granted, and every other collection's id, named under its own pairs, is not found)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import BackendOptions, Manifest
from kbconform.conformance import Reader, Reading, carried
from kbconform.errors import Forbidden, NotFound
from kbconform.profiles.store_tenancy.model import Kept, StoreModel, pairs, token
from kbconform.profiles.store_tenancy.protocol import DIMENSION, PLAN

__all__ = ["TenancyIsolation", "TenancyWorld"]

#: The world's collections: (owner, tenant, database, name, how many records).
COLLECTIONS = (
    ("alice", "kbst-acme", "main", "notes", 2),
    ("alice", "kbst-acme", "archive", "old", 1),
    ("bob", "kbst-beta", "main", "notes", 2),
)
#: Who reads (users of the plan).
READERS = ("alice", "rita", "bob")


@dataclass
class TenancyWorld:
    """The seeded store, as :class:`StoreModel` holds it."""

    model: StoreModel
    readers: tuple[Reader, ...]

    def size(self, facade: str) -> int:
        return len(self.model.collections) if facade == "list" else len(self.model.records())

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        items: dict[str, str | None] = {}
        number = 0
        user = self.model.user_of(reader.identity)
        for tenant, database in pairs(user):
            if facade == "list":
                shown = list(backend.list_collections(reader.identity, tenant, database, None, 0))
                items.update({c.id: c.name for c in shown})
                number += len(shown)
                continue
            for collection in self.model.collections:  # every collection's id, the foreign ones too
                try:
                    records = list(backend.get(reader.identity, tenant, database, collection, None))
                except (NotFound, Forbidden):
                    continue
                items.update({r.id: r.document for r in records})
                number += len(records)
        return Reading(items, number)

    def expected(self, facade: str, reader: Reader) -> Reading:
        user = self.model.user_of(reader.identity)
        mine = [c for c in self.model.collections.values() if (c.tenant, c.database) in pairs(user)]
        if facade == "list":
            return Reading({c.id: c.name for c in mine}, len(mine))
        items: dict[str, str | None] = {r: c.records[r][1] for c in mine for r in c.records}
        return Reading(items, len(items))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        """One read as ``identity`` of its own first pair (a reader's; kbst-acme/main for no
        credential): its collections, or the records of its first collection."""
        own = sorted(pairs(self.model.user_of(identity))) or [("kbst-acme", "main")]
        tenant, database = own[0]
        if facade == "list":
            return backend.list_collections(identity, tenant, database, None, 0)
        there = self.model.in_pair(tenant, database)
        return backend.get(identity, tenant, database, there[0].id if there else "kbst-none", None)

    def no_identities(self) -> dict[str, object]:
        alice = token("alice")
        return {
            "None": None,
            "the empty string": "",
            "an unknown token": "kbst-token-nobody-0000",
            "a token with a Bearer prefix": f"Bearer {alice}",
            "a token with a trailing space": f"{alice} ",
            "a number": 7,
        }

    def writers(self) -> tuple[Reader, ...]:
        """The readers granted writes: alice and bob, each in its own tenant."""
        return tuple(r for r in self.readers if "add" in PLAN["users"][r.label]["actions"])

    def _target(self, identity: object) -> Kept:
        """Where a write as ``identity`` goes: the first collection of its first pair
        (kbst-acme/main's for no credential)."""
        own = sorted(pairs(self.model.user_of(identity))) or [("kbst-acme", "main")]
        return self.model.in_pair(*own[0])[0]

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        """A record ``mark`` added to the writer's first collection (``get``), or a collection
        called ``mark`` made in its first pair (``list``)."""
        target = self._target(identity)
        if facade == "list":
            return backend.create_collection(identity, target.tenant, target.database, mark, {})
        vector = [0.5] * DIMENSION
        return backend.add(
            identity, target.tenant, target.database, target.id, [mark], [vector], [f"{mark} at once"]
        )

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        target = self._target(writer.identity)
        if facade == "get":
            target.records[mark] = ([0.5] * DIMENSION, f"{mark} at once")
            return []
        if not isinstance(answer, str) or not answer or answer in self.model.collections:
            return [f"create_collection returned {answer!r}, not a new id"]
        self.model.collections[answer] = Kept(answer, target.tenant, target.database, mark)
        return []

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, (doc for _, doc in self.model.records().values()))


@dataclass(frozen=True)
class TenancyIsolation:
    """:data:`~kbconform.profiles.store_tenancy.protocol.PLAN` provisioned, then
    :data:`COLLECTIONS`, each with its records."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> TenancyWorld:
        model = StoreModel.provisioned(backend)
        for owner, tenant, database, name, count in COLLECTIONS:
            made = model.create(backend, owner, tenant, database, name)
            model.add(backend, owner, made, [f"{tenant}'s {name} {n}" for n in range(count)], rng)
        return TenancyWorld(model, tuple(Reader(user, token(user)) for user in READERS))

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)
