"""A report as Markdown for a CI step summary, and as a shields.io endpoint badge."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kbconform.report._causes import causes_line
from kbconform.report._messages import first_line
from kbconform.report._record import Report
from kbconform.report._terminal import _rows, rerun_command
from kbconform.report._verdicts import _SHOWN, _word, declined_words

_MARKDOWN = re.compile(r"[\\`*_{}\[\]<>|~#!&]")


def summary(report: Report | Mapping[str, Any]) -> str:
    """Markdown for a CI step summary."""
    report = Report.of(report)
    manifest = report.manifest
    groups, counts = _rows(report.data)
    failing, skipped = report.failed, report.skipped
    chosen = report.selection
    lines = [
        "## kbconform conformance",
        "",
        f"**{manifest['adapter']['name']} {manifest['adapter']['version']}** on "
        f"**{manifest['backend']['name']} {manifest['backend']['version']}**: "
        f"highest level earned **{report.earned or 'none'}**; "
        f"{len(failing)} failing, {len(skipped)} skipped of {len(report.tests)} tests.",
        "",
        f"Suites {report.suite_version} (`{report.test_list_hash[:19]}`), level {report.level}, "
        f"Hypothesis profile {report.profile}, seed `{report.seed}`."
        + (f" {report.design_line.capitalize()}." if report.design else "")
        + ("" if chosen is None else f" A partial run of {len(chosen)} selected tests: it earns no level."),
        "",
        "Levels: "
        + (
            ", ".join(_word(level, verdict) for level, verdict in report.level_verdicts.items())
            or "none with tests in this run"
        )
        + ".",
        "",
        *_causes(report),
        "| level | suite | " + " | ".join(_SHOWN) + " |",
        "|---|---|" + "---:|" * len(_SHOWN),
    ]
    lines += [
        f"| {level} | {suite} | " + " | ".join(str(counts[(level, suite, s)]) for s in _SHOWN) + " |"
        for level, suite in groups
    ]
    if failing:
        lines += ["", "### Failing", ""] + [_failing(t) for t in failing]
    if skipped:
        lines += ["", "### Skipped (declined in the manifest)", ""]
        lines += [f"- `{t['id']}`: {_plain(str(t.get('reason', '')))}" for t in skipped]
    return "\n".join(lines) + "\n"


def _causes(report: Report) -> list[str]:
    """The causes section, first after the verdict: each cause's severity, title, tests, rule,
    fix and the command that reruns its example (empty when nothing failed)."""
    made = report.causes
    if not made:
        return []
    tests = {t["id"]: t for t in report.tests}
    lines = [f"### {causes_line(made, sum(len(c.tests) for c in made))}", ""]
    for cause in made:
        ids = ", ".join(f"`{_plain(t)}`" for t in cause.tests)
        rerun = rerun_command(report.data, tests[cause.example])
        lines.append(f"- **{cause.id}** ({cause.severity}) {_plain(cause.title)}: {ids}")
        if cause.rules:
            lines.append(f"  rule: {', '.join(_plain(r) for r in cause.rules)}; fix: {_plain(cause.fix)}")
        lines.append(f"  rerun: `{rerun}`" if "`" not in rerun else f"  rerun: {_plain(rerun)}")
    return [*lines, ""]


def _failing(test: Mapping[str, Any]) -> str:
    """A failing test's line in the summary: its id, status and the first line of its message
    (:func:`first_line`), as plain text: every character Markdown or HTML would read as markup
    is escaped, so a message cannot add a link, an element or a cell."""
    line = f"- `{test['id']}` ({test['status']})"
    shown = _plain(first_line(test))
    return f"{line}: {shown}" if shown else line


def _plain(text: str) -> str:
    """``text`` with every character Markdown or HTML would read as markup escaped, on one line."""
    return _MARKDOWN.sub(lambda match: "\\" + match[0], " ".join(text.split()))


def badge(report: Report | Mapping[str, Any]) -> dict[str, Any]:
    """A shields.io endpoint badge: the highest level earned, the declined capabilities its
    verdict rests on and any failures; red on a failure, yellow when a declined feature skipped
    a test, green otherwise."""
    report = Report.of(report)
    failing = len(report.failed)
    level = report.earned
    message = f"{level}" if level else "no level"
    message += declined_words(report.rests_on)
    if failing:
        message += f" | {failing} failing"
    color = "red" if failing else ("yellow" if report.skipped or not level else "brightgreen")
    return {"schemaVersion": 1, "label": "kbconform", "message": message, "color": color}
