"""state-01 asks no principal the same question of one state (benchmarks/repeats.py counts), and
its gets still reach every id a principal may not read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

import hypothesis
import pytest

from kbconform.adapter import load_adapter
from kbconform.conformance import Run
from kbconform.conformance._run import PROFILES
from kbconform.identity import Principal
from suites.tenant_namespace.test_stateful import machine_for
from tests.benchmark_scripts import benchmark

#: A short program: three examples of ten steps.
SHORT = hypothesis.settings(max_examples=3, stateful_step_count=10)


def _repeats() -> ModuleType:
    return benchmark("repeats.py")


@pytest.mark.parametrize("mode", ["overwrite", "reject"])
def test_state_01_asks_no_principal_the_same_question_of_one_state(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every read of state-01 at one seed, logged: none asks a principal a question it asked since
    the last write or failed call; reads answered as another principal's were (the same query
    from every principal back to back, which probes caches) are still made (control)."""
    monkeypatch.setitem(PROFILES, "quick", SHORT)
    module = _repeats()
    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    run = module.LoggedRun(adapter, manifest, 1)
    run.log = []
    try:
        run.run_machine(machine_for(run, mode))
    finally:
        run.shutdown()
    figures = module.repeats(run.log)
    assert figures["reads"] > 200, figures
    assert figures["exact_repeats"] == 0, figures
    assert figures["answered_before"] > 0, figures


def test_the_count_tells_a_repeat_from_a_read_after_a_change() -> None:
    """The same get twice of one state is a repeat; again after a write or a failed read is not;
    another principal's same question is not, and is counted as answered before."""
    count = _repeats().repeats
    get = ("get", "acme", ("c1",), "hit", False)
    assert count([get, get])["exact_repeats"] == 1
    assert count([get, ("ingest", "acme", (), "ok", True), get])["exact_repeats"] == 0
    assert count([get, ("count", "acme", (), "BackendUnavailable", True), get])["exact_repeats"] == 0
    figures = count([get, ("get", "beta", ("c1",), "hit", False)])
    assert (figures["exact_repeats"], figures["answered_before"]) == (0, 1)


def test_the_query_scope_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run (Chroma embedded) writes the probe's figures for a large and a small tenant."""
    module = benchmark("query_scope.py")
    figures = module.main(["--rows", "60", "--repeat", "1", "--json", str(tmp_path / "q.json")])
    assert {"big_probe_ratio", "small_probe_ratio", "big_query_ms"} <= set(figures)
    assert (tmp_path / "q.json").exists()


#: One check as recorded: the (principal, id) pairs the model refuses, those get asked, and the
#: ids a reader got.
Check = tuple[set[tuple[Principal, str]], set[tuple[Principal, str]], set[str]]


def test_state_01_asks_every_principal_every_id_it_may_not_read_at_some_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over each program every principal gets every known id it may not read at some check, and
    each id a reader gets is asked at that check by a principal refused it; not every refused id
    is asked at every check (control: the get matrix cuts)."""
    monkeypatch.setitem(PROFILES, "quick", SHORT)
    adapter, manifest = load_adapter("kbconform_reference.adapter:memory")
    run = Run(adapter, manifest, 1)
    programs: list[list[Check]] = []

    class Recorded(machine_for(run, "overwrite")):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.recorded: list[Check] = []
            programs.append(self.recorded)

        def check(self) -> int:
            known = self._known()
            refused = {
                (principal, chunk)
                for principal in map(self._principal, range(len(self.users)))
                for chunk in known
                if chunk not in self.policy.scope(principal)
            }
            self.recorded.append((refused, set(), set()))
            informative: int = super().check()
            return informative

        def _get(self, principal: Principal, ids: Iterable[str], fault: int | None) -> None:
            ids = set(ids)
            if fault is None and self.recorded:
                refused, asked, got = self.recorded[-1]
                asked |= {(principal, chunk) for chunk in ids if (principal, chunk) in refused}
                got |= ids & set(self.policy.scope(principal))
            super()._get(principal, ids, fault)

    try:
        run.run_machine(Recorded)
    finally:
        run.shutdown()
    checks = [check for program in programs for check in program]
    assert any(refused for refused, _, _ in checks), "no check knew an id a principal may not read"
    for program in programs:
        refused = set().union(*(r for r, _, _ in program))
        asked = set().union(*(a for _, a, _ in program))
        assert refused <= asked, f"never asked: {sorted(refused - asked, key=str)[:3]}"
    for refused, asked, got in checks:
        probed = {chunk for _, chunk in refused if chunk in got}
        assert probed <= {chunk for _, chunk in asked}, f"got, never probed: {sorted(probed)[:3]}"
    assert any(asked < refused for refused, asked, _ in checks), "every refused id asked at every check"
