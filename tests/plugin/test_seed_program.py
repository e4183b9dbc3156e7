"""One seed, one program: two runs of a state machine at one seed make the same calls."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from kbconform.adapter import BackendOptions, load_adapter
from kbconform.conformance import Run
from kbconform.conformance._run import PROFILES
from suites.kb_grant.test_kb_grant import GrantMachine
from suites.memory_scope.test_memory_scope import ScopeMachine
from suites.project_pool.test_project_pool import PoolMachine
from suites.tenant_namespace.test_stateful import machine_for

#: A short program: two examples of six steps (the quick profile runs eight of ten).
SHORT = hypothesis.settings(max_examples=2, stateful_step_count=6)
#: The quick profile's programs: mem-12 picks a memory by its id in few of its steps, and two
#: short programs may pick none.
QUICK = hypothesis.settings(max_examples=8, stateful_step_count=10)
#: Each state machine of the suites, by its test id: the reference it drives here, and how long
#: its programs are.
MACHINES: dict[str, tuple[str, Callable[[Run], type], hypothesis.settings]] = {
    "state-01": ("kbconform_reference.adapter:memory", lambda run: machine_for(run, "overwrite"), SHORT),
    "grant-14": (
        "kbconform_reference.grant.adapter:multi_store",
        lambda run: GrantMachine.bound(run, "KbGrant"),
        SHORT,
    ),
    "mem-12": (
        "kbconform_reference.memory.adapter:qdrant_local",
        lambda run: ScopeMachine.bound(run, "MemoryScope"),
        QUICK,
    ),
    "pool-09": (
        "kbconform_reference.pool.adapter:qdrant_local",
        lambda run: PoolMachine.bound(run, "ProjectPool"),
        SHORT,
    ),
}
#: An id the backend made at random (a UUID, with or without its dashes): the same program
#: sends the n-th such id it learnt where another run sends its own n-th.
MADE = re.compile(r"\b(?:[0-9a-f]{32}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})\b")


def _local_constants(tag: int) -> str:
    """A module of constants, such as a module of the user's holds (Hypothesis draws such
    constants now and then); each ``tag`` its own, since Hypothesis never forgets one it saw."""
    return "\n".join(
        [f"N{n} = {(n * 37 + tag) % 10_000}" for n in range(200)]
        + [f"S{n} = 'docs/local-{tag}-{n}.md'" for n in range(200)]
    )


def _plain(value: Any) -> Any:
    """``value`` as logged: what the backend stamped with its clock (``ingestedAt``, which a
    restore sends back as exported) masked, everything else as sent."""
    if isinstance(value, Mapping):
        return {k: "<stamped>" if k == "ingestedAt" else _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value if isinstance(value, str | int | float | bool | type(None)) else repr(value)


class _Logged:
    """A backend whose every call is logged: facade, principal and arguments."""

    def __init__(self, inner: Any, log: list[str]) -> None:
        self._inner, self._log = inner, log

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def logged(*args: Any, **kwargs: Any) -> Any:
            self._log.append(f"{name} {_plain(args)} {_plain(kwargs)}")
            return value(*args, **kwargs)

        return logged


class _LoggingAdapter:
    def __init__(self, inner: Any, log: list[str]) -> None:
        self.inner, self.log = inner, log
        self.manifest = inner.manifest

    def open(self, options: BackendOptions) -> Any:
        self.log.append(f"open {options.spoof_mode}")
        return _Logged(self.inner.open(options), self.log)

    def close(self, backend: Any) -> None:
        self.inner.close(backend._inner)

    def shutdown(self) -> None:
        self.inner.shutdown()


def _calls(machine: str, seed: int) -> list[str]:
    """Every call ``machine`` makes at ``seed`` on its reference, in order; each id the backend
    made at random named by the order it first appears in (``id-0``, ``id-1``, ...)."""
    factory, bind, _ = MACHINES[machine]
    adapter, manifest = load_adapter(factory)
    log: list[str] = []
    run = Run(_LoggingAdapter(adapter, log), manifest, seed)
    try:
        run.run_machine(bind(run))
    finally:
        run.shutdown()
    made: dict[str, str] = {}
    return [MADE.sub(lambda m: made.setdefault(m.group(0), f"id-{len(made)}"), line) for line in log]


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_two_runs_at_one_seed_make_the_same_calls(
    machine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of a state machine at one seed make the same calls with the same arguments in
    the same order (the ids the backend made at random aside), though a module with constants
    of its own was loaded between them; a run at another seed makes others (control)."""
    monkeypatch.setitem(PROFILES, "quick", MACHINES[machine][2])
    first = _calls(machine, 1)
    _load_local_constants(10 + sorted(MACHINES).index(machine), tmp_path, monkeypatch)  # new to Hypothesis
    again = _calls(machine, 1)
    other = _calls(machine, 2)
    assert len(first) > 50, f"the machine made {len(first)} calls: too few to tell programs apart"
    assert again == first, _first_difference(first, again)
    assert other != first, "seed 2 made the same calls as seed 1"


def _first_difference(first: list[str], again: list[str]) -> str:
    for n, (one, other) in enumerate(zip(first, again, strict=False)):
        if one != other:
            return f"call {n}: {one[:300]} in the first run, {other[:300]} in the second"
    return f"{len(first)} calls in the first run, {len(again)} in the second"


def _load_local_constants(tag: int, where: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Import a module of :func:`_local_constants` from ``where`` (outside every installed
    package: a "local" module to Hypothesis); unloaded after the test."""
    name = f"seed_program_constants_{tag}"
    (where / f"{name}.py").write_text(_local_constants(tag) + "\n")
    monkeypatch.syspath_prepend(str(where))
    monkeypatch.delitem(sys.modules, name, raising=False)
    importlib.import_module(name)


def test_a_run_draws_the_same_examples_whatever_local_modules_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A property run at one seed draws the same examples before and after a module with
    constants of its own is loaded; the same property outside a run draws others once the
    module is loaded (control: Hypothesis does draw constants from local modules)."""
    values = st.lists(st.integers(0, 10_000), min_size=50, max_size=50)
    run = Run(None, None, 3)  # type: ignore[arg-type]  # a property of no backend

    def draws(within_run: bool) -> list[list[int]]:
        drawn: list[list[int]] = []

        def keep(value: list[int]) -> None:
            drawn.append(value)

        if within_run:
            run.given(value=values)(keep)()
        else:
            plain = hypothesis.given(value=values)(keep)
            hypothesis.seed(3)(run._settings()(plain))()
        return drawn

    before, plain_before = draws(True), draws(False)
    _load_local_constants(2, tmp_path, monkeypatch)
    assert draws(True) == before
    assert draws(False) != plain_before, "a local module's constants changed no draw: no control"
