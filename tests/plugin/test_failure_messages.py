"""A failing test's message in the report (report-v1 ``message``), the HTML page and the summary.

Every rejection or escape has its control: the same report with the message on a failing test
is accepted, and the same text unescaped is markup.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from kbconform import report as reports
from kbconform._resources import data_dir
from kbconform.cli import main
from kbconform.cli.writers._html import render, text
from kbconform.contract import is_valid
from kbconform.errors import ContractViolation
from tests.plugin.test_html_report import _Page, _section
from tests.plugin.test_report import TINY_MANIFEST, _build

FAILING_MUTANT = "kbconform_reference.mutants:by_name.lenient_ingest"  # fails contract-01 at L0
HOSTILE = "<script>alert(1)</script> | a `cell` | [link](http://x) <img src=x onerror=alert(1)> &amp;"


def _report(messages: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    """A report of the tiny manifest at L4, every test passing but those ``messages`` names
    (status and message)."""
    changes = messages or {}
    results = []
    for entry in reports.expected(TINY_MANIFEST, "L4"):
        status, message = changes.get(entry["id"], ("pass", ""))
        results.append({**entry, "status": status, **({"message": message} if message else {})})
    return _build(results, manifest=copy.deepcopy(TINY_MANIFEST))


def _entry(report: dict[str, Any], stable: str) -> dict[str, Any]:
    [entry] = [test for test in report["tests"] if test["id"] == stable]
    return entry


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """A real run of a mutant that fails contract-01 at L0 (a few seconds): its report and the
    folder holding it, its summary and its HTML page."""
    folder = tmp_path_factory.mktemp("messages")
    outputs = ["--report", str(folder / "r.json"), "--summary", str(folder / "s.md")]
    outputs += ["--html", str(folder / "r.html")]
    code = main(["run", "--adapter", FAILING_MUTANT, "--level", "L0", "--seed", "7", *outputs])
    assert code == 1
    return json.loads((folder / "r.json").read_text(encoding="utf-8")), folder


def test_a_real_run_records_why_the_failing_test_failed_and_nothing_for_a_pass(
    real_run: tuple[dict[str, Any], Path],
) -> None:
    """The plugin writes the failing test's assertion message (bounded, plain text); the
    passing tests carry none; the report stays valid and the page and summary show it."""
    report, folder = real_run
    reports.verify(report)
    failing = _entry(report, "contract-01")
    assert failing["status"] == "fail"
    assert failing["message"].startswith("AssertionError: ingest accepted invalid records:")
    assert len(failing["message"]) <= reports.MAX_MESSAGE
    assert "\x1b" not in failing["message"]
    passing = [test for test in report["tests"] if test["status"] == "pass"]
    assert passing, "the control: the run has passing tests"
    assert not [test["id"] for test in passing if "message" in test]
    failures = _section((folder / "r.html").read_text(encoding="utf-8"), "failures").text
    assert "AssertionError: ingest accepted invalid records:" in failures
    assert "The report records no message" not in failures
    summary = (folder / "s.md").read_text(encoding="utf-8")
    assert "- `contract-01` (fail): AssertionError: ingest accepted invalid records:" in summary


def test_a_real_run_records_each_tests_time_and_calls_and_its_causes(
    real_run: tuple[dict[str, Any], Path],
) -> None:
    """Every test that ran has its duration and its calls into the backend; the failing one
    made calls (the control: a count that is not always 0); the report's causes hold it."""
    report, folder = real_run
    ran = [test for test in report["tests"] if test["status"] in ("pass", "fail")]
    assert ran
    assert all(test["duration"] >= 0 and test["calls"] >= 0 for test in ran)
    assert _entry(report, "contract-01")["calls"] > 0
    [cause] = report["causes"]
    assert cause["tests"] == ["contract-01"]
    assert cause["effect"] == "strictness"
    assert "--only contract-01 --seed 7" in cause["rerun"]
    summary = (folder / "s.md").read_text(encoding="utf-8")
    assert summary.index("1 cause from 1 failure") < summary.index("| level | suite |")  # causes lead


def test_the_schema_allows_a_message_only_on_a_failing_or_erroring_test() -> None:
    """A message on a pass or a skip is refused by the schema and the verifier; the controls, on
    a fail and an error, are accepted."""
    report = _report({"backup-01": ("fail", "boom"), "backup-02": ("error", "teardown broke")})
    assert is_valid(report, "report-v1")
    reports.verify(report)  # the control
    for stable in ("leak-04", "spoof-03"):  # a pass, then the same test as a declined skip
        tampered = copy.deepcopy(report)
        entry = _entry(tampered, stable)
        entry["message"] = "made up"
        if stable == "spoof-03":
            entry.update(status="skip", reason="spoof-reject not offered")
            tampered["levels"] = reports.levels(tampered["tests"], tampered["manifest"])
        assert not is_valid(tampered, "report-v1")
        with pytest.raises(ContractViolation) as raised:
            reports.verify(tampered)
        assert "status fail or error" in str(raised.value)
        del entry["message"]
        reports.verify(tampered)  # the control: without the message the same report is valid
    for bad in ("", "x" * (reports.MAX_MESSAGE + 1), ["boom"]):
        tampered = copy.deepcopy(report)
        _entry(tampered, "backup-01")["message"] = bad
        assert not is_valid(tampered, "report-v1")
    _entry(tampered, "backup-01")["message"] = "x" * reports.MAX_MESSAGE
    assert is_valid(tampered, "report-v1")


def test_the_schema_bound_is_the_kits_bound() -> None:
    """report-v1's maxLength for a message is the length the kit cuts messages to."""
    schema = json.loads((data_dir("schemas") / "report-v1.schema.json").read_text(encoding="utf-8"))
    assert schema["$defs"]["test"]["properties"]["message"]["maxLength"] == reports.MAX_MESSAGE


def test_build_keeps_a_message_only_where_a_test_failed() -> None:
    """A result that passed or was skipped loses any message it was given; a failing one keeps it."""
    results = [
        {**entry, "status": "pass", "message": "stale"} for entry in reports.expected(TINY_MANIFEST, "L4")
    ]
    results[0]["status"] = "fail"
    report = _build(results)
    reports.verify(report)
    assert [test["id"] for test in report["tests"] if "message" in test] == [results[0]["id"]]


def test_an_old_report_without_messages_still_verifies(tmp_path: Path) -> None:
    """A report of failures that carries no message (as every report did before) is valid, and
    the page and summary fall back to saying so."""
    report = _report({"backup-01": ("fail", "")})
    assert "message" not in _entry(report, "backup-01")
    path = tmp_path / "old.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    assert "The report records no message" in _section(render(report), "failures").text
    assert "- `backup-01` (fail)\n" in reports.summary(report)
    _entry(report, "backup-01")["message"] = 42  # the control: a malformed message is refused
    path.write_text(json.dumps(report), encoding="utf-8")
    assert main(["verify", str(path)]) == 1


def test_a_message_never_changes_the_verdict_or_the_test_list() -> None:
    """Levels, the highest level, the badge, the test-list hash and the catalogue a report gives
    are the same with and without messages."""
    plain = _report({"backup-01": ("fail", ""), "leak-04": ("error", "")})
    told = _report({"backup-01": ("fail", "one"), "leak-04": ("error", "two")})
    assert [t.get("message") for t in told["tests"] if t["status"] != "pass"] == ["one", "two"]
    assert told["levels"] == plain["levels"]
    assert reports.earned(told) == reports.earned(plain)
    assert reports.badge(told) == reports.badge(plain)
    assert told["testListHash"] == plain["testListHash"]
    assert reports.catalogue_from(told) == reports.catalogue_from(plain)
    assert reports.levels(told["tests"], told["manifest"]) != reports.levels(
        _report()["tests"], told["manifest"]
    )  # control: statuses count


def test_a_message_is_cleaned_redacted_and_cut_before_it_reaches_the_report() -> None:
    """Colour sequences go, control characters and lone surrogates become escapes, the config's
    secrets and URL passwords become [redacted], and a long message is cut to the bound with the
    count of the rest; the report written stays strict JSON the verifier accepts."""
    coloured = "\x1b[31mred\x1b[0m bell\x07 nul\x00 lone\ud800 tab\tand\nnewline"
    leaky = "apiKey abc at http://kb:s3cret@127.0.0.1:8000/v1 and postgres://u:hunter2@db/x"
    long = "y" * (reports.MAX_MESSAGE + 1234)
    report = _report(
        {"backup-01": ("fail", coloured), "backup-02": ("fail", leaky), "leak-04": ("error", long)}
    )
    assert _entry(report, "backup-01")["message"] == "red bell\\x07 nul\\x00 lone\\ud800 tab\tand\nnewline"
    shown = _entry(report, "backup-02")["message"]
    assert shown == (
        "apiKey [redacted] at http://kb:[redacted]@127.0.0.1:8000/v1 and postgres://u:[redacted]@db/x"
    )
    assert "127.0.0.1:8000/v1" in shown  # the control: only the secrets are gone
    cut = _entry(report, "leak-04")["message"]
    assert len(cut) == reports.MAX_MESSAGE
    room = cut.index(" \u2026")
    assert cut == "y" * room + f" \u2026 ({len(long) - room:,} more characters)"
    assert reports.message("y" * reports.MAX_MESSAGE) == "y" * reports.MAX_MESSAGE  # control: fits
    assert reports.message("\x1b[0m \n") is None  # nothing left: no message
    written = json.dumps(report, indent=2, sort_keys=True)
    reports.verify(reports.read(io.BytesIO(written.encode())))
    raw = json.dumps({"message": "lone\ud800"})
    with pytest.raises(ContractViolation):  # the control: a lone surrogate would break the report
        reports.read(io.BytesIO(raw.encode()))


def test_the_page_shows_a_hostile_message_under_its_failure_as_text() -> None:
    """A message with markup, a colour sequence and great length is text under its failure: no
    element, no attribute, the words kept; the control finds the markup when it is not escaped."""
    message = f"\x1b[1m{HOSTILE}\x1b[0m\n" + "z" * 5000
    report = _report({"backup-01": ("fail", message)})
    page = render(report)
    parsed = _Page(page)
    assert parsed.tags["script"] == parsed.tags["img"] == 0
    assert not [name for name, _ in parsed.attributes if name.startswith("on") or name == "src"]
    failures = _section(page, "failures").text
    assert HOSTILE in failures
    assert "more characters)" in failures  # cut in the report, the cut said
    assert "\x1b" not in page
    assert "The report records no message" not in failures
    kept = _entry(report, "backup-01")["message"]
    assert kept.startswith(HOSTILE)
    assert text(kept) in page
    spoiled = _Page(page.replace(text(kept), kept))
    assert spoiled.tags["script"] + spoiled.tags["img"] > 0  # the control


_PARSER = MarkdownIt("commonmark").enable("table")  # GitHub's Markdown, roughly


def _markdown(markdown: str) -> str:
    return _PARSER.render(markdown)


def _tokens(markdown: str) -> list[str]:
    """Every token type CommonMark with tables reads in ``markdown``."""
    found: list[str] = []
    for token in _PARSER.parse(markdown):
        found.append(token.type)
        found += [child.type for child in token.children or ()]
    return found


def test_the_summary_shows_a_short_first_line_of_a_message_as_plain_text() -> None:
    """The summary lists each failing test with the first line of its message, at most 200
    characters, every Markdown and HTML character escaped: no link, no HTML, no extra cell; the
    control reads the same line unescaped as markup."""
    long = "w" * 500
    report = _report({"backup-01": ("fail", f"{HOSTILE}\nsecond line"), "backup-02": ("error", long)})
    summary = reports.summary(report)
    [hostile] = [line for line in summary.splitlines() if line.startswith("- `backup-01`")]
    [cut] = [line for line in summary.splitlines() if line.startswith("- `backup-02`")]
    assert "second line" not in summary
    assert cut == f"- `backup-02` (error): {'w' * (reports.SUMMARY_MESSAGE - 1)}\u2026"
    assert not {"html_inline", "html_block", "link_open", "image"} & set(_tokens(summary))
    rendered = _markdown(hostile)
    assert "<script>" not in rendered
    assert "&lt;script&gt;" in rendered
    assert "<code>cell</code>" not in rendered
    row = _markdown(f"| id | message |\n|---|---|\n| x | {hostile} |\n")
    assert "http://x" in row  # a | in the message opens no cell: the text after it stays
    unescaped = f"- `backup-01` (fail): {HOSTILE}"  # the controls
    assert {"html_inline", "link_open"} <= set(_tokens(unescaped))
    assert "http://x" not in _markdown(f"| id | message |\n|---|---|\n| x | {unescaped} |\n")


@pytest.mark.parametrize("shrink", [True, False])
def test_a_failing_property_is_shrunk_unless_the_run_says_not_and_never_explained(shrink: bool) -> None:
    """A run's property that fails reports Hypothesis's shortest failing example when the run
    shrinks ([100] for 'the sum stays under 100'), the first one found otherwise (so never a
    step longer than finding it); and its message never carries Hypothesis's explanation, whose
    lines name the kit's own code rather than the backend's."""
    from hypothesis import strategies as st

    from kbconform.conformance import Run

    run = Run(adapter=None, manifest=None, seed=11, shrink=shrink)  # type: ignore[arg-type]
    tried: list[list[int]] = []

    @run.given(st.lists(st.integers(0, 1000), min_size=1))
    def stays_small(numbers: list[int]) -> None:
        tried.append(numbers)
        total = sum(numbers)
        if total >= 100:
            message = f"the sum of {numbers} is not under 100"  # a line only failing examples run
            raise AssertionError(message)

    with pytest.raises(AssertionError) as failed:
        stays_small()
    last = tried[-1]
    assert (last == [100]) is shrink
    assert sum(last) >= 100
    if not shrink:  # the first failing example ends the test (Hypothesis runs it once more to report it)
        assert len({tuple(numbers) for numbers in tried if sum(numbers) >= 100}) == 1
    shown = str(failed.value) + "".join(getattr(failed.value, "__notes__", []))
    assert "Explanation" not in shown
    assert "always and only run by failing" not in shown
