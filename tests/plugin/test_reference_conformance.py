"""The reference knowledge base is held to every suite, in every store mode, through the plugin.

The reference declares every capability, so its report lists the whole suite: that list must be
the shipped catalogue (suites/catalogue.json). After changing the suites, rewrite the catalogue
with ``KBCONFORM_UPDATE_CATALOGUE=1 python -m pytest tests/plugin/test_reference_conformance.py -k memory``
(that run still fails on the tests the old catalogue lacked; the next one passes).
"""

from __future__ import annotations

import json
import os

import pytest

from kbconform import report as reports
from kbconform import runner
from kbconform._resources import data_dir

#: Each store mode, and how the suites reach it: in process (the pytest plugin's
#: --kbconform-adapter), or served over harness-v1 on stdio or HTTP (kbconform run's way).
MODES = {
    "memory": ("memory", "in-process"),
    "chroma-embedded": ("chroma_embedded", "stdio"),
    "chroma-server": ("chroma_server", "http"),
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_reference_passes_every_suite_test(mode: str) -> None:
    """No suite test fails, errors or is skipped: the reference offers every optional feature and
    earns L4, in process and through either harness-v1 transport. The server mode starts a real
    ``chroma run`` and stops it at the end of the run."""
    factory, transport = MODES[mode]
    outcome = runner.run_suites(f"kbconform_reference.adapter:{factory}", transport=transport)
    report = outcome.report
    assert outcome.problems == (), outcome.output
    shipped = data_dir("suites") / "catalogue.json"
    listed = reports.catalogue_from(report)
    if os.environ.get("KBCONFORM_UPDATE_CATALOGUE") == "1":
        shipped.write_text(reports.render_catalogue(listed), encoding="utf-8")
    assert listed == json.loads(shipped.read_text(encoding="utf-8")), (
        "the suites and suites/catalogue.json differ; see this module's docstring to rewrite it"
    )
    statuses = {entry["id"]: entry["status"] for entry in report["tests"]}
    assert {test: status for test, status in statuses.items() if status != "pass"} == {}
    assert len(statuses) >= 70
    assert outcome.returncode == 0
    reports.verify(report)
    assert [lv for lv, v in report["levels"].items() if v["earned"]] == ["L0", "L1", "L2", "L3", "L4"]
