"""Calls into the adapter: each returns within a deadline or fails naming the call, and what
it prints is kept within a bound.

A Python call cannot be killed from outside, so each call runs on a worker thread and the
caller waits at most the deadline. A call that overruns leaves its worker behind (a daemon
thread, so it never holds the process open). The error is a ``BaseException``: no
``pytest.raises(KbconformError)`` or ``except Exception`` in a suite or in Hypothesis can
mistake a hang for an answer, and Hypothesis does not replay it.

Once a call has overrun its deadline, the backend is taken as broken (a circuit breaker): every
later call ends at once with :class:`BackendBroken`, naming the call that hung, instead of
waiting out its own deadline; only the adapter's shutdown is still tried (:meth:`Caller.last`).
A backend that hangs costs a run two deadlines, whatever its tests.

Crossing to the worker costs a thread hand-off per call. A block of many calls in a row (a
state machine's check, reading back what was seeded) crosses once (:meth:`Caller.batch`): the
block runs on the worker, each call in it still has its own deadline, and a deadline that
fires names the call in progress.

During a call, ``sys.stdout``/``sys.stderr`` and file descriptors 1 and 2 (what C code and
child processes write) go to a :class:`Tail`, which keeps the first and last
``OUTPUT_LIMIT // 2`` characters and counts the rest: a backend that prints without end costs
no memory (pytest's own capture would hold every byte until the test ends).
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: The default per-call deadline, in seconds.
DEFAULT_CALL_TIMEOUT = 60.0
#: What is kept of the adapter's output between two reads of it, in characters.
OUTPUT_LIMIT = 64 * 1024


class Tail(io.TextIOBase):
    """A text sink that keeps the head and the tail of what it is given, and counts the rest."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.half = limit // 2
        self.head = ""
        self.tail = ""
        self.cut = 0
        self.lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        given = len(text)
        with self.lock:
            room = self.half - len(self.head)
            if room > 0:
                self.head += text[:room]
                text = text[room:]
            if text:
                joined = self.tail + text[-self.half :]
                self.cut += len(text) - len(text[-self.half :]) + max(0, len(joined) - self.half)
                self.tail = joined[-self.half :]
        return given

    def take(self) -> str:
        """What was kept since the last take (empty when nothing was written)."""
        with self.lock:
            cut = f"\n[kbconform: {self.cut} characters cut]\n" if self.cut else ""
            shown = self.head + cut + self.tail
            self.head, self.tail, self.cut = "", "", 0
        return shown


class _Descriptors:
    """A pipe that file descriptors 1 and 2 point to during a call, drained into a Tail."""

    def __init__(self, sink: Tail) -> None:
        self.read, self.write = os.pipe()
        threading.Thread(target=self._drain, args=(sink,), name="kbconform-output", daemon=True).start()

    def _drain(self, sink: Tail) -> None:
        while chunk := os.read(self.read, 1 << 16):
            sink.write(chunk.decode("utf-8", errors="replace"))

    @contextlib.contextmanager
    def redirected(self) -> Iterator[None]:
        try:
            saved = [os.dup(1), os.dup(2)]
        except OSError:  # a closed standard stream: nothing to redirect
            yield
            return
        try:
            for target in (1, 2):
                os.dup2(self.write, target)
            yield
        finally:
            for target, fd in zip((1, 2), saved, strict=True):
                os.dup2(fd, target)
                os.close(fd)


class DeadlineExceeded(BaseException):
    """A call into the adapter did not return within its deadline."""

    def __init__(self, call: str, seconds: float) -> None:
        super().__init__(call, seconds)
        self.call = call
        self.seconds = seconds

    def __str__(self) -> str:
        return (
            f"{self.call} did not return within {self.seconds:g} s (the per-call deadline; "
            "raise it with --kbconform-call-timeout if the backend is slow, not stuck)"
        )


class Unimplemented(NotImplementedError):
    """A call the backend has not implemented yet: it raised ``NotImplementedError`` (behind
    harness-v1, the harness answered ``KB_NOT_IMPLEMENTED``). The plugin counts the tests that
    end at it by ``call``, and prints one line for each call instead of a traceback per test."""

    def __init__(self, call: str, reason: str) -> None:
        super().__init__(call, reason)
        self.call = call
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.call} is not implemented yet: {self.reason}"


class NotImplementedFacade(BaseException):
    """:class:`Unimplemented` met while a test runs (:func:`ending_tests`): like
    :class:`DeadlineExceeded`, a ``BaseException``, so that no suite's error handling takes it
    for the behaviour under test and Hypothesis neither shrinks nor replays it: the test ends at
    once. (In a fixture, the plain :class:`Unimplemented`, which pytest keeps for the tests
    that share the fixture.)"""

    def __init__(self, missing: Unimplemented) -> None:
        super().__init__(missing)
        self.missing = missing

    def __str__(self) -> str:
        return str(self.missing)


_ENDS_TESTS: contextvars.ContextVar[bool] = contextvars.ContextVar("kbconform_ends_tests", default=False)


@contextlib.contextmanager
def ending_tests() -> Iterator[None]:
    """Inside the block (a test's call), a call not implemented raises :class:`NotImplementedFacade`."""
    token = _ENDS_TESTS.set(True)
    try:
        yield
    finally:
        _ENDS_TESTS.reset(token)


class BackendBroken(BaseException):
    """A call not made: an earlier call overran its deadline, so the backend is taken as broken
    and every later call ends at once (a circuit breaker). Every test that needs the backend
    ends with the same message, naming the call that hung."""

    def __init__(self, cause: str) -> None:
        super().__init__(cause)
        self.cause = cause

    def __str__(self) -> str:
        return (
            f"not run: the backend is taken as broken since {self.cause}; a backend that hangs "
            "would cost every later test its deadline, so no later call is made"
        )


class _Worker:
    """A worker thread and the call in progress on it: its name and when it began (name None
    between the calls of a batch, while the kit's own code runs)."""

    def __init__(self, owner: Caller) -> None:
        self.owner = owner
        self.current: tuple[str | None, float] = (None, time.monotonic())
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[Any]] | None] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._serve, name="kbconform-call", daemon=True).start()

    def _serve(self) -> None:
        _ON_WORKER.worker = self
        while (job := self.jobs.get()) is not None:
            function, answer = job
            try:
                answer.put((True, function()))
            except BaseException as error:  # handed back to the caller, whatever it is
                answer.put((False, error))


#: On a worker thread, its :class:`_Worker` (the calls of a batch run there without a hand-off).
_ON_WORKER = threading.local()


class Caller:
    """Runs calls with a deadline, one at a time, on a worker thread; after one overruns, none.

    :attr:`calls` counts the calls made (each adapter call, in a batch or not).
    """

    def __init__(self, seconds: float = DEFAULT_CALL_TIMEOUT) -> None:
        if not seconds > 0:
            raise ValueError(f"a call deadline must be positive; got {seconds!r}")
        self.seconds = seconds
        #: How many calls it has run (a report gives each test the calls it made).
        self.calls = 0
        self.output = Tail()
        #: The call that overran its deadline (or that :meth:`trip` was given), once one did.
        self.tripped: str | None = None
        self._worker: _Worker | None = None
        self._descriptors: _Descriptors | None = None

    def trip(self, cause: str) -> None:
        """Take the backend as broken from now on: ``cause`` names the call that hung (a
        harness's own deadline, which fires before this caller's). The first cause stays."""
        self.tripped = self.tripped or cause

    def call(self, name: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)``, or :class:`DeadlineExceeded` naming ``name``; after a
        call overran its deadline, :class:`BackendBroken` at once."""
        if self.tripped is not None:
            raise BackendBroken(self.tripped)
        self.calls += 1
        inside: _Worker | None = getattr(_ON_WORKER, "worker", None)
        if inside is not None and inside.owner is self:  # in a batch: no hand-off
            if inside is not self._worker:  # the batch was abandoned at a deadline
                raise BackendBroken(self.tripped or name)
            inside.current = (name, time.monotonic())
            try:
                return function(*args, **kwargs)
            finally:
                inside.current = (None, time.monotonic())
        return self._handoff(name, lambda: function(*args, **kwargs))

    def batch(self, block: Callable[[], T]) -> T:
        """``block()`` run on the worker in one hand-off: the calls it makes through this
        caller cross no thread, each still within its own deadline, and a deadline that fires
        names the call in progress. The block draws nothing from Hypothesis (whose context
        belongs to the test's thread); its context variables are the caller's."""
        if self.tripped is not None:
            raise BackendBroken(self.tripped)
        inside: _Worker | None = getattr(_ON_WORKER, "worker", None)
        if inside is not None and inside.owner is self:  # a batch within a batch
            return block()
        context = contextvars.copy_context()
        return self._handoff(None, lambda: context.run(block))

    def within(self, seconds: float, name: str, function: Callable[[], T]) -> T:
        """``function()`` with a deadline of ``seconds`` instead of the caller's (loading an
        adapter, which imports it: its start, not a call)."""
        if self.tripped is not None:
            raise BackendBroken(self.tripped)
        usual, self.seconds = self.seconds, max(seconds, self.seconds)
        try:
            return self._handoff(name, function)
        finally:
            self.seconds = usual

    def last(self, name: str, function: Callable[..., T], *args: Any) -> T:
        """A call made even when the backend is taken as broken (the adapter's shutdown, which
        may release what it started), within the deadline as any call."""
        tripped, self.tripped = self.tripped, None
        try:
            return self.call(name, function, *args)
        finally:
            self.tripped = tripped or self.tripped

    def _handoff(self, name: str | None, job: Callable[[], T]) -> T:
        if self._worker is None:
            self._worker = _Worker(self)
        if self._descriptors is None:
            self._descriptors = _Descriptors(self.output)
        worker = self._worker
        answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        streams = sys.stdout, sys.stderr
        with self._descriptors.redirected():
            sys.stdout = sys.stderr = self.output
            try:
                worker.current = (name, time.monotonic())
                worker.jobs.put((job, answer))
                done, value = self._wait(worker, answer)
            finally:
                sys.stdout, sys.stderr = streams
        if done:
            return value  # type: ignore[no-any-return]
        raise value

    def _wait(self, worker: _Worker, answer: queue.SimpleQueue[tuple[bool, Any]]) -> tuple[bool, Any]:
        """The worker's answer, or :class:`DeadlineExceeded` once its call in progress has run
        for the deadline (between a batch's calls, the kit's own code has none)."""
        while True:
            name, began = worker.current
            left = self.seconds - (time.monotonic() - began) if name is not None else self.seconds
            try:
                return answer.get(timeout=max(left, 0.0))
            except queue.Empty:
                name, began = worker.current
                if name is not None and time.monotonic() - began >= self.seconds:
                    self._worker = None  # the stuck worker is abandoned, and with it the backend
                    overran = DeadlineExceeded(name, self.seconds)
                    self.trip(f"{name} did not return within its deadline of {self.seconds:g} s")
                    raise overran from None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.jobs.put(None)
            self._worker = None


class Guarded:
    """A backend whose every method call goes through a :class:`Caller`.

    Attributes that are not callable pass through; ``inner`` is the backend itself.
    """

    __slots__ = ("_caller", "inner")

    def __init__(self, inner: Any, caller: Caller) -> None:
        self.inner = inner
        self._caller = caller

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return self._caller.call(f"backend.{name}()", value, *args, **kwargs)
            except NotImplementedError as error:
                missing = Unimplemented(name, str(error) or "NotImplementedError")
                if _ENDS_TESTS.get():
                    raise NotImplementedFacade(missing) from None
                raise missing from None

        return guarded

    def __repr__(self) -> str:
        return f"Guarded({self.inner!r})"


def batched(backend: Any, block: Callable[[], T]) -> T:
    """``block()``; when ``backend`` is a run's (every call guarded), the calls the block makes
    cross to the worker once (:meth:`Caller.batch`): for many reads in a row of one backend."""
    if isinstance(backend, Guarded):
        return backend._caller.batch(block)
    return block()
