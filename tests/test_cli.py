"""The command line: exit codes, output formats, usage errors."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kbconform import report
from kbconform.cli import UsageError, _bracketed, check_output_path, main
from kbconform.report import write

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
        (
            ["run", "--harness-url", "http://127.0.0.1:9", "--transport", "http"],
            "a --harness-url is HTTP already",
        ),
        (["run", "--harness-url", "http://127.0.0.1:9", "--adapter", "m:f"], "not two of them"),
        (["run", "--only", "delete-0[1-5]"], "KB_SELECTION_INVALID"),
        (["run", "--only", "delete-0[1-5]"], "[ is part of an id"),
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
        capsys, "chunk-id", "--id-scheme", "neo-compat", "--tenant", "acme", "--repo", "main-app", path
    )
    assert len({out, other, neo}) == 3


@pytest.mark.parametrize(
    ("command", "new", "value", "dest"),
    [
        (["run"], "--hypothesis-profile", "thorough", "hypothesis_profile"),
        (["chunk-id", "--tenant", "acme", "--repo", "main-app"], "--id-scheme", "neo-compat", "id_scheme"),
        (["new-harness", "h", "--lang", "node"], "--isolation-profile", "kb-grant", "isolation_profile"),
    ],
)
def test_each_profile_option_says_which_profile_and_keeps_its_old_spelling(
    command: list[str], new: str, value: str, dest: str
) -> None:
    """The Hypothesis profile, the id scheme and the isolation profile each have an option of
    their own name; --profile, the older spelling, sets the same value; without either the
    default stays (control)."""
    from kbconform.cli._parser import parser

    def given(*argv: str) -> object:
        return getattr(parser().parse_args([*command, *argv]), dest)

    assert given(new, value) == given("--profile", value) == value
    assert given() != value


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


# -- inputs and outputs that fail ---------------------------------------------------------------

_INVALID = {
    "schemaVersion": "1.0.0",
    "tenantId": "Upper",
    "repoSlug": "app",
    "rootKind": "bare-repo",
    "sourcePath": "a.md",
    "content": "x",
    "hashInputs": ["content"],
    "parserId": "p",
    "parserVersion": "1.0.0",
    "kind": "k",
    "name": "n",
}
_CLI = [sys.executable, "-m", "kbconform.cli"]


def _records(path: Path, count: int, record: dict[str, object] = _INVALID) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for _ in range(count)), encoding="utf-8")
    return path


def test_a_reader_that_stops_early_makes_validate_exit_141_without_a_traceback(tmp_path: Path) -> None:
    """`validate | head -1` under pipefail: a broken pipe is not success, and stderr stays clean."""
    # 1,000 invalid records print about 230 KB, more than three times a pipe's 64 KiB: the
    # pipe must break (the control's output below is measured)
    big = _records(tmp_path / "big.jsonl", 1_000)
    with subprocess.Popen(
        [*_CLI, "validate", "--schema", "parsed-chunk-v1", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        err = process.stderr.read()
        code = process.wait(timeout=120)
    assert first.startswith(b"1:/tenantId:")
    assert (code, err) == (141, b"")
    done = subprocess.run(
        [*_CLI, "validate", "--schema", "parsed-chunk-v1", str(big)], capture_output=True, check=False
    )
    assert (done.returncode, done.stderr) == (1, b"")  # the control: read to the end, exit 1
    assert len(done.stdout) > 3 * 65_536


@pytest.mark.skipif(shutil.which("bash") is None, reason="the shell pipeline needs bash")
def test_a_shell_pipeline_into_head_fails_under_pipefail(tmp_path: Path) -> None:
    """The pipeline's status is kbconform's 141 when records were invalid and the reader left."""
    big = _records(tmp_path / "big.jsonl", 5_000)
    command = " ".join([*_CLI, "validate", "--schema", "parsed-chunk-v1", str(big)])
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command} | head -1"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stderr, len(done.stdout.splitlines())) == (141, "", 1)


@pytest.mark.skipif(shutil.which("bash") is None, reason="closing standard input needs a shell")
def test_a_closed_standard_input_is_a_usage_error_not_a_traceback() -> None:
    """`validate - <&-` and `chunk-id - <&-`: one line, exit 2."""
    for argv in (
        ["validate", "--schema", "parsed-chunk-v1", "-"],
        ["chunk-id", "--tenant", "a", "--repo", "r"],
    ):
        command = " ".join([*_CLI, *argv])
        done = subprocess.run(["bash", "-c", f"{command} <&-"], capture_output=True, text=True, check=False)
        assert (done.returncode, done.stderr) == (
            2,
            "kbconform: error: cannot read standard input: it is closed\n",
        )
    done = subprocess.run(
        [*_CLI, "validate", "--schema", "parsed-chunk-v1", "-"],
        input=json.dumps(_INVALID),
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stdout.splitlines()[-1]) == (1, "1 records, 1 invalid")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this platform")
@pytest.mark.parametrize("count", [3, 5_000], ids=["buffered-to-exit", "fails-mid-way"])
def test_a_full_disk_on_standard_output_is_one_line_exit_2(tmp_path: Path, count: int) -> None:
    """Standard output on /dev/full: a one-line error, no traceback, no 'Exception ignored'."""
    path = _records(tmp_path / "records.jsonl", count)
    with Path("/dev/full").open("wb") as full:
        done = subprocess.run(
            [*_CLI, "validate", "--schema", "parsed-chunk-v1", str(path)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert (done.returncode, done.stderr) == (
        2,
        "kbconform: error: cannot write standard output: No space left on device\n",
    )


def _bad_byte_file(path: Path) -> Path:
    lines = [
        json.dumps({**_INVALID, "tenantId": "acme", "name": f"n{number}"}).encode() for number in range(3_000)
    ]
    lines[2_000] = lines[2_000].replace(b'"n2000"', b'"n\xff"')
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_a_bad_byte_is_reported_at_its_line_and_every_other_record_is_processed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Line 2,001 is not UTF-8: validate reports exactly it; chunk-id prints the 2,999 other ids."""
    path = _bad_byte_file(tmp_path / "records.jsonl")
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(path))
    assert code == 1
    assert out.splitlines() == [
        "2001:: expected UTF-8 text; got byte 0xff [encoding]",
        "3000 records, 1 invalid",
    ]
    code, out, err = _run(capsys, "chunk-id", "--tenant", "acme", "--repo", "app", str(path))
    assert (code, len(out.split()), err.splitlines()[-1]) == (1, 2_999, "3000 records, 1 invalid")
    assert err.splitlines()[0].startswith("2001::")


def test_an_input_that_is_a_directory_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory as the input file: one line, exit 2."""
    code, _, err = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(tmp_path))
    assert code == 2
    assert err == f"kbconform: error: cannot read {str(tmp_path)!r}: Is a directory\n"


def _unwritable_directory(tmp_path: Path) -> Path:
    """A directory no file can be created in, even by root (who ignores permissions)."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        return locked
    try:
        with tempfile.TemporaryFile(dir="/sys"):
            pass
    except OSError:
        return Path("/sys")
    pytest.skip("running as root with no read-only directory to test against")


def test_check_output_path_refuses_what_cannot_be_written(tmp_path: Path) -> None:
    """A directory, a missing directory and an unwritable one are refused with a reason."""
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    refused = {
        str(tmp_path): "it is a directory",
        str(tmp_path / "missing" / "out.json"): "does not exist",
        str(tmp_path / "a-file" / "out.json"): "does not exist",
        str(_unwritable_directory(tmp_path) / "out.json"): "cannot write",
    }
    for path, reason in refused.items():
        with pytest.raises(UsageError, match=reason):
            check_output_path(path)


def test_check_output_path_accepts_new_and_existing_files_and_links(tmp_path: Path) -> None:
    """Positive control: a new file, an existing one, and a symbolic link to a writable place."""
    (tmp_path / "old.json").write_text("{}", encoding="utf-8")
    (tmp_path / "link.json").symlink_to(tmp_path / "old.json")
    for name in ("new.json", "old.json", "link.json"):
        assert check_output_path(tmp_path / name) is None
    assert sorted(path.name for path in tmp_path.iterdir()) == ["link.json", "old.json"]


def test_write_replaces_the_target_whole_and_keeps_its_permissions(tmp_path: Path) -> None:
    """The text lands whole; an existing file keeps its mode; no temporary file is left."""
    target = tmp_path / "report.json"
    write(target, "first\n")
    target.chmod(0o640)
    write(target, "second\n")
    assert target.read_text(encoding="utf-8") == "second\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [path.name for path in tmp_path.iterdir()] == ["report.json"]


def test_write_through_a_symbolic_link_writes_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    """$GITHUB_STEP_SUMMARY may be a link: the file it points to is replaced, beside itself."""
    real = tmp_path / "real" / "summary.md"
    real.parent.mkdir()
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "summary.md"
    link.symlink_to(real)
    write(link, "new\n")
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "new\n"
    assert sorted(path.name for path in real.parent.iterdir()) == ["summary.md"]


def test_a_failed_write_removes_its_temporary_file_and_leaves_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure before the rename (here: the disk refusing to sync) changes nothing and says so."""
    target = tmp_path / "report.json"
    target.write_text("before\n", encoding="utf-8")

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left") as caught:
        write(target, "after\n")
    assert caught.value.filename == str(target)
    assert target.read_text(encoding="utf-8") == "before\n"
    assert [path.name for path in tmp_path.iterdir()] == ["report.json"]


def test_write_refuses_a_directory_a_missing_directory_and_an_unwritable_place(tmp_path: Path) -> None:
    """Each is an OSError subclass naming the path, with nothing left behind."""
    with pytest.raises(IsADirectoryError):
        write(tmp_path, "x")
    with pytest.raises(FileNotFoundError) as caught:
        write(tmp_path / "missing" / "out.json", "x")
    assert caught.value.filename == str(tmp_path / "missing" / "out.json")
    with pytest.raises(OSError, match=r"out\.json"):
        write(_unwritable_directory(tmp_path) / "out.json", "x")
    assert [path.name for path in tmp_path.iterdir() if path.name != "locked"] == []


# -- verify reads reports strictly --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"seed": 1, "seed": 2}', "duplicate-key"),
        ('{"seed": NaN}', "number"),
        ('{"seed": 1e400}', "number"),
        ('{"note": "\\ud800"}', "string"),
        ('{"seed": ' + "7" * 4_000 + "}", "number"),
        ('{"deep": ' + "[" * 300 + "]" * 300 + "}", "depth"),
    ],
    ids=["duplicate-key", "NaN", "1e400", "lone-surrogate", "4000-digits", "300-levels"],
)
def test_verify_reads_a_report_strictly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    """What plain json.load accepts but no report holds is KB_REPORT_INVALID, exit 1."""
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    code, _, err = _run(capsys, "verify", str(path))
    assert code == 1
    assert "KB_REPORT_INVALID: not JSON" in err
    assert f"[{problem}]" in err
    path.write_text('{"seed": 1}', encoding="utf-8")
    code, _, err = _run(capsys, "verify", str(path))
    assert code == 1
    assert "not JSON" not in err  # the control: read fine, then rejected as a report


def test_verify_refuses_a_report_over_the_size_limit_without_reading_it_whole(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A file or a stream is read for at most the limit and one byte."""
    monkeypatch.setattr(report._files, "MAX_REPORT_BYTES", 1_000)  # read() looks it up there
    path = tmp_path / "big.json"
    path.write_text('{"pad": "' + "x" * 5_000 + '"}', encoding="utf-8")
    code, _, err = _run(capsys, "verify", str(path))
    assert code == 1
    assert "expected a report of at most 1000 bytes" in err

    class Counting(io.BytesIO):
        consumed = 0

        def read(self, size: int | None = -1) -> bytes:
            chunk = super().read(size)
            Counting.consumed += len(chunk)
            return chunk

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Counting(path.read_bytes())))
    code, _, err = _run(capsys, "verify", "-")
    assert (code, Counting.consumed) == (1, 1_001)
    assert "expected a report of at most 1000 bytes" in err
    path.write_text('{"pad": 1}', encoding="utf-8")
    assert "at most 1000 bytes" not in _run(capsys, "verify", str(path))[2]


def test_a_deeply_nested_line_is_a_depth_error_for_validate_and_chunk_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 4 KB line of 2,000 nested arrays is one invalid record (never a RecursionError); the next reads."""
    good = {**_INVALID, "tenantId": "acme"}
    path = tmp_path / "deep.jsonl"
    deep = '{"customMeta": ' + "[" * 2_000 + "]" * 2_000 + "}"
    path.write_text(f"{deep}\n{json.dumps(good)}\n", encoding="utf-8")
    code, out, _ = _run(capsys, "validate", "--schema", "parsed-chunk-v1", str(path))
    assert (code, out.splitlines()[-1]) == (1, "2 records, 1 invalid")
    assert out.startswith("1:: expected at most 256 nested arrays and objects; got deeper nesting [depth]")
    code, out, err = _run(capsys, "chunk-id", "--tenant", "acme", "--repo", "app", str(path))
    assert (code, len(out.split())) == (1, 1)
    assert err.startswith("1:: expected at most 256")


def _reading_stdin(pid: int) -> bool:
    """The process's main thread is blocked reading its standard input, a pipe: the kernel's
    wait channel names a pipe read, or the system call in progress is read(0, ...) (x86-64)."""
    process = Path(f"/proc/{pid}")
    try:
        wchan = (process / "wchan").read_text(encoding="utf-8")
        syscall = (process / "syscall").read_text(encoding="utf-8").split()
    except OSError:
        return False
    return "pipe" in wchan or syscall[:2] == ["0", "0x0"]


@pytest.mark.skipif(not Path("/proc/self/syscall").exists(), reason="reads process state from /proc")
def test_ctrl_c_while_reading_is_exit_130_without_a_traceback() -> None:
    """SIGINT to a command waiting on its input ends it with 130 and one line, as a shell reports."""
    import signal
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "kbconform.cli", "validate", "--schema", "parsed-chunk-v1", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write('{"schemaVersion": "1.0.0"}\n')
    process.stdin.flush()
    deadline = time.monotonic() + 60
    while not _reading_stdin(process.pid) and time.monotonic() < deadline:  # imports done
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, (out, err)
    assert err == "kbconform: error: interrupted\n"


def test_the_help_leads_with_run_as_the_main_job(capsys: pytest.CaptureFixture[str]) -> None:
    """``kbconform --help`` names run as the main job and lists it first, new-adapter second;
    the record commands come after (control: they are listed)."""
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "The main job is 'kbconform run'" in " ".join(out.split())
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed[:2] == ["run", "new-adapter"]
    assert "validate" in listed


@pytest.mark.slow
def test_a_run_ends_saying_what_the_levels_mean_and_after_the_reference_how_to_test_ones_own(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the verdict: one line on the run's levels; after a run of the default adapter (the
    reference) one more on new-adapter, --adapter, --harness and the guide, which a run of a
    named adapter does not print (control)."""
    from kbconform import runner

    memory = "kbconform_reference.adapter:memory"
    monkeypatch.setattr(runner, "DEFAULT_ADAPTER", memory)
    code, out, _ = _run(capsys, "run", "--level", "L0", "--seed", "3")
    assert code == 0, out[-2000:]
    tail = out.splitlines()[-3:]
    assert tail[0].startswith("every test passed or was declined; highest level earned: L0")
    earning = "A level is earned when every test in it and below passes; a capability"
    assert tail[1].startswith(f"levels: L0 contract (invalid input refused). {earning}")
    assert tail[1].endswith("never caps it (but fault-injection, without which a rule cannot be observed).")
    taught = ("kbconform new-adapter NAME", "--adapter module:factory", "--harness CMD", "adapter-guide.md")
    assert all(part in tail[2] for part in taught), tail[2]
    monkeypatch.undo()  # the default is the reference on Chroma again: memory is a named adapter
    code, out, _ = _run(capsys, "run", "--adapter", memory, "--level", "L0", "--seed", "3")
    assert code == 0
    assert out.splitlines()[-1].startswith("levels: L0 contract")
    assert "new-adapter" not in out


def test_an_adapter_module_that_cannot_be_imported_is_named_with_where_it_was_looked_for(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kbconform run looks for the module in the directory it was started in (not the run's own
    temporary one) and says so, with the hint; a module there is found (control)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capfd, "run", "--adapter", "beside_me:make", "--level", "L0")
    assert code == 2
    said = " ".join((out + err).split())
    assert f"expected an importable module 'beside_me', looked for in {tmp_path} and then sys.path" in said
    assert "pip install -e ." in said
    (tmp_path / "beside_me.py").write_text(
        "from kbconform_reference.adapter import memory\n\n\ndef make():\n    return memory()\n",
        encoding="utf-8",
    )
    code, out, err = _run(capfd, "run", "--adapter", "beside_me:make", "--level", "L0", "--seed", "3")
    assert code == 0, out[-2000:] + err[-2000:]


@pytest.mark.parametrize(
    ("typed", "parsed"),
    [
        (
            ["run", "--only", "closed-01[ingest", "by", "None]"],
            ["run", "--only", "closed-01[ingest by None]"],
        ),
        (
            ["run", "--only=leak-03[an", "empty", "$or]", "--seed", "3"],
            ["run", "--only=leak-03[an empty $or]", "--seed", "3"],
        ),
        (
            ["run", "--only", "leak-*", "--only", "closed-03"],
            ["run", "--only", "leak-*", "--only", "closed-03"],
        ),
        (["run", "--only", "leak-03[unclosed"], ["run", "--only", "leak-03[unclosed"]),
        (["run", "--seed", "[3"], ["run", "--seed", "[3"]),
        (["run", "--only"], ["run", "--only"]),
    ],
)
def test_an_only_id_the_shell_split_at_its_spaces_is_joined_again(
    typed: list[str], parsed: list[str]
) -> None:
    """An unquoted id with spaces reaches ``--only`` whole; other arguments (and an id whose
    bracket never closes) are left as typed."""
    assert _bracketed(typed) == parsed


@pytest.mark.slow
def test_fail_fast_stops_at_the_first_failure_and_its_report_is_sound_evidence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """kbconform run --fail-fast against a backend that fails many tests: one failing test ran,
    every other is reported as not reached (an error saying why, not a failure the backend
    made), the report verifies as complete evidence of a failing run, the run earns no level
    above the failure, and the terminal says the run stopped; without it the same backend fails
    many tests (control)."""
    from kbconform import report as reports

    smoke = "kbconform_reference.pool.mutants:by_name.pool_no_filter_anywhere"
    path = tmp_path / "r.json"
    code, out, err = _run(
        capsys, "run", "--adapter", smoke, "--fail-fast", "--seed", "5", "--no-shrink", "--report", str(path)
    )
    assert code == 1, out[-3000:] + err[-2000:]
    report = json.loads(path.read_text(encoding="utf-8"))
    reports.verify(report)  # evidence all the same
    assert report["execution"]["maxfail"] == 1
    unreached = report["completeness"]["missing"]
    ran = [t for t in report["tests"] if t["id"] not in unreached]
    assert [t["status"] for t in ran].count("fail") == 1, [(t["id"], t["status"]) for t in ran]
    assert unreached
    assert all(
        "stopped after 1 failing tests" in t["reason"] for t in report["tests"] if t["id"] in unreached
    )
    assert "stopped at the first failure (--fail-fast)" in out
    assert "no sound verdict" not in out
    code, out, _ = _run(
        capsys, "run", "--adapter", smoke, "--seed", "5", "--no-shrink", "--report", str(path)
    )
    assert code == 1
    everything = json.loads(path.read_text(encoding="utf-8"))
    assert everything["execution"]["maxfail"] == 0
    assert sum(t["status"] == "fail" for t in everything["tests"]) > 1
    assert everything["completeness"]["missing"] == []
