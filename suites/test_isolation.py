"""The profile-independent isolation suite: the same three tests for every isolation profile.

Each test takes the manifest's profile (``kbconform_isolation``) and its seeded world
(``kbconform_world``): the readers, how a read facade shows them what it shows, and what the
profile's policy model expects. For ``tenant-namespace`` the readers are principals and the
facades query, get, list, count and ask; for ``project-pool`` the readers are sessions and the
facades the two searches (``schemas/project-pool.md``, rules P1 to P4 and P11 to P13); for
``kb-grant`` the readers are tenants (owners, grantees, a revoked grantee, a tenant owning
nothing) and the facades search, get and list (``schemas/kb-grant.md``, rules G1 to G3); for
``memory-scope`` the readers are scopes (users, a user's agents, case and prefix twins, a scope
that wrote nothing) and the facades search and list (``schemas/memory-scope.md``, M1 to M3, M10).
"""

from __future__ import annotations

from typing import Any

import pytest

from kbconform.adapter import FaultPlan, FaultSwitch
from kbconform.conformance import Isolation, Run, World, charged, described
from kbconform.errors import BackendUnavailable, Unauthenticated
from kbconform.profiles import names, profile

#: Every registered isolation profile: each gives its world through its Isolation (Profile.isolation).
PROFILES = ("*",)

#: The rule each registered profile's read isolation is written in, per shared test (the profile's
#: own rule of it, ``Profile.rule_of``), and the guide's section for each (``Profile.guide``).
RULE = {name: profile(name).rule_of for name in names()}
GUIDE = {name: guide for name in names() if (guide := profile(name).guide) is not None}


def _assert_reads_exactly(world: World, backend: Any, facade: str) -> None:
    """Every reader reads exactly what the model says through ``facade``; someone reads
    something, and no one everything (control: the check could see a leak and a loss)."""
    expected = {reader: world.expected(facade, reader) for reader in world.readers}
    assert any(e.number for e in expected.values()), f"the model expects {facade} to show no one anything"
    assert all(e.number < world.size(facade) for e in expected.values()), (
        f"the model expects {facade} to show someone everything: a leak could not show"
    )
    # every reader is read before any is judged: a reader short of its scope (recall, a note)
    # must not hide a later reader shown another's item (read)
    found = []
    for reader, wanted in expected.items():
        got = world.read(backend, facade, reader)
        if problems := wanted.differences(got):
            found.append((wanted.effect(got), f"{facade} as {reader.label}: {'; '.join(problems)}"))
    gravest = "read" if any(effect == "read" for effect, _ in found) else "recall"
    with charged(effect=gravest):
        assert not found, "; ".join(said for effect, said in found if effect == gravest)


def _assert_reads_something(world: World, backend: Any, facade: str) -> None:
    """Every reader with something in scope is answered with something through ``facade`` (the
    control of a refusal: the backend does not refuse everyone). Exactness is iso-01's."""
    for reader in world.readers:
        if world.expected(facade, reader).number:
            assert world.read(backend, facade, reader).number, f"{facade} as {reader.label}: shows nothing"


@pytest.mark.kbconform(
    id="iso-01",
    rule=RULE,
    guide={**GUIDE, "tenant-namespace": "queryprincipal-text-n_results-where"},
    level="L1",
)
def test_every_reader_reads_exactly_its_scope_through_every_read_facade(
    kbconform_facade: str, kbconform_backend: Any, kbconform_world: World
) -> None:
    """P1-P4, P13 (read-filter.md for tenants; G1 for kb-grant): every reader of the seeded
    world (principals; sessions in projects, in none, in an empty project, with ids that read as
    numbers; tenants owning, granted, revoked or owning nothing) reads through the facade exactly
    its scope by the policy model: by id, by text and by number."""
    _assert_reads_exactly(kbconform_world, kbconform_backend, kbconform_facade)


@pytest.mark.kbconform(
    id="iso-02",
    rule=RULE,
    guide=GUIDE,
    level="L1",
    requires="caller-identity",
)
def test_no_identity_is_refused_on_every_read_facade_and_told_nothing(
    kbconform_facade: str, kbconform_backend: Any, kbconform_world: World
) -> None:
    """P11 (closed-01 for tenants; G2 for kb-grant): None, values that are no identity (look-alike
    principals; non-strings, empty, unknown and look-alike session or tenant ids) raise
    Unauthenticated through the facade, and the error carries no stored text; every reader with
    something in scope is answered (control)."""
    world = kbconform_world
    for label, identity in world.no_identities().items():
        try:
            shown = world.read_once(kbconform_backend, kbconform_facade, identity)
        except Unauthenticated as raised:
            told = world.carried(raised)
            assert not told, f"{kbconform_facade} with {label}: the error carries stored text {told}"
        else:
            pytest.fail(f"{kbconform_facade} with {label} was answered, not refused: {described(shown)}")
    _assert_reads_something(world, kbconform_backend, kbconform_facade)


@pytest.mark.kbconform(
    id="iso-03",
    rule=RULE,
    guide=GUIDE,
    level="L2",
    requires="fault-injection",
)
def test_a_failing_store_fails_every_read_facade_closed(
    kbconform_facade: str, kbconform_run: Run, kbconform_open: Any, kbconform_isolation: Isolation
) -> None:
    """P12 (closed-02 for tenants; G3 for kb-grant): while the store fails, the facade raises
    BackendUnavailable for every reader with something in scope, never a result (an empty one, a
    cached one); before the fault and after it ends, each is answered (control)."""
    switch = FaultSwitch()
    backend = kbconform_open(kbconform_isolation.options(switch))
    world = kbconform_isolation.seed(backend, kbconform_run.rng(f"iso-03[{kbconform_facade}]"))
    readers = [r for r in world.readers if world.expected(kbconform_facade, r).number]
    assert readers, f"no reader has anything in scope through {kbconform_facade}"
    _assert_reads_something(world, backend, kbconform_facade)
    switch.set(FaultPlan(0))
    for reader in readers:
        with pytest.raises(BackendUnavailable):
            world.read(backend, kbconform_facade, reader)
        with pytest.raises(BackendUnavailable):
            world.read_once(backend, kbconform_facade, reader.identity)
    switch.set(None)
    _assert_reads_something(world, backend, kbconform_facade)
