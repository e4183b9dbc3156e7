"""What the suites hand a backend in its options: a store-fault switch and a revision map.

Both are data the suites control. In process, a backend calls them; behind harness-v1 they
travel as data (a fault plan, a revision map) and the harness plays them back, so the suites
drive a backend in another process exactly as they drive one in theirs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kbconform.errors import RevisionBoundaryUnavailable


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Counting from when it is set: the next ``passing`` store calls succeed, then ``failing``
    fail (None: every later one).

    ``stores`` (the ``kb-grant`` profile, whose backend names the store it consults for) limits
    the plan to those stores: a consultation for another store neither fails nor counts. ``hang``
    makes a failing consultation block its caller's thread that many seconds before it answers,
    or until the plan is replaced, whichever comes first: a store that does not answer in time
    until it is back.
    """

    passing: int
    failing: int | None = None
    stores: frozenset[str] | None = None
    hang: float = 0.0

    def fails(self, seen: int) -> bool:
        """Whether the store call consulting the switch ``seen``-th (0-based) fails."""
        return seen >= self.passing and (self.failing is None or seen < self.passing + self.failing)

    def applies(self, store: str | None) -> bool:
        """Whether a consultation for ``store`` (None: a backend that names none) is the plan's."""
        return self.stores is None or store in self.stores


class FaultSwitch:
    """A backend's ``store_fails`` switch (feature ``fault-injection``), set by plans.

    A backend consults it (calls it) once before every call it makes to its store; it answers
    True while that store call must fail. :meth:`set` replaces the plan, ends the hangs of the
    one it replaces (their calls still fail) and says how many store calls consulted it. Behind
    harness-v1 the switch lives in the harness: :meth:`set` is forwarded to it, and the switch
    is never called here.
    """

    def __init__(self) -> None:
        self._plan: FaultPlan | None = None
        self._consulted = 0
        self._lock = threading.Lock()
        self._replaced = threading.Event()  # set when the plan in force is replaced
        self._remote: Callable[[FaultPlan | None], int] | None = None

    def __call__(self, store: str | None = None) -> bool:
        if self._remote is not None:
            raise RuntimeError("this fault switch is played back by a harness; it is not consulted here")
        with self._lock:
            plan = self._plan
            if plan is not None and not plan.applies(store):
                return False
            seen, self._consulted = self._consulted, self._consulted + 1
            fails = plan is not None and plan.fails(seen)
            replaced = self._replaced
        if fails and plan is not None and plan.hang > 0:
            replaced.wait(plan.hang)
        return fails

    def set(self, plan: FaultPlan | None) -> int:
        """Make ``plan`` the plan (None: nothing fails); return how many store calls consulted
        the switch since the previous :meth:`set`."""
        if self._remote is not None:
            return self._remote(plan)
        with self._lock:
            consulted, self._consulted, self._plan = self._consulted, 0, plan
            self._replaced.set()
            self._replaced = threading.Event()
        return consulted

    def forward(self, remote: Callable[[FaultPlan | None], int]) -> None:
        """Send every later :meth:`set` to ``remote`` (a harness backend's fault request)."""
        self._remote = remote


class RevisionMap:
    """A revision resolver over a fixed map: (repo, base, head) -> the paths deleted between.

    A boundary the map lacks raises :class:`~kbconform.errors.RevisionBoundaryUnavailable`.
    ``calls`` lists every boundary asked for, in order (a harness reports the ones it was asked
    for, and they are added here).
    """

    def __init__(self, deleted: Mapping[tuple[str, str, str], Iterable[str]]) -> None:
        self.deleted = {key: tuple(paths) for key, paths in deleted.items()}
        self.calls: list[tuple[str, str, str]] = []

    def deleted_paths(self, repo_slug: str, base: str, head: str, /) -> list[str]:
        self.calls.append((repo_slug, base, head))
        found = self.deleted.get((repo_slug, base, head))
        if found is None:
            raise RevisionBoundaryUnavailable("apply_deletion_signal", f"unknown revisions {base}..{head}")
        return list(found)
