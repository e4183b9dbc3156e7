"""What a terminal shows of a report: the table per level and suite, the failing tests one by
one, the calls not implemented yet, and the commands that run or replay a test again."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbconform.report._messages import first_line
from kbconform.report._verdicts import (
    _SHOWN,
    _word,
    design,
    design_line,
    earned,
    halted,
    price_line,
    selection,
)


def _rows(report: Mapping[str, Any]) -> tuple[list[tuple[str, str]], Counter[tuple[str, str, str]]]:
    counts: Counter[tuple[str, str, str]] = Counter(
        (t["level"], t["suite"], t["status"]) for t in report.get("tests", ())
    )
    return sorted({(level, suite) for level, suite, _ in counts}), counts


def table(report: Mapping[str, Any]) -> str:
    """Counts per level and suite, then the level verdicts."""
    groups, counts = _rows(report)
    lines = [f"{'level':<6} {'suite':<20} " + " ".join(f"{s:>5}" for s in _SHOWN)]
    for level, suite in groups:
        lines.append(f"{level:<6} {suite:<20} " + " ".join(f"{counts[(level, suite, s)]:>5}" for s in _SHOWN))
    verdicts = ", ".join(
        _word(level, v) for level, v in report["levels"].items() if sum(v[s] for s in _SHOWN)
    )
    lines.append(f"\nlevels: {verdicts or 'no tests ran'}; highest earned: {earned(report) or 'none'}")
    if design(report):
        lines.append(design_line(report))
    if price_line(report):
        lines.append(price_line(report))
    missing = report["completeness"]["missing"]
    if halted(report):
        lines.append(
            f"stopped after {report['execution']['maxfail']} failing tests: {len(missing)} not reached"
        )
    elif missing:
        lines.append(f"incomplete: {len(missing)} suite tests did not run")
    chosen = selection(report)
    if chosen is not None:
        lines.append(f"partial: a run of {len(chosen)} selected tests, which earns no level")
    return "\n".join(lines)


def not_implemented(tests: Iterable[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The tests that ended at a call the backend has not implemented yet (``notImplemented``),
    grouped by that call: the call most tests ended at first, then by name."""
    by_call: dict[str, list[Mapping[str, Any]]] = {}
    for test in tests:
        if "notImplemented" in test:
            by_call.setdefault(str(test["notImplemented"]), []).append(test)
    return sorted(by_call.items(), key=lambda kv: (-len(kv[1]), kv[0]))


#: An adapter factory, ``module:attribute``.
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def served_adapter(config: Mapping[str, Any]) -> str | None:
    """The Python adapter (``module:factory``) a report's run tested, in process or served by
    ``kbconform serve`` (as ``kbconform run --adapter`` serves it); None for a harness."""
    target = str(config.get("adapter", ""))
    if _FACTORY.fullmatch(target):
        return target
    harness = config.get("harness")
    command = harness.get("command") if isinstance(harness, Mapping) else None
    words = command.split() if isinstance(command, str) else []
    for before, word in itertools.pairwise(words):
        if before == "serve" and _FACTORY.fullmatch(word):
            return word
    return None


def _quoted(word: str) -> str:
    return word if re.fullmatch(r"[\w@%+=:,./-]+", word) else "'" + word.replace("'", "'\\''") + "'"


def _target(config: Mapping[str, Any], url: str) -> list[str]:
    """The arguments naming what a report's run tested, for ``kbconform run`` or ``replay``
    (``url``: the option naming a harness-v1 server); empty when the report names nothing a
    command can reach."""
    harness = config.get("harness")
    adapter = served_adapter(config)
    if adapter is not None:
        return ["--adapter", adapter]
    if isinstance(harness, Mapping) and "url" in harness:
        return [url, str(harness["url"])]
    if isinstance(harness, Mapping) and "command" in harness:
        return ["--harness", str(harness["command"])]
    return []


def rerun_command(report: Mapping[str, Any], test: Mapping[str, Any]) -> str:
    """The command that runs ``test`` again against what the report's run tested, with its seed
    and Hypothesis profile (a failure reproduces from them)."""
    target = _target(report["config"], "--harness-url") or ["--adapter", str(report["config"]["adapter"])]
    words = ["kbconform", "run", *target, "--only", str(test["id"]), "--seed", str(report["seed"])]
    if report.get("profile") not in (None, "quick"):
        words += ["--hypothesis-profile", str(report["profile"])]
    return " ".join(map(_quoted, words))


def replay_command(
    report: Mapping[str, Any], test: Mapping[str, Any], path: str = "REPORT.json"
) -> str | None:
    """The command that sends ``test``'s recorded harness-v1 exchanges (its ``transcript``) to
    the backend again (``kbconform replay``), with the report at ``path``; None for a test
    that has no transcript."""
    target = _target(report["config"], "--url")
    if not test.get("transcript") or not target:
        return None
    return " ".join(map(_quoted, ["kbconform", "replay", path, "--test", str(test["id"]), *target]))


def unshrunk(report: Mapping[str, Any]) -> bool:
    """Whether the run reported each failing example as first found, not shrunk (``--no-shrink``;
    an older report, without ``execution.shrink``, shrank)."""
    return report["execution"].get("shrink", True) is False


#: Said of a run that did not shrink, where its failures are shown.
UNSHRUNK = (
    "failing examples were not shrunk (--no-shrink): each is the first found; rerun without it "
    "for the shortest"
)


#: Said of a failing test whose shrinking stopped at the run's budget (``shrinkStopped``).
SHRINK_STOPPED = (
    "shrinking stopped at the run's shrink budget: a shorter failing example may exist "
    "(--shrink-budget SECONDS)"
)


#: How many failing tests a terminal names one by one (the report holds every one).
FAILURES_SHOWN = 20


def failure_lines(tests: Sequence[Mapping[str, Any]], shown: int = FAILURES_SHOWN) -> list[str]:
    """Lines naming the first ``shown`` of ``tests`` (failing ones, none ended at a call not
    implemented yet), each as its status, id, level, suite and the first line of its message,
    then, when the test declares them, the rule it checks (its spec section in schemas/) and
    the adapter guide's section that says what it asks, and whether its shrinking stopped at
    the budget; and a line counting the rest."""
    lines = []
    for test in tests[:shown]:
        said = first_line(test) or str(test.get("reason", ""))
        lines.append(f"  {test['status'].upper()} {test['id']} ({test['level']} {test['suite']}): {said}")
        where = [f"rule: schemas/{test['rule']}"] if test.get("rule") else []
        where += [f"guide: docs/adapter-guide.md#{test['guide']}"] if test.get("guide") else []
        if where:
            lines.append("      " + "; ".join(where))
        if test.get("shrinkStopped"):
            lines.append(f"      {SHRINK_STOPPED}")
    if len(tests) > shown:
        lines.append(
            f"  and {len(tests) - shown} more failing tests: the report (--report) has every message"
        )
    return lines
