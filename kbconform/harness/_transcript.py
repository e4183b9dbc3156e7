"""Transcripts: the harness-v1 requests and responses of one suite test, to replay.

:class:`Transcript` records every exchange a :class:`~kbconform.harness.HarnessAdapter` makes.
The plugin starts it afresh for each test; a test whose examples Hypothesis draws marks each
example (``Run``), so a failing test keeps its set-up and the last example only: the shrunk
program Hypothesis reports. A transcript is JSON lines, one exchange each
(``{"request": ..., "response": ...}``), the harness's ``hello`` first: a maintainer replays it
with ``kbconform replay`` or, with nothing but the harness, by sending each ``request`` line. A
transcript holds no path of the machine that recorded it: the hello's absolute paths (a
harness's manifest may name its binaries) keep their last part only.

:func:`replay` sends a transcript's requests to a harness again, with the backend handles and
the ids the backend assigns now (mapped by their order of creation), and compares each response
with the recorded one (server clocks aside).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbconform.harness._wire import HarnessBroken, Received

#: The most exchanges a test's transcript keeps (its set-up first, then the last ones).
MOST_EXCHANGES = 1000
#: A response larger than this (in characters of JSON) is kept as its digest and size only.
LARGEST_RESPONSE = 20_000
#: Values a backend stamps from its clock: never compared.
VOLATILE = frozenset({"ingestedAt"})
#: An absolute path of the recording machine (POSIX, or a Windows drive): two parts or more.
_PATH = re.compile(r"(?<![\w.~-])(?:/[^\s/\"'(),;:]+){2,}/?|\b[A-Za-z]:\\[^\s\"'(),;]+")


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


def placeless(value: Any) -> Any:
    """``value`` with every absolute path in its strings cut to its last part
    (``/home/ci/.venv/bin/chroma`` becomes ``.../chroma``): what a manifest says of a machine."""
    if isinstance(value, str):
        return _PATH.sub(lambda m: ".../" + re.split(r"[/\\]", m.group(0).rstrip("/\\"))[-1], value)
    if isinstance(value, Mapping):
        return {key: placeless(item) for key, item in value.items()}
    if isinstance(value, list):
        return [placeless(item) for item in value]
    return value


def _line(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded exchange (its request and response as JSON text, a snapshot the suite cannot
    change afterwards) as a transcript line: the response whole, or its digest and size when
    it is larger than :data:`LARGEST_RESPONSE` characters."""
    line = {**entry, "request": json.loads(entry["request"])}
    text = entry["response"]
    if isinstance(text, bytes):  # as received: its canonical form is made now, for the few written
        text = _canonical(json.loads(text))
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

    def record(
        self,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        broke: str = "",
        sent: bytes | None = None,
    ) -> None:
        """Keep one exchange: ``request`` as sent (``sent``: its line, when the caller encoded
        it), and ``response`` (a :class:`Received` keeps the bytes it was read from)."""
        if response is None:
            answer: str | bytes | None = None
        elif isinstance(response, Received):
            answer = response.raw
        else:
            answer = _canonical(response)
        entry: dict[str, Any] = {
            # as sent, keys in order: a backend may read an object's keys in order (JSON says
            # they have none), and a replay must send what the test sent
            "request": sent
            if sent is not None
            else json.dumps(request, ensure_ascii=False, separators=(",", ":")),
            "response": answer,
        }
        if broke:
            entry["broke"] = broke
        if request.get("op") == "hello":  # the manifest: no path of this machine
            self.hello = {**entry, "response": entry["response"] and _canonical(placeless(response))}
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


def to_jsonl(
    lines: Iterable[Mapping[str, Any]], *, test: str | None = None, message: str | None = None
) -> str:
    """JSON Lines, ASCII only: a line-by-line reader that also splits on Unicode line separators
    (U+2028, U+0085, ...) still reads one exchange per line. Keys keep their order: a request
    is written as it was sent. With ``test``, a first line ``{"test": ..., "message": ...}``
    names the failing test and its message (what the contract expected), which a replay prints."""
    head = [] if test is None else [{"test": test, "message": message}]
    return "".join(json.dumps(line) + "\n" for line in [*head, *lines])


@dataclass(frozen=True, slots=True)
class Step:
    """One replayed exchange: what was sent, what came back, and how it differs, if it does.
    ``stale`` when the request names an object the recording created and this replay did not
    (its recorded id names nothing now): such a replay reproduces nothing."""

    number: int
    op: str
    difference: str | None
    stale: bool = False


class CannotReplay(Exception):
    """The backend cannot be put where the recording was: a backend the recording opened does
    not open now (a program it needs is missing, a store that will not start). Not a verdict."""

    def __init__(self, number: int, what: str) -> None:
        super().__init__(number, what)
        self.number, self.what = number, what

    def __str__(self) -> str:
        return f"exchange {self.number} (open) answered {self.what}"


def _renamed(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` with every recorded id the backend assigned (a ``backend`` handle, a created
    object's id) replaced by the one it assigned now."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, Mapping):
        return {k: _renamed(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, ids) for v in value]
    return value


def _strings(value: Any) -> set[str]:
    """Every string in ``value`` (a request's params): the ids it may name."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        return {n for v in value.values() for n in _strings(v)}
    if isinstance(value, list):
        return {n for v in value for n in _strings(v)}
    return set()


def _created(params: Any, response: Any) -> str | None:
    """The id a response says the backend assigned: a result that is that id alone
    (``open``'s handle, ``addMemory``'s or ``createKb``'s id), unless the request named it."""
    result = response.get("result") if isinstance(response, Mapping) else None
    if isinstance(result, Mapping) and len(result) == 1:
        made = result.get("backend", result.get("id"))
        if isinstance(made, str) and made not in _strings(params):
            return made
    return None


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
    is the caller's to send; a recorded one is skipped. The ids the backend assigned (each
    ``open``'s handle, each created object's ``id``) are mapped by their order of creation, the
    recorded one to today's, in the requests sent and the responses compared; a request naming a
    recorded id this replay did not create is ``stale``. Raises :class:`CannotReplay` when a
    recorded ``open`` succeeded and fails now; a harness that breaks where the recorded one
    broke ends the replay there, as recorded (anywhere else, HarnessBroken escapes)."""
    ids: dict[str, str] = {}
    lost: set[str] = set()  # created in the recording, not in this replay
    steps = []
    for number, line in enumerate(lines, start=1):
        request = line["request"]
        op = str(request["op"])
        if op == "hello":
            continue
        if line.get("cut"):
            steps.append(Step(number, "cut", f"the transcript leaves out {line['cut']} exchanges here"))
        params = request.get("params", {})
        stale = sorted(_strings(params) & lost)
        try:
            response = send(op, _renamed(params, ids))
        except HarnessBroken:
            if not line.get("broke"):
                raise
            steps.append(Step(number, op, None))  # it broke as it did when recorded
            return steps
        recorded = line.get("response")
        then, now = _created(params, recorded), _created(_renamed(params, ids), response)
        if op == "open" and then is not None and now is None:
            error = response.get("error") if isinstance(response, Mapping) else None
            said = (
                f"{error.get('code')}: {error.get('message')}" if isinstance(error, Mapping) else "no backend"
            )
            raise CannotReplay(number, said)
        if then is not None and then not in ids:
            if now is None:
                lost.add(then)
            else:
                ids[then] = now
        if stale:
            what = f"names {', '.join(map(repr, stale))}, which the recording created and this replay did not"
            steps.append(Step(number, op, what, stale=True))
        elif op == "open" and then is not None:
            steps.append(Step(number, op, None))
        else:
            steps.append(Step(number, op, _differs(_renamed(recorded, ids), response)))
    return steps
