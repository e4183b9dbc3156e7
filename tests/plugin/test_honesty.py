"""Honest verdicts: no plugin or conftest can skip, xfail, drop or re-wire a suite test.

Each test loads a small plugin (``-p meddler``) that does one dishonest thing to the suites and
checks the run fails because of it; the tiny adapter's clean run (test_plugin.py) is the control.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.plugin import inprocess

#: Each test here runs the suites up to L2: the slow tier.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

TINY = (Path(__file__).parent / "tiny_adapter.py").read_text(encoding="utf-8")

MARKING = """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        marker = item.get_closest_marker("kbconform")
        if marker is not None and marker.kwargs["id"] == {target!r}:
            item.add_marker({mark})
"""


def _run_suites(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """pytest with ``args`` in this process (tests in order, failures not shrunk: only the
    statuses count) writing report.json: its result, and the report ({} when none was written)."""
    return inprocess.run_with_report(pytester, *args, "--kbconform-no-shrink", "-p", "no:randomly")


def _run(
    pytester: pytest.Pytester, meddler: str, factory: str = "make"
) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(tiny_adapter=TINY, meddler=meddler)
    return _run_suites(
        pytester, f"--kbconform-adapter=tiny_adapter:{factory}", "--kbconform-level=L2", "-p", "meddler"
    )


def _statuses(report: dict[str, Any], prefix: str) -> set[str]:
    return {t["status"] for t in report["tests"] if t["id"].startswith(prefix)}


@pytest.mark.parametrize(
    ("mark", "status"),
    [
        ("pytest.mark.skip(reason='flaky on our backend')", "error"),
        ("pytest.mark.skipif(True, reason='not today')", "error"),
        ("pytest.mark.xfail(reason='known leak')", "fail"),
        ("pytest.mark.xfail(reason='known leak', strict=False)", "fail"),
    ],
)
def test_a_security_test_cannot_be_skipped_or_expected_to_fail(
    pytester: pytest.Pytester, mark: str, status: str
) -> None:
    """leak-02 passes on the tiny adapter; marked skip or xfail by another plugin it fails the
    run instead (an xfail that passes is a stale mark, not a pass)."""
    result, report = _run(pytester, MARKING.format(target="leak-02", mark=mark))
    assert _statuses(report, "leak-02") == {status}
    assert _statuses(report, "leak-04") == {"pass"}  # control: an untouched test still passes
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*kbconform: leak-02 failed because it *. A suite test may be skipped only when the manifest*"]
    )


def test_an_expected_failure_of_a_failing_backend_still_fails(pytester: pytest.Pytester) -> None:
    """The leaky backend fails leak-01[list]; an xfail mark does not turn that into a pass."""
    result, report = _run(
        pytester, MARKING.format(target="leak-01", mark="pytest.mark.xfail(reason='known')"), "leaky"
    )
    assert {t["status"] for t in report["tests"] if t["id"] == "leak-01[list]"} == {"fail"}
    result.stdout.fnmatch_lines(
        ["*leak-01[[]list[]] failed because it is marked xfail (known) and failed as expected*"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_skip_from_inside_a_test_is_a_failure(pytester: pytest.Pytester) -> None:
    """A backend that calls pytest.skip while the suite runs it does not get a skip."""
    meddler = """
import pytest
import tiny_adapter
from kbconform_reference import KnowledgeBase

class Skipping(KnowledgeBase):
    def query(self, *args, **kwargs):
        pytest.skip("query is not ready")

def make():
    adapter = tiny_adapter.Tiny()
    adapter.open = lambda options: Skipping(tiny_adapter.MemoryStore())
    return adapter
"""
    pytester.makepyfile(tiny_adapter=TINY, meddler=meddler)
    result, report = inprocess.run_with_report(
        pytester, "--kbconform-adapter=meddler:make", "--kbconform-level=L2"
    )
    assert _statuses(report, "leak-01[query]") == {"fail"}
    assert all(t.get("requires") for t in report["tests"] if t["status"] == "skip")  # declined only
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_dropped_suite_test_fails_the_run_as_incomplete(pytester: pytest.Pytester) -> None:
    """A plugin removing leak-04 from the collection leaves every other test passing, yet the run
    fails and the report lists leak-04 as missing, an error."""
    meddler = """
def pytest_collection_modifyitems(items):
    items[:] = [i for i in items if "leak-04" not in str(i.get_closest_marker("kbconform"))]
"""
    result, report = _run(pytester, meddler)
    assert report["completeness"] == {"missing": ["leak-04"], "unknown": []}
    assert _statuses(report, "leak-04") == {"error"}
    assert {t["status"] for t in report["tests"] if t["id"] != "leak-04"} <= {"pass", "skip"}
    result.stdout.fnmatch_lines(["*kbconform: incomplete run*", "*1 suite tests did not run*leak-04*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_suite_fixture_cannot_be_overridden(pytester: pytest.Pytester) -> None:
    """A plugin, loaded by the project's conftest, providing its own kbconform_backend is
    refused before any test runs."""
    meddler = """
import pytest

@pytest.fixture
def kbconform_backend():
    return None
"""
    pytester.makeconftest("pytest_plugins = ['backend_override']")  # a name no installed package has
    pytester.makepyfile(backend_override=meddler)
    result, _ = _run(pytester, "")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*would get the fixture kbconform_backend from backend_override*"])
