"""Re-record the verdict of a harness for a real system (harnesses/neo, harnesses/mem0,
harnesses/langgraph, harnesses/adk, harnesses/chroma_server): its verdict.json and the
transcript of each cause its VERDICT.md explains.

    python harnesses/record_verdict.py mem0                       # install, run (under a minute), record
    python harnesses/record_verdict.py mem0 --from-report REPORT  # record a report already written
    python harnesses/record_verdict.py neo                        # the same for Neo (about 4 minutes)

A fresh run is exactly the run tests/harness/test_library_harnesses.py (tests/harness/test_neo.py
for Neo) makes: the harness's ``install``, then ``kbconform.runner.run_suites`` with the harness,
the recorded seed (``--seed`` to change it), the default profile and no shrinking (statuses are
what is compared); for Neo, with the directory of this interpreter (where the ``chroma`` server
of ``pip install chromadb`` is) first on PATH.
``--from-report`` takes the report of ``kbconform run --harness harnesses/NAME/harness --seed 1
--report REPORT`` (with ``--transport http`` for those :data:`TRANSPORT` names). Either way the report
must be sound (valid evidence of a full run) or nothing is written. The script prints every id
whose status changed, writes the transcript of each cause's failing test
(``transcripts/causes.json`` names it) to ``transcripts/<cause>.jsonl``, and
generates VERDICT.md.

    python harnesses/record_verdict.py mem0 --docs                # VERDICT.md only, from what is recorded

VERDICT.md is generated from verdict.json and the harness's NOTES.md (the prose a person writes
about the system): NOTES.md is VERDICT.md with three markers where the kit writes its part.
``<!-- generated: levels -->`` becomes the levels earned, the counts and the table per level and
suite; ``<!-- generated: causes -->`` the failures grouped into causes as the kit groups them
(``kbconform.report.causes``: K causes from N failures), each with its severity, rule, fix and
tests, and the causes of NOTES.md it holds (their transcripts' tests, causes.json); and
``<!-- generated: failing tests -->`` every failing test once, under its cause, with the note
NOTES.md's table gives it (its section ``## Notes on failing tests``, rows ``| id | message |
note |``, is read, not printed). tests/harness/test_verdict_docs.py holds each VERDICT.md equal
to its generation.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: The harnesses this script records, each a folder of harnesses/, with the seconds its first
#: install may take (downloading the pinned packages: 20 to 30 s, chromadb's server about 2
#: minutes; Neo's compiles better-sqlite3, 2-4 minutes on 2 cores).
INSTALL_TIMEOUT = {"neo": 1800, "mem0": 900, "langgraph": 900, "adk": 900, "chroma_server": 900}
HARNESSES = tuple(INSTALL_TIMEOUT)
#: The harnesses whose system is started beside a ``chroma`` server (on PATH).
WITH_CHROMA = frozenset({"neo"})
#: How each harness is spoken to (stdio unless named): those whose system serves callers at once
#: (Neo's server, ADK's thread-safe memory service) over HTTP, so the concurrency suite judges races.
TRANSPORT = {"neo": "http", "adk": "http"}


def _system(report: dict[str, Any], name: str) -> dict[str, str]:
    """The system judged and its version, as verdict.json names it (Neo's under ``neo``)."""
    backend = report["manifest"]["backend"]
    if name == "neo":
        return {"neo": f"neo.mjs {backend['version']}"}
    return {"backend": f"{backend['name']} {backend['version']}"}


def verdict_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The recorded form of a report of the harness ``name``: the system and its version, seed,
    profile, the levels earned, each test's status, and what each failing test charged."""
    return {
        **_system(report, name),
        "seed": report["seed"],
        "profile": report["profile"],
        "transport": report["config"].get("harness", {}).get("transport", "stdio"),
        "levels": {level: bool(v["earned"]) for level, v in sorted(report["levels"].items())},
        "tests": {t["id"]: t["status"] for t in sorted(report["tests"], key=lambda t: t["id"])},
        **({"charges": charges} if (charges := _charges(report)) else {}),
    }


#: What a failing test's entry says it charges the system with, as a verdict keeps it.
CHARGED = ("caller", "effect", "direction", "raised")


def _charges(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What each failing test said it charges the system with when it failed (its caller and
    effect, which way the system took the input, the error it raised that the contract does not
    name, where it said them): VERDICT.md groups the failures into causes by them."""
    return {
        t["id"]: {key: t[key] for key in CHARGED if key in t}
        for t in sorted(report["tests"], key=lambda t: t["id"])
        if t["status"] in ("fail", "error") and any(key in t for key in CHARGED)
    }


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per difference between two recorded verdicts (empty when they are equal)."""
    from kbconform.report import status_changes

    found = [
        f"{key}: {old.get(key)!r} -> {new.get(key)!r}"
        for key in ("neo", "backend", "seed", "profile", "transport")
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
    outcome = runner.run_suites(
        harness=str(HERE / name / "harness"), seed=seed, shrink=False, transport=TRANSPORT.get(name, "stdio")
    )
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


#: Where NOTES.md lets the kit write: the levels, the causes, the failing tests by cause.
LEVELS_MARK = "<!-- generated: levels -->"
CAUSES_MARK = "<!-- generated: causes -->"
FAILING_MARK = "<!-- generated: failing tests -->"
#: The section of NOTES.md that notes each failing test (read, not printed).
TEST_NOTES = "## Notes on failing tests"
_SHOWN = ("pass", "fail", "error", "skip")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _test_notes(notes: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """NOTES.md without its section of notes on failing tests, and those notes: per test id,
    its message and its note (the table's second and third columns)."""
    start = notes.find(TEST_NOTES)
    if start < 0:
        return notes, {}
    end = notes.find("\n## ", start + len(TEST_NOTES))
    section = notes[start : len(notes) if end < 0 else end + 1]
    rows: dict[str, tuple[str, str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) == 3 and cells[0] not in ("id", "---"):
            rows[cells[0]] = (cells[1], cells[2])
    return notes.replace(section, ""), rows


def _levels(verdict: dict[str, Any], entries: dict[str, dict[str, Any]]) -> str:
    """The levels earned, the counts and the table per level and suite, as ``kbconform run``
    prints them."""
    tests: dict[str, str] = verdict["tests"]
    earned = [level for level, won in sorted(verdict["levels"].items()) if won]
    counts = Counter(tests.values())
    declined = " (declined by the manifest)" if counts["skip"] else ""
    rows = Counter((entries[i]["level"], entries[i]["suite"], status) for i, status in tests.items())
    groups = sorted({(level, suite) for level, suite, _ in rows})
    table = [f"{'level':<6} {'suite':<20} " + " ".join(f"{s:>5}" for s in _SHOWN)]
    table += [
        f"{level:<6} {suite:<20} " + " ".join(f"{rows[(level, suite, s)]:>5}" for s in _SHOWN)
        for level, suite in groups
    ]
    return (
        f"## Levels earned: {earned[-1] if earned else 'none'}\n\n"
        f"{counts['pass']} pass, {counts['fail']} fail, {counts['error']} error, {counts['skip']} "
        f"skipped{declined} of {len(tests)} tests.\n\n```\n" + "\n".join(table) + "\n```"
    )


def _explained(
    cause: Any, by_test: dict[str, str], noted: dict[str, tuple[str, str]], names: list[str]
) -> list[str]:
    """The causes of NOTES.md a kit cause holds: those whose transcript's test is among its tests,
    and those its tests' notes name."""
    found = {by_test[t] for t in cause.tests if t in by_test}
    for test in cause.tests:
        note = noted.get(test, ("", ""))[1]
        found |= {name for name in names if re.search(rf"\b{re.escape(name)}\b", note)}
    return sorted(found, key=lambda n: (len(n), n))


def render(name: str) -> str:
    """VERDICT.md of the harness ``name``, generated from its verdict.json and NOTES.md."""
    from kbconform.report import catalogue, causes, causes_line

    folder = HERE / name
    verdict = json.loads((folder / "verdict.json").read_text(encoding="utf-8"))
    notes, noted = _test_notes((folder / "NOTES.md").read_text(encoding="utf-8"))
    named: dict[str, str] = json.loads((folder / "transcripts" / "causes.json").read_text(encoding="utf-8"))
    by_test = {test: cause for cause, test in named.items()}
    names = sorted(named, key=lambda n: (len(n), n))
    entries = {e["id"]: dict(e) for e in catalogue()}
    charged = verdict.get("charges", {})
    tests = [{**entries[i], "status": s, **charged.get(i, {})} for i, s in sorted(verdict["tests"].items())]
    made = causes(tests)
    failures = sum(len(c.tests) for c in made)
    summary = [
        f"## The kit's causes: {causes_line(made, failures)}",
        "",
        "The kit groups the failures by what each charges the system with (the rule, the facade\n"
        "family, the kind of caller, the effect: `kbconform.report.causes`); the last column names\n"
        "the causes this file explains in the system's terms that each holds.",
        "",
        "| cause | severity | what the system does | tests | explained as |",
        "|---|---|---|---:|---|",
    ]
    table = [f"## Failing tests ({failures}), by the kit's cause", ""]
    for index, cause in enumerate(made, 1):
        explained = ", ".join(_explained(cause, by_test, noted, names)) or "-"
        summary.append(
            f"| {index} | {cause.severity} | {_cell(cause.title)} | {len(cause.tests)} | {explained} |"
        )
        rules = ", ".join(f"`schemas/{r}`" for r in cause.rules)
        table += [
            f"### {index}. {cause.title} ({len(cause.tests)})",
            "",
            f"*Severity*: {cause.severity}. *Rule*: {rules or '-'}. *Explained as*: {explained}.",
            "",
            f"*What fixes it*: {cause.fix}.",
            "",
        ]
        if noted:
            table += [f"| id | message | {name.capitalize() if name == 'neo' else 'note'} |", "|---|---|---|"]
            table += [
                f"| {t} | {noted.get(t, ('', ''))[0]} | {noted.get(t, ('', ''))[1]} |" for t in cause.tests
            ]
        else:
            table.append("Tests: " + ", ".join(f"`{t}`" for t in cause.tests) + ".")
        table.append("")
    generated = {
        LEVELS_MARK: _levels(verdict, entries),
        CAUSES_MARK: "\n".join(summary),
        FAILING_MARK: "\n".join(table).rstrip(),
    }
    for mark, text in generated.items():
        if mark not in notes:
            sys.exit(f"record_verdict: harnesses/{name}/NOTES.md lacks {mark}")
        notes = notes.replace(mark, text)
    return notes


def write_docs(name: str) -> None:
    """Write VERDICT.md of the harness ``name`` from its verdict.json and NOTES.md."""
    (HERE / name / "VERDICT.md").write_text(render(name), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", choices=HARNESSES, help="the harness to record")
    parser.add_argument("--from-report", metavar="REPORT", help="record this report instead of running")
    parser.add_argument(
        "--seed", type=int, help="the seed of a fresh run (default: the recorded one, else 1)"
    )
    parser.add_argument(
        "--docs", action="store_true", help="only generate VERDICT.md from verdict.json and NOTES.md"
    )
    arguments = parser.parse_args()
    if arguments.docs:
        write_docs(arguments.name)
        print(f"record_verdict: wrote harnesses/{arguments.name}/VERDICT.md")
        return
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
    write_docs(arguments.name)
    print(f"record_verdict: wrote harnesses/{arguments.name}/VERDICT.md from verdict.json and NOTES.md")


if __name__ == "__main__":
    main()
