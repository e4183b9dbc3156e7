"""What every profile's driven suites stand on: a driver (a backend and its policy model,
driven together, each call judged) and :class:`DriverMachine`, the state machine base."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar, Generic, TypeVar

from hypothesis.stateful import RuleBasedStateMachine, invariant

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch
from kbconform.conformance._faults import COUNTING
from kbconform.conformance._judging import Refused, call_args, charged, judged, sent_texts
from kbconform.conformance._run import Run
from kbconform.errors import KbconformError


class Driver:
    """A backend and its profile's policy model, driven together (project-pool's
    :class:`~kbconform.profiles.project_pool.world.PoolDriver`, kb-grant's
    :class:`~kbconform.profiles.kb_grant.world.GrantDriver`): a call of a facade judged by the
    model, a call the model allows, and one it refuses (each made by the driver's ``attempt``)."""

    backend: Any
    policy: Any  # the profile's policy model: a method per facade, answering what it expects

    def attempt(self, operation: str, *args: Any, may_fail: bool = False) -> Any:
        """Call ``operation`` with ``args``, judged by the model, and commit what landed."""
        raise NotImplementedError

    def check(self) -> int:
        """Every read equals the model; how many reads could tell a leak or a loss (a read
        whose scope is neither empty nor everything)."""
        raise NotImplementedError

    def _made(
        self, operation: str, args: tuple[Any, ...], may_fail: bool, stored: Iterable[str]
    ) -> tuple[Any, Any]:
        """The model's answer to ``operation`` with ``args``, and the backend's outcome of the
        call judged by it (:func:`judged`; ``stored``: every text the model holds)."""
        expected = getattr(self.policy, operation)(*args)
        made = partial(getattr(self.backend, operation), *args)
        with charged(operation=operation):
            return expected, judged(
                f"{operation}{call_args(args)}", expected, made, stored, sent_texts(args), may_fail
            )

    def call(self, operation: str, *args: Any) -> Any:
        """A call the model allows: it must land; what it returned. (A call the contract lets a
        backend refuse or take, :class:`MayRefuse`, is the driver's ``attempt``.)"""
        expected = getattr(self.policy, operation)(*args)
        assert not isinstance(expected, Refused), (
            f"the suite's {operation}{call_args(args)} is refused: {expected}"
        )
        return self.attempt(operation, *args)

    def refuse(self, operation: str, *args: Any) -> KbconformError:
        """A call the model refuses: it must raise exactly that error, and change nothing."""
        assert isinstance(getattr(self.policy, operation)(*args), Refused), (
            f"the suite's {operation}{call_args(args)} is not refused by the model"
        )
        outcome = self.attempt(operation, *args)
        assert isinstance(outcome, KbconformError)
        return outcome


_D = TypeVar("_D", bound=Driver)
_M = TypeVar("_M", bound="DriverMachine[Any]")
_R = TypeVar("_R")


class DriverMachine(RuleBasedStateMachine, Generic[_D]):
    """What every profile's state machine stands on: a backend opened by the suite's
    ``initialize`` rule (:meth:`fresh_backend`), driven with its model by ``driver`` where the
    profile has one, a store switch armed around a block (:meth:`_armed`), and the invariant,
    which after every step adds :meth:`check`'s informative comparisons to ``compared``;
    :meth:`bound` binds a machine to a run. The rules are the suite's."""

    run: ClassVar[Run]
    compared: ClassVar[list[int]]  # informative comparisons over every example (vacuity guard)

    def __init__(self) -> None:
        super().__init__()
        self.fault = FaultSwitch()
        self.faults = self.run.manifest.supports("fault-injection")
        self.consulted = 0  # the store calls the last armed block made
        self.backend: Any = None
        self.driver: _D | None = None

    @classmethod
    def bound(cls: type[_M], run: Run, name: str, **attributes: object) -> type[_M]:
        """The machine as ``name``, bound to ``run`` (and ``attributes``, class attributes the
        suite's rules read), with no comparison counted yet."""
        return type(name, (cls,), {"run": run, "compared": [0], **attributes})

    def fresh_backend(self, **options: Any) -> Any:
        """A fresh backend opened with ``options`` (:class:`BackendOptions` fields), its store
        behind the switch when the manifest declares fault-injection."""
        self.backend = self.run.open(
            BackendOptions(store_fails=self.fault if self.faults else None, **options)
        )
        return self.backend

    def teardown(self) -> None:
        if self.backend is not None:
            self.run.close(self.backend)

    @property
    def d(self) -> _D:
        assert self.driver is not None
        return self.driver

    @contextmanager
    def _armed(self, fault: int | None) -> Iterator[bool]:
        """The (fault+1)th store call of the block and every later one fail; whether armed.
        Afterwards :attr:`consulted` is how many store calls the armed block made."""
        armed = fault is not None and self.faults
        self.consulted = 0
        if armed:
            self.fault.set(FaultPlan(fault or 0))
        try:
            yield armed
        finally:
            if armed:
                self.consulted = self.fault.set(None)

    def _store_calls(self, block: Callable[[], _R]) -> tuple[int, _R]:
        """How many store calls ``block`` makes, none failing (under :data:`COUNTING`): where a
        fault at its last call goes (0 without fault injection: ``block`` still runs); and what
        ``block`` returned."""
        if not self.faults:
            return 0, block()
        self.fault.set(COUNTING)
        try:
            result = block()
        finally:
            calls = self.fault.set(None)
        return calls, result

    def check(self) -> int:
        """Every read equals the model; how many reads could tell a leak or a loss. By default
        the driver's check (every search of every session; every tenant's list, gets and
        searches)."""
        return self.d.check()

    @invariant()
    def every_read_equals_the_model(self) -> None:
        """After every step (once a backend is open), :meth:`check`, its reads in one hand-off
        (:meth:`~kbconform.conformance.Run.batched`)."""
        if self.backend is not None:
            self.compared[0] += self.run.batched(self.check)
