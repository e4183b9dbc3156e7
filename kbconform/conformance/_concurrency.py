"""Callers at once: several callers, each its own identity, call one backend together, and each
answer is judged against the policy model for its own caller (``schemas/concurrency.md``).

The race is made likely, not left to luck: every caller runs on a thread of its own, all start
each round together (a :class:`threading.Barrier`), a round interleaves the callers' calls on
the one backend handle, and the rounds repeat; in this process the interpreter switches threads
far more often than by default while they run (:func:`sys.setswitchinterval`), so a request's
state kept anywhere shared is overwritten by another request between its writing and its use.

A backend reached through a harness-v1 transport that carries one request at a time (stdio,
by the protocol) cannot be called at once: its callers take turns, each answer still judged
(:attr:`Storm.reach` says which it was).

A facade a world reads with several probes is asked one probe a round in a storm, the same by
every caller (:class:`Probing`): a query with one stored text, whose answer is the caller's whole
scope, judged as the whole reading; a get of one stored id, judged against what the model shows
the caller of that id. The callers' calls still overlap in every round: a race is met by calls
overlapping, not by how many probes each caller asks in a round, and the probes are taken in
turn over the rounds.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from kbconform.conformance._deadline import Guarded
from kbconform.conformance._effects import described
from kbconform.conformance._judging import NO_IDENTITY, Charge, Reader, Reading, World, gravest
from kbconform.errors import KbconformError, Unauthenticated

#: How many rounds each caller makes by default: enough that a race on a shared attribute is
#: met at every seed on two cores (``benchmarks/bench_concurrency.py`` measures what it costs).
ROUNDS = 24
#: The interpreter's thread switch interval while callers run in this process, in seconds (the
#: default is 0.005: a request of a few milliseconds would seldom be interrupted).
SWITCH_INTERVAL = 1e-5


@dataclass(frozen=True, slots=True)
class ConcurrentCaller:
    """One caller of a storm: who it is (``label``), the identity it calls with, and what the
    model says it must get: a reading, or (``expected`` None) Unauthenticated."""

    label: str
    identity: object
    expected: Reading | None


@dataclass
class Storm:
    """What the callers of one storm got: every problem found, by caller, and how many calls
    were judged."""

    reach: Reach
    rounds: int
    problems: dict[str, list[str]] = field(default_factory=dict)
    calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: What each problem charges, where the judging knew it (a caller with no identity answered;
    #: a reading that only lacked items: recall).
    charges: list[Charge] = field(default_factory=list, repr=False)

    def found(self, label: str, problem: str, charge: Charge | None = None) -> None:
        with self.lock:
            self.problems.setdefault(label, []).append(problem)
            self.charges.append(charge or Charge())

    def charge(self) -> Charge | None:
        """What the storm's problems charge the backend with: the gravest (:func:`gravest`); a
        problem the judging gave no charge (a race, by the test's catalogue entry) outranks a
        recall."""
        return gravest(c if c.effect else Charge(c.caller, "read") for c in self.charges)

    def summary(self, shown: int = 3) -> str:
        """The problems, a few per caller (for a failure's message)."""
        lines = []
        for label, found in sorted(self.problems.items()):
            more = f" (and {len(found) - shown} more)" if len(found) > shown else ""
            lines.append(f"{label}: {'; '.join(dict.fromkeys(found[:shown]))}{more}")
        return "\n".join(lines)


#: What a call that fails (not a refusal of the contract: an error of the backend) while other
#: callers are served charges: no data crossed, but the backend did not serve callers at once
#: as it declares (``schemas/concurrency.md``, C5).
CRASHED = Charge(None, "crashed")


@runtime_checkable
class Probing(World, Protocol):
    """A world that reads some facades with several probes (a query with each stored text, a get
    of each stored id): a storm asks one probe a round, judged against what the model says that
    probe shows."""

    def read_probe(self, backend: Any, facade: str, reader: Reader, turn: int) -> Reading:
        """What one call of ``facade`` shows ``reader`` with the probe of ``turn`` (counted
        round the probes), judged as :meth:`World.read` is; a facade read without probes is
        read as :meth:`World.read` reads it."""
        ...

    def expected_probe(self, facade: str, reader: Reader, turn: int) -> Reading:
        """What the model says :meth:`read_probe` shows ``reader``: the whole expected reading
        (:meth:`World.expected`) for a probe answered with the reader's whole scope, or a facade
        read without probes; the part of it the probe asks otherwise (a get of one id: that
        item, or nothing when the reader may not read it)."""
        ...


def unguarded(backend: Any) -> Any:
    """The backend itself behind the run's per-call guard, which makes one call at a time."""
    return backend.inner if isinstance(backend, Guarded) else backend


#: How callers reach a backend: threads of this process, requests that overlap (harness-v1 over
#: HTTP), or requests in turns (harness-v1 over stdio).
Reach = Literal["threads", "requests", "turns"]


def reach_of(adapter: object) -> Reach:
    """How callers reach ``adapter``'s backends at once: a harness-v1 adapter says whether its
    transport carries requests at once (``overlaps``: HTTP does, stdio does not); an adapter in
    this process is called from threads."""
    overlaps = getattr(adapter, "overlaps", None)
    if overlaps is None:
        return "threads"
    return "requests" if overlaps else "turns"


@contextlib.contextmanager
def switching(often: bool) -> Iterator[None]:
    """While inside, the interpreter switches threads every :data:`SWITCH_INTERVAL` seconds
    (with ``often``), then as before."""
    before = sys.getswitchinterval()
    if often:
        sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def concurrent_callers(world: World, facade: str, anonymous: int) -> list[ConcurrentCaller]:
    """Every reader of ``world`` with what ``facade`` must show it, and the first ``anonymous``
    of the world's callers that are no identity (each must be refused)."""
    found = [ConcurrentCaller(r.label, r.identity, world.expected(facade, r)) for r in world.readers]
    nobody = list(world.no_identities().items())[:anonymous]
    return found + [ConcurrentCaller(f"no identity ({label})", identity, None) for label, identity in nobody]


def _judge(
    world: World, storm: Storm, caller: ConcurrentCaller, call: Callable[[], Any], effect: str = "read"
) -> None:
    """One call of ``caller``, judged: a reading exactly the model's, or the refusal it expects,
    carrying no stored text (a call with no identity that lands charges ``effect``)."""
    try:
        outcome = call()
    except KbconformError as error:
        told = world.carried(error)
        if told:
            storm.found(caller.label, f"its {type(error).__name__} carries stored text {told}")
        elif caller.expected is not None or not isinstance(error, Unauthenticated):
            wanted = "its scope" if caller.expected is not None else "Unauthenticated"
            storm.found(caller.label, f"expected {wanted}; got {error!r}")
        return
    except Exception as error:  # any other failure of a call is the backend's, and a finding
        storm.found(caller.label, f"failed: {error!r}", CRASHED)
        return
    if caller.expected is None:
        storm.found(
            caller.label, f"was answered, not refused: {described(outcome)}", Charge(NO_IDENTITY, effect)
        )
    elif isinstance(outcome, Reading):
        charge = Charge(None, caller.expected.effect(outcome))
        for problem in caller.expected.differences(outcome):
            storm.found(caller.label, problem, charge)


def concurrently(
    world: World,
    backend: Any,
    facade: str,
    crowd: Sequence[ConcurrentCaller],
    *,
    reach: Reach,
    deadline: float,
    rounds: int = ROUNDS,
) -> Storm:
    """Every caller of ``crowd`` reads ``backend`` through ``facade`` ``rounds`` times, all at
    once (:func:`storm`), and each answer is judged for its own caller; a :class:`Probing`
    world's callers all ask the same probe in a round, each answer judged against what the model
    says that probe shows its caller."""
    target = unguarded(backend)
    result = Storm(reach, rounds)
    probing = world if isinstance(world, Probing) else None

    def read(caller: ConcurrentCaller, number: int) -> Any:
        if caller.expected is None:
            return world.read_once(target, facade, caller.identity)
        reader = Reader(caller.label, caller.identity)
        if probing is not None:
            return probing.read_probe(target, facade, reader, number)
        return world.read(target, facade, reader)

    def act(index: int, number: int) -> None:
        caller = crowd[index]
        if probing is not None and caller.expected is not None:  # judged against its probe's part
            reader = Reader(caller.label, caller.identity)
            caller = replace(caller, expected=probing.expected_probe(facade, reader, number))
        _judge(world, result, caller, lambda: read(caller, number))

    return storm(result, [c.label for c in crowd], act, deadline=deadline)


def storm(result: Storm, labels: Sequence[str], act: Callable[[int, int], None], *, deadline: float) -> Storm:
    """Each caller (one per label) makes ``result.rounds`` calls, ``act(caller, round)``, which
    judges its call into ``result``; all start each round together (a barrier). Reached by
    ``"turns"``, the callers take turns; by ``"threads"``, the interpreter switches threads
    often while they run (:func:`switching`). A caller still running ``deadline`` seconds per
    round after the callers started is a problem (its thread, a daemon, is left behind). The
    first problem found ends the storm after the round it was found in."""
    rounds = result.rounds
    start = threading.Barrier(len(labels))
    turns: Any = threading.Lock() if result.reach == "turns" else contextlib.nullcontext()

    def run(index: int) -> None:
        for number in range(rounds):
            try:
                start.wait(deadline)
            except threading.BrokenBarrierError:
                if not result.problems:  # broken by a caller that found a problem: it is told
                    result.found(labels[index], "its round never started: another caller did not return")
                return
            with turns:
                act(index, number)
            with result.lock:
                result.calls += 1
            if result.problems:  # one is enough: the others stop at the next round
                start.abort()
                return

    threads = [
        threading.Thread(target=run, args=(i,), name=f"kbconform-caller-{i}", daemon=True)
        for i in range(len(labels))
    ]
    with switching(result.reach == "threads"):
        for thread in threads:
            thread.start()
        ends = time.monotonic() + deadline * rounds
        for thread, label in zip(threads, labels, strict=True):
            thread.join(max(0.0, ends - time.monotonic()))
            if thread.is_alive():
                start.abort()
                result.found(label, f"did not return within {deadline * rounds:g} s")
    return result
