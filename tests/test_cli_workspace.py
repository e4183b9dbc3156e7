"""The workspace commands: `kbconform parse` and `kbconform golden`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kbconform.cli import main
from kbconform.workspace import golden

FIXTURES = {fixture.name: fixture for fixture in golden.fixtures()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _golden(name: str) -> list[dict]:
    return [json.loads(line) for line in FIXTURES[name].golden.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_parse_prints_the_golden_records_and_chunk_id_their_golden_ids(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """parse | chunk-id reproduces both halves of the golden file for each profile."""
    fixture = FIXTURES[name]
    argv = ["parse", str(fixture.directory), "--tenant", fixture.tenant_id, "--repo", fixture.repo_slug]
    if fixture.config:
        argv += ["--config", str(fixture.config)]
    code, out, err = _run(capsys, *argv)
    assert (code, err) == (0, "")
    expected = _golden(name)
    assert [json.loads(line) for line in out.splitlines()] == [line["record"] for line in expected]
    records = tmp_path / "records.jsonl"
    records.write_text(out, encoding="utf-8")
    for profile in ("kbconform-v1", "neo-compat"):
        identity = ["--tenant", fixture.tenant_id, "--repo", fixture.repo_slug]
        code, ids, _ = _run(capsys, "chunk-id", "--profile", profile, *identity, str(records))
        assert code == 0
        assert ids.splitlines() == [line["ids"][profile] for line in expected]


def test_parse_reports_a_broken_workspace_or_config_with_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 with the problem's pointer for bad content or config; exit 2 for a missing path."""
    (tmp_path / "bad.py").write_text("def (:\n", encoding="utf-8")
    code, out, err = _run(capsys, "parse", str(tmp_path), "--tenant", "acme", "--repo", "r")
    assert (code, out) == (1, "")
    assert "bad.py:1: expected Python source" in err
    config = tmp_path / "kbconform.toml"
    config.write_text('custom_sources = ["nope"]\n', encoding="utf-8")
    code, _, err = _run(
        capsys, "parse", str(tmp_path), "--tenant", "acme", "--repo", "r", "--config", str(config)
    )
    assert code == 1
    assert "/custom_sources/0: expected 'module:Class'" in err
    code, _, err = _run(capsys, "parse", str(tmp_path / "missing"), "--tenant", "acme", "--repo", "r")
    assert code == 2
    assert "not a directory" in err
    code, _, err = _run(
        capsys, "parse", str(tmp_path), "--tenant", "acme", "--repo", "r", "--config", "no.toml"
    )
    assert code == 2
    assert "cannot read config" in err


def test_golden_check_passes_on_the_shipped_fixtures_and_fails_with_a_diff_on_a_stale_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check exits 0 when every file matches, 1 with a diff when one does not; update repairs it."""
    code, out, _ = _run(capsys, "golden", "check")
    assert code == 0
    assert out.count(": ok") == len(FIXTURES)
    base = tmp_path / "workspaces"
    shutil.copytree(FIXTURES["mini"].golden.parent, base)
    stale = base / FIXTURES["mini"].golden.name
    stale.write_bytes(stale.read_bytes().replace(b'"name":"Guide"', b'"name":"Old guide"'))
    code, out, _ = _run(capsys, "golden", "check", "--dir", str(base))
    assert code == 1
    assert '-    "name": "Old guide"' in out
    assert '+    "name": "Guide"' in out
    code, out, _ = _run(capsys, "golden", "update", "--dir", str(base))
    assert code == 0
    assert f"{stale.name}: updated" in out
    assert stale.read_bytes() == FIXTURES["mini"].golden.read_bytes()
    code, _, err = _run(capsys, "golden", "check", "--dir", str(tmp_path / "nowhere"))
    assert code == 2
    assert "workspaces.json" in err
