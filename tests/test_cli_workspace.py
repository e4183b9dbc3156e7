"""The workspace commands: `kbconform parse` and `kbconform golden`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
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


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_parse_does_not_block_on_a_fifo_in_the_workspace(tmp_path: Path) -> None:
    """A FIFO named *.py is skipped: the command finishes (well inside a deadline) with the real file."""
    (tmp_path / "real.py").write_text("x = 1\n", encoding="utf-8")
    os.mkfifo(tmp_path / "pipe.py")
    command = [
        sys.executable,
        "-m",
        "kbconform.cli",
        "parse",
        str(tmp_path),
        "--tenant",
        "acme",
        "--repo",
        "r",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["sourcePath"] for line in done.stdout.splitlines()] == ["real.py"]


def test_parse_refuses_a_file_over_the_configured_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """max_file_bytes in kbconform.toml: one byte over is exit 1 naming the file and the limit."""
    (tmp_path / "notes.md").write_text("# N\n" + "x" * 60, encoding="utf-8")
    config = tmp_path / "kbconform.toml"
    config.write_text("max_file_bytes = 64\n", encoding="utf-8")
    assert (
        _run(capsys, "parse", str(tmp_path), "--tenant", "a", "--repo", "r", "--config", str(config))[0] == 0
    )
    (tmp_path / "notes.md").write_text("# N\n" + "x" * 61, encoding="utf-8")
    code, out, err = _run(
        capsys, "parse", str(tmp_path), "--tenant", "a", "--repo", "r", "--config", str(config)
    )
    assert (code, out) == (1, "")
    assert "notes.md: expected a file of at most 64 bytes" in err
