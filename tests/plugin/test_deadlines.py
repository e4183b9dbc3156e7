"""Every call into an adapter has a deadline (kbconform.conformance's Caller and Guarded)."""

from __future__ import annotations

import threading
import time

import pytest

from kbconform.conformance import (
    BackendBroken,
    DeadlineExceeded,
    NotImplementedFacade,
    Unimplemented,
    batched,
    ending_tests,
)
from kbconform.conformance._deadline import Caller, Guarded, Tail
from kbconform.errors import NotFound


def test_a_call_returns_its_value_and_raises_its_own_errors() -> None:
    """Within the deadline a call is transparent: its value, or its own exception."""
    caller = Caller(5)
    assert caller.call("add", lambda a, b: a + b, 2, b=3) == 5
    with pytest.raises(NotFound):
        caller.call("get", lambda: (_ for _ in ()).throw(NotFound("c1")))
    caller.close()


def test_a_call_that_hangs_fails_naming_it_and_every_later_call_ends_at_once() -> None:
    """A hang raises DeadlineExceeded with the call's name; from then on the backend is taken as
    broken: every later call ends at once with BackendBroken naming the call that hung, and
    only the last call (the adapter's shutdown) is still made, within the deadline."""
    caller = Caller(0.2)
    release = threading.Event()
    assert caller.call("backend.get()", lambda: "before") == "before"  # control
    with pytest.raises(DeadlineExceeded) as raised:
        caller.call("backend.query()", release.wait)
    assert "backend.query() did not return within 0.2 s" in str(raised.value)
    started = time.monotonic()
    for _ in range(3):
        with pytest.raises(BackendBroken) as broken:
            caller.call("backend.get()", lambda: "answer")
        assert "backend.query() did not return within its deadline of 0.2 s" in str(broken.value)
    assert time.monotonic() - started < 0.2  # no call waited for a deadline
    assert caller.last("adapter.shutdown()", lambda: "shut") == "shut"
    with pytest.raises(BackendBroken):  # still broken after the last call
        caller.call("backend.get()", lambda: "answer")
    release.set()
    caller.close()


def test_a_slow_call_that_answers_within_its_deadline_does_not_trip_the_backend() -> None:
    """A backend that is slow but answers (a good part of its deadline, every call, more than the
    deadline together) is not broken: every call returns its value (the control of the
    breaker)."""
    caller = Caller(1.0)
    for n in range(4):
        assert caller.call("backend.query()", lambda n=n: time.sleep(0.3) or n) == n
    assert caller.tripped is None


def test_a_trip_from_outside_ends_every_later_call_naming_its_cause() -> None:
    """A harness's own deadline fires before the caller's: the run trips the caller with it."""
    caller = Caller(5)
    caller.trip("harness query (request 9) did not return within its deadline of 1 s")
    caller.trip("a later cause")  # the first one stays
    with pytest.raises(BackendBroken, match=r"harness query \(request 9\)"):
        caller.call("backend.get()", lambda: "answer")


def test_a_batch_crosses_to_the_worker_once_and_each_call_keeps_its_deadline() -> None:
    """A batch of calls runs on the worker: each call counts, returns its value, and a call in
    the batch that hangs fails after its own deadline, named, although the batch ran longer."""
    caller = Caller(0.3)
    threads: set[int] = set()

    def read(n: int) -> int:
        threads.add(threading.get_ident())
        time.sleep(0.05)
        return n

    guarded = Guarded(type("B", (), {"get": staticmethod(read)})(), caller)
    assert batched(guarded, lambda: [guarded.get(n) for n in range(10)]) == list(range(10))
    assert caller.calls == 10
    assert len(threads) == 1
    assert threading.get_ident() not in threads
    release = threading.Event()
    with pytest.raises(DeadlineExceeded, match=r"backend\.count\(\)"):
        caller.batch(lambda: [caller.call("backend.get()", read, 1) for _ in range(8)]
                     + [caller.call("backend.count()", release.wait)])  # fmt: skip
    release.set()  # the abandoned batch goes on: its next call is refused, not made
    with pytest.raises(BackendBroken):
        caller.call("backend.get()", read, 2)


def test_a_batch_keeps_the_callers_context() -> None:
    """A facade not implemented yet ends a test at once inside a batch as outside it (the
    context variable ending_tests sets reaches the worker)."""

    class Backend:
        def get(self) -> None:
            raise NotImplementedError("get: to do")

    guarded = Guarded(Backend(), Caller(5))
    with ending_tests(), pytest.raises(NotImplementedFacade):
        batched(guarded, guarded.get)
    with pytest.raises(Unimplemented):  # control: outside a test's call, the plain error
        batched(guarded, guarded.get)


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


def test_a_fixture_ended_by_a_call_not_answered_fails_its_set_up_as_pytest_expects() -> None:
    """In a fixture's set-up, a deadline, a broken harness or a backend taken as broken becomes
    pytest's failure (an outcome pytest tears fixtures down after), carrying the error as its
    cause and its message; a skip, a failure and a plain error pass unchanged (controls)."""
    from kbconform.harness import HarnessBroken
    from kbconform.plugin._fixtures import NotAnswered, answered, unanswered

    for error in (
        DeadlineExceeded("backend.get()", 1),
        HarnessBroken("harness get (request 3)", "got no answer within its deadline of 1 s", deadline=1),
        BackendBroken("backend.get() did not return within its deadline of 1 s"),
    ):
        with pytest.raises(NotAnswered) as raised, answered():
            raise error
        assert unanswered(raised.value) is error
        assert str(error) in str(raised.value)
    for kept in (pytest.skip.Exception("declined"), pytest.fail.Exception("failed"), NotFound("c1")):
        with pytest.raises(type(kept)) as raised, answered():
            raise kept
        assert raised.value is kept
        assert unanswered(kept) is kept
