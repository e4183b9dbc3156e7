"""The suites prove their own power: every mutant is killed by the tests named for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbconform.cli import main
from kbconform_reference.mutants import MUTANTS


def test_every_mutant_is_killed_and_both_smokes_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kbconform mutants exits 0 only because each of the 21 broken backends fails the suites,
    each of them in every test named for it; the JSON says so per mutant."""
    assert len([m for m in MUTANTS if not m.smoke]) >= 15
    assert {m.name for m in MUTANTS if m.smoke} == {"accepts-everything", "rejects-everything"}
    assert main(["mutants", "--json", str(tmp_path / "mutants.json")]) == 0
    data = json.loads((tmp_path / "mutants.json").read_text(encoding="utf-8"))
    by_name = {entry["name"]: entry for entry in data["mutants"]}
    assert set(by_name) == {m.name for m in MUTANTS}
    for mutant in MUTANTS:
        entry = by_name[mutant.name]
        assert entry["killed"] is True, mutant.name
        assert set(mutant.killers) <= set(entry["killed_by"]), mutant.name
        assert entry["killed_by"], mutant.name
    assert f"{len(MUTANTS)} of {len(MUTANTS)} mutants killed" in capsys.readouterr().out


def test_kbconform_run_passes_the_reference_and_fails_a_mutant(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """run exits 0 on the reference (memory) with a table per level and suite and a report; it
    exits 1 on a mutant, and the report names the failing test (control)."""
    report = tmp_path / "report.json"
    code = main(
        ["run", "--adapter", "kbconform_reference.adapter:memory", "--seed", "7", "--report", str(report)]
    )
    out = capfd.readouterr().out
    assert code == 0, out
    assert "L2     cross-tenant-leak" in out
    assert "every test passed or was declined; highest level earned: L3; seed 7" in out
    assert {t["status"] for t in json.loads(report.read_text(encoding="utf-8"))["tests"]} == {"pass"}
    code = main(
        ["run", "--adapter", "kbconform_reference.mutants:by_name.existence_oracle", "--report", str(report)]
    )
    out = capfd.readouterr().out
    assert code == 1
    failed = {
        t["id"] for t in json.loads(report.read_text(encoding="utf-8"))["tests"] if t["status"] == "fail"
    }
    assert "leak-04" in failed
