"""The concurrency suite, the same for every isolation profile: callers at once
(``schemas/concurrency.md``).

A backend that keeps "the current caller" anywhere shared between requests (an attribute of a
service object, a context variable never reset, a session setting on a pooled connection, a
result buffer, a cache or an in-flight request keyed without the caller) passes every test that
calls it from one caller at a time and leaks the moment two requests overlap. Here the seeded
world's readers (and callers that are no identity) call one backend handle together, from a
thread each, round after round, and every answer is judged by the policy model for its own
caller, as ``test_isolation.py`` judges one caller at a time. Principals also write at once,
each into its own scope, while others read and callers that are no identity write: each write
must land in its writer's scope and nowhere else.

A backend declares that it serves callers at once (``concurrency: "threads"``) or why it does
not (``{"serial": REASON}``, a single-threaded server by design); declined, these tests are
reported beside the level. Behind harness-v1 over HTTP the callers' requests overlap; over stdio
the protocol carries one request at a time, so they take turns (the tests say so when they fail).
"""

from __future__ import annotations

from typing import Any

import pytest

from kbconform.conformance import (
    Charge,
    Run,
    World,
    Writing,
    charged,
    concurrent_callers,
    concurrently,
    judge_writes,
    reach_of,
    writes_at_once,
)

#: Every registered isolation profile: each gives its world through its Isolation.
PROFILES = ("*",)

#: How the callers were running, for a failure's message.
HOW = {
    "threads": "at once, from threads",
    "requests": "at once, by overlapping requests",
    "turns": "in turns (harness-v1 on stdio carries one request at a time: no race can show)",
}

#: How many of the world's callers that are no identity join the readers (None, and look-alikes).
ANONYMOUS = 2
#: How many of the world's readers that do not write read while the writers write.
READING = 1


def _assert_each_caller_answered_as_itself(
    run: Run, world: World, backend: Any, facade: str, anonymous: int
) -> None:
    crowd = concurrent_callers(world, facade, anonymous)
    assert sum(c.expected is not None for c in crowd) >= 2, "fewer than two readers: nothing could race"
    assert len({c.identity for c in crowd if c.expected is not None and c.expected.number}) >= 2, (
        "fewer than two readers with something in scope: a leak between them could not show"
    )
    reach = reach_of(run.adapter)
    found = concurrently(world, backend, facade, crowd, reach=reach, deadline=run.call_timeout)
    how = HOW[reach]
    said = found.charge() or Charge()
    with charged(said.caller, said.effect):
        assert not found.problems, f"{facade}, {len(crowd)} callers {how}:\n{found.summary()}"
    assert found.calls == len(crowd) * found.rounds, (
        f"{facade}: {found.calls} of {len(crowd) * found.rounds} calls were made ({how})"
    )


@pytest.mark.kbconform(
    id="conc-01",
    rule="concurrency.md#c1",
    guide="callers-at-once",
    level="L2",
    requires="concurrency",
)
def test_readers_at_once_each_read_exactly_their_own_scope(
    kbconform_run: Run, kbconform_facade: str, kbconform_backend: Any, kbconform_world: World
) -> None:
    """C1: every reader of the seeded world reads the one backend through the facade at the
    same time as every other, round after round, and each answer is exactly that reader's scope
    by the policy model (by id, text and number): never another's, never a mix."""
    _assert_each_caller_answered_as_itself(
        kbconform_run, kbconform_world, kbconform_backend, kbconform_facade, 0
    )


@pytest.mark.kbconform(
    id="conc-02",
    rule="concurrency.md#c2",
    guide="callers-at-once",
    level="L2",
    requires="concurrency",
)
def test_callers_with_no_identity_among_readers_are_refused_as_themselves(
    kbconform_run: Run, kbconform_facade: str, kbconform_backend: Any, kbconform_world: World
) -> None:
    """C2: callers that are no identity (None, a look-alike) call at the same time as every
    reader; each is refused with Unauthenticated carrying no stored text, never answered as the
    reader beside it, and each reader still reads exactly its scope (control)."""
    _assert_each_caller_answered_as_itself(
        kbconform_run, kbconform_world, kbconform_backend, kbconform_facade, ANONYMOUS
    )


@pytest.mark.kbconform(
    id="conc-03",
    rule="concurrency.md#c4",
    guide="callers-at-once",
    level="L2",
    requires="concurrency",
)
def test_writers_at_once_each_write_into_exactly_their_own_scope(
    kbconform_run: Run, kbconform_facade: str, kbconform_backend: Any, kbconform_world: World
) -> None:
    """C4: principals write new, uniquely marked items into their own scopes at the same time,
    round after round, while the other readers read and callers that are no identity write;
    each write lands, every no-identity write is refused with Unauthenticated, and by the policy
    model each written item is in its writer's scope and in no reading it may not be in, during
    the writes and after them (every reader then reads exactly its scope: control)."""
    world = kbconform_world
    if not isinstance(world, Writing):
        pytest.fail(
            f"the {kbconform_run.manifest.profile} profile's world gives no writes (World.writers, "
            "write, wrote: kbconform.conformance.Writing), so writes at once cannot be judged"
        )
    writers = world.writers()
    assert len({w.identity for w in writers}) >= 2, "fewer than two writers: nothing could race"
    readers = [r for r in world.readers if r not in writers][:READING]
    facade = kbconform_facade
    before = {r.label: world.expected(facade, r) for r in world.readers}
    nobody = dict(list(world.no_identities().items())[:ANONYMOUS])
    reach = reach_of(kbconform_run.adapter)
    rng = kbconform_run.rng(f"conc-03[{facade}]")
    found = writes_at_once(
        world,
        kbconform_backend,
        facade,
        readers,
        nobody,
        rng=rng,
        reach=reach,
        deadline=kbconform_run.call_timeout,
    )
    how, storm = HOW[reach], found.storm
    callers = len(writers) + len(readers) + len(nobody)
    said = storm.charge() or Charge()
    with charged(said.caller, said.effect):
        assert not storm.problems, (
            f"{facade}: {callers} callers writing and reading {how}:\n{storm.summary()}"
        )
    assert storm.calls == callers * storm.rounds, (
        f"{storm.calls} of {callers * storm.rounds} calls were made ({how})"
    )
    problems = judge_writes(world, kbconform_backend, facade, found, before)
    shown = "\n".join(problems[:8]) + (f"\n(and {len(problems) - 8} more)" if len(problems) > 8 else "")
    assert not problems, (
        f"{facade}: {len(writers)} writers, {len(readers)} readers and {len(nobody)} callers "
        f"with no identity {how}:\n{shown}"
    )
