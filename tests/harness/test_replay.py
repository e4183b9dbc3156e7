"""Every failing test of a run over harness-v1 carries its transcript, and ``kbconform replay``
reproduces the failure from it: against the broken backend every response is as recorded;
against the reference the first response that differs is named. A state machine's transcript
is its last (shrunk) program alone, and replays as recorded too. A replay prints the failure's
message, maps the ids a backend assigns by their order of creation, and one that cannot run
says so in one line (exit 2); a standalone reproduction runs with the harness alone."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbconform.cli import main
from kbconform.cli._replay import Recorded, load, render
from kbconform.harness import Transcript, placeless, to_jsonl
from kbconform.harness._transcript import MOST_EXCHANGES, Step, replay
from kbconform.harness._wire import read_response

ROOT = Path(__file__).resolve().parents[2]
#: A memory-scope harness giving every memory a random id (``no-store``: no backend opens).
UUID_HARNESS = f"{sys.executable} {Path(__file__).resolve().parent / 'uuid_memory_harness.py'}"
#: An absolute path of a machine, as a transcript must not hold one.
MACHINE_PATH = re.compile(r'"(?:/(?:home|tmp|work|root|Users|var|opt|usr|srv)/|[A-Za-z]:\\\\)')

ANONYMOUS = "kbconform_reference.mutants:by_name.anonymous_writes_as_shared"
REFERENCE = "kbconform_reference.adapter:memory"


def _run(tmp_path: Path, adapter: str, *selected: str) -> dict[str, Any]:
    path = tmp_path / "report.json"
    only = [arg for stable in selected for arg in ("--only", stable)]
    main(["run", "--seed", "7", "--adapter", adapter, "--report", str(path), *only])
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


@pytest.mark.slow  # the suites or a served adapter in child processes
def test_a_failing_tests_transcript_replays_as_recorded_and_names_what_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mutant that lets an anonymous ingest land fails closed-01[ingest by None]; its report
    entry holds the harness's hello, the set-up and the refused call, and the report verifies.
    Replayed on the mutant, every response is as recorded (exit 0) and the recorded message is
    shown; on the reference, the anonymous ingest is the first response that differs (exit 1).
    --save writes the JSON Lines that replay the same way."""
    report = _run(tmp_path, ANONYMOUS, "closed-01[ingest by None]", "closed-01[export by None]")
    entries = {test["id"]: test for test in report["tests"]}
    failing = entries["closed-01[ingest by None]"]
    assert failing["status"] == "fail"
    ops = [line["request"]["op"] for line in failing["transcript"]]
    assert ops[0] == "hello"
    assert "open" in ops
    calls = [line for line in failing["transcript"] if line["request"]["op"] == "ingest"]
    assert any(line["request"]["params"].get("principal") is None for line in calls)
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "report.json")]) == 0

    saved = tmp_path / "ingest.jsonl"
    code = main(
        [
            "replay",
            str(tmp_path / "report.json"),
            "--test",
            "closed-01[ingest by None]",
            "--save",
            str(saved),
            "--adapter",
            ANONYMOUS,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "reproduced: every response is as recorded" in out
    assert "ingest by None was accepted" in out
    head, *exchanges = saved.read_text(encoding="utf-8").splitlines()
    assert json.loads(head) == {"test": "closed-01[ingest by None]", "message": failing["message"]}
    assert len(exchanges) == len(failing["transcript"])

    code = main(["replay", str(saved), "--adapter", REFERENCE])
    out = capsys.readouterr().out
    assert code == 1, out
    anonymous = next(
        n
        for n, line in enumerate(failing["transcript"], 1)
        if line in calls and line["request"]["params"].get("principal") is None
    )
    assert (
        f"not reproduced: 2 responses differ from the recording, the first at exchange {anonymous} (ingest)"
        in out
    )
    assert "now error KB_UNAUTHENTICATED" in out


@pytest.mark.slow  # the suites or a served adapter in child processes
def test_a_state_machines_transcript_is_its_last_program_and_replays_as_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mutant the state machine kills (a principal without an agent reads private rows that
    have no origin agent): the failing entry's transcript opens one backend for the program
    Hypothesis shrank to (earlier examples dropped), and replays as recorded."""
    report = _run(
        tmp_path,
        "kbconform_reference.mutants:by_name.agentless_reads_ownerless_private",
        "state-01[overwrite]",
    )
    failing = next(test for test in report["tests"] if test["id"] == "state-01[overwrite]")
    assert failing["status"] == "fail"
    opened = [line for line in failing["transcript"] if line["request"]["op"] == "open"]
    assert len(opened) == 1, f"{len(opened)} backends in the transcript: earlier examples were kept"
    capsys.readouterr()
    code = main(
        [
            "replay",
            str(tmp_path / "report.json"),
            "--adapter",
            "kbconform_reference.mutants:by_name.agentless_reads_ownerless_private",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out


@pytest.mark.slow  # the suites or a served adapter in child processes
def test_a_transcript_that_is_not_one_is_refused_with_its_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of non-exchanges, and a report with no failing test, are KB_TRANSCRIPT_INVALID,
    exit 2, no traceback; no target at all is a usage error."""
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"op": "hello"}\n', encoding="utf-8")
    assert main(["replay", str(broken), "--adapter", REFERENCE]) == 2
    assert "KB_TRANSCRIPT_INVALID" in capsys.readouterr().err
    empty = tmp_path / "report.json"
    empty.write_text(json.dumps({"tests": [{"id": "leak-01[get]", "status": "pass"}]}), encoding="utf-8")
    assert main(["replay", str(empty), "--adapter", REFERENCE]) == 2
    assert "one of the failing tests with a transcript: none" in capsys.readouterr().err
    good = tmp_path / "good.jsonl"
    good.write_text(to_jsonl([{"request": {"op": "open", "params": {}}, "response": None}]), encoding="utf-8")
    assert main(["replay", str(good)]) == 2
    assert "give the backend to replay against" in capsys.readouterr().err


def test_a_response_is_transcribed_as_the_harness_sent_it_whatever_the_suite_changes_later() -> None:
    """Unit: a response read from a harness is kept as its bytes and the request as the line sent,
    encoded in canonical form only when the transcript is written: a change the suite makes to
    the message afterwards does not reach it (control: the change is made, on the message)."""
    transcript = Transcript()
    sent = b'{"id":1,"op":"list","params":{"limit":2}}\n'
    received = read_response("harness list (request 1)", b'{"id":1,"result":{"b":1,"a":[1,2]}}\n', 1, "")
    transcript.record({"id": 1, "op": "list", "params": {"limit": 2}}, received, sent=sent)
    received["result"]["a"].append(3)
    assert received["result"]["a"] == [1, 2, 3]
    (line,) = transcript.lines()
    assert line["request"] == {"id": 1, "op": "list", "params": {"limit": 2}}
    assert line["response"] == {"id": 1, "result": {"a": [1, 2], "b": 1}}
    assert list(line["response"]["result"]) == ["a", "b"]  # canonical: keys sorted


def test_the_transcript_keeps_the_set_up_and_the_last_example_within_bounds() -> None:
    """Unit: set-up exchanges, then two examples: the lines are hello, the set-up and the second
    example; a long one keeps its first and last exchanges; replay maps recorded backend handles
    to today's and ignores clock stamps (control: a changed document differs)."""
    transcript = Transcript()
    transcript.record({"op": "hello"}, {"result": {}})
    transcript.begin_test()
    transcript.record({"op": "open"}, {"result": {"backend": "b1"}})
    transcript.begin_call()
    transcript.begin_example()
    transcript.record({"op": "list", "params": {"n": 1}}, {"result": {}})
    transcript.begin_example()
    transcript.record({"op": "list", "params": {"n": 2}}, {"result": {}})
    assert [line["request"].get("params") for line in transcript.lines()] == [None, None, {"n": 2}]
    transcript.begin_test()
    for n in range(MOST_EXCHANGES + 10):
        transcript.record({"op": "count", "params": {"n": n}}, {"result": {"count": n}})
    kept = [line["request"]["params"]["n"] for line in transcript.lines()[1:]]
    assert len(kept) == MOST_EXCHANGES
    assert (kept[0], kept[-1]) == (0, MOST_EXCHANGES + 9)

    recorded = [
        {"request": {"op": "open", "params": {}}, "response": {"result": {"backend": "b7"}}},
        {
            "request": {"op": "get", "params": {"backend": "b7"}},
            "response": {"result": {"document": "x", "metadata": {"ingestedAt": "then"}}},
        },
    ]
    sent: list[Any] = []

    def send(op: str, params: Any) -> Any:
        sent.append(params)
        if op == "open":
            return {"result": {"backend": "b1"}}
        return {"result": {"document": document, "metadata": {"ingestedAt": "now"}}}

    document = "x"
    assert replay(recorded, send) == [Step(1, "open", None), Step(2, "get", None)]
    assert sent[1] == {"backend": "b1"}
    document = "y"
    assert replay(recorded, send)[1].difference == 'at /document: recorded "x", now "y"'


def test_a_replay_reproduces_when_the_last_response_is_as_recorded() -> None:
    """Unit: an earlier response that differs (a tie in a ranking) is named but the failure
    reproduces when the last one, the one the test failed on, is as recorded; a differing last
    response does not reproduce it."""
    recorded = Recorded([], "leak-15", "the message")
    text, reproduced = render(recorded, [Step(2, "query", "at /hits/4: tie"), Step(3, "query", None)], "neo")
    assert reproduced
    assert "reproduced: the last response, the one the failure rests on, is as recorded" in text
    assert "the recorded test failed with: the message" in text
    text, reproduced = render(
        recorded, [Step(2, "query", None), Step(3, "query", "at /hits/0: other")], "neo"
    )
    assert not reproduced
    assert (
        "not reproduced: 1 responses differ from the recording, the first at exchange 3 (query), and the last"
        in text
    )


def _leak(test: str | None = "mem-04[get]") -> str:
    """A recorded failure on a backend that gives each memory a random id: alice adds a memory,
    bob reads it by the id the backend gave it (the recording's ids are not today's)."""
    made = "0b1e5c2a-0000-4000-8000-000000000001"
    lines = [
        {"request": {"id": 1, "op": "hello", "params": {"protocol": "harness-v1"}}, "response": None},
        {
            "request": {
                "id": 2,
                "op": "open",
                "params": {"spoofMode": "overwrite", "revisionMap": None, "faults": False},
            },
            "response": {"id": 2, "result": {"backend": "b9"}},
        },
        {
            "request": {
                "id": 3,
                "op": "addMemory",
                "params": {"backend": "b9", "scope": {"user_id": "alice"}, "text": "alice's", "metadata": {}},
            },
            "response": {"id": 3, "result": {"id": made}},
        },
        {
            "request": {
                "id": 4,
                "op": "getMemory",
                "params": {"backend": "b9", "scope": {"user_id": "bob"}, "id": made},
            },
            "response": {"id": 4, "result": {"hit": {"id": made, "text": "alice's"}}},
        },
    ]
    return to_jsonl(lines, test=test, message=None if test is None else "bob read alice's memory by its id")


def test_a_jsonl_transcript_names_its_test_and_a_replay_prints_the_failure_as_the_run_did(
    tmp_path: Path,
) -> None:
    """A transcript saved as JSON Lines starts with its test and message, and a replay of it
    prints the message as a replay of the report does; control: JSON Lines without that line
    still replay, and say that they name no failing test."""
    path = tmp_path / "leak.jsonl"
    path.write_text(_leak(), encoding="utf-8")
    recorded = load(str(path), None)
    assert (recorded.test, recorded.message) == ("mem-04[get]", "bob read alice's memory by its id")
    assert [line["request"]["op"] for line in recorded.lines] == ["hello", "open", "addMemory", "getMemory"]
    text, _ = render(recorded, [Step(4, "getMemory", None)], "x")
    assert "the recorded test failed with: bob read alice's memory by its id" in text
    assert "(test mem-04[get])" in text
    path.write_text(_leak(test=None), encoding="utf-8")
    bare = load(str(path), None)
    assert (bare.test, bare.message, len(bare.lines)) == (None, None, 4)
    assert "names no failing test" in render(bare, [Step(4, "getMemory", None)], "x")[0]


def test_ids_the_backend_assigns_are_mapped_by_their_order_of_creation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Replayed on a harness that gives each memory a fresh random id, bob's read by id reaches
    the memory alice added now and the failure reproduces (exit 0); control, in the unit: a
    backend that creates no memory now leaves the recorded id naming nothing, and the replay
    says it did not reproduce, although the read's last response (a not-found both times, had
    the recording been one) could compare equal; a read naming a known id creates none."""
    path = tmp_path / "leak.jsonl"
    path.write_text(_leak(), encoding="utf-8")
    assert main(["replay", str(path), "--harness", UUID_HARNESS]) == 0, capsys.readouterr()
    assert "reproduced: every response is as recorded" in capsys.readouterr().out

    recorded = load(str(path), None)

    def refusing(op: str, params: Any) -> Any:
        if op == "open":
            return {"result": {"backend": "b1"}}
        if op == "addMemory":
            return {"error": {"code": "KB_MEMORY_INVALID", "message": "no"}}
        return {"result": {"hit": {"id": params["id"], "text": "alice's"}}}

    steps = replay(recorded.lines, refusing)
    assert steps[-1].stale
    assert "0b1e5c2a-0000-4000-8000-000000000001" in str(steps[-1].difference)
    text, reproduced = render(recorded, steps, "x")
    assert not reproduced
    assert "not reproduced: exchange 4 (getMemory) names an object by the id" in text

    read = [
        {"request": {"op": "get", "params": {"id": "m1"}}, "response": {"result": {"id": "m2", "text": "t"}}},
        {"request": {"op": "addMemory", "params": {"id": "m2"}}, "response": {"result": {"id": "m2"}}},
        {"request": {"op": "get", "params": {"id": "m2"}}, "response": {"result": {"id": "m2", "text": "t"}}},
    ]
    sent: list[Any] = []
    replay(read, lambda op, params: sent.append(params) or {"result": {"id": "m3"}})
    assert sent == [{"id": "m1"}, {"id": "m2"}, {"id": "m2"}], "a read's answer was taken for a created id"


def test_a_replay_that_cannot_run_exits_2_with_one_line_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing program and a backend that does not open (its store will not start) each end
    the replay with exit 2 and one line naming why, never "did not reproduce" (exit 1) nor a
    traceback; control: the same transcript on the same harness with its store replays (0)."""
    path = tmp_path / "leak.jsonl"
    path.write_text(_leak(), encoding="utf-8")
    for harness, why in (
        (str(tmp_path / "no-such-program"), "the harness did not start: "),
        (
            f"{UUID_HARNESS} no-store",
            "the backend did not open: exchange 2 (open) answered KB_BACKEND_UNAVAILABLE",
        ),
    ):
        assert main(["replay", str(path), "--harness", harness]) == 2
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1, captured.err
        assert captured.err.startswith(f"kbconform replay: KB_REPLAY_CANNOT_RUN: {why}"), captured.err
        assert "Traceback" not in captured.err + captured.out
    assert main(["replay", str(path), "--harness", UUID_HARNESS]) == 0


def test_a_standalone_reproduction_runs_with_the_harness_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--standalone writes the requests, the recorded responses, the failure and a script that
    a Python without kbconform runs (isolated mode, outside the repository) against the
    harness: the failure reproduces (exit 0), with its message; control: a recorded answer
    changed makes it say "not reproduced" (exit 1) and show the recorded answer beside today's;
    a store that will not start is exit 2."""
    path = tmp_path / "leak.jsonl"
    path.write_text(_leak(), encoding="utf-8")
    folder = tmp_path / "repro"
    assert main(["replay", str(path), "--standalone", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "expected.jsonl",
        "failure.json",
        "replay.py",
        "requests.jsonl",
    ]
    requests = [json.loads(line) for line in (folder / "requests.jsonl").read_text().splitlines()]
    assert [r["op"] for r in requests] == ["hello", "open", "addMemory", "getMemory"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}

    def standalone(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-I", str(folder / "replay.py"), *UUID_HARNESS.split(), *extra]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)

    done = standalone()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "test mem-04[get]: bob read alice's memory by its id" in done.stdout
    assert "reproduced: the last answer is as recorded" in done.stdout
    expected = (folder / "expected.jsonl").read_text().splitlines()
    expected[-1] = expected[-1].replace("alice's", "nobody's")
    (folder / "expected.jsonl").write_text("\n".join(expected) + "\n")
    done = standalone()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not reproduced" in done.stdout
    assert 'recorded: {"hit": {"id": "0b1e5c2a' in done.stdout
    assert standalone("no-store").returncode == 2


def test_a_transcript_holds_no_path_of_the_machine_that_recorded_it() -> None:
    """A harness's hello naming its binaries by absolute path is recorded with their last part
    only, and the repository's recorded transcripts hold none; control: relative paths, URLs
    and the requests and responses of the test are kept as they were."""
    transcript = Transcript()
    config = {"chroma": "/home/ci/.venv/bin/chroma", "root": "chroma 1.4 (C:\\ci\\neo)", "rel": "docs/a/b.md"}
    transcript.record(
        {"op": "hello"}, {"result": {"manifest": {"config": {**config, "url": "http://127.0.0.1:8/a/b"}}}}
    )
    transcript.record({"op": "get", "params": {"path": "/etc/passwd"}}, {"result": {"path": "/home/x/y"}})
    hello, get = transcript.lines()
    assert hello["response"]["result"]["manifest"]["config"] == {
        "chroma": ".../chroma",
        "root": "chroma 1.4 (.../neo)",
        "rel": "docs/a/b.md",
        "url": "http://127.0.0.1:8/a/b",
    }
    assert get["request"]["params"] == {"path": "/etc/passwd"}  # what the test sent, as sent
    assert placeless("src/kb/x.py") == "src/kb/x.py"
    recorded = sorted((ROOT / "harnesses").glob("*/transcripts/*.jsonl"))
    assert recorded
    for path in recorded:
        hello_line = path.read_text(encoding="utf-8").splitlines()[:2]
        assert not MACHINE_PATH.search("".join(hello_line)), path
