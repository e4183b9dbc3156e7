"""The command line: exit codes, output formats, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbconform.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Two valid example records, then the spoofed one with three problems."""
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        (EXAMPLES / "chunks.jsonl").read_text(encoding="utf-8")
        + (EXAMPLES / "spoofed-chunk.jsonl").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    return path


def test_validate_reports_each_problem_with_line_and_pointer(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each problem is one LINE:POINTER line; the summary counts records and invalid ones."""
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(mixed))
    lines = out.splitlines()
    assert code == 1
    assert [line.split(": ")[0] for line in lines[:-1]] == ["3:/embedding", "3:/sourcePath", "3:/tenantId"]
    assert "restore path" in lines[0]
    assert lines[-1] == "3 records, 1 invalid"


def test_validate_exits_zero_when_everything_is_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Positive control: the valid records pass, as JSONL and as a JSON array."""
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(EXAMPLES / "chunks.jsonl"))
    assert (code, out) == (0, "2 records, 0 invalid\n")
    records = (EXAMPLES / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    array = tmp_path / "chunks.json"
    array.write_text("[\n" + ",\n".join(records) + "\n]\n", encoding="utf-8")
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(array))
    assert (code, out) == (0, "2 records, 0 invalid\n")


def test_validate_json_format_is_machine_readable(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--format json prints one object per invalid record, then a summary object."""
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", "--format", "json", str(mixed))
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1
    assert rows[0]["line"] == 3
    assert {p["pointer"] for p in rows[0]["problems"]} == {"/embedding", "/sourcePath", "/tenantId"}
    assert rows[-1] == {"schema": "parsed-chunk-v1", "records": 3, "invalid": 1}


def test_an_unparseable_line_is_an_error_with_its_line_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Broken JSON and non-UTF-8 bytes are reported per line, never as a traceback."""
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"id": "a", "id": "b"}\n{not json\n')
    code, out, err = _run(capsys, "validate", "--schema", "backup-record-v1", str(path))
    assert code == 1
    assert out.splitlines()[0].startswith("1:: expected unique object keys")
    assert out.splitlines()[1].startswith("2:: expected JSON text")
    assert err == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["validate", "--schema", "nope", "-"], "unknown schema 'nope'"),
        (["validate", "--schema", "parsed-chunk-v1", "/no/such/file"], "cannot read"),
        (["schema", "nope"], "expected one of"),
    ],
)
def test_usage_errors_exit_two_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Usage errors are one line on stderr and exit 2."""
    code, _, err = _run(capsys, *argv)
    assert code == 2
    assert message in err


def test_schemas_lists_every_schema_and_schema_prints_one(capsys: pytest.CaptureFixture[str]) -> None:
    """`schemas` lists names and titles; `schema NAME` prints the file, `--bundled` inlines refs."""
    _, out, _ = _run(capsys, "schemas")
    assert "parsed-chunk-v1\tParsed chunk v1" in out.splitlines()
    _, out, _ = _run(capsys, "schema", "parsed-chunk-v1")
    assert json.loads(out)["$id"].endswith("parsed-chunk-v1.schema.json")
    _, out, _ = _run(capsys, "schema", "--bundled", "parsed-chunk-v1")
    assert "identity-tuple-v1" not in json.dumps(json.loads(out)["properties"])


def test_chunk_id_prints_one_id_per_valid_record(capsys: pytest.CaptureFixture[str]) -> None:
    """Ids match the library's, differ by tenant, and differ between profiles."""
    from kbconform.identity import chunk_id

    path = str(EXAMPLES / "chunks.jsonl")
    records = [
        json.loads(line) for line in (EXAMPLES / "chunks.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    code, out, _ = _run(capsys, "chunk-id", "--tenant", "acme", "--repo", "main-app", path)
    assert code == 0
    assert out.split() == [chunk_id(record, "acme", "main-app") for record in records]
    _, other, _ = _run(capsys, "chunk-id", "--tenant", "globex", "--repo", "main-app", path)
    _, neo, _ = _run(
        capsys, "chunk-id", "--profile", "neo-compat", "--tenant", "acme", "--repo", "main-app", path
    )
    assert len({out, other, neo}) == 3


def test_chunk_id_reports_invalid_records_and_bad_arguments(
    mixed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An invalid record is reported on stderr (exit 1); a bad --tenant is a usage error (exit 2)."""
    code, out, err = _run(capsys, "chunk-id", "--tenant", "acme", "--repo", "main-app", str(mixed))
    assert (code, len(out.split())) == (1, 2)
    assert err.splitlines()[-1] == "3 records, 1 invalid"
    code, _, err = _run(capsys, "chunk-id", "--tenant", "Acme", "--repo", "main-app", str(mixed))
    assert code == 2
    assert "--tenant" in err
