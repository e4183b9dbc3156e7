"""Re-record the verdict of a harness for a real system (harnesses/neo, harnesses/mem0,
harnesses/langgraph, harnesses/adk): its verdict.json and the transcript of each cause its
VERDICT.md explains.

    python harnesses/record_verdict.py mem0                       # install, run (under a minute), record
    python harnesses/record_verdict.py mem0 --from-report REPORT  # record a report already written
    python harnesses/record_verdict.py neo                        # the same for Neo (about 4 minutes)

A fresh run is exactly the run tests/harness/test_library_harnesses.py (tests/harness/test_neo.py
for Neo) makes: the harness's ``install``, then ``kbconform.runner.run_suites`` with the harness,
the recorded seed (``--seed`` to change it), the default profile and no shrinking (statuses are
what is compared); for Neo, with the directory of this interpreter (where the ``chroma`` server
of ``pip install chromadb`` is) first on PATH.
``--from-report`` takes the report of ``kbconform run --harness harnesses/NAME/harness --seed 1
--report REPORT``. Either way the report must be sound (valid evidence of a full run) or nothing
is written. The script prints every id whose status changed, and writes the transcript of each
cause's failing test (``transcripts/causes.json`` names it) to ``transcripts/<cause>.jsonl``;
VERDICT.md is prose and is updated by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: The harnesses this script records, each a folder of harnesses/, with the seconds its first
#: install may take (downloading the pinned packages: 20 to 30 s; Neo's compiles better-sqlite3,
#: 2-4 minutes on 2 cores).
INSTALL_TIMEOUT = {"neo": 1800, "mem0": 900, "langgraph": 900, "adk": 900}
HARNESSES = tuple(INSTALL_TIMEOUT)
#: The harnesses whose system is started beside a ``chroma`` server (on PATH).
WITH_CHROMA = frozenset({"neo"})


def _system(report: dict[str, Any], name: str) -> dict[str, str]:
    """The system judged and its version, as verdict.json names it (Neo's under ``neo``)."""
    backend = report["manifest"]["backend"]
    if name == "neo":
        return {"neo": f"neo.mjs {backend['version']}"}
    return {"backend": f"{backend['name']} {backend['version']}"}


def verdict_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The recorded form of a report of the harness ``name``: the system and its version, seed,
    profile, the levels earned and each test's status."""
    return {
        **_system(report, name),
        "seed": report["seed"],
        "profile": report["profile"],
        "levels": {level: bool(v["earned"]) for level, v in sorted(report["levels"].items())},
        "tests": {t["id"]: t["status"] for t in sorted(report["tests"], key=lambda t: t["id"])},
    }


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two recorded verdicts (empty when they are equal)."""
    from kbconform.report import status_changes

    found = [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in ("neo", "backend", "seed", "profile")
        if old.get(key) != new.get(key)
    ]
    for group in ("levels", "tests"):
        changed = status_changes(old.get(group, {}), new.get(group, {}))
        found += [f"{name}: {before} -> {after}" for name, before, after in changed]
    return found


def install(name: str) -> None:
    """``harnesses/NAME/install``; exits with its output when it fails."""
    done = subprocess.run(
        ["bash", str(HERE / name / "install")],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT[name],
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"record_verdict: harnesses/{name}/install failed (exit {done.returncode}):\n{done.stderr}")


def _fresh(name: str, seed: int) -> dict[str, Any]:
    from kbconform import runner

    install(name)
    if name in WITH_CHROMA:
        os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    print(f"record_verdict: running the suites on harnesses/{name}/harness with seed {seed}", flush=True)
    outcome = runner.run_suites(harness=str(HERE / name / "harness"), seed=seed, shrink=False)
    if outcome.problems or not outcome.report:
        print(outcome.output[-4000:], file=sys.stderr)
        sys.exit(
            "record_verdict: the run gave no sound report: " + "; ".join(outcome.problems or ("no report",))
        )
    return outcome.report


def write_transcripts(name: str, report: dict[str, Any]) -> list[str]:
    """Each cause's transcript from ``report``: the transcript of the test causes.json names for
    it, as JSON Lines (what ``kbconform replay`` reads), its first line the test and its message.
    Returns the causes written."""
    from kbconform.harness import to_jsonl

    transcripts = HERE / name / "transcripts"
    causes: dict[str, str] = json.loads((transcripts / "causes.json").read_text(encoding="utf-8"))
    tests = {t["id"]: t for t in report["tests"]}
    missing = [
        f"{cause} ({stable})"
        for cause, stable in causes.items()
        if not tests.get(stable, {}).get("transcript")
    ]
    if missing:
        sys.exit(
            f"record_verdict: no transcript in the report for {', '.join(missing)}: "
            "not failing, or not run over harness-v1"
        )
    for cause, stable in causes.items():
        entry = tests[stable]
        text = to_jsonl(entry["transcript"], test=stable, message=entry.get("message"))
        (transcripts / f"{cause}.jsonl").write_text(text, encoding="utf-8")
    return sorted(causes)


def _given(name: str, path: str) -> dict[str, Any]:
    from kbconform.errors import ContractViolation
    from kbconform.report import read, selection, verify

    report = read(path)
    try:
        verify(report)
    except ContractViolation as error:
        sys.exit(f"record_verdict: {path} is not valid evidence: {'; '.join(str(p) for p in error.problems)}")
    if selection(report) is not None or report["completeness"]["missing"]:
        sys.exit(f"record_verdict: {path} is not the report of a full run")
    if not str(report["config"]["adapter"]).endswith(f"harnesses/{name}/harness"):
        sys.exit(f"record_verdict: {path} is a run of {report['config']['adapter']}, not of harnesses/{name}")
    return dict(report)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", choices=HARNESSES, help="the harness to record")
    parser.add_argument("--from-report", metavar="REPORT", help="record this report instead of running")
    parser.add_argument(
        "--seed", type=int, help="the seed of a fresh run (default: the recorded one, else 1)"
    )
    arguments = parser.parse_args()
    verdict = HERE / arguments.name / "verdict.json"
    old = json.loads(verdict.read_text(encoding="utf-8")) if verdict.exists() else {}
    seed = arguments.seed if arguments.seed is not None else int(old.get("seed", 1))
    report = (
        _given(arguments.name, arguments.from_report)
        if arguments.from_report
        else _fresh(arguments.name, seed)
    )
    new = verdict_of(report, arguments.name)
    verdict.write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
    earned = [level for level, won in new["levels"].items() if won]
    counts = {s: sum(1 for v in new["tests"].values() if v == s) for s in ("pass", "fail", "error", "skip")}
    print(f"record_verdict: wrote {verdict}: levels earned {', '.join(earned) or 'none'}; {counts}")
    for line in changes(old, new) if old else ():
        print(f"  changed {line}")
    written = ", ".join(write_transcripts(arguments.name, report))
    print(f"record_verdict: wrote the transcripts of {written} in harnesses/{arguments.name}/transcripts")


if __name__ == "__main__":
    main()
