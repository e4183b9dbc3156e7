"""Each harness's VERDICT.md is generated: equal to what harnesses/record_verdict.py makes of its
verdict.json and NOTES.md (the prose a person writes), with every failing test once, under the
kit's cause."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.harness.installs import load_script

HARNESSES = Path(__file__).resolve().parents[2] / "harnesses"
NAMES = ("neo", "mem0", "langgraph", "adk", "chroma_server")


@pytest.mark.parametrize("name", NAMES)
def test_verdict_md_is_its_generation_from_verdict_json_and_notes(name: str) -> None:
    """VERDICT.md equals record_verdict.py's render of verdict.json and NOTES.md; regenerate it
    with ``python harnesses/record_verdict.py NAME --docs``."""
    generated = load_script(HARNESSES / "record_verdict.py").render(name)
    assert (HARNESSES / name / "VERDICT.md").read_text(encoding="utf-8") == generated, (
        f"harnesses/{name}/VERDICT.md differs from its generation: "
        f"python harnesses/record_verdict.py {name} --docs"
    )


@pytest.mark.parametrize("name", NAMES)
def test_every_failing_test_is_listed_once_under_a_cause(name: str) -> None:
    """The generated tables and lists name each failing test of verdict.json exactly once, and
    no test that did not fail (the control: the generator reads the statuses)."""
    tests = json.loads((HARNESSES / name / "verdict.json").read_text(encoding="utf-8"))["tests"]
    page = (HARNESSES / name / "VERDICT.md").read_text(encoding="utf-8")
    section = page[page.index("by the kit's cause") :]
    section = section[: section.index("\n## ")] if "\n## " in section else section
    listed = re.findall(r"^\| ([^|]+?) \|", section, re.MULTILINE) + re.findall(r"`([^`]+)`", section)
    listed = [item for item in listed if item in tests]
    failing = sorted(i for i, status in tests.items() if status in ("fail", "error"))
    assert sorted(listed) == failing
