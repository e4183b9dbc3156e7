"""Callers at once: the engine the concurrency suite stands on, the manifest's declaration, and
harness-v1 over HTTP carrying requests at once (schemas/concurrency.md)."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from kbconform._capabilities import concurrency_declined, declines
from kbconform.conformance import (
    WRITE_ROUNDS,
    Reader,
    Reading,
    Writing,
    concurrent_callers,
    concurrently,
    judge_writes,
    reach_of,
    writes_at_once,
)
from kbconform.errors import Unauthenticated

STORED = {"a": {"a1": "kba1 one", "a2": "kba2 two"}, "b": {"b1": "kbb1 three"}}


class Sound:
    """A backend that answers each call from its own caller."""

    def read(self, caller: object) -> dict[str, str]:
        if caller not in STORED:
            raise Unauthenticated("no identity")
        time.sleep(0.0005)
        return dict(STORED[caller])  # type: ignore[index]


@dataclass
class CallerOnSelf(Sound):
    """The caller kept on the shared object between taking it and using it."""

    current: object = None

    def read(self, caller: object) -> dict[str, str]:
        self.current = caller
        time.sleep(0.0005)
        return super().read(self.current)


@dataclass
class Tiny:
    """A world of two readers and two callers that are no identity."""

    readers: tuple[Reader, ...] = (Reader("reader a", "a"), Reader("reader b", "b"))
    calls: list[object] = field(default_factory=list)

    def size(self, facade: str) -> int:
        return 3

    def expected(self, facade: str, reader: Reader) -> Reading:
        return Reading(STORED[reader.identity], len(STORED[reader.identity]))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        shown = backend.read(reader.identity)
        return Reading(shown, len(shown))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        return backend.read(identity)

    def no_identities(self) -> dict[str, object]:
        return {"None": None, "a look-alike": "A"}

    def carried(self, error: BaseException) -> list[str]:
        return [
            mark
            for scope in STORED.values()
            for text in scope.values()
            if (mark := text.split()[0]) in str(error)
        ]


def _storm(backend: Any, anonymous: int, reach: Any = "threads") -> Any:
    world = Tiny()
    crowd = concurrent_callers(world, "read", anonymous)
    return concurrently(world, backend, "read", crowd, reach=reach, deadline=10, rounds=12)


def test_a_sound_backend_answers_every_caller_at_once_as_itself() -> None:
    """Every reader and every caller that is no identity, 12 rounds each: no problem, and every
    call was made (the control of the tests below)."""
    found = _storm(Sound(), 2)
    assert found.problems == {}
    assert found.calls == 4 * 12


def test_a_caller_kept_on_the_backend_object_is_found_reading_anothers_scope() -> None:
    """Two readers at once on a backend that keeps its caller on itself: a reader is shown the
    other's scope, or lacks its own (C1); the storm ends at the first round with a problem."""
    found = _storm(CallerOnSelf(), 0)
    summary = found.summary()
    assert "which it may not read" in summary or "lacks" in summary, summary
    assert found.calls < 2 * 12


def test_callers_with_no_identity_beside_readers_on_a_racy_backend_are_found() -> None:
    """With callers that are no identity among the readers, the same backend answers one of
    them, or refuses a reader (C2)."""
    found = _storm(CallerOnSelf(), 2)
    summary = found.summary()
    assert (
        "was answered, not refused" in summary
        or "got Unauthenticated" in summary
        or "may not read" in summary
    )


def test_callers_in_turns_meet_no_race_and_every_answer_is_still_judged() -> None:
    """With a transport that carries one request at a time the callers take turns: the racy
    backend then answers each correctly, and every call was judged."""
    found = _storm(CallerOnSelf(), 2, reach="turns")
    assert found.problems == {}
    assert found.calls == 4 * 12


@dataclass
class Probed(Tiny):
    """Tiny read with probes: each call's answer is the reader's whole scope, whatever the probe
    (the probes each caller asked are kept)."""

    asked: list[tuple[object, int]] = field(default_factory=list)

    def read_probe(self, backend: Any, facade: str, reader: Reader, turn: int) -> Reading:
        self.asked.append((reader.identity, turn))
        return self.read(backend, facade, reader)

    def expected_probe(self, facade: str, reader: Reader, turn: int) -> Reading:
        return self.expected(facade, reader)


def test_a_probing_worlds_callers_ask_one_probe_a_round_the_same_probe_each() -> None:
    """A world read with probes is asked one probe a round by every reader, the round's own (so
    identical calls overlap), each answer judged as the whole reading; the racy backend is found
    as with whole readings (control)."""
    world = Probed()
    found = concurrently(
        world, Sound(), "read", concurrent_callers(world, "read", 0), reach="threads", deadline=10, rounds=6
    )
    assert found.problems == {}
    assert found.calls == 2 * 6
    assert sorted(world.asked) == [(who, turn) for who in "ab" for turn in range(6)]
    racy = Probed()
    crowd = concurrent_callers(racy, "read", 0)
    summary = concurrently(
        racy, CallerOnSelf(), "read", crowd, reach="threads", deadline=10, rounds=12
    ).summary()
    assert "which it may not read" in summary or "lacks" in summary, summary


def test_each_probe_of_a_tenant_world_shows_a_reader_what_the_model_says_it_does() -> None:
    """On the memory reference, each stored text as the one probe of a query or an ask shows
    each reader exactly its scope, as the reading with every probe does; each stored id as the
    one probe of a get shows that item to a reader that reads it and nothing to one that does
    not, the first probes ask an id of every reader's, and all of them are the whole reading."""
    from kbconform.adapter import load_adapter
    from kbconform.conformance import Probing, Run, isolation_for

    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    run = Run(adapter, manifest, 0)
    try:
        backend = run.open()
        world = isolation_for(manifest).seed(backend, random.Random(0))
        assert isinstance(world, Probing)
        probes = world.size("query")
        for facade in ("query", "ask"):
            for reader in world.readers:
                expected = world.expected(facade, reader)
                assert expected.differences(world.read(backend, facade, reader)) == []
                for turn in range(probes):
                    got = world.read_probe(backend, facade, reader, turn)
                    assert expected.differences(got) == [], (facade, reader.label, turn)
                    assert world.expected_probe(facade, reader, turn) == expected
        shown: dict[str, dict[str, str | None]] = {r.label: {} for r in world.readers}
        for reader in world.readers:
            expected = world.expected("get", reader)
            for turn in range(probes):
                got, wanted = (
                    world.read_probe(backend, "get", reader, turn),
                    world.expected_probe("get", reader, turn),
                )
                assert wanted.differences(got) == [], (reader.label, turn)
                assert wanted.number <= 1
                assert set(wanted.items or {}) <= set(expected.items or {})
                shown[reader.label].update(got.items or {})
            assert expected.differences(Reading(shown[reader.label], len(shown[reader.label]))) == []
        first = {world.read_probe(backend, "get", r, turn).number for r in world.readers for turn in range(5)}
        assert first == {0, 1}  # an id some read and others do not: a caller answered as another shows
        every = [r for r in world.readers if world.expected("get", r).number]
        asked_early = {
            r.label
            for r in every
            for turn in range(len(every) + 2)
            if world.expected_probe("get", r, turn).number
        }
        assert asked_early == {r.label for r in every}
    finally:
        run.shutdown()


def test_a_caller_that_hangs_fails_within_the_deadline() -> None:
    """A call that never returns is a problem named by its caller, not a stuck test."""

    class Hangs(Sound):
        def read(self, caller: object) -> dict[str, str]:
            if caller == "b":
                threading.Event().wait(5)
            return super().read(caller)

    world = Tiny()
    found = concurrently(
        world, Hangs(), "read", concurrent_callers(world, "read", 0), reach="threads", deadline=0.05, rounds=2
    )
    assert "did not return" in found.summary()


def test_an_adapter_is_reached_by_threads_unless_its_transport_says_how() -> None:
    """In process: threads; behind harness-v1, requests at once over HTTP, in turns over stdio."""

    class Served:
        def __init__(self, overlaps: bool) -> None:
            self.overlaps = overlaps

    assert reach_of(object()) == "threads"
    assert reach_of(Served(True)) == "requests"
    assert reach_of(Served(False)) == "turns"


@pytest.mark.parametrize(
    ("declared", "reason"),
    [
        pytest.param("threads", None, id="threads"),
        pytest.param({"serial": "one thread by design"}, "serial: one thread by design", id="serial"),
        pytest.param(None, "the manifest does not declare concurrency", id="undeclared"),
    ],
)
def test_concurrency_is_declared_threads_or_serial_with_a_reason(
    declared: object, reason: str | None
) -> None:
    """``concurrency`` is offered by ``"threads"`` alone; ``{"serial": REASON}`` declines it with
    the reason, and saying nothing declines it too, in every profile."""
    manifest: dict[str, Any] = {"isolationProfile": "memory-scope", "features": {}}
    if declared is not None:
        manifest["concurrency"] = declared
    assert concurrency_declined(manifest) == reason
    assert declines(manifest, "concurrency") == reason
    assert declines({**manifest, "isolationProfile": "kb-grant"}, "concurrency") == reason


class _Meeting:
    """A memory-scope reference whose ``list`` answers only once two calls are in it at once."""

    def __init__(self, declared: object) -> None:
        from kbconform_reference.memory.adapter import MemoryAdapter
        from kbconform_reference.memory.service import ScopedMemory

        meeting = threading.Barrier(2, timeout=3)

        class Meets(ScopedMemory):
            def list(self, scope: object, /) -> Any:
                meeting.wait()
                return super().list(scope)

        class Adapter(MemoryAdapter):
            @property
            def manifest(self) -> dict[str, Any]:
                found = dict(super().manifest)
                found["concurrency"] = declared
                return found

            def _memory(self, options: Any) -> ScopedMemory:
                return Meets(store_fails=options.store_fails)

        self.adapter = Adapter()


@pytest.mark.parametrize(
    ("declared", "together"),
    [
        pytest.param("threads", True, id="threads"),
        pytest.param({"serial": "one call at a time by design"}, False, id="serial"),
    ],
)
def test_kbconform_serve_over_http_answers_requests_at_once_only_when_declared(
    declared: object, together: bool
) -> None:
    """Two requests over HTTP to a backend whose call returns only when both are in it: a
    manifest declaring threads has them served at once (both answered), a serial one in turns
    (the first waits alone, and fails); the harness's own requests still work (control)."""
    from kbconform.adapter import BackendOptions, Manifest
    from kbconform.harness import Dispatcher, HarnessAdapter, HttpTransport, serve_http

    served = _Meeting(declared).adapter
    dispatcher = Dispatcher(served, Manifest.from_mapping(served.manifest))
    urls: list[str] = []
    ready = threading.Event()
    server = threading.Thread(
        target=serve_http,
        args=(dispatcher, "127.0.0.1", 0, lambda url: (urls.append(url), ready.set())),
        daemon=True,
    )
    server.start()
    assert ready.wait(30)
    client = HarnessAdapter(HttpTransport(urls[0]), timeout=30)
    backend = client.open(BackendOptions())
    answers: list[object] = []

    def call() -> None:
        try:
            answers.append(list(backend.list({"user_id": "alice"})))
        except Exception as error:  # the serial backend's lone call fails: a RemoteError
            answers.append(error)

    callers = [threading.Thread(target=call) for _ in range(2)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(30)
    assert len(answers) == 2
    assert all(answer == [] for answer in answers) is together, answers
    client.close(backend)
    client.shutdown()
    server.join(30)
    assert not server.is_alive()


@pytest.mark.slow
def test_over_http_the_reference_passes_and_a_racy_mutant_fails_the_concurrency_suite() -> None:
    """The memory-scope reference served by kbconform serve over HTTP (requests at once) passes
    conc-01 to conc-03 on both read facades; the same reference keeping its caller on the
    service object fails conc-01 and conc-02 there, and keeping it only for its writes fails
    conc-03 (the race crosses harness-v1 over HTTP). The three runs fork from one warm process,
    as a mutant sweep's do."""
    from kbconform import runner

    warm = runner.Warm()

    def statuses(adapter: str) -> dict[str, str]:
        outcome = runner.run_suites(adapter, transport="http", select=["conc-*"], seed=0, warm=warm)
        return {test["id"]: test["status"] for test in outcome.report["tests"]}

    facades = ("search-memories", "list-memories")
    reads = {f"conc-0{n}[{facade}]" for n in (1, 2) for facade in facades}
    writes = {f"conc-03[{facade}]" for facade in facades}
    try:
        passed = statuses("kbconform_reference.memory.adapter:qdrant_local")
        racy = statuses("kbconform_reference.memory.mutants:by_name.mem_caller_on_self")
        stamping = statuses("kbconform_reference.memory.mutants:by_name.mem_write_caller_on_self")
    finally:
        warm.close()
    assert passed == dict.fromkeys(reads | writes, "pass")
    assert {stable: racy[stable] for stable in reads} == dict.fromkeys(reads, "fail")
    assert stamping == {**dict.fromkeys(reads, "pass"), **dict.fromkeys(writes, "fail")}


class Notebook:
    """A backend of notes, each caller's own: a read shows them, a write adds one."""

    def __init__(self) -> None:
        self.notes = {"a": {"a1": "kba1 one"}, "b": {"b1": "kbb1 two"}, "c": {"c1": "kbc1 three"}}
        self.lock, self.given = threading.Lock(), 0

    def read(self, caller: object) -> dict[str, str]:
        if caller not in self.notes:
            raise Unauthenticated("no identity")
        time.sleep(0.0005)
        return dict(self.notes[caller])  # type: ignore[index]

    def write(self, caller: object, text: str) -> str:
        if caller not in self.notes:
            raise Unauthenticated("no identity")
        with self.lock:
            self.given += 1
            note = f"n{self.given}"
            self.notes[caller][note] = text  # type: ignore[index]
        return note


@dataclass
class WriterOnSelf(Notebook):
    """Each write keeps its caller on the shared object and stamps the note with it."""

    current: object = None

    def __post_init__(self) -> None:
        Notebook.__init__(self)

    def write(self, caller: object, text: str) -> str:
        self.current = caller
        time.sleep(0.0005)
        return super().write(self.current, text)


@dataclass
class Writers(Tiny):
    """Readers a and b write, c reads; the model holds every note that landed."""

    readers: tuple[Reader, ...] = (Reader("a", "a"), Reader("b", "b"), Reader("c", "c"))
    model: dict[str, dict[str, str]] = field(
        default_factory=lambda: {"a": {"a1": "kba1 one"}, "b": {"b1": "kbb1 two"}, "c": {"c1": "kbc1 three"}}
    )

    def expected(self, facade: str, reader: Reader) -> Reading:
        return Reading(dict(self.model[reader.identity]), len(self.model[reader.identity]))

    def writers(self) -> tuple[Reader, ...]:
        return self.readers[:2]

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        return backend.write(identity, f"{mark} a note")

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        self.model[writer.identity][str(answer)] = f"{mark} a note"
        return []


def _writes(backend: Notebook) -> tuple[Any, list[str]]:
    world = Writers()
    assert isinstance(world, Writing)
    before = {r.label: world.expected("read", r) for r in world.readers}
    nobody = world.no_identities()
    found = writes_at_once(
        world, backend, "read", world.readers[2:], nobody, rng=random.Random(1), reach="threads", deadline=10
    )
    return found, judge_writes(world, backend, "read", found, before)


def test_writers_at_once_on_a_sound_backend_each_land_in_their_own_scope() -> None:
    """Two writers, a reader and two callers with no identity, every round: no problem, every
    call made, every write recorded (the control of the test below)."""
    found, problems = _writes(Notebook())
    assert found.storm.problems == {}
    assert problems == []
    assert found.storm.calls == 5 * WRITE_ROUNDS
    assert len(found.landed) == 2 * WRITE_ROUNDS
    assert len(found.readings) == WRITE_ROUNDS


def test_a_write_stamped_with_the_caller_kept_on_the_object_is_found_in_anothers_scope() -> None:
    """A backend that stamps each write with the caller kept on itself: a writer's note lands in
    the other's scope (shown there, lacking in its own), a no-identity write lands, or a
    writer's write is refused as the no-identity caller beside it (C4)."""
    found, problems = _writes(WriterOnSelf())
    said = found.storm.summary() + "\n".join(problems)
    assert any(
        words in said for words in ("which it may not read", "was answered, not refused", "write was refused")
    ), said


class BreaksUnderTwo(Sound):
    """A backend whose store client is made for one caller at a time: a read that meets another
    in flight raises (an error of the backend, not a refusal of the contract)."""

    def __init__(self) -> None:
        self.inside = 0
        self.lock = threading.Lock()

    def read(self, caller: object) -> dict[str, str]:
        with self.lock:
            self.inside += 1
            crowded = self.inside > 1
        try:
            time.sleep(0.002)
            if crowded:
                raise IndexError("index 14 is out of bounds for axis 0 with size 14")
            return super().read(caller)
        finally:
            with self.lock:
                self.inside -= 1


def test_a_call_that_fails_while_others_are_served_charges_crashed_not_a_crossing() -> None:
    """C5: a backend raising its own error when two calls meet is found, and its storm charges
    ``crashed`` (no data crossed); taking turns, the same backend serves every call (control)."""
    from kbconform.conformance import Charge

    found = _storm(BreaksUnderTwo(), 0)
    assert "failed: IndexError" in found.summary(), found.summary()
    assert found.charge() == Charge(None, "crashed")
    assert _storm(BreaksUnderTwo(), 0, reach="turns").problems == {}


def test_a_storm_charges_what_its_gravest_problem_was() -> None:
    """A caller with no identity answered charges no identity (one cause with its sequential
    failures); a reading that only lacked items charges recall; a problem the judging gave no
    charge (a crossing, a race) outranks a recall; no problem, no charge (control)."""
    from kbconform.conformance import Charge, Storm

    storm = Storm("requests", 1)
    assert storm.charge() is None
    storm.found("acme", "shows 5 items; its scope holds 6", Charge(None, "recall"))
    assert storm.charge() == Charge(None, "recall")
    storm.found("no identity (None)", "was answered, not refused: 3 results", Charge("no identity", "read"))
    assert storm.charge() == Charge("no identity", "read")
    raced = Storm("threads", 1)
    raced.found("acme", "shows 5 items; its scope holds 6", Charge(None, "recall"))
    raced.found("beta", "shows acme's item, which it may not read")
    assert raced.charge() == Charge(None, "read")
    raced.found("gamma", "failed: IndexError()", Charge(None, "crashed"))
    assert raced.charge() == Charge(None, "read")  # a crossing outranks a crash
