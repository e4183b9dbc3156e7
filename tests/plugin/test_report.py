"""Reports (report-v1): expected tests, levels, redaction, the verifier, the summary and badge.

Reports here are built from the shipped catalogue, so every rejection has a control: the same
report, untouched, is accepted.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kbconform import report as reports
from kbconform.cli import main
from kbconform.contract import is_valid
from kbconform.errors import ContractViolation
from kbconform.profiles import PLACEHOLDER
from tests.plugin import grant_adapter, pool_adapter

TINY_MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "adapter": {"name": "tiny", "version": "1"},
    "backend": {"name": "memory", "version": "1"},
    "readFacades": ["query", "get", "list"],
    "isolationModel": "metadata-filter",
    "spoofModes": ["overwrite"],
    "sharedNamespace": None,
    "idProfile": "kbconform-v1",
    "features": {
        "client-where": True,
        "revision-boundary": True,
        "fault-injection": True,
        "escalation": {"threshold": 3, "windowSeconds": 60},
        "workspace-scan": True,
    },
    "config": {"url": "http://kb:s3cret@127.0.0.1:8000/v1", "apiKey": "abc", "collection": "kb"},
}
EXECUTION = {"pluginAutoload": False, "plugins": [], "workers": 0, "callTimeout": 60.0}
#: The levels the catalogue has tests in for the tiny manifest, lowest first.
WITH_TESTS = sorted({entry["level"] for entry in reports.expected(TINY_MANIFEST, "L4")})


def _build(results: list[dict[str, Any]], **arguments: Any) -> dict[str, Any]:
    """The report of ``results``: of the tiny manifest at L4, unless ``arguments`` (of
    reports.build) say otherwise."""
    tiny = {"adapter": "tiny:make", "manifest": TINY_MANIFEST, "seed": 7, "profile": "quick", "level": "L4"}
    return reports.build(**{**tiny, "results": results, "execution": EXECUTION, **arguments})


def _report(status: str = "pass", level: str = "L4", **changes: str) -> dict[str, Any]:
    results = [
        {**entry, "status": changes.get(entry["id"], status)}
        for entry in reports.expected(TINY_MANIFEST, level)
    ]
    return _build(results, level=level)


def _rejection(report: dict[str, Any]) -> str:
    with pytest.raises(ContractViolation) as raised:
        reports.verify(report)
    assert raised.value.code == "KB_REPORT_INVALID"
    return str(raised.value)


def test_the_expected_tests_follow_the_manifest_and_the_level() -> None:
    """Facades and spoof modes the manifest lacks are not expected; a level cuts the higher ones."""
    ids = {entry["id"] for entry in reports.expected(TINY_MANIFEST, "L4")}
    every = {entry["id"] for entry in reports.catalogue()}
    assert {"leak-01[query]", "leak-01[list]", "spoof-01[overwrite-tenantId]", "spoof-03"} <= ids
    assert not {"leak-01[count]", "leak-01[ask]", "spoof-01[reject-tenantId]", "spoof-02[reject]"} & ids
    assert {"leak-01[count]", "spoof-02[reject]"} <= every  # control: they exist
    assert {entry["level"] for entry in reports.expected(TINY_MANIFEST, "L1")} == {"L0", "L1"}


def test_a_built_report_is_valid_and_passes_the_verifier() -> None:
    """The control for every rejection below."""
    report = _report()
    assert is_valid(report, "report-v1")
    reports.verify(report)
    assert report["completeness"] == {"missing": [], "unknown": []}
    assert report["testListHash"] == reports.list_hash(reports.catalogue())


def test_a_test_without_a_result_is_an_error_and_missing() -> None:
    results = [{**e, "status": "pass"} for e in reports.expected(TINY_MANIFEST, "L4") if e["id"] != "leak-04"]
    report = _build(results)
    assert report["completeness"]["missing"] == ["leak-04"]
    [entry] = [t for t in report["tests"] if t["id"] == "leak-04"]
    assert (entry["status"], entry["reason"]) == (
        "error",
        "did not run: not collected, deselected, or the run stopped before it",
    )
    assert not report["levels"]["L2"]["earned"]
    assert "/completeness: expected a complete run; got tests not run or not listed: leak-04" in _rejection(
        report
    )


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (lambda r: r["tests"].pop(0), "missing: {first}"),
        (lambda r: r["tests"].append({**r["tests"][0], "id": "leak-99"}), "unknown: leak-99"),
        (lambda r: r["tests"].append(r["tests"][0]), "repeated: {first}"),
        (lambda r: r.update(suiteVersion="0.0.1"), "/suiteVersion: expected"),
        (lambda r: r.update(testListHash="sha256:" + "0" * 64), "/testListHash: expected"),
        (lambda r: r["tests"][0].update(level="L1"), "suite {suite} at L3; got suite {suite} at L1"),
        (lambda r: r["tests"][0].update(status="fail"), "/levels: expected the verdicts its tests give"),
        (lambda r: r["manifest"].pop("features"), "/manifest/features: expected"),
        (lambda r: r["tests"][0].update(status="passed"), "/tests/0/status"),
        (lambda r: r.pop("levels"), "levels"),
    ],
)
def test_the_verifier_rejects_a_tampered_report(tamper: Any, expected: str) -> None:
    report = _report()
    reports.verify(copy.deepcopy(report))  # control
    first = report["tests"][0]
    assert first["level"] == "L3"  # the tamper that moves it to L1 relies on this
    tamper(report)
    assert expected.format(first=first["id"], suite=first["suite"]) in _rejection(report)


def _earned(report: dict[str, Any]) -> list[str]:
    return [level for level, verdict in report["levels"].items() if verdict["earned"]]


def test_a_level_is_earned_only_when_it_and_every_lower_level_pass() -> None:
    """A test skipped for no declined capability costs its level and every level above it; a
    failure does too; a level with no tests is never earned."""
    assert _earned(_report()) == WITH_TESTS
    skipped = _report(**{"leak-04": "skip"})  # leak-04 requires nothing the manifest declines
    assert _earned(skipped) == ["L0", "L1"]
    assert skipped["levels"]["L2"]["skip"] == 1
    assert skipped["levels"]["L2"]["declined"] == []
    failing_l3 = _report(**{"backup-01": "fail"})
    assert _earned(failing_l3) == ["L0", "L1", "L2"]
    failing_l0 = _report(**{"contract-01": "fail"})
    assert _earned(failing_l0) == []
    assert not _report(level="L1")["levels"]["L2"]["earned"]  # no L2 tests in an L1 run


def _declining(**features: str) -> dict[str, Any]:
    """The report of a run where every test passes but those a manifest declining ``features``
    (and offering both spoof modes) skips."""
    manifest = {
        **TINY_MANIFEST,
        "spoofModes": ["overwrite", "reject"],
        "features": {**TINY_MANIFEST["features"], **features},
    }
    results = [
        {**entry, "status": "skip" if set(entry.get("requires", ())) & set(features) else "pass"}
        for entry in reports.expected(manifest, "L4")
    ]
    return _build(results, manifest=manifest)


def test_a_capability_declined_by_design_is_named_beside_its_level_and_never_caps_it() -> None:
    """A store that parses nothing declines workspace-scan: bytes-02 and bytes-03 are skipped,
    L4 is earned, and the level, the table, the badge and the verifier all say what it rests on.
    A declined probe (fault-injection: failing closed cannot be seen without it) caps its level."""
    offered = _declining()  # control: nothing declined, nothing named
    assert _earned(offered) == WITH_TESTS
    assert all(verdict["declined"] == [] for verdict in offered["levels"].values())
    assert reports.badge(offered)["message"] == "L4"
    assert reports.rests_on(offered) == ()

    store = _declining(**{"workspace-scan": "a store: it parses nothing"})
    assert _earned(store) == WITH_TESTS
    assert store["levels"]["L3"]["skip"] == 3
    assert store["levels"]["L3"]["declined"] == ["workspace-scan"]
    assert reports.rests_on(store) == ("workspace-scan",)
    assert reports.badge(store)["message"] == "L4 (declined: workspace-scan)"
    assert "L3 earned (declined: workspace-scan)" in reports.table(store)
    assert "L3 earned (declined: workspace-scan)" in reports.summary(store)
    reports.verify(store)

    placeholder = _declining(**{"workspace-scan": f"{PLACEHOLDER}not offered yet"})
    assert "placeholder reason (offer each, or give the real reason): workspace-scan" in reports.table(
        placeholder
    )
    assert "placeholder" not in reports.table(store)  # control: a real reason is not named so

    blind = _declining(**{"fault-injection": "no switch on the store"})
    assert _earned(blind) == ["L0", "L1"]
    assert blind["levels"]["L2"]["declined"] == []
    assert blind["levels"]["L2"]["skip"] > 0
    assert reports.badge(blind)["message"] == "L1"
    reports.verify(blind)


def test_secrets_in_the_adapter_config_are_redacted() -> None:
    report = _report()
    shown = json.dumps(report)
    assert "s3cret" not in shown
    assert "abc" not in json.dumps(report["config"])
    assert report["config"]["backend"] == {
        "url": "http://kb:[redacted]@127.0.0.1:8000/v1",
        "apiKey": "[redacted]",
        "collection": "kb",  # control: an ordinary value stays
    }
    assert report["manifest"]["config"] == report["config"]["backend"]
    assert reports.redact({"nested": [{"password": "x", "host": "h"}]}) == {
        "nested": [{"password": "[redacted]", "host": "h"}]
    }


def test_a_password_in_the_harness_url_or_command_is_redacted() -> None:
    """The harness's URL and command are shown without a password; one without stays as it is."""
    results = [{**entry, "status": "pass"} for entry in reports.expected(TINY_MANIFEST, "L4")]
    built = {
        url: _build(results, adapter=url, harness={"transport": "http", "url": url})
        for url in ("http://ops:hunter2@127.0.0.1:9/", "http://127.0.0.1:9/")
    }
    hidden = built["http://ops:hunter2@127.0.0.1:9/"]
    assert "hunter2" not in json.dumps(hidden)
    assert hidden["config"]["adapter"] == "http://ops:[redacted]@127.0.0.1:9/"
    assert hidden["config"]["harness"]["url"] == "http://ops:[redacted]@127.0.0.1:9/"
    plain = built["http://127.0.0.1:9/"]  # control: nothing to hide, nothing changed
    assert plain["config"]["adapter"] == plain["config"]["harness"]["url"] == "http://127.0.0.1:9/"


def test_a_skip_reason_in_the_summary_is_plain_text() -> None:
    """A declined feature's reason, which the manifest writes, adds no element, link or cell to
    the Markdown summary; an ordinary reason reads as written."""
    report = _report(**{"spoof-03": "skip"})
    skipped = next(t for t in report["tests"] if t["id"] == "spoof-03")
    skipped["reason"] = "no <img src=x> here | [link](http://x)"
    text = reports.summary(report)
    assert "no \\<img src=x\\> here \\| \\[link\\](http://x)" in text
    assert "<img" not in text.replace("\\<img", "")
    skipped["reason"] = "reject mode not offered"  # control
    assert "- `spoof-03`: reject mode not offered" in reports.summary(report)


@pytest.mark.parametrize(
    ("changes", "message", "color"),
    [
        ({}, WITH_TESTS[-1], "brightgreen"),
        ({"spoof-03": "skip"}, f"{WITH_TESTS[-1]} (declined: spoof-reject)", "yellow"),
        ({"leak-04": "skip"}, "L1", "yellow"),
        ({"contract-02": "error"}, "no level | 1 failing", "red"),
        ({"backup-01": "fail", "backup-02": "error"}, "L2 | 2 failing", "red"),
    ],
)
def test_the_badge_shows_the_level_earned_and_failures(
    changes: dict[str, str], message: str, color: str
) -> None:
    badge = reports.badge(_report(**changes))
    assert badge == {"schemaVersion": 1, "label": "kbconform", "message": message, "color": color}


def test_the_summary_lists_failing_and_skipped_tests() -> None:
    text = reports.summary(_report(**{"backup-01": "fail"}))
    assert "highest level earned **L2**" in text
    assert "### Failing\n\n- `backup-01` (fail)" in text
    assert "| L3 | backup | " in text
    assert "Skipped" not in text


def test_the_summary_and_badge_name_only_levels_the_run_has_catalogue_tests_at() -> None:
    """A run up to L1 names L0 and L1 only, and a report claiming L4 in its levels earns no more
    than its tests give; a run up to L4 names every level (control)."""
    low = _report(level="L1")
    assert "Levels: L0 earned, L1 earned." in reports.summary(low)
    assert reports.badge(low)["message"] == "L1"
    tampered = copy.deepcopy(low)
    tampered["levels"]["L4"]["earned"] = True  # a level with no test in this run
    assert reports.earned(tampered) == "L1"
    assert reports.badge(tampered)["message"] == "L1"
    assert "L4" not in reports.summary(tampered)
    every = ", ".join(f"{level} earned" for level in WITH_TESTS)
    assert f"Levels: {every}." in reports.summary(_report())
    assert "levels: L0 contract (invalid input refused); L1 write isolation; L2 " in reports.level_line(
        _report()
    )


def test_a_level_without_catalogue_tests_is_never_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no L3 test in the catalogue (as a profile may have), the summary, the badge and the
    level line never name L3; with the shipped catalogue they do (control)."""
    assert "L3 earned" in reports.summary(_report())
    assert "L3 lifecycle" in reports.level_line(_report())
    without = tuple(entry for entry in reports.catalogue() if entry["level"] != "L3")
    monkeypatch.setattr(reports._catalogue, "catalogue", lambda: without)  # where expected() finds it
    report = _report()
    assert "L3" not in reports.summary(report)
    assert "L3" not in reports.level_line(report)
    assert reports.catalogued_levels(report) == tuple(level for level in WITH_TESTS if level != "L3")
    assert reports.badge(report)["message"] == "L4"


def test_a_levels_problem_says_what_the_tests_give_and_what_the_report_claims() -> None:
    """Counts changed without changing what is earned: the problem shows that level both ways,
    differently, so expected never reads as equal to got; an untouched report passes (control)."""
    report = _report()
    reports.verify(copy.deepcopy(report))
    report["levels"]["L3"]["pass"] += 1
    with pytest.raises(ContractViolation) as raised:
        reports.verify(report)
    [problem] = [p for p in raised.value.problems if p.pointer == "/levels"]
    passed = report["levels"]["L3"]["pass"]
    assert problem.expected.startswith(f"the verdicts its tests give: L3 earned (pass {passed - 1}, fail 0")
    assert problem.got.startswith(f"the report claims: L3 earned (pass {passed}, fail 0")
    assert "L2" not in problem.expected + problem.got
    assert problem.expected.split(": ", 1)[1] != problem.got.split(": ", 1)[1]


def test_kbconform_verify_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad, junk = tmp_path / "good.json", tmp_path / "bad.json", tmp_path / "junk.json"
    report = _report()
    good.write_text(json.dumps(report), encoding="utf-8")
    report["tests"] = report["tests"][1:]
    bad.write_text(json.dumps(report), encoding="utf-8")
    junk.write_text("{not json", encoding="utf-8")
    assert main(["verify", str(good)]) == 0
    assert "valid" in capsys.readouterr().out
    assert main(["verify", str(bad)]) == 1
    assert "KB_REPORT_INVALID: rejected" in capsys.readouterr().err
    assert main(["verify", str(junk)]) == 1
    assert "not JSON" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "absent.json")]) == 2


@pytest.mark.parametrize("output", ["--summary", "--html"])
def test_kbconform_run_refuses_an_output_path_it_cannot_write_before_running(
    output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--adapter", "nowhere:nothing", output, str(tmp_path / "no" / "out")])
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


# -- partial runs (a selection of tests) ------------------------------------------------------


def _partial(selection: list[str], **changes: str) -> dict[str, Any]:
    results = [
        {**entry, "status": changes.get(entry["id"], "pass")}
        for entry in reports.expected(TINY_MANIFEST, "L4", selection)
    ]
    return _build(results, execution={**EXECUTION, "selection": selection})


def test_a_partial_report_is_complete_against_its_selection_and_earns_no_level() -> None:
    """Only the selected tests (that the manifest selects) are expected; a partial run of passing
    tests verifies and earns nothing; a full run records a null selection (control)."""
    report = _partial(["leak-04", "contract-01", "leak-01[count]"])
    assert [t["id"] for t in report["tests"]] == ["contract-01", "leak-04"]  # no count facade
    assert report["execution"]["selection"] == ["contract-01", "leak-01[count]", "leak-04"]
    assert report["completeness"] == {"missing": [], "unknown": []}
    assert not any(verdict["earned"] for verdict in report["levels"].values())
    assert report["levels"]["L0"]["pass"] == 1
    assert is_valid(report, "report-v1")
    reports.verify(report)
    assert reports.selection(report) == ["contract-01", "leak-01[count]", "leak-04"]
    assert "partial: a run of 3 selected tests, which earns no level" in reports.table(report)
    assert "A partial run of 3 selected tests: it earns no level." in reports.summary(report)
    assert reports.badge(report)["message"] == "no level"
    assert _report()["execution"]["selection"] is None
    assert reports.selection(_report()) is None


@pytest.mark.parametrize(
    ("tamper", "expected"),
    [
        (lambda r: r["levels"]["L0"].update(earned=True), "/levels: expected the verdicts its tests give"),
        (lambda r: r["tests"].pop(0), "expected every selected test; got missing: contract-01"),
        (
            lambda r: r["tests"].append({**r["tests"][0], "id": "leak-02", "suite": "cross-tenant-leak"}),
            "of those selected; got unknown: leak-02",
        ),
        (
            lambda r: r["execution"].update(selection=["contract-01", "leak-04", "leak-99"]),
            "/execution/selection: expected a selection of tests the suite lists; got unknown: leak-99",
        ),
        (lambda r: r["execution"].update(selection=None), "expected every test of the suite; got missing"),
    ],
    ids=[
        "a level claimed",
        "a selected test dropped",
        "a test beyond the selection",
        "an unknown id",
        "made full",
    ],
)
def test_the_verifier_rejects_a_tampered_partial_report(tamper: Any, expected: str) -> None:
    report = _partial(["contract-01", "leak-04"])
    reports.verify(copy.deepcopy(report))  # control
    tamper(report)
    assert expected in _rejection(report)


def test_kbconform_verify_says_a_report_is_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(_partial(["contract-01", "leak-04"])), encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    out = capsys.readouterr().out
    assert "valid" in out
    assert "highest level earned: none; partial: a run of 2 selected tests earns no level" in out
    path.write_text(json.dumps(_report()), encoding="utf-8")
    assert main(["verify", str(path)]) == 0
    assert "selected tests" not in capsys.readouterr().out  # control: a full run


def test_a_failing_tests_transcript_is_kept_with_the_configs_secrets_redacted() -> None:
    """A failing test's transcript is kept, its string values scrubbed of the config's secrets
    and of URL passwords, its keys and structure as they are (a secret equal to a key name
    changes no key); a passing test's transcript is dropped; the report verifies."""
    manifest = {**TINY_MANIFEST, "config": {"apiKey": "id", "url": "http://u:pw@127.0.0.1:9/"}}
    line = {
        "request": {"op": "ingest", "params": {"backend": "b1", "note": "token id here"}},
        "response": {"id": 3, "error": {"code": "KB_X", "message": "see http://u:pw@127.0.0.1:9/x"}},
    }
    results = [
        {**entry, "status": "fail" if n == 0 else "pass", "transcript": [line]}
        for n, entry in enumerate(reports.expected(manifest, "L4"))
    ]
    report = _build(results, manifest=manifest)
    kept = [test for test in report["tests"] if "transcript" in test]
    assert [test["status"] for test in kept] == ["fail"]
    (scrubbed,) = kept[0]["transcript"]
    assert scrubbed["request"]["params"] == {"backend": "b1", "note": "token [redacted] here"}
    assert scrubbed["response"]["id"] == 3
    assert scrubbed["response"]["error"]["message"] == "see http://u:[redacted]@127.0.0.1:9/x"
    reports.verify(report)


def test_the_level_line_says_what_each_level_of_the_runs_profile_asks() -> None:
    """A project-pool run's level line speaks of sessions and memberships, a kb-grant run's of
    owners and stores, neither of the tenant-namespace words (control: a tenant-namespace run's
    line has them)."""
    words = "L1 write isolation"
    assert words in reports.level_line(_report())
    for manifest, said in (
        (pool_adapter.MANIFEST, "L2 membership isolation"),
        (grant_adapter.MANIFEST, "L1 ownership and grants"),
    ):
        results = [{**entry, "status": "pass"} for entry in reports.expected(manifest, "L4")]
        line = reports.level_line(_build(results, manifest=manifest))
        assert said in line
        assert words not in line


def test_a_report_record_reads_the_mapping_it_was_built_from() -> None:
    """Report names the mapping's fields and computes its verdicts from the test statuses, as
    the functions over the mapping do; a failing test shows in both (control)."""
    for data in (_report(), _report("fail")):
        record = reports.Report.from_mapping(data)
        assert (record.seed, record.level, record.profile) == (data["seed"], data["level"], data["profile"])
        assert record.tests == tuple(data["tests"])
        assert record.earned == reports.earned(data)
        assert record.failing == reports.failing(data)
        assert reports.Report.of(record) is record
    assert reports.Report.from_mapping(_report("fail")).failing != []


def test_every_writer_writes_its_format_from_the_report(tmp_path: Path) -> None:
    """Each output of kbconform run is one writer, offered as an option of run: the file it
    writes is its rendering of the report; JUnit XML alone is written by pytest (control: it
    writes nothing itself, and only it asks pytest for arguments)."""
    from kbconform.cli.writers import WRITERS, Finished
    from kbconform.cli.writers._html import render
    from kbconform.cli.writers._sarif import sarif

    data = _report("fail")
    record = reports.Report.from_mapping(data)
    expected = {
        "--report": json.dumps(data, indent=2) + "\n",
        "--summary": reports.summary(data),
        "--badge": json.dumps(reports.badge(data)) + "\n",
        "--html": render(data),
        "--sarif": json.dumps(sarif(data), indent=2) + "\n",
    }
    for writer in WRITERS:
        path = tmp_path / writer.option.lstrip("-")
        writer.write(str(path), Finished(record))
        assert (path.read_text(encoding="utf-8") if path.exists() else None) == expected.get(writer.option)
        assert bool(writer.pytest_arguments(str(path))) == (writer.option == "--junitxml")
    assert [writer.option for writer in WRITERS] == [
        "--report",
        "--junitxml",
        "--summary",
        "--badge",
        "--html",
        "--sarif",
    ]
