"""Where a write's store fails: every store call it makes, one at a time.

A write judged for atomicity is made once with no fault, counting its store calls (under
:data:`COUNTING`), then again with the store failing at each of them (:func:`fault_points`),
from that call on (``lasting``) or at that call only (``transient``). The kit never assumes how
many store calls a write takes: the last one (a commit) fails too.
"""

from __future__ import annotations

from kbconform.adapter import FaultPlan, FaultSwitch

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
