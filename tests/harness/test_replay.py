"""Every failing test of a run over harness-v1 carries its transcript, and ``kbconform replay``
reproduces the failure from it: against the broken backend every response is as recorded;
against the reference the first response that differs is named. A state machine's transcript
is its last (shrunk) program alone, and replays as recorded too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbconform.cli import main
from kbconform.harness import Transcript, to_jsonl
from kbconform.harness._transcript import MOST_EXCHANGES, Step, replay

#: Each test here runs the suites or a served adapter in child processes: the slow tier.
pytestmark = pytest.mark.slow

ANONYMOUS = "kbconform_reference.mutants:by_name.anonymous_writes_as_shared"
REFERENCE = "kbconform_reference.adapter:memory"


def _run(tmp_path: Path, adapter: str, *selected: str) -> dict[str, Any]:
    path = tmp_path / "report.json"
    only = [arg for stable in selected for arg in ("--only", stable)]
    main(["run", "--seed", "7", "--adapter", adapter, "--report", str(path), *only])
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


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
    assert len(saved.read_text(encoding="utf-8").splitlines()) == len(failing["transcript"])

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
    from kbconform.cli._replay import Recorded, render

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
