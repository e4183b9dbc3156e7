"""Transcripts: the harness-v1 requests and responses of one suite test, to replay.

:class:`Transcript` records every exchange a :class:`~kbconform.harness.HarnessAdapter` makes.
The plugin starts it afresh for each test; a test whose examples Hypothesis draws marks each
example (``Run``), so a failing test keeps its set-up and the last example only: the shrunk
program Hypothesis reports. A transcript is JSON lines, one exchange each
(``{"request": ..., "response": ...}``), the harness's ``hello`` first: a maintainer replays it
with ``kbconform replay`` or, with nothing but the harness, by sending each ``request`` line.

:func:`replay` sends a transcript's requests to a harness again, with the backend handles the
harness gives now, and compares each response with the recorded one (server clocks aside).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: The most exchanges a test's transcript keeps (its set-up first, then the last ones).
MOST_EXCHANGES = 1000
#: A response larger than this (in characters of JSON) is kept as its digest and size only.
LARGEST_RESPONSE = 20_000
#: Values a backend stamps from its clock: never compared.
VOLATILE = frozenset({"ingestedAt"})


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def comparable(value: Any) -> Any:
    """``value`` as a replay compares it: clock stamps dropped, floats to 6 significant digits
    (a store's float32 sums may differ in the last bits between runs), an export's records by id
    (``schemas/backup.md`` fixes no order)."""
    if isinstance(value, Mapping):
        kept = {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
        records = kept.get("records")
        if isinstance(records, list) and all(isinstance(r, Mapping) and "id" in r for r in records):
            kept["records"] = sorted(
                records, key=lambda r: _canonical(r["id"])
            )  # an export's order is no rule
        return kept
    if isinstance(value, list):
        return [comparable(v) for v in value]
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.6g}")
    return value


def digest(response: Mapping[str, Any]) -> str:
    """The SHA-256 of a response as a replay compares it (:func:`comparable`, canonical JSON),
    its request id left out (a replay numbers its requests afresh)."""
    kept = {key: value for key, value in response.items() if key != "id"}
    return hashlib.sha256(_canonical(comparable(kept)).encode()).hexdigest()


def _line(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded exchange (its request and response as JSON text, a snapshot the suite cannot
    change afterwards) as a transcript line: the response whole, or its digest and size when
    it is larger than :data:`LARGEST_RESPONSE` characters."""
    line = {**entry, "request": json.loads(entry["request"])}
    text = entry["response"]
    if text is not None and len(text) > LARGEST_RESPONSE:
        line["response"] = {"digest": digest(json.loads(text)), "characters": len(text)}
    else:
        line["response"] = None if text is None else json.loads(text)
    return line


@dataclass
class Transcript:
    """Every exchange of the current test: ``hello`` (kept across tests), the test's set-up, and
    its last example."""

    hello: dict[str, Any] | None = None
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    #: Where the test's call began (its fixtures' set-up is before), and its last example.
    call_start: int | None = None
    example_start: int | None = None

    def record(self, request: Mapping[str, Any], response: Mapping[str, Any] | None, broke: str = "") -> None:
        entry: dict[str, Any] = {
            # as sent, keys in order: a backend may read an object's keys in order (JSON says
            # they have none), and a replay must send what the test sent
            "request": json.dumps(request, ensure_ascii=False, separators=(",", ":")),
            "response": None if response is None else _canonical(response),
        }
        if broke:
            entry["broke"] = broke
        if request.get("op") == "hello":
            self.hello = entry
            return
        self.exchanges.append(entry)

    def begin_test(self) -> None:
        self.exchanges.clear()
        self.call_start = self.example_start = None

    def begin_call(self) -> None:
        self.call_start = len(self.exchanges)

    def begin_example(self) -> None:
        """A new Hypothesis example: what earlier examples sent is dropped at the end."""
        self.example_start = len(self.exchanges)

    def lines(self) -> list[dict[str, Any]]:
        """The transcript of the test so far: ``hello``, its set-up, its last example (or its
        whole call), cut to :data:`MOST_EXCHANGES`: the first half and the last, the first
        exchange after the cut saying how many were left out (``cut``; such a transcript cannot
        put a backend in the recorded state, and a replay says so)."""
        chosen = self.exchanges
        if self.example_start is not None:
            setup = self.exchanges[: self.call_start or 0]
            chosen = setup + self.exchanges[self.example_start :]
        kept = [_line(e) for e in chosen]
        if len(kept) > MOST_EXCHANGES:
            half = MOST_EXCHANGES // 2
            left_out = len(kept) - 2 * half
            kept = [*kept[:half], {**kept[-half], "cut": left_out}, *kept[-half + 1 :]]
        return ([_line(self.hello)] if self.hello else []) + kept


def to_jsonl(lines: Iterable[Mapping[str, Any]]) -> str:
    """JSON Lines, ASCII only: a line-by-line reader that also splits on Unicode line separators
    (U+2028, U+0085, ...) still reads one exchange per line. Keys keep their order: a request
    is written as it was sent."""
    return "".join(json.dumps(line) + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class Step:
    """One replayed exchange: what was sent, what came back, and how it differs, if it does."""

    number: int
    op: str
    difference: str | None


def _renamed(value: Any, handles: Mapping[str, str]) -> Any:
    """``value`` with every recorded backend handle (``params.backend``) replaced by today's."""
    if isinstance(value, Mapping):
        return {
            k: (handles.get(v, v) if k == "backend" and isinstance(v, str) else _renamed(v, handles))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_renamed(v, handles) for v in value]
    return value


def _differs(recorded: Any, now: Mapping[str, Any]) -> str | None:
    """How the response ``now`` differs from the ``recorded`` one, or None."""
    if recorded is None:
        return None  # the recorded call broke: nothing to compare
    if set(recorded) == {"digest", "characters"}:
        return None if digest(now) == recorded["digest"] else "the response differs (a large one: its digest)"
    if ("error" in recorded) != ("error" in now):
        was = f"error {recorded['error'].get('code')}" if "error" in recorded else "a result"
        got = (
            f"error {now['error'].get('code')}: {now['error'].get('message')}"
            if "error" in now
            else "a result"
        )
        return f"recorded {was}, now {got}"
    if "error" in recorded:
        codes = (recorded["error"].get("code"), now["error"].get("code"))
        return None if codes[0] == codes[1] else f"recorded error {codes[0]}, now {codes[1]}"
    old, new = comparable(recorded.get("result")), comparable(now.get("result"))
    return None if old == new else _first_difference(old, new, "")


def _shown(value: Any) -> str:
    text = _canonical(value)
    return text if len(text) <= 160 else text[:160] + "..."


def _first_difference(old: Any, new: Any, at: str) -> str:
    """Where two unequal JSON values first differ, and how (a JSON pointer into the result)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new)):
            if key not in new:
                return f"at {at}/{key}: recorded {_shown(old[key])}, now absent"
            if key not in old:
                return f"at {at}/{key}: recorded absent, now {_shown(new[key])}"
            if old[key] != new[key]:
                return _first_difference(old[key], new[key], f"{at}/{key}")
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            if a != b:
                return _first_difference(a, b, f"{at}/{index}")
        return f"at {at or '/'}: recorded {len(old)} items, now {len(new)}"
    return f"at {at or '/'}: recorded {_shown(old)}, now {_shown(new)}"


def replay(
    lines: Iterable[Mapping[str, Any]], send: Callable[[str, Mapping[str, Any]], Mapping[str, Any]]
) -> list[Step]:
    """Send each recorded request again through ``send(op, params)`` (which returns the
    harness's whole response: ``{"result": ...}`` or ``{"error": ...}``) and compare. ``hello``
    is the caller's to send; a recorded one is skipped. Backend handles are mapped from the
    recorded ``open`` results to today's."""
    handles: dict[str, str] = {}
    steps = []
    for number, line in enumerate(lines, start=1):
        request = line["request"]
        op = str(request["op"])
        if op == "hello":
            continue
        if line.get("cut"):
            steps.append(Step(number, "cut", f"the transcript leaves out {line['cut']} exchanges here"))
        response = send(op, _renamed(request.get("params", {}), handles))
        recorded = line.get("response")
        if op == "open" and isinstance(recorded, Mapping) and "result" in recorded and "result" in response:
            handles[str(recorded["result"]["backend"])] = str(response["result"]["backend"])
            steps.append(Step(number, op, None))
            continue
        steps.append(Step(number, op, _differs(recorded, response)))
    return steps
