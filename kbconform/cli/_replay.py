"""``kbconform replay``: a failing test's transcript sent to a backend again, response by response.

A transcript comes from a report (a failing test's ``transcript``, chosen with ``--test``) or
from a JSON Lines file (``--save`` writes one). The requests go to a harness (``--harness``), a
harness-v1 server (``--url``) or a Python adapter served over harness-v1 (``--adapter``); each
response is compared with the recorded one (:func:`kbconform.harness.replay`). The same
responses mean the failure reproduces: the recorded message says what the contract expected.
"""

from __future__ import annotations

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
    return Recorded(_checked(lines, ""))


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
    """Send ``recorded`` to the backend; every step, and the backend as its hello names it."""
    from kbconform.harness import connect, replay

    adapter, manifest = connect(command=command, url=url, call_timeout=call_timeout)
    try:
        steps = replay(recorded.lines, adapter.send_raw)
    finally:
        adapter.shutdown()
    versions = manifest.versions
    return steps, f"{versions['adapter']} on {versions['backend']}"


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
    reproduced = last is not None and last.difference is None
    if not differing:
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
    return "\n".join(lines), reproduced
