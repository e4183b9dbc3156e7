"""The suites prove their own power: every mutant is killed by the tests named for it."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from kbconform import mutants, runner
from kbconform import report as reports
from kbconform.cli import main
from kbconform.mutants import MutantSpec
from kbconform.runner._mutants import _asked, _unmet, _unopened
from kbconform.runner._outcome import Outcome, soundness
from kbconform_reference.mutants import MUTANTS as TENANT

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

#: Every mutant of the installed sets: the tenant-namespace reference's (``reference``), the
#: project-pool reference's (``reference-pool``), the kb-grant reference's (``reference-grant``),
#: the PostgreSQL reference's (``reference-postgres``) and the memory-scope reference's
#: (``reference-memory``).
ALL = mutants.discover()
#: The sets run on every transport; the kb-grant set is run in process (its own test below).
SERVED = ("reference", "reference-pool", "reference-memory")
MUTANTS = tuple(m for m in ALL if m.source in SERVED)
GRANT = tuple(m for m in ALL if m.source == "reference-grant")
TENANCY = tuple(m for m in ALL if m.source == "reference-tenancy")
POSTGRES = tuple(m for m in ALL if m.source == "reference-postgres")
#: The concurrency mutants of each reference (prefixed by its set): a race needs requests at
#: once, so they run in process (and over HTTP; tests/plugin/test_concurrency.py), never on stdio.
RACES = (
    "caller-on-self",
    "caller-in-context-default",
    "shared-results",
    "coalesced-without-caller",
    "write-caller-on-self",
    "write-caller-in-context-default",
)
SMOKES = {"accepts-everything", "rejects-everything", "pool-no-filter-anywhere", "mem-no-filter-anywhere"}


def _entries(path: Path) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in json.loads(path.read_text(encoding="utf-8"))["mutants"]}


def test_every_mutant_is_killed_by_its_killers_and_the_smokes_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kbconform mutants (each mutant in process, forked from one warm process) exits 0 only
    because each broken backend fails every test named for it, in a run of those tests alone;
    the smokes, naming none, fail a run of every test. The in-process-only mutants are killed
    here, where their bug is reachable."""
    assert len([m for m in TENANT if not m.smoke]) >= 15
    assert {m.source for m in ALL} == {
        "reference",
        "reference-pool",
        "reference-grant",
        "reference-postgres",
        "reference-memory",
        "reference-tenancy",
    }
    assert len([m for m in MUTANTS if m.source == "reference-pool" and not m.smoke]) >= 10
    assert len([m for m in MUTANTS if m.source == "reference-memory" and not m.smoke]) >= 15
    assert {m.name for m in MUTANTS if m.smoke} == SMOKES
    sets = [arg for name in SERVED for arg in ("--set", name)]
    assert (
        main(["mutants", *sets, "--transport", "in-process", "--json", str(tmp_path / "mutants.json")]) == 0
    )
    by_name = _entries(tmp_path / "mutants.json")
    assert set(by_name) == {m.name for m in MUTANTS}
    races = {f"{p}{r}" for p in ("", "pool-", "mem-") for r in RACES}
    assert {m.name for m in MUTANTS if m.in_process_only} == {
        "subclassed-principal",
        "tampered-principal",
        "duck-typed-principal",
    } | races
    for mutant in MUTANTS:
        entry = by_name[mutant.name]
        assert (entry["killed"], entry["unmet"]) == (True, []), (mutant.name, entry.get("error"))
        assert entry["mode"] == ("full" if mutant.smoke else "killers"), mutant.name
        assert entry["killers"] == list(mutant.killers), mutant.name
        if mutant.smoke:
            assert len(entry["killed_by"]) > 10, mutant.name
        else:  # only the killers ran, and each failed
            assert entry["killed_by"] == sorted(set(mutant.killers)), mutant.name
    assert f"{len(MUTANTS)} of {len(MUTANTS)} mutants killed" in capsys.readouterr().out


#: The suites' catalogue entries by id.
CATALOGUE = {entry["id"]: entry for entry in reports.catalogue()}


def _kinds(mutant: MutantSpec) -> set[tuple[str, ...]]:
    """What a run that kills ``mutant`` carries across a transport, from the catalogue entries of
    its killers: each profile's suite, each feature a killer requires (fault plans, sync, an
    envelope, a workspace scan...), each read facade and each spoof mode."""
    kinds: set[tuple[str, ...]] = set()
    for killer in mutant.killers:
        entry = CATALOGUE[killer]
        where = entry.get("profile", "tenant-namespace")
        kinds.add((where, "suite", entry["suite"]))
        kinds |= {(where, "requires", feature) for feature in entry.get("requires", ())}
        kinds |= {(where, key, entry[key]) for key in ("facade", "spoofMode") if key in entry}
    return kinds


def _every_kind_of_failure_once(candidates: tuple[MutantSpec, ...]) -> tuple[MutantSpec, ...]:
    """The in-process-only mutants (which a harness run declines without running), and the
    fewest others (chosen greedily, ties to the fewer killers, then registry order) whose
    killers between them show every kind of failure (:func:`_kinds`) any killer shows. The
    smokes (full runs) are left out."""
    chosen = [m for m in candidates if m.in_process_only]
    runnable = [m for m in candidates if not m.in_process_only and not m.smoke]
    kinds = {m.name: _kinds(m) for m in runnable}
    left = set().union(*kinds.values())
    while left:
        best = max(runnable, key=lambda m: (len(left & kinds[m.name]), -len(m.killers)))
        chosen.append(best)
        left -= kinds[best.name]
    return tuple(m for m in candidates if m in chosen)


#: What harness-v1 is held to: the sweep above runs every mutant in process, and a mutant's bug
#: is the same bug behind the harness; what a harness run adds is the transport, and what a
#: transport can get wrong is how it carries a call, an answer, an error, a fault plan or a
#: declared feature's operation, not which suite test asked. Each facade and error is held
#: equal in process and on stdio and HTTP one by one (tests/harness/test_harness.py), and the
#: project-pool reference runs every suite over HTTP (tests/plugin/test_reference_conformance.py);
#: so a served run needs to show, for each profile, a failure of each of its suites, of each
#: feature its tests require, through each read facade and in each spoof mode: about a fifth of
#: the set, not every test function.
ACROSS = _every_kind_of_failure_once(MUTANTS)


def test_the_transport_sample_shows_every_kind_of_failure_and_leaves_mutants_out() -> None:
    """The sample shows every kind of failure a killer shows (each profile's suites among
    them), holds every in-process-only mutant, and is under a third of the set (else it saves
    little)."""
    runnable = [m for m in MUTANTS if not m.in_process_only and not m.smoke]
    shown = set().union(*(_kinds(m) for m in ACROSS if not m.in_process_only))
    assert shown == set().union(*(_kinds(m) for m in runnable))
    assert {("project-pool", "suite", "project-pool"), ("memory-scope", "suite", "memory-scope")} <= shown
    assert {m.name for m in MUTANTS if m.in_process_only} <= {m.name for m in ACROSS}
    assert not any(m.smoke for m in ACROSS)
    assert len([m for m in ACROSS if not m.in_process_only]) < len(runnable) // 3


def test_every_kind_of_failure_shows_on_a_mutant_served_on_stdio_as_in_process() -> None:
    """The verdicts the sweep above holds the in-process runs to, with each mutant of the
    sample served over harness-v1 on stdio (kbconform run's way): the killers alone fail
    against each. An in-process-only mutant is not applicable there, and says why: a principal
    crosses harness-v1 as data."""
    names = [m.name for m in ACROSS]
    results = {r.name: r for r in runner.run_mutants(sets=SERVED, names=names, transport="stdio")}
    assert set(results) == set(names)
    for mutant in ACROSS:
        result = results[mutant.name]
        if mutant.in_process_only:
            assert (result.killed, result.killed_by) == (False, []), mutant.name
            assert result.not_applicable == f"in process only: {mutant.in_process_only}", mutant.name
            continue
        assert (result.killed, result.unmet, result.not_applicable) == (True, [], None), (
            mutant.name,
            result.error,
        )
        assert result.killed_by == sorted(set(mutant.killers)), mutant.name


def test_every_kb_grant_mutant_is_killed_by_its_killers_in_process() -> None:
    """The kb-grant reference's set, in process (each mutant's killers alone, the smoke against
    every test): each broken backend fails every test named for it and the smoke fails the run.
    Between them the set names every kb-grant test id (grant-01 to grant-16, iso-01 to iso-03,
    conc-01 to conc-03)."""
    assert len([m for m in GRANT if not m.smoke]) >= 20
    assert {m.name for m in GRANT if m.smoke} == {"grant-no-authorization-anywhere"}
    named = {killer.split("[")[0] for m in GRANT for killer in m.killers}
    shared = {"iso-01", "iso-02", "iso-03", "conc-01", "conc-02", "conc-03"}
    assert named == {f"grant-{n:02d}" for n in range(1, 17)} | shared
    results = {r.name: r for r in runner.run_mutants(sets=["reference-grant"], transport="in-process")}
    assert set(results) == {m.name for m in GRANT}
    for mutant in GRANT:
        result = results[mutant.name]
        assert (result.killed, result.unmet, result.not_applicable) == (True, [], None), (
            mutant.name,
            result.error,
        )
        if mutant.smoke:
            assert len(result.killed_by) > 10, mutant.name
        else:
            assert result.killed_by == sorted(set(mutant.killers)), mutant.name


def test_every_store_tenancy_mutant_is_killed_by_its_killers_in_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store-tenancy reference's set, in process, every mutant on one Chroma server
    (``KBCONFORM_TENANCY_SERVER``): each broken backend fails every test named for it, the races
    included. Between them the set names every store-tenancy test id (st-01 to st-10, iso-01 to
    iso-03, conc-01 to conc-03)."""
    from kbconform_reference.servers import ChromaServer
    from kbconform_reference.tenancy.adapter import SERVER_VARIABLE

    assert len(TENANCY) >= 15
    named = {killer.split("[")[0] for m in TENANCY for killer in m.killers}
    shared = {"iso-01", "iso-02", "iso-03", "conc-01", "conc-02", "conc-03"}
    assert named == {f"st-{n:02d}" for n in range(1, 11)} | shared
    with ChromaServer() as server:
        monkeypatch.setenv(SERVER_VARIABLE, f"{server.host}:{server.port}")
        results = {r.name: r for r in runner.run_mutants(sets=["reference-tenancy"], transport="in-process")}
    assert set(results) == {m.name for m in TENANCY}
    for mutant in TENANCY:
        result = results[mutant.name]
        assert (result.killed, result.unmet, result.not_applicable) == (True, [], None), (
            mutant.name,
            result.error,
        )
        assert result.killed_by == sorted(set(mutant.killers)), mutant.name


def test_every_postgres_mutant_is_killed_by_its_killers_in_process() -> None:
    """The PostgreSQL reference's set, in process: each deployment mistake (the application's
    role, a view, a policy, the principal's settings, the index scan) fails every test named
    for it, each run starting its own server."""
    assert len(POSTGRES) >= 6
    results = {r.name: r for r in runner.run_mutants(sets=["reference-postgres"], transport="in-process")}
    assert set(results) == {m.name for m in POSTGRES}
    for mutant in POSTGRES:
        result = results[mutant.name]
        assert (result.killed, result.unmet, result.not_applicable) == (True, [], None), (
            mutant.name,
            result.error,
        )
        assert result.killed_by == sorted(set(mutant.killers)), mutant.name


def test_full_mode_runs_every_test_against_each_mutant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--full (two mutants chosen with --mutant) lists every test a mutant fails, its killers
    among them; the default mode runs the same mutants against their killers alone. (Two
    project-pool mutants: a whole run of that profile's suites takes seconds.)"""
    chosen = ["pool-filter-after-top-k", "pool-external-id-in-filter"]
    names = [arg for name in chosen for arg in ("--mutant", name)]
    assert main(["mutants", "--full", *names, "--json", str(tmp_path / "full.json")]) == 0
    assert main(["mutants", *names, "--json", str(tmp_path / "fast.json")]) == 0
    assert "2 of 2 mutants killed" in capsys.readouterr().out
    full, fast = _entries(tmp_path / "full.json"), _entries(tmp_path / "fast.json")
    assert set(full) == set(fast) == set(chosen)
    for name in chosen:
        killers = set(full[name]["killers"])
        assert (full[name]["mode"], fast[name]["mode"]) == ("full", "killers")
        assert killers <= set(full[name]["killed_by"])
        assert set(fast[name]["killed_by"]) == killers
    assert "pool-10" in full["pool-filter-after-top-k"]["killed_by"]  # not a killer: found by --full


def _spec(name: str, killers: tuple[str, ...], adapter: str) -> MutantSpec:
    return MutantSpec(name, "test", killers, False, adapter, "reference")


def test_a_mutant_survives_when_a_killer_passes_is_unknown_or_does_not_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Killed means every named killer failed: a killer that passes leaves the mutant alive
    (control: the killer that fails is listed); a killer the catalogue lacks is refused before
    any run; each says which killer and why."""
    oracle = "kbconform_reference.mutants:by_name.existence_oracle"
    specs = (
        _spec("passes", ("leak-04", "leak-02"), oracle),
        _spec("unknown", ("leak-04", "leak-99"), oracle),
    )
    monkeypatch.setattr(mutants, "discover", lambda sets=(): specs)
    passes, unknown = runner.run_mutants()
    assert (passes.killed, passes.killed_by, passes.unmet) == (False, ["leak-04"], ["leak-02 passed"])
    assert passes.error is None
    assert not unknown.killed
    assert unknown.unmet == ["names killers the suites' catalogue lacks: leak-99"]
    assert unknown.error == unknown.unmet[0]
    skipped = {"id": "spoof-03", "status": "skip", "reason": "spoof-reject not offered"}
    assert _unmet("spoof-03", skipped) == "spoof-03 was skipped (spoof-reject not offered)"
    assert _unmet("leak-01[ask]", None).startswith("leak-01[ask] did not run")


def test_the_smokes_runs_start_first_and_the_results_keep_the_sets_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A smoke runs every test, the longest run of its set: its run starts before the others'
    (control: the others start in the set's order), and the results come back in the set's order."""
    specs = (
        _spec("first", ("leak-04",), "m:first"),
        MutantSpec("smoke", "test", (), True, "m:smoke", "reference"),
        _spec("last", ("leak-02",), "m:last"),
    )
    monkeypatch.setattr(mutants, "discover", lambda sets=(): specs)
    started: list[str] = []

    def run_suites(request: runner.RunRequest, warm: Any = None) -> Outcome:
        started.append(request.adapter or "")
        failed = [{"id": stable, "status": "fail"} for stable in ("leak-04", "leak-02")]
        return Outcome(1, {"tests": failed}, "", ())

    monkeypatch.setattr("kbconform.runner._mutants.run_suites", run_suites)
    monkeypatch.setattr("kbconform.runner._mutants._opens", lambda adapter: (None, False))  # no store here
    results = runner.run_mutants(workers=1, warm=False)
    assert started == ["m:smoke", "m:first", "m:last"]
    assert [(r.name, r.killed) for r in results] == [("first", True), ("smoke", True), ("last", True)]


#: The adapters the control-open test asks for, by name: how many times each was opened.
OPENED: dict[str, int] = {}


class _Unanswered:
    """An adapter whose store never answers (``hang``) or whose client is missing."""

    def __init__(self, kind: str) -> None:
        from tests.plugin.tiny_adapter import make

        self.kind, self.manifest = kind, make().manifest

    def open(self, options: Any) -> Any:
        OPENED[self.kind] = OPENED.get(self.kind, 0) + 1
        if self.kind == "hang":
            threading.Event().wait(5)
        raise ModuleNotFoundError("No module named 'kbconform_no_such_store_client'")

    def close(self, backend: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass


def hanging() -> _Unanswered:
    return _Unanswered("hang")


def missing() -> _Unanswered:
    return _Unanswered("missing")


def test_a_store_that_does_not_answer_ends_its_sets_control_open_at_the_first_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control open tries a set's mutants in turn until one opens; an open past its deadline
    ends the set's tries at once (one open of three), while a client that is missing is tried
    for each mutant (the control: three opens), and both sets are named with why."""
    monkeypatch.setattr("kbconform.runner._mutants.OPEN_TIMEOUT", 0.2)
    OPENED.clear()
    here = "tests.plugin.test_mutants"
    specs = [
        MutantSpec(f"{kind}-{n}", "test", ("leak-04",), False, f"{here}:{factory}", kind)
        for kind, factory in (("hang", "hanging"), ("missing", "missing"))
        for n in range(3)
    ]
    why = _unopened(specs)
    assert OPENED == {"hang": 1, "missing": 3}
    assert why["hang"] == "opening a backend took more than 0.2 s"
    assert why["missing"] == "ModuleNotFoundError: No module named 'kbconform_no_such_store_client'"


def test_a_mutants_run_renders_failures_natively_unless_its_request_says_otherwise() -> None:
    """Only which tests failed decides a mutant, so its run asks pytest for Python's own
    tracebacks; a request's pytest arguments come after, so a style it names wins."""
    plain = _asked("m:f", None, transport="stdio", seed=3)
    assert (plain.adapter, plain.extra, plain.shrink, plain.seed) == ("m:f", ("--tb=native",), False, 3)
    request = runner.RunRequest("a:b", extra=["--tb=long"], seed=5)
    asked = _asked("m:f", request, transport="stdio", seed=3)
    assert (asked.adapter, asked.extra, asked.seed) == ("m:f", ("--tb=native", "--tb=long"), 5)


def test_an_unknown_mutant_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mutants", "--mutant", "no-such-mutant"]) == 2
    assert "no mutant named no-such-mutant" in capsys.readouterr().err


def test_kbconform_run_fails_a_mutant(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """run exits 1 on a mutant, up to L2, and the report names the failing test. Its control, run
    exiting 0 on the reference (memory) with a table per level and suite, the verdict with its
    seed and a report with no selection, is test_reference_conformance's memory mode, a full
    run made as ``kbconform run``."""
    report = tmp_path / "report.json"
    mutant = "kbconform_reference.mutants:by_name.existence_oracle"
    code = main(["run", "--adapter", mutant, "--level", "L2", "--no-shrink", "--report", str(report)])
    out = capfd.readouterr().out
    assert code == 1, out[-5000:]
    assert "L2     cross-tenant-leak" in out
    failed = {
        t["id"] for t in json.loads(report.read_text(encoding="utf-8"))["tests"] if t["status"] == "fail"
    }
    assert "leak-04" in failed


def test_a_partial_report_is_not_the_sound_report_of_a_full_run() -> None:
    """The runner checks that the report is of the run it asked for, selection included."""
    from kbconform_reference.adapter import memory

    report: dict[str, Any] = {
        "manifest": memory().manifest,
        "config": {"adapter": "a:b"},
        "seed": 1,
        "level": "L4",
        "profile": "quick",
        "execution": {"selection": ["leak-04"]},
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("kbconform.report.verify", lambda report: None)
        for select, problems in (
            (["leak-04"], []),
            (None, ["the report's selection is ['leak-04'], not None"]),
        ):
            found = soundness(report, adapter="a:b", seed=1, level=None, profile=None, select=select)
            assert found == problems


def test_the_mutants_benchmark_runs_and_writes_its_figures(tmp_path: Path) -> None:
    """A tiny run (one mutant, every mode) writes every figure; it is run, not timed."""
    from tests.benchmark_scripts import benchmark

    module = benchmark("mutants.py")
    chosen = ["--set", "reference-pool", "--mutant", "pool-filter-after-top-k"]
    figures = module.main([*chosen, "--json", str(tmp_path / "m.json")])
    assert set(figures) == {
        "mutants", "jobs", "killers_s", "per_mutant_s", "cold_s", "warm_speedup", "full_s", "speedup"
    }  # fmt: skip
    assert figures["mutants"] == 1
    assert all(value > 0 for value in figures.values())
    assert (tmp_path / "m.json").exists()
