"""kbconform run's verdict comes from its own report: the judged code cannot flip it by exiting,
by a pytest plugin, by hanging, or by flooding its output; xdist gives the serial verdict."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from kbconform.cli import main
from kbconform.report import matching

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

#: Among the tests the leaky backend fails: list reads every tenant.
LEAKY_FAILS = {"leak-01[list]", "closed-03"}
#: What a run against a hostile adapter selects: the leaky failures, and tests it passes (the
#: attacks are on the verdict, in teardown, close and shutdown, which every run reaches).
SAMPLE = sorted(LEAKY_FAILS | {"leak-01[get]", "closed-02", "contract-01"})
ONLY = [arg for stable in SAMPLE for arg in ("--only", stable)]

REWRITER = """
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        report.outcome = "passed"
        report.longrepr = None
    return report
"""


def _run(*args: str) -> tuple[int, dict[str, Any]]:
    report = Path.cwd() / "report.json"
    report.unlink(missing_ok=True)
    code = main(["run", "--seed", "3", "--report", str(report), *args])
    return code, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}


def _failing(report: dict[str, Any]) -> set[str]:
    return {t["id"] for t in report["tests"] if t["status"] in ("fail", "error")}


@pytest.fixture(scope="module")
def plain(module_project: Path) -> tuple[int, dict[str, Any]]:
    """The plain leaky adapter's run of SAMPLE, and its exit code: the control the runs of the
    adapters that exit in their teardown are compared with."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(module_project)
        return _run("--adapter", "hostile_adapter:leaky", *ONLY)


@pytest.mark.parametrize("factory", ["exits_in_shutdown", "hard_exits_in_shutdown"])
def test_an_adapter_that_exits_zero_in_its_teardown_still_fails(
    project: Path, factory: str, plain: tuple[int, dict[str, Any]], capfd: pytest.CaptureFixture[str]
) -> None:
    """shutdown() calling sys.exit(0) or os._exit(0) after failing tests cannot make the run pass:
    the exit code comes from the report; the plain leaky adapter fails alike (control)."""
    code, report = _run("--adapter", f"hostile_adapter:{factory}", *ONLY)
    assert code == 1, capfd.readouterr()
    assert plain[0] == 1
    assert LEAKY_FAILS <= _failing(report) == _failing(plain[1])


def test_an_adapter_that_kills_the_run_gets_no_verdict(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An os._exit(0) in the middle of the run ends the serving process, not the run: the call
    that found it gone fails naming it, and so does every test after it; exit 1, not a pass.
    In process the same exit leaves no report at all: an error, exit 1 (control)."""
    code, report = _run("--adapter", "hostile_adapter:exits_in_close", *ONLY)
    assert code == 1
    failing = [t for t in report["tests"] if t["status"] in ("fail", "error")]
    assert len(failing) > len(report["tests"]) // 2
    assert "KB_HARNESS_BROKEN: harness close (request" in capfd.readouterr().out
    alone = runner.run_suites("hostile_adapter:exits_in_close", transport="in-process", seed=3, select=SAMPLE)
    assert (alone.verdict, alone.report) == ("error", {})


def test_an_adapter_that_patches_the_judge_flips_only_an_in_process_verdict(project: Path) -> None:
    """An adapter whose factory rewrites the plugin's results to passes makes the leaky backend
    pass in process, where the adapter shares the process that writes the report (the control:
    the attack works); kbconform run serves it from a child process, and it fails."""
    patched = runner.run_suites(
        "hostile_adapter:patches_the_judge", transport="in-process", seed=3, select=SAMPLE
    )
    assert patched.verdict == "pass", "the patch no longer flips an in-process verdict; update it"
    code, report = _run("--adapter", "hostile_adapter:patches_the_judge", *ONLY)
    assert code == 1
    assert _failing(report) >= LEAKY_FAILS
    assert report["config"]["harness"]["transport"] == "stdio"


def _install_rewriter(site: Path) -> None:
    """An installed distribution whose pytest11 entry point turns every failure into a pass."""
    site.mkdir()
    (site / "kbconform_test_rewriter.py").write_text(REWRITER, encoding="utf-8")
    info = site / "kbconform_test_rewriter-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kbconform-test-rewriter\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[pytest11]\nrewriter = kbconform_test_rewriter\n", encoding="utf-8"
    )


def test_an_installed_plugin_that_rewrites_failures_cannot_pass_a_leaky_backend(
    project: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Under plain pytest the rewriting plugin loads and the leaky backend passes (the control:
    the plugin works); under kbconform run, installed plugins are not loaded, PYTEST_ADDOPTS and
    PYTEST_PLUGINS are dropped, and the leaky backend fails."""
    site = project / "site"
    _install_rewriter(site)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(project)])
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "--kbconform-adapter=hostile_adapter:leaky", "-q",
         *(f"--kbconform-only={stable}" for stable in SAMPLE),
         "-p", "no:randomly", "-p", "no:cacheprovider", "--kbconform-report=plain.json"],
        cwd=project, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stdout[-2000:]
    tampered = json.loads((project / "plain.json").read_text(encoding="utf-8"))
    assert not _failing(tampered)
    assert "kbconform-test-rewriter 1.0" in tampered["execution"]["plugins"]
    assert tampered["execution"]["pluginAutoload"] is True

    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p kbconform_test_rewriter")
    monkeypatch.setenv("PYTEST_PLUGINS", "kbconform_test_rewriter")
    code, report = _run("--adapter", "hostile_adapter:leaky", *ONLY)
    out = capfd.readouterr().out
    assert code == 1, out
    assert _failing(report) >= LEAKY_FAILS
    for stable in LEAKY_FAILS:  # the end of the run lists each failing test, id first
        assert f"  FAIL {stable} (" in out, out[-3000:]
    assert report["execution"]["pluginAutoload"] is False
    assert not any("rewriter" in plugin for plugin in report["execution"]["plugins"])


def test_a_call_that_never_returns_fails_its_test_and_names_the_call(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A deletion facade that hangs fails the first test that calls it after the call deadline,
    with the call named; the tests before it passed (control), and every later test is an error
    with one reason, the call that hung."""
    code, report = _run(
        "--adapter", "hostile_adapter:hangs_in_deletion", "--call-timeout", "0.5", "--level", "L3"
    )
    out = capfd.readouterr().out
    assert code == 1
    hung = [t for t in report["tests"] if t["status"] == "fail"]
    assert len(hung) == 1, hung
    assert "harness applyDeletionSignal (request" in hung[0]["message"], hung
    assert any(t["status"] == "pass" for t in report["tests"])  # the tests before it ran
    reasons = {t.get("reason") for t in report["tests"] if t["status"] == "error"}
    assert len(reasons) == 1, reasons
    assert "harness applyDeletionSignal (request" in reasons.pop()
    # Behind harness-v1 the request's own deadline names the call and stops the harness.
    assert "harness applyDeletionSignal (request" in out
    assert "got no answer within its deadline of 0.5 s" in out
    assert report["execution"]["callTimeout"] == 0.5


@pytest.mark.parametrize("transport", ["in-process", "stdio"])
def test_a_backend_whose_query_never_returns_costs_the_run_one_deadline(
    project: Path, transport: str
) -> None:
    """Once a query overran its deadline the backend is taken as broken: the one test that made
    it fails naming the call, every later test that needs the backend is an error at once with
    one shared reason naming it (no other test waits for a deadline), and the run fails."""
    outcome = runner.run_suites(
        "hostile_adapter:hangs_in_query", transport=transport, seed=3, call_timeout=2, level="L3"
    )
    assert outcome.problems == (), outcome.output[-3000:]
    assert outcome.verdict == "fail"
    tests = outcome.report["tests"]
    hung = [t for t in tests if t["status"] == "fail"]
    assert len(hung) == 1, [(t["id"], t["status"]) for t in tests if t["status"] != "pass"]
    assert "query" in hung[0]["message"], hung[0]
    assert "within 2 s" in hung[0]["message"] or "deadline of 2 s" in hung[0]["message"], hung[0]
    broken = [t for t in tests if t["status"] == "error"]
    assert len(broken) > 10, "few tests came after the hang"
    reasons = {t["reason"] for t in broken}
    assert len(reasons) == 1, reasons
    (reason,) = reasons
    assert reason.startswith("not run: the backend is taken as broken since "), reason
    assert "query" in reason, reason
    assert "within its deadline of 2 s" in reason, reason
    assert all(t["message"] == reason for t in broken)
    assert reason.endswith(f"the run ended after {hung[0]['id']}"), reason
    declined = [t for t in tests if t["status"] == "skip"]  # what the manifest declines stays skipped
    assert declined, "the tiny adapter declines tests"
    assert all("taken as broken" not in t["reason"] for t in declined)


def test_a_backend_that_is_slow_but_answers_is_not_taken_as_broken(project: Path) -> None:
    """The breaker's control: three queries take 1.5 s each, more than the deadline together and
    2.5 s short of it each (what a loaded machine may add to a call), and every test still
    runs and passes (the tiny adapter's clean verdict)."""
    outcome = runner.run_suites("hostile_adapter:slow_query", seed=3, call_timeout=4, level="L1")
    assert outcome.problems == (), outcome.output[-3000:]
    unpassed = [(t["id"], t.get("message")) for t in outcome.report["tests"] if t["status"] != "pass"]
    assert outcome.verdict == "pass", unpassed
    assert "pass" in {t["status"] for t in outcome.report["tests"]} <= {"pass", "skip"}, unpassed


def test_a_backend_that_stops_answering_ends_the_run_in_two_deadlines(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a call hangs, the run stops there, whatever a fresh backend would do (this one
    hangs too: no probe waits for it, and a harness started again does not go on): one
    deadline, not one per test left. The hung test fails naming the call; every test not
    reached is an error saying the backend is taken as broken and after which test."""
    monkeypatch.setenv("KBCONFORM_TEST_STOPPED", str(project / "stopped"))
    started = time.monotonic()
    outcome = runner.run_suites(
        "hostile_adapter:stops_answering", transport="stdio", seed=3, call_timeout=2, level="L3"
    )
    elapsed = time.monotonic() - started
    assert outcome.problems == (), outcome.output[-3000:]
    tests = outcome.report["tests"]
    hung = [t for t in tests if t["status"] == "fail"]
    assert len(hung) == 1, [(t["id"], t["status"]) for t in tests if t["status"] != "pass"]
    assert "apply" in hung[0]["message"].lower(), hung[0]["message"]
    unrun = [t for t in tests if t["status"] == "error"]
    assert unrun, "no test was left unrun"
    assert all(t["message"].startswith("not run: the backend is taken as broken since") for t in unrun)
    assert all(f"the run ended after {hung[0]['id']}" in t["message"] for t in unrun)
    assert {t["status"] for t in tests} >= {"pass", "fail", "error"}  # tests before it ran
    assert elapsed < 240, f"{elapsed:.0f} s: the run waited out more than the two deadlines"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has ended; only its exit status is left


def _wait_for(predicate: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _start_hanging_run(project: Path, *args: str) -> tuple[subprocess.Popen[str], Path, Path] | None:
    """The hanging run started, once its adapter and the adapter's child are; None when the run
    ended first (stopped at a run deadline shorter than its start on a loaded machine)."""
    scratch = project / "tmp"
    scratch.mkdir(exist_ok=True)
    pids = project / "pids.txt"
    pids.unlink(missing_ok=True)
    env = {**os.environ, "TMPDIR": str(scratch), "KBCONFORM_TEST_PIDS": str(pids)}
    command = [sys.executable, "-m", "kbconform.cli", "run", "--adapter", "hostile_adapter:spawns_and_hangs"]
    process = subprocess.Popen(
        [*command, "--call-timeout", "600", *args],
        cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip

    def started() -> bool:
        return len(pids.read_text().split()) == 2 if pids.exists() else False

    if _wait_for(lambda: started() or process.poll() is not None, 240) and not started():
        out, _ = process.communicate(timeout=60)
        assert process.returncode == 1, out[-2000:]
        assert "did not finish within its deadline" in out, out[-2000:]
        return None
    if not started():
        process.kill()  # never leave the run behind for the next test to meet
        out, _ = process.communicate(timeout=60)
        pytest.fail(f"the hanging run did not start its adapter's child within 240 s:\n{out[-2000:]}")
    return process, pids, scratch


@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGTERM are POSIX")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_the_run_its_pytest_and_what_the_adapter_started(project: Path, signum: int) -> None:
    """SIGTERM or SIGINT to kbconform run ends the pytest process and the child the adapter
    started, removes the temporary directory, and exits 128 + the signal; both were alive while
    the run went on (control)."""
    run = _start_hanging_run(project)
    assert run is not None, "the run ended before its adapter started"
    process, pids, scratch = run
    started = [int(pid) for pid in pids.read_text().split()]
    assert all(_alive(pid) for pid in started)
    assert any(scratch.iterdir())
    process.send_signal(signum)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, out
    assert _wait_for(lambda: not any(_alive(pid) for pid in started), 30)
    assert not any(scratch.iterdir())
    assert "Traceback" not in out


def test_a_run_that_overruns_its_deadline_is_stopped_and_fails(project: Path) -> None:
    """With --run-timeout the hanging run is stopped, the adapter's child with it, and it fails.
    (A short deadline first; a loaded machine that does not start the adapter and its child
    within it stops the run before them, and the run is tried again with a longer one.)"""
    for seconds in (10, 30):
        run = _start_hanging_run(project, "--run-timeout", str(seconds))
        if run is not None:
            break
    assert run is not None, "the run ended before its adapter started, twice"
    process, pids, scratch = run
    started = [int(pid) for pid in pids.read_text().split()]
    out, _ = process.communicate(timeout=120)
    assert process.returncode == 1, out
    assert f"did not finish within its deadline of {seconds} s" in out
    assert _wait_for(lambda: not any(_alive(pid) for pid in started), 30)
    assert not any(scratch.iterdir())


def test_what_the_adapter_prints_is_bounded(project: Path) -> None:
    """A backend that prints 5 MB per ingest (through sys.stdout and file descriptor 2): the
    run's memory stays near a quiet run's (it reached gigabytes when pytest captured it all), and
    the verdict is untouched. In process, each test keeps a bounded head and tail of it; behind
    harness-v1 it is the harness's log, kept within its bound."""
    peak = (
        "import resource, sys\n"
        "from kbconform import runner\n"
        # L1: some 80 tests, each ingesting (gigabytes of output over the run)
        "outcome = runner.run_suites(sys.argv[1], transport=sys.argv[2], seed=3, level='L1', extra=['-rA'])\n"
        "print(outcome.verdict, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)\n"
        'print(len(outcome.harness_log), "bytes of the harness\'s log cut]" in outcome.harness_log)\n'
        "print(outcome.output)\n"
    )
    measured = {}
    for factory, transport in (("chatty", "in-process"), ("leaky", "in-process"), ("chatty", "stdio")):
        done = subprocess.run(
            [sys.executable, "-c", peak, f"hostile_adapter:{factory}", transport],
            cwd=project, capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
        verdict, megabytes = done.stdout.split("\n", 1)[0].split()
        measured[factory, transport] = (verdict, int(megabytes), done.stdout)
    (verdict, chatty, output), (_, quiet, _) = (
        measured["chatty", "in-process"],
        measured["leaky", "in-process"],
    )
    assert verdict == "pass"
    assert chatty < quiet + 300, (chatty, quiet)
    assert "characters cut]" in output
    verdict, served, output = measured["chatty", "stdio"]
    assert verdict == "pass"
    assert served < quiet + 300, (served, quiet)
    size, cut = output.split("\n")[1].split()
    assert cut == "True"
    assert 0 < int(size) <= runner.HARNESS_LOG_LIMIT


def _statuses(outcome: runner.Outcome) -> dict[str, str]:
    return {test["id"]: test["status"] for test in outcome.report["tests"]}


#: What the two-worker run selects: every kind of test whose outcome a worker could change
#: (both state machines, Hypothesis properties, tests per facade, per spoof mode and per bad
#: principal, faults, callers at once), without the costliest (scale-01, the long atomicity
#: tests), whose outcomes hang on the seed as these do.
ACROSS_WORKERS = (
    "state-01[*]", "leak-05", "leak-06", "leak-01[*]", "leak-03[*]", "spoof-01[*]", "closed-01[*]",
    "atomic-01[*]", "atomic-02[*]", "conc-01[get]", "conc-03[list]", "delete-*", "backup-*", "contract-*",
)  # fmt: skip


def test_two_xdist_workers_give_the_serial_verdict(project: Path) -> None:
    """kbconform run --workers 2 on the reference, state machines included: every test runs on a
    worker with the controller's seed, the controller writes one complete report, and every
    outcome equals the serial run's (a failing backend's: test_plugin.py's plain pytest -n 2).
    The serial run is in process: the outcomes are the transports' alike (the mutant sweeps)."""
    adapter = "kbconform_reference.adapter:memory"
    chosen = matching(ACROSS_WORKERS)  # a run's report names each test it selected
    serial = runner.run_suites(adapter, seed=11, transport="in-process", select=chosen)
    parallel = runner.run_suites(adapter, seed=11, workers=2, select=chosen)
    assert (serial.problems, parallel.problems) == ((), ())
    assert _statuses(parallel) == _statuses(serial)
    assert len(_statuses(serial)) > 100
    assert {"state-01[overwrite]", "state-01[reject]", "leak-05"} <= set(_statuses(serial))
    assert parallel.report["execution"]["workers"] == 2
    assert serial.report["execution"]["workers"] == 0
    assert parallel.verdict == "pass"


def test_a_harness_commands_relative_arguments_are_found_where_run_was_typed(project: Path) -> None:
    """``kbconform run --harness "python serve_tiny.py"`` starts the harness in the directory
    the run was started in, so its relative script (and the adapter module it serves) are
    found there, though the run's pytest works in a temporary directory of its own."""
    (project / "serve_tiny.py").write_text(
        "import sys\nfrom kbconform.cli import main\nsys.exit(main(['serve', 'tiny_adapter:make']))\n",
        encoding="utf-8",
    )
    code, report = _run("--harness", f"{shlex.quote(sys.executable)} serve_tiny.py", "--only", "contract-01")
    assert code == 0, report.get("tests")
    assert [(t["id"], t["status"]) for t in report["tests"]] == [("contract-01", "pass")]
