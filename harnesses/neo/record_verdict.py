"""Re-record harnesses/neo/verdict.json: the kit's verdict on Neo's knowledge base.

    python harnesses/neo/record_verdict.py                       # install, run (about 4 minutes), record
    python harnesses/neo/record_verdict.py --from-report REPORT  # record a report already written

A fresh run is exactly the run tests/harness/test_neo.py makes: ``harnesses/neo/install``, then
``kbconform.runner.run_suites`` with this harness, the recorded seed (``--seed`` to change it)
and the default profile, with the directory of this interpreter (where the ``chroma`` server of
``pip install chromadb`` is) first on PATH. ``--from-report`` takes the report of
``kbconform run --harness harnesses/neo/harness --seed 1 --report REPORT``. Either way the
report must be sound (valid evidence of a full run) or nothing is written. The script prints
every id whose status changed, and writes the transcript of each cause's failing test
(``transcripts/causes.json`` names it) to ``transcripts/<cause>.jsonl``; VERDICT.md is prose and
is updated by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kbconform.report import status_changes

HERE = Path(__file__).resolve().parent
VERDICT = HERE / "verdict.json"
#: One failing test per cause of VERDICT.md (causes.json), and its transcript, <cause>.jsonl.
TRANSCRIPTS = HERE / "transcripts"
HARNESS = HERE / "harness"
INSTALL_TIMEOUT = 1800  # seconds: the first install compiles better-sqlite3 (2-4 minutes on 2 cores)


def verdict_of(report: dict[str, Any]) -> dict[str, Any]:
    """The recorded form of a report: Neo's version, seed, profile, levels earned, each status."""
    return {
        "neo": f"neo.mjs {report['manifest']['backend']['version']}",
        "seed": report["seed"],
        "profile": report["profile"],
        "levels": {level: bool(v["earned"]) for level, v in sorted(report["levels"].items())},
        "tests": {t["id"]: t["status"] for t in sorted(report["tests"], key=lambda t: t["id"])},
    }


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two recorded verdicts (empty when they are equal)."""
    found = [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in ("neo", "seed", "profile")
        if old.get(key) != new.get(key)
    ]
    for group in ("levels", "tests"):
        changed = status_changes(old.get(group, {}), new.get(group, {}))
        found += [f"{name}: {before} -> {after}" for name, before, after in changed]
    return found


def _fresh(seed: int) -> dict[str, Any]:
    from kbconform import runner

    install = subprocess.run(["bash", str(HERE / "install")], timeout=INSTALL_TIMEOUT, check=False)
    if install.returncode != 0:
        sys.exit(f"record_verdict: harnesses/neo/install failed (exit {install.returncode}); see above")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    print(f"record_verdict: running the suites on {HARNESS} with seed {seed} (about 4 minutes)", flush=True)
    outcome = runner.run_suites(harness=str(HARNESS), seed=seed)
    if outcome.problems or not outcome.report:
        print(outcome.output[-4000:], file=sys.stderr)
        sys.exit(
            "record_verdict: the run gave no sound report: " + "; ".join(outcome.problems or ("no report",))
        )
    return outcome.report


def write_transcripts(report: dict[str, Any]) -> list[str]:
    """Each cause's transcript from ``report``: the transcript of the test causes.json names for
    it, as JSON Lines (what ``kbconform replay`` reads). Returns the causes written."""
    from kbconform.harness import to_jsonl

    causes: dict[str, str] = json.loads((TRANSCRIPTS / "causes.json").read_text(encoding="utf-8"))
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
        (TRANSCRIPTS / f"{cause}.jsonl").write_text(to_jsonl(tests[stable]["transcript"]), encoding="utf-8")
    return sorted(causes)


def _given(path: str) -> dict[str, Any]:
    from kbconform.errors import ContractViolation
    from kbconform.report import read, selection, verify

    report = read(path)
    try:
        verify(report)
    except ContractViolation as error:
        sys.exit(f"record_verdict: {path} is not valid evidence: {'; '.join(str(p) for p in error.problems)}")
    if selection(report) is not None or report["completeness"]["missing"]:
        sys.exit(f"record_verdict: {path} is not the report of a full run")
    if not str(report["config"]["adapter"]).endswith("harnesses/neo/harness"):
        sys.exit(f"record_verdict: {path} is a run of {report['config']['adapter']}, not of the Neo harness")
    return dict(report)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from-report", metavar="REPORT", help="record this report instead of running")
    parser.add_argument(
        "--seed", type=int, help="the seed of a fresh run (default: the recorded one, else 1)"
    )
    arguments = parser.parse_args()
    old = json.loads(VERDICT.read_text(encoding="utf-8")) if VERDICT.exists() else {}
    seed = arguments.seed if arguments.seed is not None else int(old.get("seed", 1))
    report = _given(arguments.from_report) if arguments.from_report else _fresh(seed)
    new = verdict_of(report)
    VERDICT.write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
    earned = [level for level, won in new["levels"].items() if won]
    counts = {s: sum(1 for v in new["tests"].values() if v == s) for s in ("pass", "fail", "error", "skip")}
    print(f"record_verdict: wrote {VERDICT}: levels earned {', '.join(earned) or 'none'}; {counts}")
    for line in changes(old, new) if old else ():
        print(f"  changed {line}")
    print(f"record_verdict: wrote the transcripts of {', '.join(write_transcripts(report))} in {TRANSCRIPTS}")


if __name__ == "__main__":
    main()
