"""Deadlines: every call into the adapter returns within a bound, or fails naming the call.

A Python call cannot be killed from outside, so each call runs on a worker thread and the
caller waits at most the deadline. A call that overruns leaves its worker behind (a daemon
thread, so it never holds the process open) and the next call gets a fresh worker. The error
is a ``BaseException``: no ``pytest.raises(KbconformError)`` or ``except Exception`` in a suite
or in Hypothesis can mistake a hang for an answer, and Hypothesis does not replay it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: The default per-call deadline, in seconds.
DEFAULT_CALL_TIMEOUT = 60.0


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
        self._worker: _Worker | None = None

    def call(self, name: str, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)``, or :class:`DeadlineExceeded` naming ``name``."""
        if self._worker is None:
            self._worker = _Worker()
        answer: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
        self._worker.jobs.put((lambda: function(*args, **kwargs), answer))
        try:
            done, value = answer.get(timeout=self.seconds)
        except queue.Empty:
            self._worker = None  # the stuck worker is abandoned; the next call gets a new one
            raise DeadlineExceeded(name, self.seconds) from None
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
            return self._caller.call(f"backend.{name}()", value, *args, **kwargs)

        return guarded

    def __repr__(self) -> str:
        return f"Guarded({self.inner!r})"
