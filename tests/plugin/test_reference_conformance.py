"""The reference knowledge base is held to every suite, in every store mode, through the plugin."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

MODES = {"memory": "memory", "chroma-embedded": "chroma_embedded", "chroma-server": "chroma_server"}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_reference_passes_every_suite_test(pytester: pytest.Pytester, mode: str) -> None:
    """No suite test fails, errors or is skipped: the reference offers every optional feature.
    The server mode starts a real ``chroma run`` and stops it at the end of the run."""
    result = pytester.runpytest_subprocess(
        f"--kbconform-adapter=kbconform_reference.adapter:{MODES[mode]}",
        "--kbconform-report=report.json",
        "-p",
        "no:cacheprovider",
    )
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    statuses = {entry["id"]: entry["status"] for entry in report["tests"]}
    assert {test: status for test, status in statuses.items() if status != "pass"} == {}
    assert len(statuses) >= 70
    assert result.ret == 0
