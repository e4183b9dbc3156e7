"""An isolation profile added from outside the kit (tests/notes_profile/: its protocol, model,
world, wire table and one suite test, registered by one entry point) is judged through the
pytest plugin in process, and by ``kbconform run`` over harness-v1; a leaky backend of it fails
(the control)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbconform.report._catalogue import RUN_FIELDS
from tests.notes_profile import PROFILE

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "tests" / "notes_profile" / "suite" / "catalogue.json"
RUN_TIMEOUT = 600


@pytest.fixture
def registered(tmp_path: Path) -> dict[str, str]:
    """The environment of a process where an installed package registers the notes profile:
    a distribution's metadata naming it in the entry-point group ``kbconform.profiles``."""
    info = tmp_path / "site" / "notes_profile-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: notes-profile\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[kbconform.profiles]\nnotes = tests.notes_profile:PROFILE\n")
    path = os.pathsep.join([str(info.parent), str(ROOT)])
    return {**os.environ, "PYTHONPATH": path}


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {test["id"]: test["status"] for test in report["tests"]}


def _earned(report: dict[str, Any]) -> list[str]:
    return [level for level, verdict in report["levels"].items() if verdict["earned"]]


WANTED = {"iso-01[notes]", "iso-02[notes]", "iso-03[notes]", "notes-01"}
#: The concurrency suite, shared by every profile, which the notes adapter declines (its manifest
#: declares no concurrency): skipped, never capping a level.
DECLINED = {"conc-01[notes]", "conc-02[notes]", "conc-03[notes]"}


def test_the_plugin_runs_a_registered_profile_in_process(tmp_path: Path, registered: dict[str, str]) -> None:
    """``pytest --kbconform-adapter`` runs the shared isolation suite and the profile's own suite
    against a notes backend: every test of the profile passes, no other profile's test runs."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--kbconform-adapter=tests.notes_profile.adapter:make",
            "--kbconform-report=report.json",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=registered,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert _statuses(report) == {**dict.fromkeys(WANTED, "pass"), **dict.fromkeys(DECLINED, "skip")}
    assert _earned(report) == ["L1", "L2"]  # the levels the profile has tests at
    declared = [
        {key: value for key, value in test.items() if key not in RUN_FIELDS}
        for test in sorted(report["tests"], key=lambda test: test["id"])
    ]
    assert declared == list(PROFILE.entries()), "the notes tests' marks and suite/catalogue.json differ"


def test_the_notes_catalogue_is_what_its_tests_declare(registered: dict[str, str]) -> None:
    """A plug-in's catalogue takes the built-ins' path: ``declared_catalogue(["notes"])`` collects
    the shared suite and the profile's own against its maximal manifest, runs nothing, and gives
    exactly ``suite/catalogue.json`` (as ``tests/test_catalogue.py`` holds the shipped one)."""
    script = (
        "import json, sys\n"
        "from kbconform.report import render_catalogue\n"
        "from kbconform.runner import declared_catalogue\n"
        "sys.stdout.write(render_catalogue(declared_catalogue(sys.argv[1:])))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "notes"],
        cwd=ROOT,
        env=registered,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    declared = json.loads(done.stdout)["tests"]
    assert {entry["id"] for entry in declared} == WANTED | DECLINED
    assert declared == json.loads(CATALOGUE.read_text(encoding="utf-8"))["tests"]
    assert declared == list(PROFILE.entries())


@pytest.mark.parametrize(("factory", "status"), [("make", "pass"), ("leaky", "fail")])
def test_kbconform_run_judges_a_registered_profile_over_harness_v1(
    tmp_path: Path, registered: dict[str, str], factory: str, status: str
) -> None:
    """``kbconform run --adapter`` serves the notes backend from a child process over harness-v1
    (the profile's own operations, checked by its schemas) and verifies the report: the correct
    backend passes every test; one that shows every tenant every note fails the tests that read
    (iso-01 and notes-01), and still refuses no identity (iso-02 passes)."""
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbconform",
            "run",
            "--adapter",
            f"tests.notes_profile.adapter:{factory}",
            "--report",
            str(report_path),
        ],
        cwd=ROOT,
        env=registered,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == (0 if status == "pass" else 1), done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["config"]["harness"]["transport"] == "stdio"
    statuses = _statuses(report)
    assert set(statuses) == WANTED | DECLINED
    assert {statuses[test] for test in DECLINED} == {"skip"}
    if status == "pass":
        assert {statuses[test] for test in WANTED} == {"pass"}
    else:
        assert {statuses["iso-01[notes]"], statuses["notes-01"]} == {"fail"}
        assert statuses["iso-02[notes]"] == "pass"


def test_without_the_entry_point_the_profile_is_unknown(tmp_path: Path) -> None:
    """Control: with no package registering it, a notes manifest is refused as the
    adapter-manifest-v1 of no known profile."""
    done = subprocess.run(
        [sys.executable, "-m", "kbconform", "run", "--adapter", "tests.notes_profile.adapter:make"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "isolationProfile" in done.stdout + done.stderr
