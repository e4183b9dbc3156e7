"""A run forked from a warm process (runner.Warm) is the run started cold, without the start."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from kbconform import runner

pytestmark = pytest.mark.skipif(not runner.WARM, reason="runs are forked warm on Linux only")

SAMPLE = ["leak-01[list]", "leak-01[get]", "closed-03", "contract-01"]


def _statuses(outcome: runner.Outcome) -> dict[str, str]:
    return {test["id"]: test["status"] for test in outcome.report["tests"]}


@pytest.fixture(scope="module")
def gone(module_project: Path) -> tuple[runner.Warm, runner.Outcome]:
    """A warm process closed before the leaky backend's run of SAMPLE, and that run: the run of
    a warm process that is gone, and the cold run a warm one is compared with."""
    warm = runner.Warm()
    warm.close()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(module_project)
        outcome = runner.run_suites(
            "hostile_adapter:leaky", transport="in-process", seed=3, select=SAMPLE, warm=warm
        )
    return warm, outcome


def test_a_warm_run_gives_the_cold_runs_report_and_its_process_is_fresh(
    project: Path, gone: tuple[runner.Warm, runner.Outcome]
) -> None:
    """The leaky backend fails the same tests forked warm as started cold (the control: the cold
    run, a closed warm process forking nothing); two warm runs in a row each start from the warm
    process, not from the run before."""
    closed, cold = gone
    assert closed.runs == 0  # started cold
    warm = runner.Warm(["hostile_adapter"])
    try:
        first = runner.run_suites(
            "hostile_adapter:leaky", transport="in-process", seed=3, select=SAMPLE, warm=warm
        )
        second = runner.run_suites(
            "tiny_adapter:make", transport="in-process", seed=3, select=SAMPLE, warm=warm
        )
        assert warm.runs == 2
    finally:
        warm.close()
    assert cold.verdict == first.verdict == "fail", (cold.problems, first.problems)
    assert _statuses(first) == _statuses(cold)
    assert {"leak-01[list]", "closed-03"} <= set(first.failed)
    assert (second.verdict, second.problems) == ("pass", ()), second.output[-2000:]


@pytest.mark.slow
def test_a_warm_run_past_its_deadline_is_stopped_with_what_it_started(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An adapter that starts a child and hangs: the forked run is stopped at the run deadline,
    the child with it, and the run is an error naming the deadline. (A short deadline first; a
    loaded machine that does not start the adapter's child within it stops the run before it,
    and the run is tried again with a longer one.)"""
    pids = project / "pids.txt"
    monkeypatch.setenv("KBCONFORM_TEST_PIDS", str(pids))
    for seconds in (5, 15):
        warm = runner.Warm()
        try:
            outcome = runner.run_suites(
                "hostile_adapter:spawns_and_hangs",
                transport="in-process",
                seed=3,
                select=SAMPLE,
                call_timeout=600,
                run_timeout=seconds,
                warm=warm,
            )
            assert warm.runs == 1
        finally:
            warm.close()
        assert outcome.verdict == "error"
        assert any(f"did not finish within its deadline of {seconds} s" in why for why in outcome.problems)
        if pids.exists() and len(pids.read_text(encoding="utf-8").split()) == 2:
            break
    started = [int(pid) for pid in pids.read_text(encoding="utf-8").split()]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(pid) for pid in started):
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in started)


def test_where_bytecode_is_not_written_a_forked_run_caches_what_it_compiles_in_the_warm_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``PYTHONDONTWRITEBYTECODE=1`` and no ``PYTHONPYCACHEPREFIX``, what a forked run
    compiles (its test module, rewritten by pytest) is cached in the warm process's own
    directory for the next run, and nothing is written beside the sources (control: the cache
    holds the module the run compiled)."""
    temporary = tmp_path / "tmp"  # where the warm process makes its directory
    temporary.mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_tiny.py").write_text("def test_sum():\n    assert 1 + 1 == 2\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setenv("TMPDIR", str(temporary))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_tiny.py"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    warm = runner.Warm()
    try:
        ended = warm.run(command, str(suite), env, tmp_path / "log", 120)
        directories = list(temporary.glob("kbconform-warm-compiled-*"))  # removed when it ends
        cached = {
            path.name.partition(".")[0] for directory in directories for path in directory.rglob("*.pyc")
        }
    finally:
        warm.close()
    assert ended == (0, False), (tmp_path / "log").read_text(encoding="utf-8")
    assert len(directories) == 1
    assert "test_tiny" in cached
    assert list(suite.rglob("*.pyc")) == []


def test_a_warm_process_that_is_gone_leaves_the_run_to_start_cold(
    gone: tuple[runner.Warm, runner.Outcome],
) -> None:
    """Closed (or never started), the warm process forks nothing: the run starts cold and gives
    its verdict."""
    warm, outcome = gone
    assert warm.runs == 0
    assert outcome.verdict == "fail"
    assert {"leak-01[list]", "closed-03"} <= set(outcome.failed)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state


def test_the_warm_process_learns_the_libraries_a_run_imported_but_not_the_kit_or_a_plugin() -> None:
    """After a run, the modules it imported from installed libraries are imported in the warm
    process for the next run (a store's client, once); the kit's modules (pytest rewrites its
    plugin), pytest's own, a plugin named with -p and the standard library's never are."""
    import sys

    from kbconform.runner._warm import _learned, _plugins

    assert _plugins(["-p", "xdist", "-pno:cacheprovider", "-n", "2", "-p", "hypothesis.extra"]) == {
        "xdist", "no:cacheprovider", "hypothesis"
    }  # fmt: skip
    imported = {"hypothesis", "hypothesis.stateful", "pluggy", "kbconform", "kbconform.runner", "json"}
    assert imported <= set(sys.modules)
    before = set(sys.modules) - imported
    assert set(_learned(before, [])) == {"hypothesis", "hypothesis.stateful"}
    assert _learned(before, ["-p", "hypothesis"]) == []
    assert _learned(set(sys.modules), []) == []
