"""The memory-scope profile's own suite (schemas/memory-scope.md): scopes, by-id calls, filters.

Each test drives a fresh backend and the policy model together (:class:`ScopeDriver`): every
call's outcome is compared with :class:`~kbconform.profiles.memory_scope.model.ScopePolicy` and
committed to it, every read's memories are compared with the model's (exactly, or ``limit`` of
them), and every error is checked for stored text. The manifest's design (its scope keys, how
a scope is named, whether by-id calls take the scope) is the model's: a backend is judged
against what it declares. Each test's docstring names the rules it checks; the
profile-independent tests (iso-01 to iso-03) are in ``test_isolation.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, rule

from kbconform.adapter import BackendOptions
from kbconform.conformance import DriverMachine, Fault, Run, every_fault, refuses
from kbconform.errors import BackendUnavailable, ContractViolation
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MEMORY_INVALID
from kbconform.profiles.memory_scope.world import LONG as WORLD_LONG
from kbconform.profiles.memory_scope.world import ScopeDriver, no_scopes

#: The isolation profile these tests are written for (schemas/memory-scope.md).
PROFILES = ("memory-scope",)

RULE = "memory-scope.md#the-rules"
GUIDE = "the-memory-scope-profile"

#: Long values that look alike: two sharing their first 77 characters, two of 256 characters
#: differing in the last, two sharing 80 bytes of two-byte characters (a store that cuts a value
#: at a column's width or a byte limit, or compares a fixed-length prefix, makes each pair one).
LONG = (
    *WORLD_LONG,
    "y" * 255 + "1",
    "y" * 255 + "2",
    "\u00e9" * 40 + "a",
    "\u00e9" * 40 + "b",
)
#: Scope values that collide under a common mistake, by the mistake: each group's values are
#: different scopes (M4). Case; surrounding space; the NFC and NFD forms of one name; separators
#: a key format folds; a prefix (and a leading zero); a value holding the separator a composite
#: key joins with; the wildcards of query languages; long values alike but for their ends.
VALUE_GROUPS: dict[str, tuple[str, ...]] = {
    "case": ("alice", "Alice", "ALICE"),
    "surrounding space": ("alice", "alice ", " alice"),
    "unicode form": ("caf\u00e9", "cafe\u0301"),
    "separators": ("a/b", "a_b", "a.b", "a-b"),
    "prefix": ("u1", "u10", "1", "01"),
    "composite": ("alice:planner", "alice", "alice|planner", "alice,planner"),
    "wildcard": ("*", "%", "alice"),
    "long": LONG,
}
#: Two-key scopes that one joined string cannot tell apart (group ``composite``).
JOINED = (("alice", "planner"), ("a", "b:c"), ("a:b", "c"), ("a", "b/c"), ("a/b", "c"))
VALUES = tuple(dict.fromkeys(value for group in VALUE_GROUPS.values() for value in group))


#: mem-02's kinds of callers that name no scope, each selecting labels of :func:`no_scopes`.
NO_SCOPE_KINDS: dict[str, Any] = {
    "None": lambda label: label == "None",
    "empty scope": lambda label: label == "an empty scope",
    "empty value": lambda label: label.endswith(" empty") or label == "a value with a reserved character",
    "None value": lambda label: label.endswith(" None") and label != "None",
    "number value": lambda label: label.endswith(" a number"),
    "list value": lambda label: label.endswith(" a list"),
    "bare value": lambda label: label in ("a scope value alone", "a list of scope values"),
    "keys naming no scope": lambda label: label.startswith("an undeclared key") or " without " in label,
}


def _driver(run: Run, backend: Any, name: str) -> ScopeDriver:
    return ScopeDriver.of(backend, run.manifest, run.rng(name))


def _two(d: ScopeDriver) -> bool:
    """Whether the manifest declares a second scope key."""
    return len(d.policy.keys) > 1


def _offers(run: Run, feature: str) -> bool:
    return run.manifest.supports(feature)  # type: ignore[arg-type]  # a memory-scope capability


@pytest.mark.kbconform(id="mem-01", rule="memory-scope.md#m2", guide=GUIDE, level="L1")
def test_a_memory_is_read_under_its_scope_and_every_scope_it_matches(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """M2, M3: memories written under alice, under alice with an agent, and under bob are read
    by exactly the scopes they match: alice's reads find alice's and alice's agent's; the agent
    scope finds its own only; bob finds bob's; a scope no one wrote under finds nothing (and
    under ``scopeMatch: keys`` the agent alone finds every user's memories with that agent).
    With a third key, two runs of alice's agent are two scopes, each read by its own, and both
    by the agent's scope (and under ``keys`` a run alone finds that run's only)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-01")
    alice, bob, carol = d.scope("alice"), d.scope("bob"), d.scope("carol")
    mine = {d.add(alice), d.add(alice)}
    theirs = {d.add(bob)}
    for facade in d.facades:
        assert d.read(facade, alice) == mine
        assert d.read(facade, bob) == theirs
        assert d.read(facade, carol) == set()
    if _two(d):
        planner = d.scope("alice", "planner")
        planned = {d.add(planner)}
        bob_planner = {d.add(d.scope("bob", "planner"))}
        for facade in d.facades:
            assert d.read(facade, alice) == mine | planned
            assert d.read(facade, planner) == planned
            if not d.policy.prefix:
                assert d.read(facade, {d.policy.keys[1]: "planner"}) == planned | bob_planner
    if len(d.policy.keys) > 2:  # every declared key: two runs of alice's planner
        runs = [d.scope("alice", "planner", run) for run in ("run-1", "run-2")]
        ran = [{d.add(run)} for run in runs]
        for facade in d.facades:
            for run, own in zip(runs, ran, strict=True):
                assert d.read(facade, run) == own
            assert d.read(facade, d.scope("alice", "planner")) == planned | ran[0] | ran[1]
            if not d.policy.prefix:
                assert d.read(facade, {d.policy.keys[2]: "run-1"}) == ran[0]
    assert d.check()


@pytest.mark.kbconform(
    id="mem-02", rule="memory-scope.md#m1", guide=GUIDE, level="L1", requires="caller-identity"
)
@pytest.mark.parametrize("kind", list(NO_SCOPE_KINDS))
def test_a_call_with_no_scope_is_refused_and_changes_nothing(
    kind: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """M1: callers that name no scope, by kind (None; the empty scope; a key whose value is
    empty or holds a reserved character; a key whose value is None, a number or a list; a bare
    value; a list of values; keys that name no scope: undeclared, beside a declared one, or not
    a leading run) are no identity: a write, every read, a delete of every memory and, when
    by-id calls take the scope, every by-id call are refused with Unauthenticated and change
    nothing, never read as "all". The same calls with a valid scope land (control)."""
    d = _driver(kbconform_run, kbconform_backend, f"mem-02 {kind}")
    alice, bob = d.scope("alice"), d.scope("bob")
    kept = d.add(alice)
    d.add(bob)
    callers = [caller for label, caller in no_scopes(d.policy).items() if NO_SCOPE_KINDS[kind](label)]
    assert callers, f"no caller of the kind {kind!r}"
    for caller in callers:
        d.refuse("add", caller, d.text(), {"topic": "billing"})
        for facade in d.facades:
            d.refuse_read(facade, caller)
        if _offers(kbconform_run, "delete-all"):
            d.refuse("delete_all", caller)
        if _offers(kbconform_run, "get"):
            d.attempt("get", caller, kept)  # refused when by-id calls take the scope
        if _offers(kbconform_run, "update"):
            d.attempt("update", caller, kept, d.text("changed"))
    assert d.check()
    d.add(alice)  # control: the same calls with a valid scope land
    for facade in d.facades:
        assert d.read(facade, alice)
    if _offers(kbconform_run, "delete-all"):
        d.call("delete_all", bob)
    d.add(bob)
    assert d.check()


@pytest.mark.kbconform(id="mem-03", rule="memory-scope.md#m4", guide=GUIDE, level="L2")
@pytest.mark.parametrize("group", list(VALUE_GROUPS))
def test_scope_values_compare_exactly(group: str, kbconform_run: Run, kbconform_backend: Any) -> None:
    """M4: values that collide under one common mistake (case; surrounding space; NFC and NFD;
    separators folded; a prefix or a leading zero; a value holding the separator a composite key
    joins with, and with two keys ``{alice:planner}`` alone beside ``{alice, planner}``,
    ``(a, b:c)`` beside ``(a:b, c)``; a wildcard; long values alike but for their ends, past
    64 characters, 255 characters or 80 bytes) are each their own scope: every read of every
    scope is exactly its own memories, beside bob's (values the manifest reserves a character
    of are left out)."""
    d = _driver(kbconform_run, kbconform_backend, f"mem-03 {group}")
    d.add(d.scope("bob"))
    for value in VALUE_GROUPS[group]:
        scope = d.scope(value)
        if d.policy.valid(scope):
            d.add(scope, f"said under {value!r}")
    if group == "composite" and _two(d):
        for first, second in JOINED:
            scope = d.scope(first, second)
            if d.policy.valid(scope):
                d.add(scope, f"said under {first!r} and {second!r}")
    assert d.check()


@pytest.mark.kbconform(id="mem-04", rule="memory-scope.md#m5", guide=GUIDE, level="L2", requires="get")
def test_a_memory_is_got_by_id_only_within_its_scope(kbconform_run: Run, kbconform_backend: Any) -> None:
    """M5: a memory is got by its id under its own scope and any wider one; under another
    scope (another user, a case twin, a narrower scope it was not written under) it is not
    found exactly as an id no memory has is not found, when by-id calls take the scope; when
    the manifest declares they do not, it is got whatever the scope, and when it declares them
    exact, only under the very scope it was written under (the declared design). An unknown
    id is not found either way."""
    d = _driver(kbconform_run, kbconform_backend, "mem-04")
    alice, bob, twin = d.scope("alice"), d.scope("bob"), d.scope("Alice")
    mine, theirs = d.add(alice), d.add(bob)
    d.call("get", alice, mine)  # control: found in its own scope
    d.call("get", bob, theirs)
    for scope in (bob, twin):
        d.attempt("get", scope, mine)
    d.attempt("get", alice, theirs)
    for unknown in ("no-such-memory", mine.upper() if mine.upper() != mine else f"{mine}0", mine[:-1]):
        d.refuse("get", alice, unknown)
    if _two(d):
        planned = d.add(d.scope("alice", "planner"))
        d.attempt("get", alice, planned)  # a wider scope reaches it (unless the design is exact)
        d.call("get", d.scope("alice", "planner"), planned)
        d.attempt("get", d.scope("alice", "writer"), planned)
        d.attempt("get", d.scope("alice", "planner"), mine)  # written without an agent
    assert d.check()


@pytest.mark.kbconform(
    id="mem-05", rule="memory-scope.md#m5", guide=GUIDE, level="L2", requires=("update", "delete")
)
def test_another_scopes_memory_is_neither_changed_nor_deleted_by_id(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """M5, M6: bob updating or deleting alice's memory by its id is not found and changes
    nothing, when by-id calls take the scope (else it lands: the declared design); an update
    changes a memory's text and never its scope; a memory deleted is gone from every read. The
    owner's update and delete land (control)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-05")
    alice, bob = d.scope("alice"), d.scope("bob")
    mine, other, theirs = d.add(alice), d.add(alice), d.add(bob)
    d.attempt("update", bob, mine, d.text("rewritten by bob"))
    d.attempt("delete", bob, other)
    assert d.check()
    d.call("update", bob, theirs, d.text("bob's own, rewritten"))  # control
    if _two(d):  # an update through a wider scope keeps the memory in its own
        planned = d.add(d.scope("alice", "planner"))
        d.attempt("update", alice, planned, d.text("rewritten by alice"))
        assert planned in d.read("search", d.scope("alice", "planner"))
    assert d.check()
    d.call("delete", bob, theirs)
    d.attempt("delete", bob, theirs)  # gone: a second delete finds nothing (or is idempotent)
    d.refuse("update", alice, "no-such-memory", d.text())
    d.add(bob)
    assert d.check()


@pytest.mark.kbconform(id="mem-06", rule="memory-scope.md#m9", guide=GUIDE, level="L2", requires="filter")
def test_a_filter_narrows_a_search_and_never_widens_it(kbconform_run: Run, kbconform_backend: Any) -> None:
    """M9: filters over metadata (equality, ``$ne``, ``$in``, ``$or``, a number range) return
    exactly the scope's memories they select, and nothing when only another scope's memories
    hold the value; a filter naming a scope key with another scope's value (alone, inside
    ``$or`` or ``$and``, or a wildcard) returns only memories of the caller's scope."""
    d = _driver(kbconform_run, kbconform_backend, "mem-06")
    alice, bob = d.scope("alice"), d.scope("bob")
    for n, topic in enumerate(("billing", "travel", "billing")):
        d.add(alice, f"alice on {topic}", {"topic": topic, "n": n})
    d.add(bob, "bob on billing", {"topic": "billing", "n": 9, "owner": "bob"})
    d.add(bob, "bob on payroll", {"topic": "payroll", "n": 10})
    first = d.policy.keys[0]
    selecting: list[dict[str, Any]] = [
        {"topic": "billing"},
        {"topic": {"$ne": "billing"}},
        {"topic": {"$in": ["travel", "payroll"]}},
        {"$or": [{"topic": "travel"}, {"n": {"$gte": 2}}]},
        {"n": {"$gte": 0}},
        {"owner": "bob"},
        {"topic": "payroll"},
    ]
    for where in selecting:  # conditions on metadata: exactly the memories they select
        found = d.read("search", alice, where=where)
        assert not found & set(d.policy.matching(bob)), f"{where!r} widened alice's search to bob's"
    # Conditions on a scope key: a backend may read them as metadata or as its scope, so what
    # they select is its own; whatever it is, it lies within alice's scope.
    naming: list[dict[str, Any]] = [
        {first: "bob"},
        {"$or": [{first: "bob"}, {"topic": "payroll"}]},
        {"$and": [{first: "bob"}, {"topic": "billing"}]},
        {first: "bob", "$and": [{first: "bob"}, {"topic": "billing"}]},
        {first: "*"},
    ]
    for where in naming:
        d.read_within(alice, where)
    assert d.read("search", alice, where={"topic": "billing"}), "control: a filter selects"
    assert d.check()


@pytest.mark.kbconform(id="mem-07", rule="memory-scope.md#m7", guide=GUIDE, level="L2")
def test_metadata_named_like_scope_keys_changes_nothing(kbconform_run: Run, kbconform_backend: Any) -> None:
    """M7: mallory writes memories whose metadata names alice (and alice's agent) under every
    scope key, as a client's data may: they stay mallory's. alice's reads, the agent's, and
    (when by-id calls take the scope) alice's by-id calls do not reach them; mallory's do
    (control)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-07")
    mallory, alice = d.scope("mallory"), d.scope("alice")
    d.add(alice)
    claims = {key: value for key, value in zip(d.policy.keys, ("alice", "planner", "r1", "x"), strict=False)}
    forged = [
        d.add(mallory, "claims to be alice's", {"topic": "billing", **claims}),
        d.add(mallory, "claims only the second key", {**dict(list(claims.items())[1:]), "topic": "x"}),
    ]
    for facade in d.facades:
        assert not set(forged) & d.read(facade, alice)
        assert set(forged) <= d.read(facade, mallory)
    if _two(d):
        d.add(d.scope("alice", "planner"))
        for facade in d.facades:
            assert not set(forged) & d.read(facade, d.scope("alice", "planner"))
            if not d.policy.prefix:
                assert not set(forged) & d.read(facade, {d.policy.keys[1]: "planner"})
    if _offers(kbconform_run, "get"):
        for memory in forged:
            d.attempt("get", alice, memory)
    assert d.check()


@pytest.mark.kbconform(id="mem-08", rule="memory-scope.md#m8", guide=GUIDE, level="L3", requires="delete-all")
def test_deleting_a_scopes_memories_deletes_exactly_those(kbconform_run: Run, kbconform_backend: Any) -> None:
    """M8: deleting every memory of alice's agent scope deletes those only; of alice, every one
    alice's scope matches and nothing of Alice, alice2 or bob; a delete with no scope deletes
    nothing (M1). Every read equals the model after each, and a read made with the same
    arguments before and after the delete (one a read cache would keep) finds the scope empty."""
    d = _driver(kbconform_run, kbconform_backend, "mem-08")
    for values in (("alice",), ("alice", "planner"), ("alice", "writer"), ("Alice",), ("alice2",), ("bob",)):
        scope = d.scope(*values)
        d.add(scope)
        d.add(scope)
    for caller in (None, {}, {d.policy.keys[0]: ""}):
        d.refuse("delete_all", caller)
    assert d.check()
    if _two(d):
        _read_again(d, d.scope("alice", "planner"))
        d.call("delete_all", d.scope("alice", "planner"))
        assert _read_again(d, d.scope("alice", "planner")) == set()
        assert d.check()
        assert d.read("search", d.scope("alice", "writer")), "control: alice's other agent kept its memories"
    _read_again(d, d.scope("alice"))
    d.call("delete_all", d.scope("alice"))
    assert _read_again(d, d.scope("alice")) == set()
    assert d.read("search", d.scope("alice")) == set()
    assert d.check()


#: The arguments of a read made before and after a write, as a read cache would key it.
AGAIN: dict[str, Any] = {"text": "what was said about billing", "limit": MAX_LIMIT}


def _read_again(d: ScopeDriver, scope: dict[str, str]) -> set[str]:
    """Every read facade as ``scope``, with the same arguments each time (:data:`AGAIN`): the
    ids found, each read judged by the model."""
    return set().union(*(d.read(facade, scope, **AGAIN) for facade in d.facades))


@pytest.mark.kbconform(
    id="mem-14", rule="memory-scope.md#m6", guide=GUIDE, level="L2", requires=("update", "update-metadata")
)
def test_an_updates_metadata_never_moves_a_memory(kbconform_run: Run, kbconform_backend: Any) -> None:
    """M6, M7: alice updates her memories with metadata naming bob (and an agent) under every
    scope key, or under every key but the first, as a client's data may: they stay alice's.
    bob's reads, the agent's, and (when by-id calls take the scope) bob's by-id calls do not
    reach them; alice's do, with the new text, and bob's reads find his own (controls)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-14")
    alice, bob = d.scope("alice"), d.scope("bob")
    theirs = d.add(bob)
    claims = {key: value for key, value in zip(d.policy.keys, ("bob", "planner", "r1", "x"), strict=False)}
    moved = [d.add(alice), d.add(alice)]
    d.call("update", alice, moved[0], d.text("claims to be bob's"), {"topic": "travel", **claims})
    d.call(
        "update",
        alice,
        moved[1],
        d.text("claims the other keys"),
        {**dict(list(claims.items())[1:]), "topic": "x"},
    )
    for facade in d.facades:
        assert not set(moved) & d.read(facade, bob), f"{facade}: alice's updated memories moved to bob"
        assert theirs in d.read(facade, bob)
        assert set(moved) <= d.read(facade, alice)
        if _two(d) and not d.policy.prefix:
            assert not set(moved) & d.read(facade, {d.policy.keys[1]: "planner"})
    if _offers(kbconform_run, "get"):
        for memory in moved:
            d.attempt("get", bob, memory)
    assert d.check()


@pytest.mark.kbconform(id="mem-09", rule="memory-scope.md#m13", guide=GUIDE, level="L0")
def test_malformed_calls_are_refused_as_memory_invalid_and_change_nothing(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """The call contract (schemas/memory-scope.md, facades): empty or non-string text, metadata
    that is not an object, search limits outside 1 to 1000 (0, 1001, -1), an update to empty
    text and a where clause outside the grammar raise KB_MEMORY_INVALID; nothing changes. Valid
    calls land (control)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-09")
    alice = d.scope("alice")
    kept = d.add(alice)
    d.add(d.scope("bob"))
    d.refuse("add", alice, "", {"topic": "billing"})
    d.refuse("add", alice, 7, {"topic": "billing"})
    d.refuse("add", alice, d.text(), "not an object")
    d.refuse("add", alice, d.text(), ["topic", "billing"])
    for limit in (0, MAX_LIMIT + 1, -1):
        with refuses(ContractViolation, f"search with limit {limit!r}") as raised:
            kbconform_backend.search(alice, "billing", limit, None)
        assert raised[0].code == MEMORY_INVALID, f"search with limit {limit!r}: {raised[0]}"
    d.read("search", alice, limit=1)  # control: a valid limit is answered
    if _offers(kbconform_run, "update"):
        d.refuse("update", alice, kept, "")
    if _offers(kbconform_run, "filter"):
        malformed: tuple[dict[str, Any], ...] = (
            {},
            {"$not": {"topic": "billing"}},
            {"topic": {"$regex": ".*"}},
            {"$or": []},
        )
        for where in malformed:
            with refuses(ContractViolation, f"search with where {where!r}") as raised:
                kbconform_backend.search(alice, "billing", 5, where)
            assert raised[0].code == MEMORY_INVALID, f"search with where {where!r}: {raised[0]}"
    assert d.check()
    d.add(alice)  # control: valid calls land
    assert d.check()


@pytest.mark.kbconform(id="mem-10", rule="memory-scope.md#m3", guide=GUIDE, level="L1")
def test_a_small_scopes_searches_are_exact_and_limited_within_it(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """M3: in a scope of three memories, beside two scopes of thirty whose texts are nearer
    the query, a search with any limit returns that many memories of the scope (or all of it),
    and a memory's own text finds it first (under ``searchOrder: recency``, the scope's newest
    memory comes first whatever the query: the design it declares)."""
    d = _driver(kbconform_run, kbconform_backend, "mem-10")
    query = "what was said about the release plan and the deploy keys"
    small = d.scope("small")
    own = [d.add(small, what) for what in ("the mountain hut", "the river cabin", "the forest lodge")]
    for crowd in (d.scope("big"), d.scope("small2")):
        for _ in range(30):
            d.add(crowd, query)
    for limit in sorted({1, 2, 3, 4, MAX_LIMIT}):
        d.read("search", small, text=query, limit=limit)
    for memory in own:
        found = d.attempt_read("search", small, text=d.policy.stored[memory], limit=1)
        assert isinstance(found, list)
        assert [hit.id for hit in found] == [d.policy.first_hit(small, d.policy.stored[memory])]
    assert d.check()


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a program: ``op`` on the scope the indices pick (modulo)."""

    op: str
    first: int
    second: int = -1
    memory: int = 0


STEPS = st.builds(
    Step,
    op=st.sampled_from(["add", "add", "again", "get", "update", "delete", "delete_all"]),
    first=st.integers(0, 30),
    second=st.integers(-1, 3),
    memory=st.integers(0, 50),
)
#: Second key values (an agent, say): a pair that collides, and one more.
SECONDS = ("planner", "Planner", "planner2")
#: Third key values (a run, say), each beside the first second value.
RUNS = ("run-1", "run-2")


class Program:
    """What a program step needs: the driver, the scopes it draws, the features offered."""

    def __init__(self, d: ScopeDriver, values: list[str], run: Run, every_key: bool = True) -> None:
        self.d = d
        self.values = [v for v in values if d.policy.valid(d.scope(v))]
        self.offered = {f for f in ("get", "update", "delete", "delete-all") if _offers(run, f)}
        #: Whether scopes use a third key (the programs of mem-11 do; the state machine, which
        #: reads every scope after every step, keeps to two and its colliding second values).
        self.every_key = every_key

    def scope(self, first: int, second: int) -> dict[str, str]:
        """The scope of the drawn value ``first``; with ``second`` from 0, a second key too, and
        from 2, when three keys are declared (and ``every_key``), a third."""
        value = self.values[first % len(self.values)]
        keys = len(self.d.policy.keys)
        if second < 0 or keys < 2:
            return self.d.scope(value)
        if second < 2 or keys < 3 or not self.every_key:
            return self.d.scope(value, SECONDS[second % len(SECONDS)])
        return self.d.scope(value, SECONDS[0], RUNS[second % len(RUNS)])

    def again(self, scope: dict[str, str], target: str) -> str:
        """A memory under ``scope`` whose text is the text of ``target`` (of any scope): two
        memories holding one text are two memories, each in its own scope."""
        return str(self.d.call("add", scope, self.d.policy.memories[target].text, {"topic": "billing"}))

    def step(self, step: Step) -> None:
        scope = self.scope(step.first, step.second)
        memories = list(self.d.policy.memories)  # as learnt (ids are the backend's): one program a seed
        target = memories[step.memory % len(memories)] if memories else "no-such-memory"
        if step.op == "add" or not memories:
            self.d.add(scope)
        elif step.op == "again":
            self.again(scope, target)
        elif step.op == "get" and "get" in self.offered:
            self.d.attempt("get", scope, target)
        elif step.op == "update" and "update" in self.offered:
            self.d.attempt("update", scope, target, self.d.text("updated"))
        elif step.op == "delete" and "delete" in self.offered:
            self.d.attempt("delete", scope, target)
        elif step.op == "delete_all" and "delete-all" in self.offered:
            self.d.call("delete_all", scope)


@pytest.mark.kbconform(id="mem-11", rule=RULE, guide=GUIDE, level="L3")
def test_random_programs_of_writes_and_deletes_leave_every_read_as_the_model_says(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """M1-M9, M11, M12: after a random program of memories added (some with the text another
    memory of any scope holds), got, updated and deleted by id (by their scope or another) and
    scopes deleted, over values that collide under common mistakes or are long look-alikes and
    scopes using every declared key, every read of every scope equals the model. Each program
    ends with two scopes writing and the second updating and deleting the first's memory by its
    id, so a by-id call across scopes is always judged and a read that is neither empty nor
    everything is compared (the guard below is the control). Then, each on a fresh backend, a
    memory under every value of every colliding group (:func:`_colliding_values`) and one program
    drawing what a store shares, reuses, caches and shortens (:func:`_storage_program`)."""
    informative = [0]

    @kbconform_run.given(
        values=st.lists(st.sampled_from(VALUES), min_size=2, max_size=5, unique=True),
        program=st.lists(STEPS, min_size=1, max_size=20),
    )
    def check(values: list[str], program: list[Step]) -> None:
        backend = kbconform_open()
        try:
            p = Program(_driver(kbconform_run, backend, "mem-11"), values, kbconform_run)
            for step in program:
                p.step(step)
            # Then two scopes write, and the second updates and deletes the first's memory by
            # its id (where offered): the last comparison always has a read that is neither
            # empty nor everything, and a by-id call across scopes (M5) is always made.
            first = p.d.add(p.scope(0, -1))
            p.d.add(p.scope(1, 0))
            if "update" in p.offered:
                p.d.attempt("update", p.scope(1, -1), first, p.d.text("updated across scopes"))
            if "delete" in p.offered:
                p.d.attempt("delete", p.scope(1, -1), first)
            informative[0] += p.d.check()
        finally:
            kbconform_run.close(backend)

    check()
    assert informative[0] > 0, "no example compared a read that is neither empty nor everything"
    _colliding_values(kbconform_run, kbconform_open, "mem-11 values")
    backend = kbconform_open()
    try:
        _storage_program(
            Program(_driver(kbconform_run, backend, "mem-11 storage"), list(LONG), kbconform_run)
        )
    finally:
        kbconform_run.close(backend)


def _colliding_values(run: Run, open_backend: Callable[[], Any], name: str) -> None:
    """On a backend of its own, a memory under each value of every group that collides under a
    common mistake (M4; the long values are the storage program's) and, with two keys declared,
    under each two-key scope one joined string cannot tell apart; every read of every scope
    equals the model. A store that folds case, space, Unicode form or separators, matches a
    joined key by prefix, or reads a wildcard as every value shows in every run, whatever values
    the programs drew (and no later step reads these scopes again)."""
    backend = open_backend()
    try:
        d = _driver(run, backend, name)
        for value in Program(d, list(VALUES), run).values:
            if value not in LONG:
                d.add(d.scope(value))
        if len(d.policy.keys) > 1:
            for pair in JOINED:
                if d.policy.valid(d.scope(*pair)):
                    d.add(d.scope(*pair))
        assert d.check()
    finally:
        run.close(backend)


def _storage_program(p: Program) -> None:
    """One program drawing what a store shares, reuses, caches and shortens, under scopes that
    use every declared key and long look-alike values: one text written under two scopes (and
    near-identical under a third), one of them deleted, its id named again by a get after a new
    memory took its place, and a scope deleted between two reads with the same arguments; a
    memory updated through a scope of fewer keys (it keeps its own, M6); every read of every
    scope equals the model after each."""
    d = p.d
    a, b = d.scope(LONG[0], SECONDS[0], RUNS[0]), d.scope(LONG[1], SECONDS[0], RUNS[0])
    moved = d.add(d.scope(LONG[0], SECONDS[0], RUNS[1]))  # a's other run (with fewer keys, a)
    text = d.text("said under two scopes")
    first = str(d.call("add", a, text, {"topic": "billing"}))
    d.call("add", b, text, {"topic": "billing"})
    d.call("add", b, f"  {text.upper()} ", {"topic": "billing"})
    if "update" in p.offered and len(d.policy.keys) > 1:  # through a scope of fewer keys
        d.attempt("update", d.scope(LONG[0]), moved, d.text("updated through a wider scope"))
    assert d.check()
    if "get" in p.offered:
        d.call("get", a, first)
    if "delete" in p.offered:
        d.call("delete", a, first)
        assert d.check()
        taken = d.add(b)
        if "get" in p.offered:
            d.attempt("get", a, first)
            d.attempt("get", a, taken)
            d.call("get", b, taken)
        if "update" in p.offered:
            d.attempt("update", a, first, d.text("after its delete"))
    if "delete-all" in p.offered:
        _read_again(d, b)
        d.call("delete_all", b)
        assert _read_again(d, b) == set()
    d.check()  # every read as the model says (what is left may be one scope's, or nothing)


#: Callers of the state machine: a known scope (an index), or no identity (a negative index).
CALLERS = st.integers(0, 30) | st.integers(1, 6).map(lambda n: -n)
FAULTS = st.none() | st.integers(0, 2)


class ScopeMachine(DriverMachine[ScopeDriver]):
    """Adds, by-id calls, scope deletes and reads of many scopes interleaved, with store faults;
    every read of every scope compared with the model after every step."""

    @initialize(
        values=st.lists(st.sampled_from(VALUES), min_size=2, max_size=5, unique=True),
        seed=st.integers(0, 2**32 - 1),
    )
    def open_backend(self, values: list[str], seed: int) -> None:
        """A backend with a memory under each drawn scope; the calls every program starts with."""
        self.driver = d = ScopeDriver.of(self.fresh_backend(), self.run.manifest, random.Random(seed))
        self.program = Program(d, values, self.run, every_key=False)
        self.no_scopes = list(no_scopes(d.policy).values())
        ids = [d.add(self.program.scope(first, -1)) for first in range(len(self.program.values))]
        # every program starts with each caller that names no scope refused a write, a search
        # and a delete of everything (M1, M8): a backend that reads "no scope" as "every scope"
        # shows at once
        delete_all = self.run.manifest.supports("delete-all")
        for caller in self.no_scopes:
            d.refuse("add", caller, d.text(), {"topic": "billing"})
            d.refuse_read("search", caller)
            if delete_all:
                d.refuse("delete_all", caller)
        # and with the second scope updating, then deleting, the first scope's memory by its id
        # (M5, where offered): a by-id call that ignores the scope shows at once too
        if len(ids) > 1:
            other = self.program.scope(1, -1)
            if self.run.manifest.supports("update"):
                d.attempt("update", other, ids[0], d.text("updated across scopes"))
            if self.run.manifest.supports("delete"):
                d.attempt("delete", other, ids[0])

    def _caller(self, pick: int, second: int = -1) -> object:
        if pick >= 0 or not self.no_scopes:  # none when the application supplies the identity
            return self.program.scope(abs(pick), second)
        return self.no_scopes[-pick % len(self.no_scopes)]

    def _target(self, pick: int) -> str:
        memories = list(self.d.policy.memories)
        return memories[pick % len(memories)] if memories else "no-such-memory"

    @rule(caller=CALLERS, second=st.integers(-1, 3), fault=FAULTS)
    def add(self, caller: int, second: int, fault: int | None) -> None:
        """A memory under a scope, or refused for no identity; with the store failing."""
        scope = self._caller(caller, second)
        with self._armed(fault) as armed:
            outcome = self.d.attempt("add", scope, self.d.text(), {"topic": "billing"}, may_fail=armed)
        if armed and fault == 0 and self.d.policy.valid(scope):
            assert isinstance(outcome, BackendUnavailable), f"an add whose store failed returned {outcome!r}"

    @rule(
        caller=CALLERS,
        second=st.integers(-1, 3),
        pick=st.integers(0, 50),
        op=st.sampled_from(["get", "update", "delete"]),
        fault=FAULTS,
    )
    def by_id(self, caller: int, second: int, pick: int, op: str, fault: int | None) -> None:
        """A by-id call of any scope (or none) on any memory, when the manifest offers it."""
        if not self.run.manifest.supports(op):  # type: ignore[arg-type]
            return
        scope, target = self._caller(caller, second), self._target(pick)
        args: tuple[Any, ...] = (scope, target, self.d.text("updated")) if op == "update" else (scope, target)
        with self._armed(fault) as armed:
            self.d.attempt(op, *args, may_fail=armed)

    @rule(caller=st.integers(0, 30), second=st.integers(-1, 3), pick=st.integers(0, 50))
    def add_again(self, caller: int, second: int, pick: int) -> None:
        """A memory whose text another memory (of any scope) already holds."""
        if self.d.policy.memories:
            self.program.again(self.program.scope(caller, second), self._target(pick))

    @rule(caller=CALLERS, second=st.integers(-1, 3), fault=FAULTS)
    def delete_all(self, caller: int, second: int, fault: int | None) -> None:
        """Every memory of a scope deleted (or refused for no identity), when offered."""
        if self.run.manifest.supports("delete-all"):
            with self._armed(fault) as armed:
                self.d.attempt("delete_all", self._caller(caller, second), may_fail=armed)

    @rule(caller=CALLERS, second=st.integers(-1, 3), limit=st.integers(1, 4), fault=FAULTS)
    def search(self, caller: int, second: int, limit: int, fault: int | None) -> None:
        """A search with a small limit: that many memories of the scope; no identity:
        Unauthenticated; with the store failing, BackendUnavailable, never a result."""
        scope = self._caller(caller, second)
        with self._armed(fault) as armed:
            outcome = self.d.attempt_read("search", scope, limit=limit, may_fail=armed)
        if armed and fault == 0 and self.d.policy.valid(scope):
            assert isinstance(outcome, BackendUnavailable), (
                f"a search whose store failed returned {outcome!r}"
            )


@pytest.mark.kbconform(id="mem-12", rule=RULE, guide=GUIDE, level="L4")
def test_interleaved_writes_deletes_and_reads_match_the_model(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """M1-M12: every step of every program (memories added under scopes and by no identity,
    memories added with the text another memory holds, by-id calls of any scope on any memory,
    scopes deleted, searches with small limits, store faults from any store call of a call)
    and, after each, every read of every scope equals the policy model; the model compared reads
    that are neither empty nor everything (control). First, on a backend of its own, a memory
    under every colliding value (:func:`_colliding_values`): once, not in every program, whose
    every later step would read those scopes again."""
    _colliding_values(kbconform_run, kbconform_open, "mem-12 values")
    machine = ScopeMachine.bound(kbconform_run, "MemoryScope")
    kbconform_run.run_machine(machine)
    assert machine.compared[0] > 0, "no step compared a read that is neither empty nor everything"


def _atomic_world(d: ScopeDriver) -> dict[str, Any]:
    """alice with two memories, bob with one."""
    alice, bob = d.scope("alice"), d.scope("bob")
    return {"alice": alice, "bob": bob, "first": d.add(alice), "second": d.add(alice), "theirs": d.add(bob)}


#: Each write mem-13 faults, as a call on :func:`_atomic_world`, with the feature it needs.
CHANGES: dict[str, tuple[str | None, Any]] = {
    "add": (None, lambda d, w: ("add", w["alice"], d.text(), {"topic": "billing"})),
    "update": ("update", lambda d, w: ("update", w["alice"], w["first"], d.text("updated"))),
    "delete": ("delete", lambda d, w: ("delete", w["alice"], w["first"])),
    "delete_all": ("delete-all", lambda d, w: ("delete_all", w["alice"])),
}


def _opened(
    run: Run, open_backend: Any, label: str, fault: Fault
) -> tuple[ScopeDriver, str, tuple[Any, ...]]:
    d = ScopeDriver.of(
        open_backend(BackendOptions(store_fails=fault.switch)), run.manifest, run.rng(f"mem-13 {label}")
    )
    operation, *args = CHANGES[label][1](d, _atomic_world(d))
    return d, operation, tuple(args)


@pytest.mark.kbconform(
    id="mem-13", rule="memory-scope.md#m10", guide=GUIDE, level="L3", requires="fault-injection"
)
def test_a_write_whose_store_fails_changes_nothing(kbconform_run: Run, kbconform_open: Any) -> None:
    """M10: each write (an add, and, where offered, an update, a delete by id and a scope's
    delete) made once unfaulted, counting its store calls, then on a fresh backend for each of
    those calls with the store failing there, from that call on or at it only: the call raises
    BackendUnavailable and changes nothing, or lands whole; afterwards every read of every scope
    equals the model, and the same call with the store back lands. Control: some faulted call
    failed."""
    failed = 0
    for label, (feature, _) in CHANGES.items():
        if feature is None or _offers(kbconform_run, feature):
            failed += every_fault(
                label,
                partial(_opened, kbconform_run, kbconform_open, label),
                kbconform_run.close,
                attempts=12,
                must_call=True,
            )
    assert failed, "control: no faulted call failed"
