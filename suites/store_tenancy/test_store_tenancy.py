"""The store-tenancy profile's own suite (schemas/store-tenancy.md): credentials, grants,
actions, collections by id and by name, listing, and programs of calls.

Each test provisions the profile's plan on a fresh backend and makes every call through the
policy model (:class:`~kbconform.profiles.store_tenancy.model.StoreModel`): a call the model
refuses must be refused with the error it names, a call it lets land must land and is committed
to it, no error may carry a stored document, and after the calls the store, read by each
tenant's admin, must be what the model holds. Each test's docstring names the rules it checks;
the profile-independent tests (iso-01 to iso-03) are in ``test_isolation.py``.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from kbconform.conformance import Run
from kbconform.errors import ContractViolation, KbconformError, NotFound
from kbconform.profiles.store_tenancy.model import (
    BY_ID,
    StoreModel,
    embedding,
    token,
)
from kbconform.profiles.store_tenancy.protocol import ACTIONS, PLAN, STORE_INVALID

#: The isolation profile these tests are written for (schemas/store-tenancy.md).
PROFILES = ("store-tenancy",)

GUIDE = "the-store-tenancy-profile"
ACME, BETA = "kbst-acme", "kbst-beta"
#: No credential, by kind: each is refused (S1).
NO_CREDENTIALS: dict[str, object] = {
    "None": None,
    "empty": "",
    "unknown": "kbst-token-nobody-0000",
    "bearer prefix": f"Bearer {token('alice')}",
    "trailing space": f"{token('alice')} ",
    "other case": token("alice").upper(),
    "number": 7,
}


class Store:
    """A fresh backend with the plan provisioned and a world of collections: in kbst-acme/main
    alice's ``notes`` and ``plans``, in kbst-acme/archive alice's ``old``, in kbst-beta/main
    bob's ``notes`` (the same name as alice's), each with records."""

    def __init__(self, run: Run, backend: Any, name: str) -> None:
        self.backend = backend
        self.rng = run.rng(name)
        self.fork = run.manifest.supports("fork")
        self.model = StoreModel.provisioned(backend)
        self.notes = self.make("alice", ACME, "main", "notes", 2)
        self.theirs = self.make("bob", BETA, "main", "notes", 2)
        self.plans = self.make("alice", ACME, "main", "plans", 1)
        self.old = self.make("alice", ACME, "archive", "old", 1)

    def make(self, user: str, tenant: str, database: str, name: str, count: int) -> str:
        made = self.model.create(self.backend, user, tenant, database, name)
        if count:
            self.model.add(
                self.backend, user, made, [f"{tenant}'s {name} {n}" for n in range(count)], self.rng
            )
        return made

    def fresh(self, what: str) -> str:
        return f"{what}-{self.rng.getrandbits(32):08x}"

    def rows(self, rid: str | None = None) -> tuple[list[str], list[list[float]], list[str]]:
        """One record to write: ``rid`` (a new id by default), an embedding, a document."""
        return (
            [rid or self.fresh("kbr")],
            [embedding(self.rng)],
            [f"kbs{self.rng.getrandbits(48):012x} written"],
        )

    def args(self, action: str, collection: str) -> tuple[Any, ...]:
        """The arguments of ``action`` on ``collection`` (an id; its name for the by-name
        actions), aimed at a record it holds where there is one, so that a call that wrongly
        lands changes it."""
        kept = self.model.collections.get(collection)
        held = next(iter(kept.records), None) if kept is not None else None
        name = kept.name if kept is not None else "nowhere"
        return {
            "create_collection": lambda: (self.fresh("made"), {}),
            "get_collection": lambda: (name,),
            "list_collections": lambda: (None, 0),
            "count_collections": lambda: (),
            "modify_collection": lambda: (collection, None, {"topic": "changed"}),
            "delete_collection": lambda: (name,),
            "fork_collection": lambda: (collection, self.fresh("fork")),
            "add": lambda: (collection, *self.rows()),
            "upsert": lambda: (collection, *self.rows(held)),
            "update": lambda: (collection, *self.rows(held)),
            "get": lambda: (collection, None),
            "query": lambda: (collection, embedding(self.rng), 10),
            "delete": lambda: (collection, [held or "kbr-none"]),
            "count": lambda: (collection,),
        }[action]()

    def actions(self) -> tuple[str, ...]:
        return tuple(a for a in ACTIONS if self.fork or a != "fork_collection")

    def call(self, action: str, credential: object, tenant: str, database: str, collection: str) -> Any:
        return self.model.judge(
            self.backend, action, credential, tenant, database, *self.args(action, collection)
        )

    def check(self) -> None:
        problems = self.model.differences(self.backend)
        assert not problems, "; ".join(problems)


@pytest.mark.kbconform(id="st-01", rule="store-tenancy.md#s1", guide=GUIDE, level="L1")
@pytest.mark.parametrize("kind", list(NO_CREDENTIALS))
def test_no_credential_is_refused_on_every_operation(
    kind: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S1, S7: a call with no credential of this kind (None, empty, an unknown token, one with a
    ``Bearer`` prefix, a trailing space or another case, a number) is refused with
    Unauthenticated on every operation, and nothing changes. The same calls with alice's token
    land (control)."""
    s = Store(kbconform_run, kbconform_backend, f"st-01 {kind}")
    for action in s.actions():
        s.call(action, NO_CREDENTIALS[kind], ACME, "main", s.notes)
    s.check()
    for action in ("get", "count", "add", "list_collections"):
        s.call(action, token("alice"), ACME, "main", s.notes)
    s.check()


#: S2's cases: a user, and a pair it is not granted.
NOT_GRANTED_CASES = {
    "another tenant": ("bob", ACME, "main"),
    "another tenant's database of its own database's name": ("alice", BETA, "main"),
    "another database of its tenant": ("rita", ACME, "archive"),
    "a tenant that does not exist": ("alice", "kbst-nowhere", "main"),
}


@pytest.mark.kbconform(id="st-02", rule="store-tenancy.md#s2", guide=GUIDE, level="L2")
@pytest.mark.parametrize("case", list(NOT_GRANTED_CASES))
def test_a_pair_not_granted_is_refused_on_every_operation(
    case: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S2, S7: a credential naming a (tenant, database) it is not granted (another tenant's;
    another tenant's database of the same name as its own; another database of its tenant; a
    tenant no one made) is refused (Forbidden or NotFound) on every operation, each aimed at a
    real collection of that pair, and nothing changes. Its own pair's calls land (control)."""
    s = Store(kbconform_run, kbconform_backend, f"st-02 {case}")
    user, tenant, database = NOT_GRANTED_CASES[case]
    there = next(
        (c.id for c in s.model.in_pair(tenant, database)), str(uuid.UUID(int=s.rng.getrandbits(128)))
    )
    for action in s.actions():
        s.call(action, token(user), tenant, database, there)
    s.check()
    own = next(iter(sorted(p for g in PLAN["users"][user]["grants"] for p in [(g["tenant"], g["database"])])))
    mine = next(c.id for c in s.model.in_pair(*own))
    for action in ("get", "count", "list_collections"):
        s.call(action, token(user), *own, mine)
    s.check()


@pytest.mark.kbconform(id="st-03", rule="store-tenancy.md#s5", guide=GUIDE, level="L2")
def test_listing_and_counting_show_exactly_the_pairs_collections(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S5: with collections made in turn in kbst-acme/main and kbst-beta/main, each pair's
    listing shows exactly its own (every page of one, two and three, and with no limit), in
    pages that hold ``limit`` of its own while it has that many, and its count is their number;
    kbst-acme/archive shows its one."""
    s = Store(kbconform_run, kbconform_backend, "st-03")
    for n in range(3):
        s.make("bob", BETA, "main", f"beta-{n}", 0)
        s.make("alice", ACME, "main", f"acme-{n}", 0)
    for user, tenant, database in (
        ("alice", ACME, "main"),
        ("bob", BETA, "main"),
        ("alice", ACME, "archive"),
    ):
        own = {c.id: c.name for c in s.model.in_pair(tenant, database)}
        whole = s.model.judge(s.backend, "list_collections", token(user), tenant, database, None, 0)
        assert {c.id: c.name for c in whole} == own, f"{tenant}/{database} lists {whole}; expected {own}"
        assert len(whole) == len(own), f"{tenant}/{database} lists a collection twice: {whole}"
        count = s.model.judge(s.backend, "count_collections", token(user), tenant, database)
        assert count == len(own), f"{tenant}/{database} counts {count}; it holds {len(own)}"
        for limit in (1, 2, 3):
            paged: list[str] = []
            for offset in range(0, len(own) + limit, limit):
                page = s.model.judge(
                    s.backend, "list_collections", token(user), tenant, database, limit, offset
                )
                assert len(page) == min(limit, max(0, len(own) - offset)), (
                    f"{tenant}/{database} page (limit {limit}, offset {offset}) holds {len(page)}: {page}"
                )
                paged += [c.id for c in page]
            assert sorted(paged) == sorted(own), (
                f"{tenant}/{database} pages of {limit} show {paged}; expected {own}"
            )


#: S3's cases: whose collection id, named under which user's own pair.
FOREIGN_IDS = {
    "another tenant's": ("bob", BETA, "main", "notes"),
    "another tenant's, under a database of the same name": ("alice", ACME, "main", "theirs"),
    "another database's of its tenant": ("alice", ACME, "main", "old"),
}


@pytest.mark.kbconform(id="st-04", rule="store-tenancy.md#s3", guide=GUIDE, level="L2")
@pytest.mark.parametrize("case", list(FOREIGN_IDS))
def test_another_pairs_collection_id_is_missing_on_every_by_id_path(
    case: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S3, S7: under its own pair, a credential naming a collection id of another pair (another
    tenant's; another database's of its own tenant) is refused with NotFound on every by-id
    path (get, query, count, add, upsert, update, delete, modify, fork), exactly as an id no
    collection has, and nothing changes. The same calls on its own collection land (control)."""
    s = Store(kbconform_run, kbconform_backend, f"st-04 {case}")
    user, tenant, database, whose = FOREIGN_IDS[case]
    foreign = {"notes": s.notes, "theirs": s.theirs, "old": s.old}[whose]
    missing = str(uuid.UUID(int=s.rng.getrandbits(128)))
    for action in sorted(BY_ID & set(s.actions())):
        s.call(action, token(user), tenant, database, missing)
        s.call(action, token(user), tenant, database, foreign)
    s.check()
    own = next(c.id for c in s.model.in_pair(tenant, database))
    for action in ("get", "query", "count", "add", "upsert"):
        s.call(action, token(user), tenant, database, own)
    s.check()


@pytest.mark.kbconform(id="st-05", rule="store-tenancy.md#s6", guide=GUIDE, level="L2")
def test_a_collection_is_reached_by_its_name_only_in_its_own_pair(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S6: alice's and bob's collections called ``notes`` are each got by name in their own
    pair only; a name made in kbst-acme/main (``plans``) is missing in kbst-beta/main and in
    kbst-acme/archive, and bob can then make his own ``plans``; deleting bob's ``notes`` by name
    leaves alice's."""
    s = Store(kbconform_run, kbconform_backend, "st-05")
    mine = s.model.judge(s.backend, "get_collection", token("alice"), ACME, "main", "notes")
    theirs = s.model.judge(s.backend, "get_collection", token("bob"), BETA, "main", "notes")
    assert (mine.id, theirs.id) == (s.notes, s.theirs), f"notes by name: {mine!r} and {theirs!r}"
    for user, tenant, database in (("bob", BETA, "main"), ("alice", ACME, "archive")):
        s.model.judge(s.backend, "get_collection", token(user), tenant, database, "plans")
        s.model.judge(s.backend, "delete_collection", token(user), tenant, database, "plans")
    s.model.judge(s.backend, "create_collection", token("bob"), BETA, "main", "plans", {"owner": "bob"})
    s.model.judge(s.backend, "delete_collection", token("bob"), BETA, "main", "notes")
    s.check()


#: S4's cases: a user, and the actions it lacks on its own pair.
LACKING = {
    "read": ("rita", tuple(a for a in ACTIONS if a not in PLAN["users"]["rita"]["actions"])),
    "write": ("walter", tuple(a for a in ACTIONS if a not in PLAN["users"]["walter"]["actions"])),
}


@pytest.mark.kbconform(id="st-06", rule="store-tenancy.md#s4", guide=GUIDE, level="L2")
@pytest.mark.parametrize("role", list(LACKING))
def test_an_action_the_credential_lacks_is_refused_on_its_own_pair(
    role: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S4, S7: a user with the read (or write) actions only is refused with Forbidden every other
    action on its own pair, and nothing changes; every action it holds lands (control)."""
    s = Store(kbconform_run, kbconform_backend, f"st-06 {role}")
    user, lacking = LACKING[role]
    for action in lacking:
        if action in s.actions():
            s.call(action, token(user), ACME, "main", s.notes)
    s.check()
    for action in PLAN["users"][user]["actions"]:
        s.call(action, token(user), ACME, "main", s.plans)
    s.check()


@pytest.mark.kbconform(id="st-07", rule="store-tenancy.md#s6", guide=GUIDE, level="L3")
def test_writes_and_modifications_change_only_what_they_name(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S3, S6: upserts, updates, deletes and a rename of alice's ``notes`` change it alone (bob's
    ``notes`` and alice's other collections as they were); a query returns its own records,
    nearest first; bob's upsert of an id alice's collection holds changes only his."""
    s = Store(kbconform_run, kbconform_backend, "st-07")
    held = next(iter(s.model.collections[s.notes].records))
    for action in ("upsert", "update", "add"):
        s.call(action, token("alice"), ACME, "main", s.notes)
    s.model.judge(s.backend, "delete", token("alice"), ACME, "main", s.notes, [held])
    s.model.judge(s.backend, "upsert", token("bob"), BETA, "main", s.theirs, *s.rows(held))
    s.model.judge(s.backend, "modify_collection", token("alice"), ACME, "main", s.notes, "renamed", {"v": 2})
    s.check()
    own = s.model.collections[s.notes].records
    target = next(iter(own))
    found = s.model.judge(s.backend, "query", token("alice"), ACME, "main", s.notes, own[target][0], 10)
    assert [r.id for r in found][:1] == [target], f"query by {target}'s own embedding returned {found}"
    assert {r.id for r in found} == set(own), f"query returned {found}; the collection holds {sorted(own)}"


@pytest.mark.kbconform(id="st-08", rule="store-tenancy.md#s6", guide=GUIDE, level="L3", requires="fork")
def test_a_fork_lands_in_the_pair_it_was_asked_in(kbconform_run: Run, kbconform_backend: Any) -> None:
    """S3, S6: alice's fork of her ``notes`` lands in kbst-acme/main with its records (listed
    there, not in kbst-beta/main); bob's fork of alice's id under his pair is missing; a write to
    the fork leaves its source as it was."""
    s = Store(kbconform_run, kbconform_backend, "st-08")
    fork = s.model.judge(s.backend, "fork_collection", token("alice"), ACME, "main", s.notes, "notes-fork")
    s.model.judge(s.backend, "fork_collection", token("bob"), BETA, "main", s.notes, "stolen")
    s.model.judge(s.backend, "add", token("alice"), ACME, "main", fork, *s.rows())
    s.check()


@pytest.mark.kbconform(id="st-09", rule="store-tenancy.md#s7", guide=GUIDE, level="L4")
def test_a_program_of_calls_by_every_credential_keeps_every_rule(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """S1 to S7: a seeded program of 60 calls, each a random action by a random credential (every
    user, and no credential) on a random pair and a random collection (any pair's, or none), each
    judged by the model; the store is the model's at the end."""
    s = Store(kbconform_run, kbconform_backend, "st-09")
    rng: random.Random = s.rng
    credentials = [token(user) for user in PLAN["users"]] + [None, "kbst-token-nobody-0000"]
    pairs = [(t, d) for t, databases in PLAN["tenants"].items() for d in databases]
    for _ in range(60):
        ids = [*s.model.collections, str(uuid.UUID(int=rng.getrandbits(128)))]
        s.call(rng.choice(s.actions()), rng.choice(credentials), *rng.choice(pairs), rng.choice(ids))
    s.check()


#: S8's malformed calls, each as alice on her own collection: the action and its arguments.
MALFORMED: dict[str, tuple[str, Any]] = {
    "an empty collection name": ("create_collection", lambda s: ("", {})),
    "a collection name that is a number": ("create_collection", lambda s: (7, {})),
    "ids and embeddings of different lengths": (
        "add",
        lambda s: (s.notes, ["a", "b"], [[0.1, 0.2, 0.3]], ["x", "y"]),
    ),
    "an embedding of two numbers": ("add", lambda s: (s.notes, ["a"], [[0.1, 0.2]], ["kbs-x"])),
    "a query embedding of text": ("query", lambda s: (s.notes, "near", 3)),
    "a query for no records": ("query", lambda s: (s.notes, [0.1, 0.2, 0.3], 0)),
}


@pytest.mark.kbconform(id="st-10", rule="store-tenancy.md#s8", guide=GUIDE, level="L0")
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_call_is_refused(case: str, kbconform_run: Run, kbconform_backend: Any) -> None:
    """S8: alice's malformed call on her own pair is refused with KB_STORE_INVALID, and nothing
    changes."""
    s = Store(kbconform_run, kbconform_backend, f"st-10 {case}")
    action, args = MALFORMED[case]
    refused: KbconformError | None = None
    try:
        answer = getattr(s.backend, action)(token("alice"), ACME, "main", *args(s))
    except KbconformError as error:
        refused, answer = error, None
    assert refused is not None, (
        f"{action} with {case} answered {answer!r}; it must be refused with {STORE_INVALID}"
    )
    if not isinstance(refused, NotFound):
        assert isinstance(refused, ContractViolation), f"{action} refused {case} with {refused!r}"
        assert refused.code == STORE_INVALID, (
            f"{action} refused {case} with {refused.code}, not {STORE_INVALID}"
        )
    s.check()
