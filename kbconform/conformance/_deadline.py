"""Calls into the adapter: each returns within a deadline or fails naming the call, and what
it prints is kept within a bound.

A Python call cannot be killed from outside, so each call runs on a worker thread and the
caller waits at most the deadline. A call that overruns leaves its worker behind (a daemon
thread, so it never holds the process open) and the next call gets a fresh worker. The error
is a ``BaseException``: no ``pytest.raises(KbconformError)`` or ``except Exception`` in a suite
or in Hypothesis can mistake a hang for an answer, and Hypothesis does not replay it.

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


class _Worker:
    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[Any]] | None] = (
            queue.SimpleQueue()
        )
        threading.Thread(target=self._serve, name="kbconform-call", daemon=True).start()

    def _serve(self) -> None:
        while (job := self.jobs.get()) is not None:
            function, answer = job
            try:
                answer.put((True, function()))
            except BaseException as error:  # handed back to the caller, whatever it is
                answer.put((False, error))


class Caller:
    """Runs calls with a deadline, one at a time, on a worker thread."""

    def __init__(self, seconds: float = DEFAULT_CALL_TIMEOUT) -> None:
        if not seconds > 0:
            raise ValueError(f"a call deadline must be positive; got {seconds!r}")
        self.seconds = seconds
        #: How many calls it has run (a report gives each test the calls it made).
        self.calls = 0
        self.output = Tail()
        self._worker: _Worker | None = None
        self._descriptors: _Descriptors | None = None

    def call(self, name: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)``, or :class:`DeadlineExceeded` naming ``name``."""
        self.calls += 1
        if self._worker is None:
            self._worker = _Worker()
        if self._descriptors is None:
            self._descriptors = _Descriptors(self.output)
        answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        streams = sys.stdout, sys.stderr
        with self._descriptors.redirected():
            sys.stdout = sys.stderr = self.output
            try:
                self._worker.jobs.put((lambda: function(*args, **kwargs), answer))
                done, value = answer.get(timeout=self.seconds)
            except queue.Empty:
                self._worker = None  # the stuck worker is abandoned; the next call gets a new one
                raise DeadlineExceeded(name, self.seconds) from None
            finally:
                sys.stdout, sys.stderr = streams
        if done:
            return value  # type: ignore[no-any-return]
        raise value

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
