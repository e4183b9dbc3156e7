"""The store-tenancy policy model (the oracle): the plan's users, their grants and actions, and
the collections and records the store holds, by where they were made.

The suites make every call through the model's judgement: :meth:`StoreModel.expect` says how a
call must be refused (or None: it must land), and the model commits what landed."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.conformance import charge, charged, error_name
from kbconform.errors import Forbidden, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.store_tenancy.protocol import DIMENSION, PLAN

__all__ = ["Kept", "StoreModel", "embedding", "pairs", "token"]

#: How a refused call must fail: one of these errors.
Refusal = tuple[type[KbconformError], ...]
#: A credential that names no user.
UNAUTHENTICATED: Refusal = (Unauthenticated,)
#: A (tenant, database) the credential is not granted: nothing of it may be shown.
NOT_GRANTED: Refusal = (Forbidden, NotFound)
#: An action the credential's user lacks on a pair it is granted.
FORBIDDEN: Refusal = (Forbidden,)
#: A collection that is not in the named pair: exactly as a missing one.
MISSING: Refusal = (NotFound,)


def token(user: str) -> str:
    """The token :data:`PLAN` gives ``user``."""
    return str(PLAN["users"][user]["token"])


def pairs(user: str | None) -> set[tuple[str, str]]:
    """The (tenant, database) pairs ``user`` is granted (none for no user)."""
    if user is None:
        return set()
    return {(grant["tenant"], grant["database"]) for grant in PLAN["users"][user]["grants"]}


def embedding(rng: random.Random) -> list[float]:
    """An embedding the kit gives: :data:`DIMENSION` numbers in [-1, 1], two decimals."""
    return [round(rng.uniform(-1, 1), 2) for _ in range(DIMENSION)]


@dataclass
class Kept:
    """One collection as the model holds it: where it is, its name and metadata, its records
    (id to embedding and document)."""

    id: str
    tenant: str
    database: str
    name: str
    metadata: dict[str, Any] = field(default_factory=dict)
    records: dict[str, tuple[list[float], str]] = field(default_factory=dict)


@dataclass
class StoreModel:
    """What the store holds, and who may do what."""

    collections: dict[str, Kept] = field(default_factory=dict)

    @classmethod
    def provisioned(cls, backend: Any) -> StoreModel:
        """A fresh store: :data:`PLAN` provisioned on ``backend``, no collection."""
        backend.provision(PLAN)
        return cls()

    # -- who may ---------------------------------------------------------------------------------

    @staticmethod
    def user_of(credential: object) -> str | None:
        """The user whose token ``credential`` is exactly (None: no credential)."""
        if not isinstance(credential, str):
            return None
        return next((user for user, held in PLAN["users"].items() if held["token"] == credential), None)

    def expect(self, credential: object, tenant: str, database: str, action: str) -> Refusal | None:
        """How a call of ``action`` as ``credential`` in (``tenant``, ``database``) must be refused,
        or None when it may run."""
        user = self.user_of(credential)
        if user is None:
            return UNAUTHENTICATED
        if (tenant, database) not in pairs(user):
            return NOT_GRANTED
        if action not in PLAN["users"][user]["actions"]:
            return FORBIDDEN
        return None

    def find(self, tenant: str, database: str, collection: str) -> Kept | None:
        """The collection of id ``collection`` if it is in (``tenant``, ``database``)."""
        kept = self.collections.get(collection)
        return kept if kept is not None and (kept.tenant, kept.database) == (tenant, database) else None

    def named(self, tenant: str, database: str, name: str) -> Kept | None:
        """The collection called ``name`` in (``tenant``, ``database``)."""
        return next(
            (
                c
                for c in self.collections.values()
                if (c.tenant, c.database, c.name) == (tenant, database, name)
            ),
            None,
        )

    def in_pair(self, tenant: str, database: str) -> list[Kept]:
        """The collections of (``tenant``, ``database``), oldest first."""
        return [c for c in self.collections.values() if (c.tenant, c.database) == (tenant, database)]

    def records(self) -> dict[str, tuple[list[float], str]]:
        """Every record the store holds, by id."""
        return {rid: row for kept in self.collections.values() for rid, row in kept.records.items()}

    # -- writes that must land -----------------------------------------------------------------

    def create(
        self,
        backend: Any,
        user: str,
        tenant: str,
        database: str,
        name: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """A collection ``name`` that ``user`` makes in (``tenant``, ``database``); its id."""
        made = backend.create_collection(token(user), tenant, database, name, dict(metadata or {}))
        assert isinstance(made, str), f"create_collection returned {made!r}, not an id"
        assert made, "create_collection returned an empty id"
        assert made not in self.collections, f"create_collection gave the id {made} twice"
        self.collections[made] = Kept(made, tenant, database, name, dict(metadata or {}))
        return made

    def add(
        self, backend: Any, user: str, collection: str, texts: Sequence[str], rng: random.Random
    ) -> list[str]:
        """Records of ``texts`` that ``user`` adds to ``collection``; their ids."""
        kept = self.collections[collection]
        ids = [f"kbr{rng.getrandbits(40):010x}" for _ in texts]
        rows = [(embedding(rng), f"kbs{rng.getrandbits(48):012x} {text}") for text in texts]
        backend.add(
            token(user),
            kept.tenant,
            kept.database,
            collection,
            ids,
            [e for e, _ in rows],
            [d for _, d in rows],
        )
        kept.records.update(zip(ids, rows, strict=True))
        return ids

    # -- calls judged ----------------------------------------------------------------------------

    def refusal(
        self, action: str, credential: object, tenant: str, database: str, *args: Any
    ) -> Refusal | None:
        """How the call must be refused, or None: it must land. A by-id call whose collection is
        not in the named pair, and a by-name call whose name is not there, are missing."""
        expected = self.expect(credential, tenant, database, action)
        if expected is not None:
            return expected
        if action in BY_ID and self.find(tenant, database, args[0]) is None:
            return MISSING
        if action in BY_NAME and self.named(tenant, database, args[0]) is None:
            return MISSING
        return None

    def judge(
        self, backend: Any, action: str, credential: object, tenant: str, database: str, *args: Any
    ) -> Any:
        """Make the call; a refusal the model expects is returned (as the error), a call that
        lands is committed and its answer returned. Any other outcome fails, and so does an
        error that carries a stored document."""
        expected = self.refusal(action, credential, tenant, database, *args)
        said = f"{action}({credential!r}, {tenant!r}, {database!r}, {', '.join(map(repr, args))})"
        error: KbconformError | None = None
        try:
            answer = getattr(backend, action)(credential, tenant, database, *args)
        except KbconformError as raised:
            error, answer = raised, None
        except (AssertionError, NotImplementedError):
            raise
        except Exception as raised:  # an error the contract does not name: charged as itself
            charge(raised, effect="failed", raised=error_name(raised))
            raise
        if error is not None:
            leaked = sorted(mark for mark in self.marks() if mark in str(error) or mark in repr(error))
            assert not leaked, f"{said} raised an error carrying stored documents {leaked}: {error}"
            with charged(direction="refused"):
                assert expected is not None, f"{said} must land; it raised {error!r}"
            names = " or ".join(kind.__name__ for kind in expected)
            assert isinstance(error, expected), f"{said} must be refused with {names}; it raised {error!r}"
            return error
        with charged(direction="accepted"):
            names = " or ".join(k.__name__ for k in expected or ())
            assert expected is None, f"{said} must be refused with {names}; it answered {answer!r}"
        self.commit(action, tenant, database, args, answer)
        return answer

    def commit(self, action: str, tenant: str, database: str, args: tuple[Any, ...], answer: Any) -> None:
        """What a call that landed changed."""
        if action == "create_collection":
            assert isinstance(answer, str), f"create_collection returned {answer!r}, not an id"
            assert answer, "create_collection returned an empty id"
            assert answer not in self.collections, f"create_collection returned {answer!r} again"
            self.collections[answer] = Kept(answer, tenant, database, args[0], dict(args[1]))
        elif action == "delete_collection":
            gone = self.named(tenant, database, args[0])
            assert gone is not None
            del self.collections[gone.id]
        elif action == "modify_collection":
            kept = self.collections[args[0]]
            kept.name = kept.name if args[1] is None else args[1]
            kept.metadata = kept.metadata if args[2] is None else dict(args[2])
        elif action == "fork_collection":
            source = self.collections[args[0]]
            assert isinstance(answer, str), f"fork_collection returned {answer!r}, not an id"
            assert answer, "fork_collection returned an empty id"
            assert answer not in self.collections, f"fork_collection returned {answer!r} again"
            self.collections[answer] = Kept(
                answer, tenant, database, args[1], dict(source.metadata), dict(source.records)
            )
        elif action in ("add", "upsert", "update"):
            records = self.collections[args[0]].records
            for rid, vector, document in zip(args[1], args[2], args[3], strict=True):
                if action == "upsert" or (action == "add") != (rid in records):
                    records[rid] = (list(vector), document)
        elif action == "delete":
            for rid in args[1]:
                self.collections[args[0]].records.pop(rid, None)

    def marks(self) -> set[str]:
        """The unique token every stored document starts with."""
        return {document.split()[0] for _, document in self.records().values()}

    def differences(self, backend: Any) -> list[str]:
        """How the store, read by each pair's admin, differs from the model: its collections (id,
        name, metadata) and each one's records."""
        found = []
        for tenant, databases in PLAN["tenants"].items():
            for database in databases:
                admin = ADMINS[tenant]
                shown = {c.id: c for c in backend.list_collections(token(admin), tenant, database, None, 0)}
                kept = {c.id: c for c in self.in_pair(tenant, database)}
                if set(shown) != set(kept):
                    found.append(
                        f"{tenant}/{database} holds collections {sorted(shown)}; expected {sorted(kept)}"
                    )
                for cid in set(shown) & set(kept):
                    if (shown[cid].name, dict(shown[cid].metadata)) != (kept[cid].name, kept[cid].metadata):
                        found.append(f"{tenant}/{database} shows {shown[cid]!r}; expected {kept[cid]!r}")
                    got = {r.id: r.document for r in backend.get(token(admin), tenant, database, cid, None)}
                    want = {rid: row[1] for rid, row in kept[cid].records.items()}
                    if got != want:
                        found.append(f"{tenant}/{database} collection {cid} holds {got}; expected {want}")
        return found


#: The actions that name a collection by its id (its first argument after the pair).
BY_ID = frozenset(
    ("modify_collection", "fork_collection", "add", "upsert", "update", "get", "query", "delete", "count")
)
#: The actions that name a collection by its name.
BY_NAME = frozenset(("get_collection", "delete_collection"))
#: Who reads each tenant's pairs to check the store: a user granted every one of them, as admin.
ADMINS = {"kbst-acme": "alice", "kbst-beta": "bob"}
