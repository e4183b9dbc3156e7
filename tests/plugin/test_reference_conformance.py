"""The reference knowledge bases are held to every suite, in every store mode, through the plugin.

Each reference declares every capability of its isolation profile, so its report lists the
whole suite for that profile: that list must be the shipped catalogue's (suites/catalogue.json,
which the suites' own declarations give: tests/test_catalogue.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbconform import report as reports
from kbconform import runner
from kbconform._resources import data_dir
from kbconform.cli import main

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

#: Each store mode, and how the suites reach it: in process (the pytest plugin's
#: --kbconform-adapter), or served over harness-v1 on stdio or HTTP (kbconform run's way; the
#: memory mode's run is ``kbconform run --adapter`` itself, its table and verdict read too). Each
#: transport carries a whole suite on a store that costs little (tenant-namespace's in memory on
#: stdio, project-pool's on HTTP, memory-scope's on stdio); the costly stores run in process,
#: where the calls are the stores' own (serving doubles a run's CPU, and the same messages cross
#: either transport: tests/harness/test_harness.py holds them equal facade by facade).
MODES = {
    "memory": ("kbconform_reference.adapter:memory", "stdio"),
    "chroma-embedded": ("kbconform_reference.adapter:chroma_embedded", "in-process"),
    "chroma-server": ("kbconform_reference.adapter:chroma_server", "in-process"),
    "postgres": ("kbconform_reference.adapter:postgres", "in-process"),
    "qdrant-local": ("kbconform_reference.pool.adapter:qdrant_local", "http"),
    "grant-multi-store": ("kbconform_reference.grant.adapter:multi_store", "in-process"),
    "memory-scope-qdrant": ("kbconform_reference.memory.adapter:qdrant_local", "stdio"),
    "store-tenancy-chroma-server": ("kbconform_reference.tenancy.adapter:chroma_server", "stdio"),
}
#: The fewest tests a full run of each profile holds.
FEWEST = {
    "tenant-namespace": 140,
    "project-pool": 15,
    "kb-grant": 20,
    "memory-scope": 15,
    "store-tenancy": 30,
}
SHIPPED = data_dir("suites") / "catalogue.json"


def _profile(entry: dict[str, object]) -> object:
    return entry.get("profile", "tenant-namespace")


def _kbconform_run(factory: str, where: Path, capfd: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """``kbconform run --adapter factory`` (every level, a seed of its own): its report, its
    output, and the checks of the command's own output: a table per level and suite, the
    verdict line with the seed, exit 0, no selection (run never selects)."""
    path = where / "report.json"
    code = main(["run", "--adapter", factory, "--report", str(path)])
    out = capfd.readouterr().out
    assert code == 0, out[-20_000:]
    report = json.loads(path.read_text(encoding="utf-8"))
    assert "L2     cross-tenant-leak" in out
    assert "every test passed or was declined; highest level earned: L4" in out
    assert f"; seed {report['seed']}; " in out
    assert report["execution"]["selection"] is None
    return report, out


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_reference_passes_every_suite_test(
    mode: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """No suite test fails, errors or is skipped: each reference offers every optional feature of
    its profile and earns L4, in process and through either harness-v1 transport. The server
    mode starts a real ``chroma run`` and stops it at the end of the run. Its test list is the
    shipped catalogue's entries of its profile. The memory mode runs as ``kbconform run``
    (exit 0, a table per level and suite, the verdict with its seed)."""
    factory, transport = MODES[mode]
    if mode == "memory":
        report, output = _kbconform_run(factory, tmp_path, capfd)
        problems: tuple[str, ...] = ()
        returncode = 0
    else:
        outcome = runner.run_suites(factory, transport=transport)
        report, output = outcome.report, outcome.output
        problems, returncode = outcome.problems, outcome.returncode
    profile = report["manifest"].get("isolationProfile", "tenant-namespace")
    listed = reports.catalogue_from(report)["tests"]
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert problems == (), output
    assert listed == [entry for entry in shipped["tests"] if _profile(entry) == profile], (
        "the run did not report its profile's catalogue entries (tests/test_catalogue.py holds "
        "the catalogue to the suites' declarations)"
    )
    statuses = {entry["id"]: entry["status"] for entry in report["tests"]}
    failing = {e["id"]: f"{e['status']}: {e.get('message') or e.get('reason', '')}" for e in report["tests"]}
    assert {test: failing[test] for test, status in statuses.items() if status != "pass"} == {}, (
        f"seed {report['seed']} (rerun with --kbconform-seed); the run's output:\n{output[-20_000:]}"
    )
    assert len(statuses) >= FEWEST[profile]
    assert returncode == 0
    reports.verify(report)
    assert [lv for lv, v in report["levels"].items() if v["earned"]] == ["L0", "L1", "L2", "L3", "L4"]
