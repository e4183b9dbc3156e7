"""Callers at once: the engine the concurrency suite stands on, the manifest's declaration, and
harness-v1 over HTTP carrying requests at once (schemas/concurrency.md)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from kbconform._capabilities import concurrency_declined, declines
from kbconform.conformance import Reader, Reading, concurrent_callers, concurrently, overlapping
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


def _storm(backend: Any, anonymous: int, overlapped: bool = True) -> Any:
    world = Tiny()
    crowd = concurrent_callers(world, "read", anonymous)
    return concurrently(world, backend, "read", crowd, overlapped=overlapped, deadline=10, rounds=12)


def test_a_sound_backend_answers_every_caller_at_once_as_itself() -> None:
    """Every reader and every caller that is no identity, 12 rounds each: no problem, and every
    call was made (the control of the tests below)."""
    found = _storm(Sound(), 2)
    assert found.problems == {}
    assert found.calls == 4 * 12


def test_a_caller_kept_on_the_backend_object_is_found_reading_anothers_scope() -> None:
    """Two readers at once on a backend that keeps its caller on itself: a reader is shown the
    other's scope (C1), and a caller that is no identity is answered (C2)."""
    found = _storm(CallerOnSelf(), 2)
    summary = found.summary()
    assert "which it may not read" in summary or "lacks" in summary
    assert any("was answered, not refused" in p for p in found.problems.get("no identity (None)", [])), (
        summary
    )


def test_callers_in_turns_meet_no_race_and_every_answer_is_still_judged() -> None:
    """With a transport that carries one request at a time the callers take turns: the racy
    backend then answers each correctly, and every call was judged."""
    found = _storm(CallerOnSelf(), 2, overlapped=False)
    assert found.problems == {}
    assert found.calls == 4 * 12


def test_a_caller_that_hangs_fails_within_the_deadline() -> None:
    """A call that never returns is a problem named by its caller, not a stuck test."""

    class Hangs(Sound):
        def read(self, caller: object) -> dict[str, str]:
            if caller == "b":
                threading.Event().wait(5)
            return super().read(caller)

    world = Tiny()
    found = concurrently(
        world, Hangs(), "read", concurrent_callers(world, "read", 0), overlapped=True, deadline=0.05, rounds=2
    )
    assert "did not return" in found.summary()


def test_an_adapter_overlaps_unless_its_transport_says_not() -> None:
    class Serial:
        overlaps = False

    assert overlapping(object()) is True
    assert overlapping(Serial()) is False


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
