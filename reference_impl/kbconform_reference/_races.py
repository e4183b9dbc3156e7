"""What the concurrency mutants of every reference share: a service with one request's state
kept where every request shares it (``schemas/concurrency.md``).

Each function here makes a subclass of a reference's service whose named facades keep one
thing about the request in shared state. Every facade of every profile takes its caller first,
so one wrapper fits them all; each mutant set names the facades it breaks. Called by one caller
at a time the subclass answers exactly as the reference does (the sequential suites pass); two
requests that overlap read each other's state:

- :func:`caller_on_self`: the caller kept on the service object for the helpers of the call
  (``self.current_user``, set by a request handler on a shared service); on a write facade,
  the write is stamped with whichever caller set it last;
- :func:`caller_in_context_default`: the caller kept in a context variable whose default, one
  record, is filled in place and never set, so never reset: every thread shares it;
- :func:`shared_results`: the call's results gathered in a buffer on the service object, cleared
  at the start of each call;
- :func:`coalesced`: identical calls in flight at once answered once (a "single flight" cache),
  keyed by the call's arguments without its caller.

Between taking its state and using it a request does what requests do (a token checked, a log
line written): :func:`pause`, a short wait that lets other requests run, as I/O does.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

#: Why a concurrency mutant's run is in process: its race needs two requests in the backend at
#: once, and a harness-v1 run on stdio carries one at a time (served over HTTP, whose requests
#: overlap, it is reached too: tests/plugin/test_concurrency.py).
OVERLAP_ONLY = (
    "its race needs two requests at once: harness-v1 on stdio carries one at a time "
    "(over HTTP the requests overlap and it is killed too)"
)

#: How long a request's I/O between taking its state and using it lasts, in seconds.
IO_SECONDS = 0.0005
#: How long a coalesced call waits for the call it joined, in seconds.
JOIN_SECONDS = 30.0

#: The request's record: its default is one dictionary, which every thread shares.
_REQUEST: contextvars.ContextVar[dict[str, Any]] = contextvars.ContextVar(
    "kbconform_reference_request",
    default={},  # noqa: B039  # the bug this module's context mutant is made of
)


def pause() -> None:
    """What a request does between taking its state and using it: I/O, while others run."""
    time.sleep(IO_SECONDS)


def _subclass(base: type[T], suffix: str, doc: str, methods: dict[str, Callable[..., Any]]) -> type[T]:
    made = type(
        f"{base.__name__}{suffix}", (base,), {"__doc__": doc, "__module__": base.__module__, **methods}
    )
    return made


def caller_on_self(base: type[T], facades: Iterable[str]) -> type[T]:
    """``base`` whose ``facades`` keep their caller on the service object, and call with it."""

    def wrapped(name: str) -> Callable[..., Any]:
        inner = getattr(base, name)

        def facade(self: Any, caller: object, /, *args: Any, **named: Any) -> Any:
            self.current_caller = caller
            pause()
            return inner(self, self.current_caller, *args, **named)

        return facade

    return _subclass(
        base,
        "CallerOnSelf",
        "Each call keeps its caller on the service object (``self.current_caller``) and calls with it.",
        {name: wrapped(name) for name in facades},
    )


def caller_in_context_default(base: type[T], facades: Iterable[str]) -> type[T]:
    """``base`` whose ``facades`` put their caller in the context variable's shared default
    record (never set, never reset), and call with what it holds."""

    def wrapped(name: str) -> Callable[..., Any]:
        inner = getattr(base, name)

        def facade(self: Any, caller: object, /, *args: Any, **named: Any) -> Any:
            _REQUEST.get()["caller"] = caller
            pause()
            return inner(self, _REQUEST.get()["caller"], *args, **named)

        return facade

    return _subclass(
        base,
        "CallerInContext",
        "Each call puts its caller in a context variable's default record, filled in place.",
        {name: wrapped(name) for name in facades},
    )


def shared_results(base: type[T], facades: Iterable[str]) -> type[T]:
    """``base`` whose ``facades`` (each returning a sequence) gather their results in one
    buffer on the service object, cleared at each call's start, and return what it holds."""

    def wrapped(name: str) -> Callable[..., Any]:
        inner = getattr(base, name)

        def facade(self: Any, caller: object, /, *args: Any) -> Any:
            buffer: list[Any] = self.__dict__.setdefault("results_buffer", [])
            buffer.clear()
            for item in inner(self, caller, *args):
                buffer.append(item)
            pause()
            return list(buffer)

        return facade

    return _subclass(
        base,
        "SharedResults",
        "Each call gathers its results in one buffer on the service object.",
        {name: wrapped(name) for name in facades},
    )


def coalesced(base: type[T], facades: Iterable[str]) -> type[T]:
    """``base`` whose ``facades`` answer identical calls in flight at once with one answer,
    keyed by the facade and its arguments but not its caller (the answer, or the error)."""

    def wrapped(name: str) -> Callable[..., Any]:
        inner = getattr(base, name)

        def facade(self: Any, caller: object, /, *args: Any) -> Any:
            lock, flights = self.__dict__.setdefault("flights", (threading.Lock(), {}))
            key = (name, repr(args))
            with lock:
                joined = flights.get(key)
                if joined is None:
                    own: Future[Any] = Future()
                    flights[key] = own
            if joined is not None:
                return joined.result(JOIN_SECONDS)
            try:
                pause()
                answer = inner(self, caller, *args)
            except BaseException as error:
                own.set_exception(error)
                raise
            else:
                own.set_result(answer)
                return answer
            finally:
                with lock:
                    del flights[key]

        return facade

    return _subclass(
        base,
        "Coalesced",
        "Identical calls in flight at once get one answer, keyed without the caller.",
        {name: wrapped(name) for name in facades},
    )
