"""A conformance report (report-v1) as one self-contained HTML page (``kbconform run --html``).

The page reads offline in any browser: inline CSS, no script, no image, no link to anything
else, and a Content-Security-Policy that forbids loading or running anything even if markup
got in. From the top: the verdict (highest level earned, counts, the levels), the failures
grouped into causes (each with its fix, tests, commands and transcript), the manifest as
the report records it (its config already redacted), the failing tests (each with its message,
the rule it checks and the guide's section, and the commands that show it again: a rerun from
the seed, and a replay of its recorded exchanges), the run, then every test, collapsed. The
spec and guide sections are named as text, not linked: the page links nowhere. Every string
from the report is text on the page, never markup: it is escaped with
:func:`html.escape`, terminal colour sequences are dropped, other control characters are shown
as ``\\xNN``, and a very long one is cut (the JSON report keeps it whole).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbconform._levels import LEVELS
from kbconform.profiles import profile_of
from kbconform.report import (
    LEGEND,
    OWASP,
    SHRINK_STOPPED,
    UNSHRUNK,
    Report,
    causes_line,
    declined_words,
    replay_command,
    rerun_command,
    write,
)

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished

#: The most characters of one string shown; the rest is counted, not shown.
MAX_TEXT = 20_000
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]|[\ud800-\udfff]")

#: Nothing is loaded or run: the page's own inline style is all it allows.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
_STYLE = """
:root { color-scheme: light; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --line: #d0d7de; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
  margin: 0 auto; padding: 24px; max-width: 1200px; background: #fff; }
h1 { font-size: 24px; margin: 0 0 12px; }
h2 { font-size: 19px; margin: 28px 0 10px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
code, pre, td.id { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 13px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; border: 1px solid var(--line);
  border-radius: 6px; padding: 8px 10px; margin: 6px 0 0; max-height: 30em; overflow: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top;
  overflow-wrap: anywhere; }
th { background: #f6f8fa; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dt { font-weight: 600; }
dd { margin: 0; overflow-wrap: anywhere; }
.verdict { border: 2px solid; border-radius: 8px; padding: 14px 18px; }
.verdict.pass { border-color: var(--ok); background: #dafbe1; }
.verdict.fail { border-color: var(--bad); background: #ffebe9; }
.verdict .headline { font-size: 22px; font-weight: 700; margin: 0 0 4px; }
.status { font-weight: 700; text-transform: uppercase; font-size: 12px; letter-spacing: .04em; }
.status.pass { color: var(--ok); } .status.fail, .status.error { color: var(--bad); }
.status.skip, .status.disabled { color: var(--warn); }
.failure { border-left: 4px solid var(--bad); padding: 6px 12px; margin: 10px 0; background: #fff8f7; }
.failure h3 { font-size: 15px; margin: 0; }
.note { color: #59636e; }
.again { margin-top: 6px; font-size: 13px; }
summary { cursor: pointer; color: #59636e; }
"""


def _escaped(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text(value: object) -> str:
    """``value`` as escaped HTML text: colour sequences dropped, control characters and lone
    surrogates shown as escapes, cut after :data:`MAX_TEXT` characters."""
    shown = _ANSI.sub("", value if isinstance(value, str) else str(value))
    shown = _CONTROL.sub(_escaped, shown)
    cut = ""
    if len(shown) > MAX_TEXT:
        cut = f" \u2026 ({len(shown) - MAX_TEXT:,} more characters in the JSON report)"
        shown = shown[:MAX_TEXT]
    return html.escape(shown, quote=True) + cut


def _json(value: Any) -> str:
    return text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def _status(status: str) -> str:
    return f'<span class="status {text(status)}">{text(status)}</span>'


def _where(test: Mapping[str, Any]) -> str:
    """What a test ran with: its read facade, spoof mode and isolation profile, when it has them."""
    parts = [f"{key} {test[key]}" for key in ("facade", "spoofMode", "profile") if key in test]
    return text(", ".join(parts))


def _rows(items: Iterable[tuple[str, str]]) -> str:
    return "".join(f"<dt>{text(key)}</dt><dd>{value}</dd>" for key, value in items)


def _verdict(report: Report) -> str:
    tests = report.tests
    failed = len(report.failing)
    passed = sum(1 for t in tests if t["status"] == "pass")
    skipped = sum(1 for t in tests if t["status"] == "skip")
    level = report.earned
    headline = f"Highest level earned: {level}" if level else "No level earned"
    counts = f"{passed} passed, {failed} failing, {skipped} skipped of {len(tests)} tests"
    notes = []
    chosen = report.selection
    if chosen is not None:
        notes.append(f"A partial run of {len(chosen)} selected tests: it earns no level.")
    declined = report.rests_on
    if declined:
        notes.append(f"{level} rests on the capabilities the manifest declines: {', '.join(declined)}.")
    missing, unknown = report.missing, report.unknown
    if missing:
        notes.append(f"Incomplete: {len(missing)} suite tests did not run.")
    if unknown:
        notes.append(f"{len(unknown)} tests are not in the suite's catalogue.")
    if not tests:
        notes.append("No tests ran.")
    levels = "".join(
        f"<tr><td>{text(name)}</td><td>{'earned' if verdict['earned'] else 'not earned'}"
        + text(declined_words(verdict.get("declined") or ()))
        + "</td>"
        + "".join(f'<td class="n">{text(verdict[s])}</td>' for s in ("pass", "fail", "error", "skip"))
        + "</tr>"
        for name, verdict in report.levels.items()
        if name in LEVELS and any(verdict[s] for s in ("pass", "fail", "error", "skip"))
    )
    return (
        f'<section class="verdict {"fail" if failed or not level else "pass"}" id="verdict">'
        f'<p class="headline">{text(headline)}</p><p>{text(counts)}</p>'
        + "".join(f"<p><strong>{text(note)}</strong></p>" for note in notes)
        + (
            '<table><thead><tr><th>level</th><th>verdict</th><th class="n">pass</th><th class="n">fail</th>'
            f'<th class="n">error</th><th class="n">skip</th></tr></thead><tbody>{levels}</tbody></table>'
            if levels
            else ""
        )
        + "</section>"
    )


def _feature(value: Any) -> str:
    if value is True:
        return "declared"
    if isinstance(value, str):
        return f"declined: {text(value)}"
    return f"declared: <code>{text(json.dumps(value, sort_keys=True, ensure_ascii=False))}</code>"


#: Friendlier names for the manifest's declarations; any other key is shown under its own name.
_LABELS = {
    "isolationModel": "isolation model",
    "readFacades": "read facades",
    "spoofModes": "spoof modes",
    "sharedNamespace": "shared namespace",
    "sharedNamespaceReaders": "shared namespace readers",
    "idProfile": "id profile",
}
_APART = ("manifestVersion", "adapter", "backend", "isolationProfile", "features", "config")


def _declared(value: Any) -> str:
    """A manifest declaration as text: a list joined, null as declined, anything else as JSON."""
    if value is None:
        return "none (declined)"
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return text(", ".join(value)) if value else "none"
    return f"<code>{text(json.dumps(value, sort_keys=True, ensure_ascii=False))}</code>"


def _manifest(manifest: Mapping[str, Any]) -> str:
    def named(key: str) -> str:
        part = manifest.get(key)
        return (
            text(f"{part.get('name', '?')} {part.get('version', '?')}") if isinstance(part, Mapping) else "?"
        )

    rows = [
        ("adapter", named("adapter")),
        ("backend", named("backend")),
        ("isolation profile", text(profile_of(manifest))),
        *((label, _declared(manifest[key])) for key, label in _LABELS.items() if key in manifest),
        *((key, _declared(value)) for key, value in manifest.items() if key not in (*_APART, *_LABELS)),
    ]
    features = manifest.get("features")
    feature_rows = (
        "".join(
            f"<tr><td><code>{text(name)}</code></td><td>{_feature(value)}</td></tr>"
            for name, value in features.items()
        )
        if isinstance(features, Mapping)
        else ""
    )
    return (
        f'<section id="manifest"><h2>Manifest</h2><dl>{_rows(rows)}</dl>'
        + (
            f"<h3>Features</h3><table><thead><tr><th>feature</th><th>declared or declined</th></tr></thead>"
            f"<tbody>{feature_rows}</tbody></table>"
            if feature_rows
            else ""
        )
        + (
            "<h3>Configuration (as the report records it, secrets redacted)</h3>"
            f"<pre>{_json(manifest['config'])}</pre>"
            if "config" in manifest
            else ""
        )
        + "</section>"
    )


def _run(report: Report) -> str:
    execution = report.execution
    rows = [
        ("adapter", f"<code>{text(report.config['adapter'])}</code>"),
        ("suites", text(f"{report.suite_version} ({report.test_list_hash})")),
        ("level", text(report.level)),
        ("Hypothesis profile", text(report.profile)),
        ("seed", f"<code>{text(report.seed)}</code>"),
        ("workers", text(execution.get("workers", "?"))),
        ("call deadline", text(f"{execution.get('callTimeout', '?')} s")),
        ("failing examples", text("not shrunk (--no-shrink)" if report.unshrunk else "shrunk")),
        ("other pytest plugins", text(", ".join(execution.get("plugins", ())) or "none")),
        *((name, text(version)) for name, version in report.environment.items()),
    ]
    return f'<section id="run"><h2>Run</h2><dl>{_rows(rows)}</dl></section>'


def _checks(test: Mapping[str, Any]) -> str:
    """Where the rule a test checks is written, its spec section and the guide's, as text, and
    its OWASP category."""
    where = [f"rule <code>schemas/{text(test['rule'])}</code>"] if test.get("rule") else []
    where += [f"guide <code>docs/adapter-guide.md#{text(test['guide'])}</code>"] if test.get("guide") else []
    return f'<p class="note">{"; ".join([*where, text(OWASP)])}</p>'


def _again(report: Report, test: Mapping[str, Any]) -> str:
    """The commands that show the failure again: a rerun from the seed, and a replay of the
    recorded exchanges when the test has them."""
    rows = [("run it again", f"<code>{text(rerun_command(report.data, test))}</code>")]
    replay = replay_command(report.data, test)
    if replay is not None:
        rows.append(("replay its exchanges", f"<code>{text(replay)}</code> (REPORT.json: this report)"))
    return f'<dl class="again">{_rows(rows)}</dl>'


def _failures(report: Report) -> str:
    failed = report.failing
    if not failed:
        return (
            '<section id="failures"><h2>Failures</h2>'
            "<p>No failures: every test passed or was declined.</p></section>"
        )
    items = "".join(
        f'<div class="failure"><h3><code>{text(t["id"])}</code> {_status(t["status"])}</h3>'
        f'<p class="note">{text(t["level"])}, suite {text(t["suite"])}'
        + (f", {_where(t)}" if _where(t) else "")
        + "</p>"
        + _checks(t)
        + (f'<p class="note">{text(SHRINK_STOPPED)}.</p>' if t.get("shrinkStopped") else "")
        + (f"<pre>{text(t['reason'])}</pre>" if t.get("reason") else "")
        + (f'<pre class="message">{text(t["message"])}</pre>' if t.get("message") else "")
        + (
            ""
            if t.get("reason") or t.get("message")
            else '<p class="note">The report records no message for this test; the run\'s output and '
            "its JUnit XML (<code>--junitxml</code>) hold the traceback.</p>"
        )
        + _again(report, t)
        + "</div>"
        for t in failed
    )
    note = f'<p class="note">{text(UNSHRUNK)}.</p>' if report.unshrunk else ""
    return f'<section id="failures"><h2>Failures ({len(failed)})</h2>{note}{items}</section>'


#: The most exchanges of a cause's transcript the page shows (the JSON report has them all).
TRANSCRIPT_SHOWN = 40


def _causes(report: Report) -> str:
    """The causes, first after the verdict: each with its severity, title, rule, fix, failing
    tests, the commands that show it again, and its example's transcript, collapsed."""
    made = report.causes
    if not made:
        return ""
    tests = {t["id"]: t for t in report.tests}
    items = []
    for cause in made:
        example = tests[cause.example]
        exchanges = example.get("transcript") or []
        lines = "\n".join(json.dumps(x, ensure_ascii=False) for x in exchanges[:TRANSCRIPT_SHOWN])
        transcript = (
            f"<details><summary>its transcript ({len(exchanges)} exchanges of {text(cause.example)})"
            f"</summary><pre>{text(lines)}"
            + (
                text(f"\n... {len(exchanges) - TRANSCRIPT_SHOWN} more")
                if len(exchanges) > TRANSCRIPT_SHOWN
                else ""
            )
            + "</pre></details>"
            if exchanges
            else ""
        )
        rows = [
            ("severity", text(cause.severity)),
            ("rule", text(", ".join(f"schemas/{r}" for r in cause.rules) or "-")),
            ("fix", text(cause.fix)),
            ("tests", "<code>" + text(", ".join(cause.tests)) + "</code>"),
        ]
        items.append(
            f'<div class="failure cause"><h3>{text(cause.id)}: {text(cause.title)}</h3>'
            f"<dl>{_rows(rows)}</dl>{_again(report, example)}{transcript}</div>"
        )
    said = causes_line(made, sum(len(c.tests) for c in made))
    return f'<section id="causes"><h2>{text(said)}</h2>{"".join(items)}</section>'


def _tests(tests: Sequence[Mapping[str, Any]]) -> str:
    ordered = sorted(tests, key=lambda t: (LEVELS.index(t["level"]) if t["level"] in LEVELS else 99, t["id"]))
    rows = "".join(
        f'<tr><td class="id">{text(t["id"])}</td><td>{text(t["level"])}</td><td>{_status(t["status"])}</td>'
        f"<td>{text(t['suite'])}</td><td>{_where(t)}</td>"
        f'<td class="n">{text(_seconds(t))}</td><td class="n">{text(t.get("calls", ""))}</td>'
        f"<td>{text(t.get('reason', ''))}</td></tr>"
        for t in ordered
    )
    counts = Counter(t["status"] for t in tests)
    told = ", ".join(
        f"{counts[status]} {status}" for status in ("pass", "fail", "error", "skip") if counts[status]
    )
    # collapsed: the failures above are what a reader comes for; the table is there to check
    return (
        f'<section id="tests"><h2>Every test ({len(tests)})</h2><details><summary>{text(told)}: show '
        "every test</summary><table><thead><tr><th>id</th><th>level</th>"
        '<th>status</th><th>suite</th><th>ran with</th><th class="n">seconds</th><th class="n">calls</th>'
        f"<th>reason</th></tr></thead><tbody>{rows}</tbody></table>"
        f'<p class="note">{text(LEGEND)}; seconds: how long it took; calls: its calls into the '
        "backend</p></details></section>"
    )


def _seconds(test: Mapping[str, Any]) -> str:
    duration = test.get("duration")
    return f"{float(duration):.2f}" if isinstance(duration, (int, float)) else ""


def render(report: Report | Mapping[str, Any]) -> str:
    """The HTML page of a report-v1 ``report``: the verdict and manifest first, then the run,
    the failing tests with their messages, and every test."""
    report = Report.of(report)
    manifest = report.manifest
    tests = report.tests
    failed = len(report.failing)
    level = report.earned
    title = (
        f"kbconform: {manifest['adapter']['name']} on {manifest['backend']['name']}: "
        f"{level or 'no level'}" + (f", {failed} failing" if failed else "")
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{text(title)}</title><style>{_STYLE}</style></head>\n<body>"
        "<h1>kbconform conformance report</h1>"
        + _verdict(report)
        + _causes(report)
        + _manifest(manifest)
        + _failures(report)
        + _run(report)
        + _tests(tests)
        + "</body></html>\n"
    )


class Html:
    option = "--html"
    help = "write a self-contained HTML report here"

    def pytest_arguments(self, path: str) -> list[str]:
        return []

    def write(self, path: str, finished: Finished) -> None:
        write(path, render(finished.report))
