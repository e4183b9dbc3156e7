"""Every call into an adapter has a deadline (kbconform.conformance's Caller and Guarded)."""

from __future__ import annotations

import threading

import pytest

from kbconform.conformance import DeadlineExceeded
from kbconform.conformance._deadline import Caller, Guarded, Tail
from kbconform.errors import NotFound


def test_a_call_returns_its_value_and_raises_its_own_errors() -> None:
    """Within the deadline a call is transparent: its value, or its own exception."""
    caller = Caller(5)
    assert caller.call("add", lambda a, b: a + b, 2, b=3) == 5
    with pytest.raises(NotFound):
        caller.call("get", lambda: (_ for _ in ()).throw(NotFound("c1")))
    caller.close()


def test_a_call_that_hangs_fails_naming_it_and_the_next_call_still_works() -> None:
    """A hang raises DeadlineExceeded with the call's name; the stuck worker is abandoned and a
    fresh one serves the next call (control)."""
    caller = Caller(0.2)
    release = threading.Event()
    with pytest.raises(DeadlineExceeded) as raised:
        caller.call("backend.query()", release.wait)
    assert "backend.query() did not return within 0.2 s" in str(raised.value)
    assert caller.call("backend.get()", lambda: "answer") == "answer"
    release.set()
    caller.close()


def test_a_deadline_cannot_be_caught_as_an_answer() -> None:
    """DeadlineExceeded is no Exception: `except Exception` and pytest.raises(KbconformError) in
    a suite cannot take a hang for a refusal."""
    assert not issubclass(DeadlineExceeded, Exception)
    caught = "nothing"
    try:
        try:
            Caller(0.05).call("backend.get()", threading.Event().wait)
        except Exception:
            caught = "an Exception"
    except DeadlineExceeded:
        caught = "the deadline"
    assert caught == "the deadline"


def test_a_guarded_backend_runs_every_method_through_the_caller() -> None:
    """Methods are called with the deadline; plain attributes pass through unchanged."""

    class Backend:
        name = "plain"

        def count(self, principal: object) -> int:
            threading.Event().wait()
            return 0

        def list(self, principal: object) -> list[str]:
            return ["a"]

    guarded = Guarded(Backend(), Caller(0.1))
    assert (guarded.name, guarded.list("p")) == ("plain", ["a"])
    with pytest.raises(DeadlineExceeded, match=r"backend\.count\(\)"):
        guarded.count("p")


def test_a_deadline_must_be_positive() -> None:
    """Zero, negative and NaN deadlines are refused."""
    for seconds in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="must be positive"):
            Caller(seconds)


def test_a_tail_keeps_the_head_and_the_tail_and_counts_the_rest() -> None:
    """Short output is kept whole (control); long output keeps its ends and says how much was cut."""
    tail = Tail(limit=8)
    assert tail.write("abc") == 3
    assert tail.take() == "abc"
    assert tail.take() == ""
    tail.write("0123")
    tail.write("456789")
    tail.write("AB")
    assert tail.take() == "0123\n[kbconform: 4 characters cut]\n89AB"


def test_a_call_s_output_goes_to_the_tail_whatever_writes_it() -> None:
    """print, file descriptor 2 and a child process's output during a call land in the Caller's
    bounded output, and sys.stdout is restored after the call."""
    import os
    import subprocess
    import sys

    caller = Caller(10)
    before = sys.stdout

    def noisy() -> None:
        print("from print")
        os.write(2, b"from fd 2\n")
        subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)

    caller.call("backend.ingest()", noisy)
    assert sys.stdout is before
    pause = threading.Event()
    for _ in range(100):  # the descriptor pipe drains on its own thread
        if "from a child" in caller.output.head:
            break
        pause.wait(0.05)
    printed = caller.output.take()
    assert all(text in printed for text in ("from print", "from fd 2", "from a child")), printed
    caller.close()
