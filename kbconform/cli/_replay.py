"""``kbconform replay``: a failing test's transcript sent to a backend again, response by response.

A transcript comes from a report (a failing test's ``transcript``, chosen with ``--test``) or
from a JSON Lines file (``--save`` writes one, its first line naming the test and its message).
The requests go to a harness (``--harness``), a harness-v1 server (``--url``) or a Python
adapter served over harness-v1 (``--adapter``); each response is compared with the recorded one
(:func:`kbconform.harness.replay`). The same responses mean the failure reproduces: the recorded
message says what the contract expected. A backend that cannot be put where the recording was
(the harness does not start, a backend does not open) is no verdict: :class:`Unreplayable`.
``--standalone DIR`` writes the requests and a standard-library script that replays them with the
harness alone (:mod:`kbconform.cli._standalone`).
"""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform.errors import ContractViolation, Problem

CODE = "KB_TRANSCRIPT_INVALID"


def _invalid(pointer: str, expected: str, got: object) -> ContractViolation:
    return ContractViolation(
        contract="transcript",
        problems=(Problem(pointer, "transcript", expected, repr(got)[:200]),),
        code=CODE,
    )


@dataclass(frozen=True, slots=True)
class Recorded:
    """A transcript to replay: its exchanges, and the failing test it came from (when known)."""

    lines: list[dict[str, Any]]
    test: str | None = None
    message: str | None = None


class Unreplayable(Exception):
    """The replay cannot run: the harness does not start or answer, or a backend the recording
    opened does not open now. Its one line says why; exit 2, never "did not reproduce"."""


def _checked(lines: Sequence[object], where: str) -> list[dict[str, Any]]:
    for number, line in enumerate(lines, start=1):
        request = line.get("request") if isinstance(line, Mapping) else None
        if not isinstance(request, Mapping) or not isinstance(request.get("op"), str):
            raise _invalid(f"{where}/{number}", "an exchange {request: {op, params}, response}", line)
    if not lines:
        raise _invalid(where, "at least one exchange", lines)
    return [dict(line) for line in lines if isinstance(line, Mapping)]


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def load(path: str, test: str | None) -> Recorded:
    """The transcript in ``path``: a report (``test`` names the failing test, or the report must
    have exactly one failing test with a transcript) or JSON Lines of exchanges."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise _invalid("", "a readable file", f"{path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise _invalid("", "UTF-8 text", path) from None
    try:
        whole = _strict(text)
    except ValueError:
        whole = None
    if isinstance(whole, Mapping) and isinstance(whole.get("tests"), list):
        recorded = [t for t in whole["tests"] if isinstance(t, Mapping) and t.get("transcript")]
        if test is not None:
            chosen = [t for t in recorded if t.get("id") == test]
            if not chosen:
                ids = ", ".join(str(t.get("id")) for t in recorded) or "none"
                raise _invalid("/tests", f"a failing test with a transcript: {ids}", test)
        elif len(recorded) != 1:
            ids = ", ".join(str(t.get("id")) for t in recorded) or "none"
            raise _invalid("/tests", f"--test ID, one of the failing tests with a transcript: {ids}", None)
        else:
            chosen = recorded
        entry = chosen[0]
        return Recorded(_checked(entry["transcript"], "/transcript"), str(entry["id"]), entry.get("message"))
    lines = []
    for number, raw in enumerate(text.split("\n"), start=1):  # only "\n" ends a line of JSON Lines
        if not raw.strip():
            continue
        try:
            lines.append(_strict(raw))
        except ValueError:
            raise _invalid(f"/{number}", "a JSON object on each line", raw) from None
    head = lines[0] if lines and isinstance(lines[0], Mapping) and "request" not in lines[0] else None
    if head is None:
        return Recorded(_checked(lines, ""))
    test, message = head.get("test"), head.get("message")
    if not isinstance(test, str) or not isinstance(message, (str, type(None))):
        raise _invalid("/1", 'an exchange, or {"test": ID, "message": TEXT} first', head)
    return Recorded(_checked(lines[1:], ""), test, message)


def harness_command(harness: str | None, adapter: str | None) -> str | None:
    """The command starting the backend: the harness, or the adapter served on stdio."""
    if harness is not None:
        return harness
    if adapter is not None:
        from kbconform.runner import serve_command

        return shlex.join(serve_command(adapter))
    return None


def replay(
    recorded: Recorded, *, command: str | None, url: str | None, call_timeout: float
) -> tuple[list[Any], str]:
    """Send ``recorded`` to the backend; every step, and the backend as its hello names it.
    Raises :class:`Unreplayable` when the harness does not start or a backend does not open."""
    from kbconform.harness import CannotReplay, HarnessBroken, connect, replay

    try:
        adapter, manifest = connect(command=command, url=url, call_timeout=call_timeout)
    except HarnessBroken as error:
        raise Unreplayable(f"the harness did not start: {_first_line(error.what)}") from None
    except ContractViolation as error:
        first = error.problems[0] if error.problems else None
        said = f" ({first.pointer or '/'}: {_first_line(first.expected)})" if first else ""
        raise Unreplayable(f"the harness declares no usable manifest: {error.code}{said}") from None
    try:
        steps = replay(recorded.lines, adapter.send_raw)
    except CannotReplay as error:
        raise Unreplayable(f"the backend did not open: {_first_line(str(error))}") from None
    except HarnessBroken as error:
        raise Unreplayable(f"the harness broke: {error.call}: {_first_line(error.what)}") from None
    finally:
        with contextlib.suppress(HarnessBroken):  # a broken harness is already said
            adapter.shutdown()
    versions = manifest.versions
    return steps, f"{versions['adapter']} on {versions['backend']}"


def _first_line(text: str) -> str:
    """A message's first line, within 300 characters: one line, never a stack."""
    line = text.strip().splitlines()[0] if text.strip() else "no message"
    return line if len(line) <= 300 else line[:300] + "..."


def render(recorded: Recorded, steps: Sequence[Any], backend: str) -> tuple[str, bool]:
    """What a maintainer reads, and whether the failure reproduces: the last response (the one
    the failing test's check rests on; the transcript ends where the test failed) is as
    recorded. Earlier responses that differ are named too (a tie in a ranking, say): they do not
    undo a reproduction, and a replay where none differs says so."""
    differing = [step for step in steps if step.difference is not None]
    lines = [
        f"replayed {len(steps)} requests on {backend}" + (f" (test {recorded.test})" if recorded.test else "")
    ]
    for step in steps:
        said = "as recorded" if step.difference is None else f"DIFFERS: {step.difference}"
        lines.append(f"  {step.number:>4} {step.op}: {said}")
    last = steps[-1] if steps else None
    stale = [step for step in steps if step.stale]
    reproduced = last is not None and last.difference is None and not stale
    if stale:
        lines.append(
            f"not reproduced: exchange {stale[0].number} ({stale[0].op}) names an object by the id "
            "the recording's backend gave it, and this backend gave it none: the ids name other objects"
        )
    elif not differing:
        lines.append("reproduced: every response is as recorded")
    else:
        first = differing[0]
        counted = (
            f"{len(differing)} responses differ from the recording, the first at exchange "
            f"{first.number} ({first.op})"
        )
        if reproduced:
            lines.append(
                f"reproduced: the last response, the one the failure rests on, is as recorded; {counted}"
            )
        else:
            lines.append(f"not reproduced: {counted}, and the last")
    if recorded.message:
        lines.append(f"the recorded test failed with: {recorded.message}")
    elif recorded.test is None:
        lines.append("the transcript names no failing test (its first line holds none): no message to show")
    else:
        lines.append(f"the transcript holds no message of test {recorded.test}")
    return "\n".join(lines), reproduced


def standalone(recorded: Recorded, directory: str) -> list[str]:
    """Write ``recorded`` into ``directory`` as a reproduction a maintainer runs with the harness
    alone: ``requests.jsonl`` (the harness-v1 requests, ``hello`` first), ``expected.jsonl``
    (the recorded responses), ``failure.json`` (the test and its message) and ``replay.py``
    (``kbconform/_harness_runtime/kbreplay.py``: standard library only, ``python3 replay.py
    HARNESS``). Returns the files written."""
    from importlib import resources

    from kbconform import report as reports
    from kbconform.harness import PROTOCOL

    lines = [line for line in recorded.lines if line["request"]["op"] != "hello"]
    hello = {"request": {"op": "hello", "params": {"protocol": PROTOCOL}}, "response": None}
    requests, expected = [], []
    for number, line in enumerate([hello, *lines], start=1):
        requests.append(
            {"id": number, "op": line["request"]["op"], "params": line["request"].get("params", {})}
        )
        expected.append(line.get("response"))
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _invalid("", "a folder to write into", f"{directory}: {error.strerror or error}") from None
    script = resources.files("kbconform").joinpath("_harness_runtime").joinpath("kbreplay.py")
    files = {
        "requests.jsonl": "".join(json.dumps(r) + "\n" for r in requests),
        "expected.jsonl": "".join(json.dumps(r) + "\n" for r in expected),
        "failure.json": json.dumps({"test": recorded.test, "message": recorded.message}, indent=2) + "\n",
        "replay.py": script.read_text(encoding="utf-8"),
    }
    for name, text in files.items():
        reports.write(str(folder / name), text)
    return sorted(files)
