"""Where a write's store fails: every store call it makes, one at a time.

A write judged for atomicity is made once with no fault, counting its store calls (under
:data:`COUNTING`), then again with the store failing at each of them (:func:`fault_points`),
from that call on (``lasting``) or at that call only (``transient``). The kit never assumes how
many store calls a write takes: the last one (a commit) fails too. :func:`every_fault` is the
whole judgement for a profile whose driver holds the model (pool-12, grant-16).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbconform.adapter import FaultPlan, FaultSwitch
from kbconform.errors import BackendUnavailable

#: The two kinds of fault: from the k-th store call on, or at that call only.
FAULT_KINDS = ("lasting", "transient")
#: The most faulted attempts of one write: one at each of its store calls when it makes at most
#: this many, else at the first half of them and at calls spread evenly over the rest.
ATTEMPTS = 50
#: A plan that fails no call: the control write counts its store calls under it.
COUNTING = FaultPlan(2**62)


class Fault:
    """The ``store_fails`` switch: closed until :meth:`open_at` k, then failing the k-th store
    call from then on (0-based; ``lasting``) or that call only (``transient``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.switch = FaultSwitch()
        self.at: int | None = None

    def open_at(self, k: int) -> None:
        self.at = k
        self.switch.set(FaultPlan(k, None if self.kind == "lasting" else 1))

    def close(self) -> bool:
        """Close the switch; True when it failed a store call since :meth:`open_at`."""
        consulted = self.switch.set(None)
        fired = self.at is not None and consulted > self.at
        self.at = None
        return fired


def fault_points(calls: int, attempts: int = ATTEMPTS) -> list[int]:
    """The store calls (0-based) to fail a write at, of the ``calls`` it makes: every one, or at
    most ``attempts`` of them (the first ones, then spread to the last)."""
    if calls <= attempts:
        return list(range(calls))
    head = attempts // 2
    spread = attempts - head - 1
    return sorted({*range(head), *(head + round(i * (calls - 1 - head) / spread) for i in range(spread + 1))})


#: A fresh backend's driver for one attempt, whose store fails as the given :class:`Fault`
#: says, with the call to make on it: ``(driver, operation, args)``.
Opened = Callable[[Fault], tuple[Any, str, tuple[Any, ...]]]


def every_fault(
    label: str,
    opened: Opened,
    close: Callable[[Any], None],
    *,
    attempts: int = ATTEMPTS,
    must_call: bool = False,
    attempt: Callable[[Any, str, tuple[Any, ...]], Any] | None = None,
    after: Callable[[Any, str, tuple[Any, ...]], None] | None = None,
) -> int:
    """One write judged at every store call it makes, for a profile whose driver (a
    :class:`~kbconform.profiles.project_pool.world.PoolDriver` or
    :class:`~kbconform.profiles.kb_grant.world.GrantDriver`)
    holds the model: ``call``, ``attempt(op, *args, may_fail=True)`` and ``check()``.

    The write is made once unfaulted on a fresh backend, counting its store calls (``must_call``:
    it must make one); then, on a fresh backend for each of those calls (:func:`fault_points`,
    at most ``attempts``), of each kind, with the store failing there: ``attempt`` (default the
    driver's, which takes KB_BACKEND_UNAVAILABLE as a call that changed nothing and commits one
    that landed) must raise BackendUnavailable only when a store call failed, and not return
    when the first failed for good; then ``after`` (default the driver's ``check``: every read
    equals the model) and, when it raised, the same call again with the store back must land.
    A failure names the write, the call it failed at and what the write did. How many faulted
    attempts raised (the caller's control)."""
    attempt = attempt or (lambda d, operation, args: d.attempt(operation, *args, may_fail=True))
    after = after or (lambda d, operation, args: d.check())
    counter = Fault("lasting")
    d, operation, args = opened(counter)
    counter.switch.set(COUNTING)
    try:
        d.call(operation, *args)
    finally:
        calls = counter.switch.set(None)
    assert calls > 0 or not must_call, (
        f"{label}: the write made no store call: the backend never consulted its fault switch"
    )
    after(d, operation, args)
    close(d.backend)
    failed = 0
    for kind in FAULT_KINDS:
        for k in fault_points(calls, attempts):
            fault = Fault(kind)
            d, operation, args = opened(fault)
            where = f"{label} {args!r} with the store failing at its call {k} ({kind})"
            fault.open_at(k)
            try:
                outcome = attempt(d, operation, args)
            finally:
                fired = fault.close()
            raised = isinstance(outcome, BackendUnavailable)
            if raised:
                failed += 1
                assert fired, f"{where}: KB_BACKEND_UNAVAILABLE with no store call failing"
            elif kind == "lasting":
                assert k > 0, f"{where}: every store call failed, and the call returned {outcome!r}"
            said = "raised KB_BACKEND_UNAVAILABLE" if raised else f"returned {outcome!r}"
            try:
                after(d, operation, args)
                if raised:
                    d.call(operation, *args)  # the store back: the same call lands
                    after(d, operation, args)
            except AssertionError as error:
                raise AssertionError(f"{where}, which {said}; once the store was back: {error}") from None
            close(d.backend)
    return failed
