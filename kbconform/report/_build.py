"""A run's report built from the plugin's results, and a report verified against the
installed suites."""

from __future__ import annotations

import importlib.metadata
import platform
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from kbconform._levels import LEVELS
from kbconform.errors import ContractViolation, Problem
from kbconform.report._catalogue import catalogue, expected, list_hash, suite_version, unknown_ids
from kbconform.report._causes import causes
from kbconform.report._messages import _with_message, redact, secrets_of
from kbconform.report._verdicts import _verdict, declared_design, halted, levels, selection, stopped


def build(
    *,
    adapter: str,
    manifest: Mapping[str, Any],
    seed: int,
    profile: str,
    level: str,
    results: Iterable[Mapping[str, Any]],
    execution: Mapping[str, Any],
    harness: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The report of a run: ``results`` are the entries the plugin recorded. ``harness`` says
    how a harness-v1 harness was reached (``adapter`` is then its command or URL). Every expected test
    without a result is added as an error. ``execution["selection"]`` (None: every test) names
    the tests a partial run selected: only they are expected, and no level is earned."""
    chosen = execution.get("selection")
    hidden = secrets_of(manifest.get("config"))
    tests = {entry["id"]: _with_message(entry, hidden) for entry in results}
    wanted = expected(manifest, level, chosen)
    missing = sorted(entry["id"] for entry in wanted if entry["id"] not in tests)
    why = (
        f"did not run: the run stopped after {execution['maxfail']} failing tests (--maxfail)"
        if stopped(execution, tests.values())
        else "did not run: not collected, deselected, or the run stopped before it"
    )
    for entry in wanted:
        if entry["id"] in missing:
            tests[entry["id"]] = {**entry, "status": "error", "reason": why}
    known = {entry["id"] for entry in catalogue()}
    listed = sorted(tests.values(), key=lambda entry: entry["id"])
    shown = {**manifest, **({"config": redact(manifest["config"])} if "config" in manifest else {})}
    report: dict[str, Any] = {
        "reportVersion": "1",
        "suiteVersion": suite_version(),
        "testListHash": list_hash(catalogue()),
        "manifest": shown,
        "config": {
            "adapter": redact(adapter),
            **({"harness": redact(dict(harness))} if harness is not None else {}),
            **({"backend": shown["config"]} if "config" in shown else {}),
        },
        "seed": seed,
        "profile": profile,
        "level": level,
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            **{name: importlib.metadata.version(name) for name in ("pytest", "hypothesis")},
        },
        "execution": {**execution, "selection": None if chosen is None else sorted(set(chosen))},
        "levels": levels(listed, manifest, partial=chosen is not None),
        "declared": declared_design(manifest),
        "completeness": {"missing": missing, "unknown": sorted(set(tests) - known)},
        "tests": listed,
    }
    report["causes"] = cause_records(report)
    return report


def cause_records(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The causes of a report's failures as report-v1 lists them, each with the command that
    runs its example again."""
    from kbconform.report._terminal import rerun_command

    tests = {test["id"]: test for test in report["tests"]}
    return [
        {**cause.as_dict(), "rerun": rerun_command(report, tests[cause.example])}
        for cause in causes(report["tests"])
    ]


def verify(report: object) -> None:
    """Raise ContractViolation (``KB_REPORT_INVALID``) unless ``report`` is a valid report-v1 of
    the installed suites (version and test-list hash) from a complete run: every test its
    manifest and level select (of a partial run: and its selection names), no other, none
    recorded as missing, and the levels its tests earn (none, for a partial run). A report of a
    failing run can be valid: this checks the evidence, not the verdict; :func:`selection` says
    whether it is partial."""
    from kbconform.adapter import Manifest
    from kbconform.contract import validate

    inner = False  # the manifest is checked as its profile says (adapter-manifest-v1 if built in)
    try:
        validate(report, "report-v1")
        assert isinstance(report, Mapping)
        inner = True
        Manifest.from_mapping(report["manifest"])
    except ContractViolation as error:
        moved = tuple(
            Problem(f"/manifest{p.pointer}" if inner else p.pointer, p.keyword, p.expected, p.got)
            for p in error.problems
        )
        raise ContractViolation(contract="report-v1", problems=moved, code="KB_REPORT_INVALID") from None
    problems: list[Problem] = []

    def differs(pointer: str, keyword: str, want: str, got: str) -> None:
        problems.append(Problem(pointer, keyword, want, got))

    if report["suiteVersion"] != suite_version():
        differs(
            "/suiteVersion",
            "suiteVersion",
            f"{suite_version()} (the installed suites)",
            report["suiteVersion"],
        )
    if report["testListHash"] != list_hash(catalogue()):
        want = f"{list_hash(catalogue())} (the installed test list)"
        differs("/testListHash", "testListHash", want, report["testListHash"])
    ids = [test["id"] for test in report["tests"]]
    repeated = sorted(i for i, n in Counter(ids).items() if n > 1)
    if repeated:
        differs("/tests", "tests", "each stable id once", f"repeated: {', '.join(repeated)}")
    chosen = selection(report)
    if chosen is not None:
        strangers = unknown_ids(chosen)
        if strangers:
            want = "a selection of tests the suite lists"
            differs("/execution/selection", "selection", want, f"unknown: {', '.join(strangers)}")
    wanted = {entry["id"]: entry for entry in expected(report["manifest"], report["level"], chosen)}
    missing = sorted(set(wanted) - set(ids))
    if missing:
        want = "every test of the suite" if chosen is None else "every selected test"
        differs("/tests", "completeness", want, f"missing: {', '.join(missing)}")
    unknown = sorted(set(ids) - set(wanted))
    if unknown:
        want = f"only tests the suite lists for level {report['level']} and this manifest" + (
            "" if chosen is None else ", of those selected"
        )
        differs("/tests", "completeness", want, f"unknown: {', '.join(unknown)}")
    recorded = report["completeness"]["missing"] + report["completeness"]["unknown"]
    if halted(report):  # a run that stopped at its maxfail is evidence of failing
        recorded = report["completeness"]["unknown"]
    if recorded:
        differs(
            "/completeness",
            "completeness",
            "a complete run",
            f"tests not run or not listed: {', '.join(recorded)}",
        )
    for index, test in enumerate(report["tests"]):
        entry = wanted.get(test["id"])
        if entry is not None and (test["suite"], test["level"]) != (entry["suite"], entry["level"]):
            want = f"suite {entry['suite']} at {entry['level']}"
            differs(f"/tests/{index}", "tests", want, f"suite {test['suite']} at {test['level']}")
    # each test's capabilities as the catalogue lists them, not as the report says
    catalogued = [
        {**test, "requires": wanted[test["id"]].get("requires", [])}
        for test in report["tests"]
        if test["id"] in wanted
    ]
    earned = levels(catalogued, report["manifest"], partial=chosen is not None)
    if report["levels"] != earned:
        changed = [lv for lv in LEVELS if report["levels"].get(lv) != earned[lv]]
        differs(
            "/levels",
            "levels",
            "the verdicts its tests give: " + "; ".join(_verdict(lv, earned[lv]) for lv in changed),
            "the report claims: " + "; ".join(_verdict(lv, report["levels"].get(lv)) for lv in changed),
        )
    said = declared_design(report["manifest"])
    if "declared" in report and report["declared"] != said:
        differs("/declared", "declared", f"the manifest's declared design: {said}", str(report["declared"]))
    if problems:
        raise ContractViolation(contract="report-v1", problems=tuple(problems), code="KB_REPORT_INVALID")
