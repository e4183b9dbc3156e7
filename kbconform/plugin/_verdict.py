"""Each suite test's result: its status, held honest (only a declined capability skips it), its
failure's message, what the adapter printed, its transcript; the run stopped when the backend
no longer answers; the results gathered where the report is built."""

from __future__ import annotations

import contextlib
import re
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kbconform._levels import RANK
from kbconform.plugin._collection import entry_of
from kbconform.plugin._fixtures import unanswered
from kbconform.plugin._stash import (
    DECLINED,
    MISSING_CATEGORY,
    PROPERTY,
    RUN,
    SHRINK_STOPPED,
    STARTED,
    STOPPED,
    case,
    stable_id,
    transcript_of,
)


def _status(report: pytest.TestReport) -> str:
    if report.skipped:
        return "skip"
    if report.failed:
        return "fail" if report.when == "call" else "error"
    return "pass" if report.when == "call" else "disabled"


#: pytest's hint that a comparison was shortened: a report's message is never cut to it (a
#: ``kbconform run`` asks pytest for whole comparisons).
_VERBOSE_HINT = re.compile(r"\n *(Use -v to get more diff|Use -v to get the full diff)$", re.MULTILINE)
#: The most characters of a failure's text a result carries to the report, which keeps far fewer.
_FAILURE_TEXT = 100_000


def _failure(report: pytest.TestReport) -> str:
    """Why a test failed, as pytest tells it: the message of the exception that ended it, else
    the ``E`` lines of the failure as pytest renders it, else the whole of that text."""
    longrepr = report.longrepr
    crash = getattr(getattr(longrepr, "reprcrash", None), "message", None)
    if isinstance(crash, str) and crash.strip():
        return _VERBOSE_HINT.sub("", crash)[:_FAILURE_TEXT]
    rendered = longrepr if isinstance(longrepr, str) else report.longreprtext
    lines = [line[1:] for line in rendered.splitlines() if line.startswith("E ")]
    return (textwrap.dedent("\n".join(lines)) if lines else rendered)[:_FAILURE_TEXT]


def _hold_honest(item: pytest.Item, report: pytest.TestReport, stable: str) -> None:
    """A suite test's outcome is its own: only the manifest's declined capabilities skip one.

    Any other skip (a skip mark, ``pytest.skip``, a skipping fixture) and any xfail mark turn
    the result into a failure: an expected failure is still a failure, and an unexpected pass
    means the mark is stale.
    """
    was_xfail = getattr(report, "wasxfail", None)
    if was_xfail is not None:
        del report.wasxfail
        how = "failed as expected" if report.skipped else "passed unexpectedly"
        why = f"it is marked xfail ({was_xfail or 'no reason'}) and {how}"
    elif report.skipped and item.nodeid not in item.config.stash[DECLINED]:
        longrepr = report.longrepr
        why = f"it was skipped ({longrepr[2] if isinstance(longrepr, tuple) else longrepr})"
    else:
        return
    report.outcome = "failed"
    report.longrepr = (
        f"kbconform: {stable} failed because {why}. A suite test may be skipped only when the "
        "manifest declines a capability it requires, and may not be marked xfail."
    )


def begin(item: pytest.Item) -> None:
    """A suite test begins: its transcript starts afresh, its clock and its count of calls start."""
    if case(item) is None:
        return
    transcript = transcript_of(item.config)
    if transcript is not None:
        transcript.begin_test()
    run = item.config.stash.get(RUN, None)
    item.stash[STARTED] = (time.perf_counter(), run.calls if run is not None else 0)


def _spent(item: pytest.Item) -> dict[str, Any]:
    """How long the test has taken since it began (set-up included), in seconds, and how many
    calls into the backend it made (``duration``, ``calls``)."""
    started = item.stash.get(STARTED, None)
    if started is None:
        return {}
    clock, calls = started
    return {
        "duration": round(time.perf_counter() - clock, 3),
        "calls": max(0, item.config.stash[RUN].calls - calls),
    }


def _charge(call: pytest.CallInfo[None]) -> dict[str, str]:
    """What the failure that ended the call charges the backend with (the suites' ``charged``):
    the caller and the effect, where the test that failed said them. An error out of the test
    that no one charged says what the backend did: a kit error (a call the test needed to land,
    refused), which way it took the call (``refused``); any other error but an assertion, a
    facade not implemented yet and pytest's or Hypothesis's own, a call that failed with an
    error the contract does not name (``failed``)."""
    from kbconform.conformance import charge_of, error_name
    from kbconform.errors import KbconformError

    if call.excinfo is None:
        return {}
    error = call.excinfo.value
    found = charge_of(error)
    if found is not None:
        return found.fields()
    if isinstance(error, KbconformError):
        return {"direction": "refused"}
    ours = type(error).__module__.split(".", 1)[0] in ("_pytest", "pytest", "hypothesis")
    several = isinstance(getattr(error, "exceptions", None), (list, tuple))  # Hypothesis's group
    if isinstance(error, (AssertionError, NotImplementedError)) or not isinstance(error, Exception):
        return {}
    if ours or several:
        return {}
    return {"effect": "failed", "raised": error_name(error)}


#: Seconds a suite test runs before the terminal names it, and between two such lines: a whole
#: run shows pytest's dots only, and a test that takes minutes is otherwise named at the end.
LONG_TEST = 60.0


@contextlib.contextmanager
def still_running(say: Callable[[str], None], test_id: str, every: float = LONG_TEST) -> Iterator[None]:
    """Around a test's call: ``say`` a line naming ``test_id`` and its time each ``every``
    seconds it is still running (from a thread of its own; none for a test that ends sooner)."""
    done = threading.Event()
    started = time.monotonic()

    def watch() -> None:
        while not done.wait(every):
            say(f"still running: {test_id} ({time.monotonic() - started:.0f} s)")

    watcher = threading.Thread(target=watch, name="kbconform-still-running", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


def _say(config: pytest.Config) -> Callable[[str], None]:
    """A line on the terminal, on a line of its own, past pytest's capture of the test's output
    (which holds the terminal's file while the test runs); nothing where there is no terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return lambda line: None

    def say(line: str) -> None:
        held = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with held:
            # ``write_line`` starts a new line only after a file's name (``-q`` prints dots alone)
            if getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0):
                reporter.write("\n")
            reporter.write_line(line)
            reporter.flush()

    return say


@contextlib.contextmanager
def calling(item: pytest.Item) -> Iterator[None]:
    """Around a suite test's call: its transcript's call begins, a facade not implemented yet
    ends the test at once, Hypothesis's shrinking is bounded (whether it stopped at the
    budget is kept on the item), and a test still running after :data:`LONG_TEST` seconds is
    named on the terminal."""
    mark = case(item)
    if mark is None:
        yield
        return
    from kbconform.conformance import ending_tests

    transcript = transcript_of(item.config)
    if transcript is not None:
        transcript.begin_call()
    run = item.config.stash.get(RUN, None)
    shrinking: contextlib.AbstractContextManager[list[str]] = (
        run.shrinking() if run is not None else contextlib.nullcontext([])
    )
    running = still_running(_say(item.config), stable_id(item, mark), LONG_TEST)
    with running, ending_tests(), shrinking as stopped:  # a facade not implemented yet ends the test at once
        try:
            yield
        finally:
            item.stash[SHRINK_STOPPED] = bool(stopped)


def judge(item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport) -> pytest.TestReport:
    """A suite test's phase as pytest reported it, judged: its output bounded, its outcome held
    honest, and its result (status, reason, message, transcript) carried with the report."""
    mark = case(item)
    if mark is None or RUN not in item.config.stash:
        return report
    _bound_output(item, report)
    printed = item.config.stash[RUN].take_output()
    if printed:
        report.sections.append((f"kbconform: what the adapter printed ({report.when})", printed))
    entry = entry_of(item, mark)
    _hold_honest(item, report, entry["id"])
    unimplemented = _not_implemented(report, call)
    entry["status"] = _status(report)
    entry.update(_spent(item))
    broken = _broken(report, call)
    if broken is not None:  # not judged: the backend was taken as broken before the test
        entry["status"], entry["reason"] = "error", broken
    if entry["status"] == "skip":
        entry["reason"] = item.config.stash[DECLINED][item.nodeid]
    elif entry["status"] in ("fail", "error"):
        entry["message"] = _failure(report)  # the report cleans, redacts and bounds it
        entry.update(_charge(call))
        if unimplemented is not None:
            entry["notImplemented"] = unimplemented
        if item.stash.get(SHRINK_STOPPED, False):
            entry["shrinkStopped"] = True
        transcript = transcript_of(item.config)
        if transcript is not None and transcript.exchanges:
            entry["transcript"] = transcript.lines()
        _stop_if_dead(item, call)
    # The result travels with the report (to the pytest-xdist controller, when there is one) in
    # a list of its own: ``user_properties`` is shared by the item's reports.
    report.user_properties = [*report.user_properties, (PROPERTY, entry)]
    return report


def _not_implemented(report: pytest.TestReport, call: pytest.CallInfo[None]) -> str | None:
    """The call a failed test ended at because it is not implemented yet (in the test or a
    fixture; :class:`~kbconform.conformance.Unimplemented`), its failure cut to one line and
    no traceback; None for any other outcome."""
    from kbconform.conformance import NotImplementedFacade, Unimplemented

    if not report.failed or call.excinfo is None:
        return None
    missing = call.excinfo.value
    if isinstance(missing, NotImplementedFacade):
        missing = missing.missing
    if not isinstance(missing, Unimplemented):
        return None
    report.longrepr = str(missing)
    return missing.call


def _broken(report: pytest.TestReport, call: pytest.CallInfo[None]) -> str | None:
    """The one cause of a test that ended because the backend was taken as broken (an earlier
    call hung; :class:`~kbconform.conformance.BackendBroken`), its failure that line alone."""
    from kbconform.conformance import BackendBroken

    error = unanswered(call.excinfo.value) if call.excinfo is not None else None
    if not report.failed or not isinstance(error, BackendBroken):
        return None
    report.longrepr = str(error)
    return report.longrepr


def teststatus(report: pytest.TestReport) -> Any:
    """A test that ended at a facade not implemented yet is counted apart from the failures
    (the run still fails): the terminal prints one line for each facade, not a traceback for
    each test. A test not judged because the backend was taken as broken is an error, as its
    result says, wherever it ended."""
    entries = [
        entry
        for name, entry in getattr(report, "user_properties", ())  # a CollectReport has none
        if name == PROPERTY and isinstance(entry, dict)
    ]
    if report.failed and any("notImplemented" in entry for entry in entries):
        return MISSING_CATEGORY, "N", ("NOT IMPLEMENTED", {"red": True})
    if report.failed and any(entry["status"] == "error" and "reason" in entry for entry in entries):
        return "error", "E", "ERROR"
    return None


def _stop_if_dead(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A test ended by a call past its deadline: the backend is taken as broken (a circuit
    breaker, :meth:`~kbconform.conformance.Run.trip`) and the run stops here; every test it did
    not reach is an error with one reason, the call that hung, so a hang costs the run one
    deadline, not one per test. A harness that broke otherwise (it exited, or broke the
    protocol) is started again: probe it (:meth:`~kbconform.conformance.Run.probe`), and stop
    the run the same way only when it does not answer either."""
    from kbconform.conformance import BackendBroken, DeadlineExceeded
    from kbconform.harness import HarnessBroken

    error = unanswered(call.excinfo.value) if call.excinfo is not None else None
    if not isinstance(error, DeadlineExceeded | HarnessBroken) or STOPPED in item.config.stash:
        return
    run = item.config.stash[RUN]
    mark = case(item)
    after = stable_id(item, mark) if mark is not None else item.nodeid
    if isinstance(error, DeadlineExceeded) or error.deadline is not None:
        seconds = error.seconds if isinstance(error, DeadlineExceeded) else error.deadline
        run.trip(f"{error.call} did not return within its deadline of {seconds:g} s")
        why = f"{BackendBroken(str(run.broken))}; the run ended after {after}"
    else:
        silent = run.probe()
        if silent is None:
            return
        why = (
            f"not run: the backend stopped answering ({error}; then opening a fresh "
            f"backend failed too: {silent}), so the run ended after {after}"
        )
    item.config.stash[STOPPED] = why
    item.session.shouldstop = f"kbconform: {why}"


class Gatherer:
    """Gathers each suite test's result where the report is built: this process, or the
    pytest-xdist controller, which receives every worker's reports."""

    def __init__(self, results: dict[str, dict[str, Any]]) -> None:
        self.results = results

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, entry in report.user_properties:
            if name != PROPERTY or not isinstance(entry, dict):
                continue
            known = self.results.get(report.nodeid)
            if known is None or RANK[entry["status"]] > RANK[known["status"]]:  # only moves up
                self.results[report.nodeid] = dict(entry)


def _bound_output(item: pytest.Item, report: pytest.TestReport) -> None:
    """Keep a bounded head and tail of each captured section (what the adapter prints during a
    call is bounded already; this covers what escapes it, such as an abandoned call's thread)."""
    from kbconform.conformance import Tail

    def cut(text: str) -> str:
        tail = Tail()
        tail.write(text)
        return tail.take()

    report.sections = [(key, cut(text)) for key, text in report.sections]
    kept = getattr(item, "_report_sections", None)  # pytest keeps every phase's capture here too
    if isinstance(kept, list):
        kept[:] = [(when, key, cut(text)) for when, key, text in kept]
