"""The byte-equivalence fixture: the registry's output over the shipped workspaces, byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import rfc8785

from kbconform.contract import is_valid
from kbconform.identity import kbconform_v1_id, legacy_id
from kbconform.workspace import golden, load_config

FIXTURES = {fixture.name: fixture for fixture in golden.fixtures()}
DEFAULT_CLASSES = {
    "custom_sources": [
        "kbconform.sources:DecisionRecordsSource",
        "kbconform.sources:MarkdownDocsSource",
        "kbconform.sources:PythonModulesSource",
    ],
    "custom_parsers": [
        "kbconform.sources:DecisionRecordParser",
        "kbconform.sources:MarkdownSectionsParser",
        "kbconform.sources:PythonAstParser",
    ],
}


def golden_lines(name: str) -> list[dict]:
    return [json.loads(line) for line in FIXTURES[name].golden.read_bytes().splitlines()]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_a_fresh_scan_reproduces_the_golden_file_byte_for_byte(name: str) -> None:
    """Regenerating the fixture gives exactly the committed bytes; a failure shows a record diff."""
    fixture = FIXTURES[name]
    expected, generated = fixture.golden.read_bytes(), fixture.generate()
    assert expected == generated, golden.diff(expected, generated, name=fixture.golden.name)


def test_the_mini_workspace_exercises_every_default_source_and_kind() -> None:
    """The golden corpus is not trivially small: every default parser and chunk kind appears."""
    records = [line["record"] for line in golden_lines("mini")]
    assert {r["parserId"] for r in records} == {"decision-record", "markdown-sections", "python-ast"}
    assert {r["kind"] for r in records} == {
        "decision-record",
        "doc-section",
        "module",
        "class",
        "function",
        "method",
    }
    custom = [line["record"] for line in golden_lines("custom")]
    assert {r["parserId"] for r in custom} == {"glossary", "markdown-sections", "python-ast"}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_golden_line_is_canonical_valid_and_uniquely_identified(name: str) -> None:
    """Each line is RFC 8785 JSON of a valid parsed-chunk-v1 record with ids unique per profile."""
    raw = FIXTURES[name].golden.read_bytes()
    assert raw.endswith(b"\n")
    lines = raw.splitlines()
    assert len(lines) > 3
    for line in lines:
        value = json.loads(line)
        assert rfc8785.dumps(value) == line
        assert is_valid(value["record"], "parsed-chunk-v1")
    for profile in ("kbconform-v1", "neo-compat"):
        ids = [json.loads(line)["ids"][profile] for line in lines]
        assert len(set(ids)) == len(ids)


def test_the_explicit_default_list_produces_exactly_the_default_bytes() -> None:
    """Registering the defaults by hand equals use_default_*; a different order does not (control)."""
    fixture = FIXTURES["mini"]
    explicit = load_config({"use_default_sources": False, "use_default_parsers": False, **DEFAULT_CLASSES})
    assert explicit.registry.source_names() == load_config({}).registry.source_names()
    assert fixture.generate(explicit) == fixture.golden.read_bytes()

    sources = DEFAULT_CLASSES["custom_sources"]
    reordered = load_config(
        {
            "use_default_sources": False,
            "custom_sources": [sources[1], sources[0], sources[2]],
        }
    )
    different = fixture.generate(reordered)
    assert different != fixture.golden.read_bytes()
    assert b'"kind":"decision-record"' not in different  # the Markdown source took the ADRs


def test_the_default_namespace_keeps_legacy_ids_and_no_other_namespace_reaches_them() -> None:
    """Over the golden corpus: neo-shared/neo ids are the legacy ids; every tenant's ids differ."""
    records = [line["record"] for line in golden_lines("mini") + golden_lines("custom")]
    legacy = {legacy_id(record) for record in records}
    assert len(legacy) == len(records)
    assert {kbconform_v1_id(record, "neo-shared", "neo") for record in records} == legacy
    for tenant, repo in [("acme", "acme/mini"), ("neo-shared", "other"), ("neo", "neo"), ("beta", "neo")]:
        tenant_ids = {kbconform_v1_id(record, tenant, repo) for record in records}
        assert len(tenant_ids) == len(records)
        assert tenant_ids.isdisjoint(legacy)
    acme = {kbconform_v1_id(record, "acme", "acme/mini") for record in records}
    beta = {kbconform_v1_id(record, "beta", "acme/mini") for record in records}
    assert acme.isdisjoint(beta)


def test_the_scan_does_not_depend_on_where_the_workspace_lives(tmp_path: Path) -> None:
    """A copy elsewhere (files written in another order) gives the same bytes."""
    fixture = FIXTURES["mini"]
    copy = tmp_path / "elsewhere"
    files = sorted(p for p in fixture.directory.rglob("*") if p.is_file())
    for path in reversed(files):
        target = copy / path.relative_to(fixture.directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    moved = golden.Fixture(**{**_fields(fixture), "directory": copy})
    assert moved.generate() == fixture.golden.read_bytes()


def _fields(fixture: golden.Fixture) -> dict:
    return {name: getattr(fixture, name) for name in golden.Fixture.__dataclass_fields__}


def test_the_diff_shows_the_first_differing_records_and_is_empty_when_equal() -> None:
    """The failure message is a unified diff of pretty-printed records, limited in length."""
    expected = FIXTURES["mini"].golden.read_bytes()
    assert golden.diff(expected, expected) == ""
    lines = expected.splitlines(keepends=True)
    changed = [json.loads(line) for line in lines]
    for index in (2, 5, 7, 9):
        changed[index]["record"]["name"] = f"changed {index}"
    actual = b"".join(rfc8785.dumps(value) + b"\n" for value in changed)
    shown = golden.diff(expected, actual, limit=2)
    assert "(line 1)" not in shown
    assert "(line 3)" in shown
    assert '+    "name": "changed 2"' in shown
    assert '"changed 7"' not in shown
    assert "more differing line(s)" in shown
    assert golden.diff(expected, expected + b"{}\n").count("+{}") == 1
    spaced = expected.replace(b'{"ids":{', b'{"ids": {', 1)
    assert '+{"ids": {' in golden.diff(expected, spaced)  # same JSON, other bytes: raw lines shown


def test_golden_files_change_only_through_update(tmp_path: Path) -> None:
    """check never writes; update rewrites a stale file whole, then reports it unchanged."""
    base = tmp_path / "workspaces"
    shutil.copytree(FIXTURES["mini"].golden.parent, base)
    fixture = next(f for f in golden.fixtures(base) if f.name == "mini")
    original = fixture.golden.read_bytes()
    fixture.golden.write_bytes(original[: len(original) // 2])
    assert golden.check(fixture) != ""
    assert fixture.golden.read_bytes() == original[: len(original) // 2]
    assert golden.update(fixture) is True
    assert fixture.golden.read_bytes() == original
    assert golden.update(fixture) is False
    assert golden.check(fixture) == ""
    assert not list(base.glob("*.partial"))
