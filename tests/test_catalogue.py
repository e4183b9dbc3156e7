"""suites/catalogue.json is the suites' own declarations, never a run's outcome."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kbconform import report as reports
from kbconform import runner
from kbconform._resources import data_dir
from tests.plugin import inprocess

pytest_plugins = ["pytester"]

SHIPPED = data_dir("suites") / "catalogue.json"
ROOT = Path(__file__).resolve().parents[1]


def test_the_shipped_catalogue_is_what_the_suites_declare() -> None:
    """Collected (not run) against each built-in profile's maximal manifest, the suites' marks
    and parameters give exactly the shipped catalogue; with KBCONFORM_UPDATE_CATALOGUE=1 the
    catalogue is rewritten from them first (review the diff). Each profile has entries, and the
    tenant-namespace ones carry both spoof modes and every read facade (the maximal manifest)."""
    catalogue = runner.declared_catalogue()
    declared = reports.render_catalogue(catalogue)
    if os.environ.get("KBCONFORM_UPDATE_CATALOGUE") == "1":
        SHIPPED.write_text(declared, encoding="utf-8")
    assert declared == SHIPPED.read_text(encoding="utf-8"), (
        "the suites' declarations and suites/catalogue.json differ; rewrite it with "
        "KBCONFORM_UPDATE_CATALOGUE=1 python -m pytest tests/test_catalogue.py and review the diff"
    )
    tests = catalogue["tests"]
    assert {entry.get("profile", "tenant-namespace") for entry in tests} == {
        "tenant-namespace", "project-pool", "kb-grant", "memory-scope", "store-tenancy"
    }  # fmt: skip
    tenant = [entry for entry in tests if "profile" not in entry]
    assert {entry["spoofMode"] for entry in tenant if "spoofMode" in entry} == {"overwrite", "reject"}
    assert {entry["facade"] for entry in tenant if "facade" in entry} == {
        "query",
        "get",
        "list",
        "count",
        "ask",
    }


def test_catalogue_mode_runs_no_backend(pytester: pytest.Pytester) -> None:
    """--kbconform-catalogue with an adapter is a usage error; for a profile not
    registered, too. Alone it writes the list and runs no test (the control: the list has entries)."""
    pytester.makeini("[pytest]\n")
    both = inprocess.run(pytester, "--kbconform-catalogue=c.json", "--kbconform-adapter=a:b")
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    assert "runs no backend" in both.stderr.str()
    unknown = inprocess.run(pytester, "--kbconform-catalogue=c.json", "--kbconform-catalogue-profile=notes")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR
    assert "expected a registered isolation profile" in unknown.stderr.str()
    alone = inprocess.run(pytester, "--kbconform-catalogue=c.json", "--kbconform-catalogue-profile=kb-grant")
    assert " passed" not in alone.stdout.str()
    listed = (pytester.path / "c.json").read_text(encoding="utf-8")
    assert '"grant-01"' in listed
    assert '"leak-01' not in listed


def _sections(text: str) -> dict[str, str]:
    """A Markdown document's sections by anchor (as GitHub makes a heading's anchor: lower
    case, punctuation dropped, spaces as hyphens), each with its text up to the next heading;
    lines inside fenced code are text, never headings. A rule of its own (a bullet or a table
    row opening with ``<a id="m1"></a>``) is an anchor too, its text that bullet or row."""
    found: dict[str, str] = {}
    anchor, fenced, owns = "", False, []
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            anchor = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            found.setdefault(anchor, "")
            continue
        if not fenced and not line.startswith("  "):  # a bullet's continuation keeps its anchors
            owns = re.findall(r'<a id="([\w-]+)"></a>', line)
        for own in owns:
            found[own] = found.get(own, "") + line + "\n"
        found[anchor] = found.get(anchor, "") + line + "\n"
    return found


def _unresolved(tests: list[dict[str, object]], specs: dict[str, str], guide: str) -> list[str]:
    """Each entry whose rule is not a section of a spec document, or whose guide anchor is not
    a section of the guide that names the test."""
    documents = {name: _sections(text) for name, text in specs.items()}
    sections = _sections(guide)
    problems = []
    for entry in tests:
        stable, base = str(entry["id"]), str(entry["id"]).split("[")[0]
        document, _, anchor = str(entry.get("rule", "")).partition("#")
        text = documents.get(document, {}).get(anchor)
        if text is None:
            problems.append(f"{stable}: rule {entry.get('rule')!r} is no section of schemas/")
        elif re.fullmatch(r"[a-z]\d+", anchor) and not re.search(rf"\b{re.escape(base)}\b", text):
            problems.append(f"{stable}: rule {entry.get('rule')!r} does not name {base}")
        if not re.search(rf"\b{re.escape(base)}\b", sections.get(str(entry.get("guide")), "")):
            problems.append(f"{stable}: guide #{entry.get('guide')} is no section of the guide naming {base}")
    return problems


def test_every_test_names_the_spec_section_of_its_rule_and_the_guide_section_that_asks_it() -> None:
    """Each built-in test's rule is a section of a spec document in schemas/ (DOC.md#anchor),
    and its guide anchor a section of docs/adapter-guide.md that names the test; a rule or an
    anchor broken is found (control)."""
    specs = {path.name: path.read_text(encoding="utf-8") for path in data_dir("schemas").glob("*.md")}
    guide = (ROOT / "docs" / "adapter-guide.md").read_text(encoding="utf-8")
    tests = reports.catalogue()
    assert _unresolved(list(tests), specs, guide) == []
    entry = dict(next(test for test in tests if test["id"].startswith("leak-01")))
    broken = [
        {**entry, "rule": "read-filter.md#no-such-section"},
        {**entry, "rule": "no-such-doc.md#the-filter"},
        {**entry, "guide": "the-manifest"},  # a section of the guide that does not name leak-01
        {key: value for key, value in entry.items() if key != "rule"},
    ]
    assert len(_unresolved(broken, specs, guide)) == 4
    own = dict(next(test for test in tests if test["id"].startswith("mem-01")))
    assert own["rule"] == "memory-scope.md#m2"
    assert _unresolved([own], specs, guide) == []
    # a rule of its own that does not name the test (M1 names mem-02), and one that is not there
    assert (
        len(
            _unresolved(
                [{**own, "rule": "memory-scope.md#m1"}, {**own, "rule": "memory-scope.md#m99"}], specs, guide
            )
        )
        == 2
    )


#: The tests that link to a profile's rules section though each of its rules has an anchor: each
#: is a program of calls (or a state machine) held to the policy model, so to every rule, after
#: each step (the catalogue's description says so).
PROGRAMS = frozenset({"mem-11", "mem-12", "grant-13", "grant-14", "pool-08", "pool-09"})


def _whole_sections(tests: list[dict[str, object]], specs: dict[str, str]) -> set[str]:
    """The tests that link to a section of a spec document whose rules have anchors of their own
    (``<a id="m1"></a>``), not to one of those anchors."""
    own = {name: set(re.findall(r'<a id="([\w-]+)"></a>', text)) for name, text in specs.items()}
    found = set()
    for entry in tests:
        document, _, anchor = str(entry.get("rule", "")).partition("#")
        if own.get(document) and anchor not in own[document]:
            found.add(str(entry["id"]))
    return found


def test_every_shared_test_links_to_its_profiles_own_rule_and_only_programs_to_the_rules() -> None:
    """Each test of a profile whose spec gives each rule an anchor links to one of those anchors
    (a shared test such as iso-01 to its profile's own rule: ``Profile.rules``), but a program over
    every rule (:data:`PROGRAMS`), which links to the rules section; the catalogue's description
    says so. A shared test linking to the rules section is found (control)."""
    specs = {path.name: path.read_text(encoding="utf-8") for path in data_dir("schemas").glob("*.md")}
    tests = [dict(test) for test in reports.catalogue()]
    assert {test.split("[")[0] for test in _whole_sections(tests, specs)} == PROGRAMS
    assert (
        "a program of calls held to every rule"
        in json.loads(SHIPPED.read_text(encoding="utf-8"))["description"]
    )
    shared = {test["id"]: test["rule"] for test in tests if test["id"].startswith("iso-")}
    assert shared["iso-01[search-memories]"] == "memory-scope.md#m3"
    assert shared["iso-02[search-kbs]"] == "kb-grant.md#g2"
    assert shared["iso-01[get-records]"] != shared["iso-01[list-collections]"]  # S3 and S5
    section = next(test for test in tests if test["id"] == "iso-01[search-memories]")
    assert _whole_sections([{**section, "rule": "memory-scope.md#the-rules"}], specs) == {
        "iso-01[search-memories]"
    }


def _prefixes(tests: list[dict[str, object]]) -> dict[str, set[str]]:
    """Each suite's test id prefixes (``sync`` of ``sync-01[...]``)."""
    found: dict[str, set[str]] = {}
    for entry in tests:
        found.setdefault(str(entry["suite"]), set()).add(str(entry["id"]).split("[")[0].rsplit("-", 1)[0])
    return found


def test_each_suite_is_one_family_of_test_ids() -> None:
    """A suite's name says what its tests check: each suite holds one id family (``sync-*`` is
    the sync suite, never a part of maintenance), and no family spans two suites; a sync test
    filed under maintenance is found (control)."""
    tests = [dict(test) for test in reports.catalogue()]
    prefixes = _prefixes(tests)
    assert {suite: found for suite, found in prefixes.items() if len(found) != 1} == {}
    owners = [prefix for found in prefixes.values() for prefix in found]
    assert len(owners) == len(set(owners))
    assert prefixes["sync"] == {"sync"}
    misfiled = [{**test, "suite": "maintenance"} if test["id"] == "sync-01" else test for test in tests]
    assert _prefixes(misfiled)["maintenance"] == {"maint", "sync"}
