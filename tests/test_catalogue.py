"""suites/catalogue.json is the suites' own declarations, never a run's outcome."""

from __future__ import annotations

import os

import pytest

from kbconform import report as reports
from kbconform import runner
from kbconform._resources import data_dir

pytest_plugins = ["pytester"]

SHIPPED = data_dir("suites") / "catalogue.json"


def test_the_shipped_catalogue_is_what_the_suites_declare() -> None:
    """Collected (not run) against each built-in profile's maximal manifest, the suites' marks
    and parameters give exactly the shipped catalogue; with KBCONFORM_UPDATE_CATALOGUE=1 the
    catalogue is rewritten from them first (review the diff). Each profile has entries, and the
    tenant-namespace ones carry both spoof modes and every read facade (the maximal manifest)."""
    catalogue = runner.declared_catalogue()
    declared = reports.render_catalogue(catalogue)
    if os.environ.get("KBCONFORM_UPDATE_CATALOGUE") == "1":
        SHIPPED.write_text(declared, encoding="utf-8")
    assert declared == SHIPPED.read_text(encoding="utf-8"), (
        "the suites' declarations and suites/catalogue.json differ; rewrite it with "
        "KBCONFORM_UPDATE_CATALOGUE=1 python -m pytest tests/test_catalogue.py and review the diff"
    )
    tests = catalogue["tests"]
    assert {entry.get("profile", "tenant-namespace") for entry in tests} == {
        "tenant-namespace", "project-pool", "kb-grant"
    }  # fmt: skip
    tenant = [entry for entry in tests if "profile" not in entry]
    assert {entry["spoofMode"] for entry in tenant if "spoofMode" in entry} == {"overwrite", "reject"}
    assert {entry["facade"] for entry in tenant if "facade" in entry} == {
        "query",
        "get",
        "list",
        "count",
        "ask",
    }


def test_catalogue_mode_runs_no_backend(pytester: pytest.Pytester) -> None:
    """--kbconform-catalogue with an adapter is a usage error; for a profile with no manifest
    branch, too. Alone it writes the list and runs no test (the control: the list has entries)."""
    pytester.makeini("[pytest]\n")
    both = pytester.runpytest_subprocess("--kbconform-catalogue=c.json", "--kbconform-adapter=a:b")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert "runs no backend" in both.stderr.str()
    unknown = pytester.runpytest_subprocess(
        "--kbconform-catalogue=c.json", "--kbconform-catalogue-profile=notes"
    )
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a built-in profile" in unknown.stderr.str()
    alone = pytester.runpytest_subprocess(
        "--kbconform-catalogue=c.json", "--kbconform-catalogue-profile=kb-grant"
    )
    assert " passed" not in alone.stdout.str()
    listed = (pytester.path / "c.json").read_text(encoding="utf-8")
    assert '"grant-01"' in listed
    assert '"leak-01' not in listed
