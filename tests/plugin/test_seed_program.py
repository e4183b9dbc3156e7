"""One seed, one program: two runs of a state machine at one seed make the same calls."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from kbconform.adapter import BackendOptions, load_adapter
from kbconform.conformance import Run
from kbconform.conformance._run import PROFILES
from suites.tenant_namespace.test_stateful import machine_for

#: A short program: two examples of six steps (the quick profile runs eight of ten).
SHORT = hypothesis.settings(max_examples=2, stateful_step_count=6)


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


def _calls(seed: int) -> list[str]:
    """Every call state-01's machine makes at ``seed`` on the in-memory reference, in order."""
    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    log: list[str] = []
    run = Run(_LoggingAdapter(adapter, log), manifest, seed)
    try:
        run.run_machine(machine_for(run, "overwrite"))
    finally:
        run.shutdown()
    return log


def test_two_runs_at_one_seed_make_the_same_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of the state machine at one seed make the same calls with the same arguments in
    the same order, though a module with constants of its own was loaded between them; a run
    at another seed makes others (control)."""
    monkeypatch.setitem(PROFILES, "quick", SHORT)
    first = _calls(1)
    _load_local_constants(1, tmp_path, monkeypatch)
    again = _calls(1)
    other = _calls(2)
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
