"""What a terminal shows of a report: the table per level and suite, the failing tests one by
one, the calls not implemented yet, and the commands that run or replay a test again."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbconform.profiles import placeholders
from kbconform.report._causes import Cause, causes, causes_line
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
    turns_line,
)


def _rows(report: Mapping[str, Any]) -> tuple[list[tuple[str, str]], Counter[tuple[str, str, str]]]:
    counts: Counter[tuple[str, str, str]] = Counter(
        (t["level"], t["suite"], t["status"]) for t in report.get("tests", ())
    )
    return sorted({(level, suite) for level, suite, _ in counts}), counts


#: What each column of :func:`table` counts.
LEGEND = (
    "pass: the test held; fail: the backend broke the test's rule; error: the test could not "
    "finish (a set-up failed, a call hung, the harness broke, or it did not run); skip: a "
    "capability the manifest declines"
)


def table(report: Mapping[str, Any]) -> str:
    """Counts per level and suite, a legend of the columns, then the level verdicts."""
    groups, counts = _rows(report)
    lines = [f"{'level':<6} {'suite':<20} " + " ".join(f"{s:>5}" for s in _SHOWN)]
    for level, suite in groups:
        lines.append(f"{level:<6} {suite:<20} " + " ".join(f"{counts[(level, suite, s)]:>5}" for s in _SHOWN))
    lines.append(LEGEND)
    verdicts = ", ".join(
        _word(level, v) for level, v in report["levels"].items() if sum(v[s] for s in _SHOWN)
    )
    lines.append(f"\nlevels: {verdicts or 'no tests ran'}; highest earned: {earned(report) or 'none'}")
    if design(report):
        lines.append(design_line(report))
    waiting = placeholders(report["manifest"])
    if waiting:
        lines.append(
            "the manifest still declines with a scaffold's placeholder reason (offer each, or give the "
            f"real reason): {', '.join(waiting)}"
        )
    if price_line(report):
        lines.append(price_line(report))
    if turns_line(report):
        lines.append(turns_line(report))
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


#: How many tests of a cause a terminal shows with their message (the rest by id, each once).
MESSAGES_SHOWN = 3


def cause_lines(report: Mapping[str, Any], path: str = "REPORT.json") -> list[str]:
    """The failing tests of ``report`` as causes (:func:`~kbconform.report.causes`), gravest
    first: ``K causes from N failures``, then each cause's severity and title, the rule it
    breaks and its guide section, what fixes it, its failing tests each once (the first few
    with their message), and the commands that run its example again and replay it."""
    tests = report.get("tests", ())
    made = causes(tests)
    if not made:
        return []
    by_id = {str(t["id"]): t for t in tests}
    lines = [
        f"{causes_line(made, sum(len(c.tests) for c in made))} (the report has every message and transcript)"
    ]
    for cause in made:
        lines += _cause(report, cause, by_id, path)
    return lines


def _cause(
    report: Mapping[str, Any], cause: Cause, by_id: Mapping[str, Mapping[str, Any]], path: str
) -> list[str]:
    count = f"{len(cause.tests)} test{'s' * (len(cause.tests) != 1)}"
    lines = [f"{cause.id} [{cause.severity}] {cause.title}: {count}"]
    where = [f"rule: {', '.join(f'schemas/{r}' for r in cause.rules)}"] if cause.rules else []
    where += [f"guide: docs/adapter-guide.md#{cause.guide}"] if cause.guide else []
    if where:
        lines.append("    " + "; ".join(where))
    if cause.fix:
        lines.append(f"    fix: {cause.fix}")
    shown = [cause.example, *(t for t in cause.tests if t != cause.example)]
    for test_id in shown[:MESSAGES_SHOWN]:
        test = by_id[test_id]
        said = first_line(test) or str(test.get("reason", ""))
        lines.append(f"    {test['status'].upper()} {test_id} ({test['level']} {test['suite']}): {said}")
        if test.get("shrinkStopped"):
            lines.append(f"      {SHRINK_STOPPED}")
    rest = shown[MESSAGES_SHOWN:]
    if rest:
        lines.append(f"    and {len(rest)} more: {', '.join(rest)}")
    example = by_id[cause.example]
    lines.append(f"    rerun: {rerun_command(report, example)}")
    replay = replay_command(report, example, path)
    if replay is not None:
        lines.append(f"    replay: {replay}")
    return lines


#: How many of the slowest tests a terminal names.
SLOWEST_SHOWN = 5


def slowest_line(report: Mapping[str, Any], shown: int = SLOWEST_SHOWN) -> str:
    """``slowest tests: ID 12.3 s (4,010 calls), ...``: the ``shown`` tests that took longest
    (of a report that records durations; empty otherwise)."""
    timed = [t for t in report.get("tests", ()) if isinstance(t.get("duration"), (int, float))]
    if not timed:
        return ""
    total = sum(float(t["duration"]) for t in timed)
    slow = sorted(timed, key=lambda t: (-float(t["duration"]), str(t["id"])))[:shown]
    said = ", ".join(
        f"{t['id']} {float(t['duration']):.1f} s"
        + (f" ({int(t['calls']):,} calls)" if isinstance(t.get("calls"), int) else "")
        for t in slow
    )
    return f"slowest tests (of {total:.1f} s in tests): {said}"
