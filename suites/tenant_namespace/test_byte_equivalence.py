"""L3 byte-equivalence: ids and parsed records equal the shipped golden fixtures, byte for byte.

The backup round trip byte for byte is ``backup-01`` (test_backup.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbconform.identity import Principal
from kbconform.workspace import golden

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)

FIXTURES = {fixture.name: fixture for fixture in golden.fixtures()}
SOURCES = ["DecisionRecordsSource", "MarkdownDocsSource", "PythonModulesSource"]
PARSERS = ["DecisionRecordParser", "MarkdownSectionsParser", "PythonAstParser"]


def _toml(sources: list[str]) -> str:
    listed = ", ".join(f'"kbconform.sources:{name}"' for name in sources)
    parsers = ", ".join(f'"kbconform.sources:{name}"' for name in PARSERS)
    return (
        "use_default_sources = false\nuse_default_parsers = false\n"
        f"custom_sources = [{listed}]\ncustom_parsers = [{parsers}]\n"
    )


def _scan(backend: Any, fixture: golden.Fixture, config: Path | None) -> bytes:
    records = backend.scan(fixture.directory, config, fixture.tenant_id, fixture.repo_slug, fixture.root_kind)
    return golden.render([dict(r) for r in records], fixture.tenant_id, fixture.repo_slug)


@pytest.mark.kbconform(
    id="bytes-01",
    rule="parsed-chunk.md#what-a-record-may-hash",
    guide="ingestprincipal-records",
    level="L3",
    requires="id-profile",
)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_ingest_ids_follow_the_declared_profile_on_the_golden_corpus(
    name: str, kbconform_run: Any, kbconform_backend: Any
) -> None:
    """Ingesting each golden record as the fixture's tenant returns exactly its golden id; the
    same records under another tenant get other ids (control: as they are where the backend
    overwrites a claimed tenant, so an id taken from the record's own tenantId shows; claiming
    the other tenant where it refuses a claim, reject mode)."""
    profile = kbconform_run.manifest.id_profile
    assert profile is not None
    fixture = FIXTURES[name]
    lines = [json.loads(line) for line in fixture.golden.read_bytes().splitlines()]
    assert lines, f"the golden fixture {name} is empty"
    records = [line["record"] for line in lines]
    ids = list(kbconform_backend.ingest(Principal(fixture.tenant_id), records).ids)
    assert ids == [line["ids"][profile] for line in lines]
    if kbconform_run.manifest.spoof_modes[:1] != ("overwrite",):  # the backend is opened refusing a claim
        records = [{**record, "tenantId": "golden-control"} for record in records]
    other = list(kbconform_backend.ingest(Principal("golden-control"), records).ids)
    assert not set(other) & set(ids)


@pytest.mark.kbconform(
    id="bytes-02",
    rule="parsed-chunk.md#the-parsed-chunk-parsed-chunk-v1",
    guide="scanroot-config-tenant_id-repo_slug-root_kind",
    level="L3",
    requires="workspace-scan",
)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_scanning_each_fixture_workspace_gives_the_golden_bytes(name: str, kbconform_backend: Any) -> None:
    """The backend's parsing of the workspace, rendered canonically, equals the golden file."""
    fixture = FIXTURES[name]
    expected = fixture.golden.read_bytes()
    actual = _scan(kbconform_backend, fixture, fixture.config)
    assert actual == expected, golden.diff(expected, actual, name=name)


@pytest.mark.kbconform(
    id="bytes-03",
    rule="parsed-chunk.md#the-parsed-chunk-parsed-chunk-v1",
    guide="scanroot-config-tenant_id-repo_slug-root_kind",
    level="L3",
    requires="workspace-scan",
)
def test_the_default_registry_equals_the_defaults_listed_explicitly(
    kbconform_backend: Any, tmp_path: Path
) -> None:
    """Listing the default sources and parsers by hand gives the default bytes; another order
    gives other bytes (control: order is observable)."""
    fixture = FIXTURES["mini"]
    expected = fixture.golden.read_bytes()
    explicit, reordered = tmp_path / "explicit.toml", tmp_path / "reordered.toml"
    explicit.write_text(_toml(SOURCES), encoding="utf-8")
    reordered.write_text(_toml([SOURCES[1], SOURCES[0], SOURCES[2]]), encoding="utf-8")
    actual = _scan(kbconform_backend, fixture, explicit)
    assert actual == expected, golden.diff(expected, actual, name="explicit defaults")
    assert _scan(kbconform_backend, fixture, None) == expected
    assert _scan(kbconform_backend, fixture, reordered) != expected
