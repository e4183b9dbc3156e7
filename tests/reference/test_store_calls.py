"""The atomicity suite assumes nothing about how many store calls a write takes: the reference
writing three rows per store call (about seventy calls a write, all rolled back on a fault) is
judged as the reference writing 64 rows a call is."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kbconform import runner

#: Each test here runs the suites in a child process: the slow tier.
pytestmark = pytest.mark.slow

#: An ingest under a lasting fault and a sync under a transient one: every place a fault lands.
SELECTED = ("atomic-01[lasting]", "atomic-04[transient]")

ROW_BY_ROW = textwrap.dedent(
    """
    from kbconform_reference.namespace.adapter import ReferenceAdapter
    from kbconform_reference.namespace.stores.memory import MemoryStore


    class FewRowsACall(ReferenceAdapter):
        def _store(self):
            return MemoryStore(max_batch=3)


    def make():
        return FewRowsACall("memory")
    """
)


def test_a_backend_that_makes_many_store_calls_a_write_passes_the_atomicity_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ingest and a sync pass the atomicity suite against the reference paging three rows per
    store call: each 200-row write makes more than 50 store calls (the suite once gave up after
    50, failing such a backend), and a fault is tried at the first 25 and at calls spread over
    the rest. (In process: what is judged is the suite, not a transport; served, each faulted
    write and each read judging it would be a harness-v1 round trip.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "row_by_row.py").write_text(ROW_BY_ROW, encoding="utf-8")
    outcome = runner.run_suites("row_by_row:make", transport="in-process", seed=2, select=SELECTED)
    tests = outcome.report["tests"]
    statuses = {test["id"]: test["status"] for test in tests}
    assert (outcome.verdict, outcome.problems) == ("pass", ()), {
        test["id"]: test.get("message", "")[:300] for test in tests if test["status"] != "pass"
    }
    assert sorted(statuses) == sorted(SELECTED), statuses
    assert set(statuses.values()) == {"pass"}, statuses
