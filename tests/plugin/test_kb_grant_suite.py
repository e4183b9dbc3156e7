"""The kb-grant suites against the in-memory kb-grant adapter (tests/plugin/grant_adapter.py):
it passes every kb-grant test and earns L4, and a manifest of one store and one model declines
the tests that need two. That each test can fail is proven by the reference-grant mutants
(tests/plugin/test_mutants.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbconform import report as reports
from tests.plugin.test_honesty import _run_suites

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

GRANT = (Path(__file__).parent / "grant_adapter.py").read_text(encoding="utf-8")
#: A manifest of one store and one model, the double otherwise unchanged.
SINGLE = """
from grant_adapter import MANIFEST, Grants

class Single(Grants):
    manifest = {**MANIFEST, "stores": MANIFEST["stores"][:1], "models": MANIFEST["models"][:1]}

def make():
    return Single()
"""


def _run(pytester: pytest.Pytester, factory: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    pytester.makepyfile(grant_adapter=GRANT, single_adapter=SINGLE)
    return _run_suites(pytester, f"--kbconform-adapter={factory}", "--kbconform-seed=7", *args)


def _grant_ids() -> set[str]:
    return {entry["id"] for entry in reports.catalogue() if entry.get("profile") == "kb-grant"}


def test_the_correct_double_passes_every_kb_grant_test_and_earns_l4(pytester: pytest.Pytester) -> None:
    """Every kb-grant test of the catalogue (grant-01 to grant-14, iso-01 to iso-03 by
    operation) runs and passes; no other profile's test runs; the report verifies."""
    result, report = _run(pytester, "grant_adapter:make")
    statuses = {entry["id"]: entry["status"] for entry in report["tests"]}
    assert set(statuses) == _grant_ids()
    assert {f"grant-{n:02d}" for n in range(1, 15)} <= set(statuses)
    assert {status for status in statuses.values()} == {"pass"}, statuses
    assert [level for level, verdict in report["levels"].items() if verdict["earned"]] == [
        "L0",
        "L1",
        "L2",
        "L3",
        "L4",
    ]
    reports.verify(report)
    assert result.ret == 0


def test_one_store_and_one_model_decline_the_tests_that_need_two(pytester: pytest.Pytester) -> None:
    """multi-store and multi-model are declined with the manifest's reason; every other test
    passes against the same double with one store and one model."""
    result, report = _run(pytester, "single_adapter:make", "--kbconform-level=L2")
    skipped = {entry["id"]: entry["reason"] for entry in report["tests"] if entry["status"] == "skip"}
    needing = {
        entry["id"]
        for entry in reports.catalogue()
        if entry.get("profile") == "kb-grant"
        and {"multi-store", "multi-model"} & set(entry.get("requires", ()))
        and entry["level"] in ("L0", "L1", "L2")
    }
    assert set(skipped) == needing
    assert "grant-06" in skipped
    assert "multi-store not offered: the manifest lists 1 store; this test needs two" in skipped["grant-06"]
    assert {entry["status"] for entry in report["tests"] if entry["id"] not in skipped} == {"pass"}
    assert result.ret == 0
