"""Each library harness (harnesses/langgraph, harnesses/adk, harnesses/mem0) is a translation,
never a guard: it refuses or passes through what the library would, drops no key, fills no
default and adds no check the library lacks, unless its README lists it as a departure. Each
departure and each pass-through is held here by sending its input through the harness and
seeing the library's answer (its own exception, in its own words, or what it stored), not one
the harness made; and the README lists exactly the departures held here.

The harnesses run from their own virtualenvs (``harnesses/NAME/install``, about 20 s each the
first time), so this is the slow tier.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.harness.installs import needing, run_install

pytestmark = pytest.mark.slow

HARNESSES = Path(__file__).resolve().parents[2] / "harnesses"
OPEN = {"spoofMode": "overwrite", "revisionMap": None, "faults": False}

Answer = dict[str, Any]
#: A probe: the requests after hello and open (each on backend b1), and what the last answer
#: must show for the library to have answered it.
Probe = tuple[list[tuple[str, dict[str, Any]]], Callable[[Answer], bool]]


def _session(name: str, probes: dict[str, list[tuple[str, dict[str, Any]]]]) -> dict[str, list[Answer]]:
    """The harness's answers to each probe's requests, all in one session (one start of the
    harness and its library): each probe on a backend of its own, opened before its requests (a
    fresh, empty store, harness-v1.md) and closed after them. The runtime names the n-th backend
    it opens ``bn``: each open's answer is checked to be that handle."""
    run_install(HARNESSES / name / "install", 900)
    lines: list[dict[str, Any]] = [{"id": 1, "op": "hello", "params": {"protocol": "harness-v1"}}]
    owners: list[str | None] = [None]  # the probe each line's answer belongs to
    for number, (what, requests) in enumerate(probes.items(), start=1):
        handle = f"b{number}"
        steps = [("open", OPEN), *((op, {"backend": handle, **params}) for op, params in requests)]
        steps.append(("close", {"backend": handle}))
        for op, params in steps:
            lines.append({"id": len(lines) + 1, "op": op, "params": params})
            owners.append(what if op not in ("open", "close") else None)
        lines[-len(steps)]["expect"] = handle
    lines.append({"id": len(lines) + 1, "op": "shutdown", "params": {}})
    owners.append(None)
    expected = {line["id"]: line.pop("expect") for line in lines if "expect" in line}
    done = subprocess.run(
        [str(HARNESSES / name / "harness")],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(answers) == len(lines), f"{name}: {done.stdout}\n{done.stderr[-3000:]}"
    opened = {a["id"]: (a.get("result") or {}).get("backend") for a in answers if a["id"] in expected}
    assert opened == expected, f"{name}: the backends opened were {opened}, not {expected}"
    found: dict[str, list[Answer]] = {what: [] for what in probes}
    for what, answer in zip(owners, answers, strict=True):
        if what is not None:
            found[what].append(answer)
    return found


@functools.cache
def _answers(name: str) -> dict[str, list[Answer]]:
    """Every probe's answers of harness ``name``, from one session of it."""
    return _session(
        name, {what: requests for what, (requests, _) in {**DEPARTURES[name], **PASSED[name]}.items()}
    )


def _add(
    scope: Any, text: str = "alice pays the invoice", metadata: Any = None
) -> tuple[str, dict[str, Any]]:
    return (
        "addMemory",
        {"scope": scope, "text": text, "metadata": {"topic": "billing"} if metadata is None else metadata},
    )


def _search(scope: Any, text: str = "invoice") -> tuple[str, dict[str, Any]]:
    return ("searchMemories", {"scope": scope, "text": text, "limit": 5, "where": None})


def _error(answer: Answer, code: str, *words: str) -> bool:
    error = answer.get("error") or {}
    return error.get("code") == code and all(word in error.get("message", "") for word in words)


def _hits(answer: Answer) -> list[str]:
    return [hit["text"] for hit in (answer.get("result") or {}).get("hits", [])]


#: Per harness, each departure its README lists (a phrase of its heading) and the probe that
#: shows it is as listed, and each pass-through (no key dropped, no default filled, null and
#: absent as sent) with the probe that shows the library answering.
DEPARTURES: dict[str, dict[str, Probe]] = {
    "langgraph": {
        "The embedding": (
            [_add({"user": "alice", "agent": "bot"}), _search({"user": "alice"})],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "`updateMemory` is two calls": (
            [("updateMemory", {"scope": {"user": "bob", "agent": "bot"}, "id": "no-such-key", "text": "x"})],
            lambda a: _error(a, "KB_NOT_FOUND", "no item with key"),
        ),
        "`listMemories`'s limit": (
            [_add({"user": "alice", "agent": "bot"}), ("listMemories", {"scope": {"user": "alice"}})],
            lambda a: len(_hits(a)) == 1,
        ),
        "Keys are counted per backend": (
            [_add({"user": "alice", "agent": "bot"})],
            lambda a: a["result"]["id"].endswith("000000000001"),
        ),
        "Metadata is the value": (
            [_add({"user": "alice", "agent": "bot"}, metadata=["topic"])],
            lambda a: _error(a, "KB_HARNESS_INTERNAL", "TypeError"),
        ),
    },
    "adk": {
        "One fixed application name": (
            [_add({"user_id": "alice"}), _search({"user_id": "alice"})],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "A memory is a session of its own": (
            [
                _add({"user_id": "alice"}),
                _add({"user_id": "alice"}, "alice pays the rent"),
                _search({"user_id": "alice"}, "pays"),
            ],
            lambda a: len(_hits(a)) == 2,
        ),
        "Ids are counted per backend": (
            [_add({"user_id": "alice"})],
            lambda a: a["result"]["id"] == "65760000-0000-4000-8000-000000000001",
        ),
        "`limit` is the harness's": (
            [
                _add({"user_id": "alice"}),
                (
                    "searchMemories",
                    {"scope": {"user_id": "alice"}, "text": "invoice", "limit": 0, "where": None},
                ),
            ],
            lambda a: _hits(a) == [],
        ),
        "`where` is not passed anywhere": (
            [
                (
                    "searchMemories",
                    {"scope": {"user_id": "alice"}, "text": "x", "limit": 5, "where": {"topic": "billing"}},
                )
            ],
            lambda a: _error(a, "KB_NOT_IMPLEMENTED", "filter"),
        ),
        # Requests at once reach the one loop over HTTP (tests/plugin/test_concurrency.py and
        # the recorded verdict's conc tests); here, its ids counted in one step per request.
        "One event loop for every request": (
            [_add({"user_id": "alice"}), _add({"user_id": "bob"}, "bob pays the rent")],
            lambda a: a["result"]["id"] == "65760000-0000-4000-8000-000000000002",
        ),
        "A scope that is not an object": (
            [_search("alice")],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "missing 1 required keyword-only argument: 'user_id'"),
        ),
    },
    "mem0": {
        "The embedder is the deterministic local": (
            [_add({"user_id": "alice"}), _search({"user_id": "alice"})],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "The store is Qdrant in local mode": (
            [_add({"user_id": "alice"}), ("listMemories", {"scope": {"user_id": "alice"}})],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "Telemetry is off": ([_add({"user_id": "alice"})], lambda a: "id" in a.get("result", {})),
        "No optional extra is installed": (
            [_add({"user_id": "alice"}), _search({"user_id": "alice"}, "pays")],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "`listMemories` passes `top_k=1000`": (
            [
                *[_add({"user_id": "alice"}, f"memory {n}") for n in range(21)],
                ("listMemories", {"scope": {"user_id": "alice"}}),
            ],
            lambda a: len(_hits(a)) == 21,
        ),
        "`getMemory` answers `KB_NOT_FOUND`": (
            [("getMemory", {"scope": {"user_id": "alice"}, "id": "6b620000-0000-4000-8000-000000000099"})],
            lambda a: _error(a, "KB_NOT_FOUND", "Memory.get returned None"),
        ),
        "A scope that is not an object": (
            [_search("alice")],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "filters must contain at least one of"),
        ),
        "`searchMemories` sends `where` and the scope in one `filters`": (
            [
                _add({"user_id": "alice"}),
                (
                    "searchMemories",
                    {"scope": None, "text": "invoice", "limit": 5, "where": {"user_id": "alice"}},
                ),
            ],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "The kit's where grammar": (
            [
                _add({"user_id": "alice"}),
                (
                    "searchMemories",
                    {
                        "scope": {"user_id": "alice"},
                        "text": "invoice",
                        "limit": 5,
                        "where": {"topic": {"$eq": "billing"}},
                    },
                ),
            ],
            lambda a: _hits(a) == ["alice pays the invoice"],
        ),
        "Memory ids are counted per backend": (
            [_add({"user_id": "alice"})],
            lambda a: a["result"]["id"] == "6b620000-0000-4000-8000-000000000001",
        ),
    },
}

#: The pass-throughs: inputs a harness must hand to the library as they are.
PASSED: dict[str, dict[str, Probe]] = {
    "langgraph": {
        "an undeclared key is a label, not dropped": (
            [_add({"user": "alice", "agent": "bot"}), _search({"user": "alice", "tenant": "x"})],
            lambda a: a.get("result") == {"hits": []},
        ),
        "a None value is LangGraph's to refuse": (
            [_search({"user": None})],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "must be strings, but got NoneType"),
        ),
        "the empty scope is the empty prefix, every namespace": (
            [
                _add({"user": "alice", "agent": "bot"}),
                _add({"user": "bob", "agent": "bot"}, "bob pays the invoice"),
                _search({}),
            ],
            lambda a: sorted(_hits(a)) == ["alice pays the invoice", "bob pays the invoice"],
        ),
    },
    "adk": {
        "an absent user_id is absent, not None": (
            [_search({})],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "missing 1 required keyword-only argument: 'user_id'"),
        ),
        "a None user_id is None, which ADK answers": (
            [_search({"user_id": None})],
            lambda a: a.get("result") == {"hits": []},
        ),
        "an undeclared key is passed, for ADK to refuse": (
            [_search({"user_id": "alice", "tenant": "x"})],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "unexpected keyword argument 'tenant'"),
        ),
    },
    "mem0": {
        "an undeclared key is a filter, not dropped": (
            [_add({"user_id": "alice"}), _search({"user_id": "alice", "tenant": "x"})],
            lambda a: a.get("result") == {"hits": []},
        ),
        "an absent user_id is absent": (
            [_search({})],
            lambda a: _error(a, "KB_UNAUTHENTICATED", "filters must contain at least one of"),
        ),
        "an update's metadata reaches mem0, which keeps its data and drops its scope keys": (
            [
                _add({"user_id": "alice"}),
                (
                    "updateMemory",
                    {
                        "scope": {"user_id": "alice"},
                        "id": "6b620000-0000-4000-8000-000000000001",
                        "text": "alice pays the invoice",
                        "metadata": {"user_id": "bob", "topic": "travel"},
                    },
                ),
                ("searchMemories", {**_search({"user_id": "alice"})[1], "where": {"topic": "travel"}}),
            ],
            lambda a: [hit["id"] for hit in a["result"]["hits"]] == ["6b620000-0000-4000-8000-000000000001"],
        ),
    },
}


def _listed(name: str) -> list[str]:
    """The departures harnesses/NAME/README.md lists: each item of its Departures section."""
    text = (HARNESSES / name / "README.md").read_text(encoding="utf-8")
    section = text.split("## Departures", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^(?:\d+\.|-) (.+)$", section, re.MULTILINE)


@pytest.mark.parametrize("name", sorted(DEPARTURES))
def test_the_readme_lists_exactly_the_departures_held_here(name: str) -> None:
    """Every departure the README lists is held by a probe here, and every probe's departure is
    listed: a new departure cannot go unlisted or unchecked."""
    listed = _listed(name)
    held = list(DEPARTURES[name])
    assert len(listed) == len(held), f"{name}'s README lists {listed}; held here: {held}"
    for phrase in held:
        assert any(phrase in item for item in listed), f"{name}: no departure {phrase!r} in {listed}"


@pytest.mark.parametrize(
    ("name", "what"),
    [
        needing(name, name, what)
        for table in (DEPARTURES, PASSED)
        for name in sorted(table)
        for what in table[name]
    ],
)
def test_each_departure_and_pass_through_shows_the_librarys_answer(name: str, what: str) -> None:
    """The probe's input sent through the harness is answered by the library as the README
    says (its own error in its own words, or what it stored), never by the harness's own
    check."""
    shows = {**DEPARTURES[name], **PASSED[name]}[what][1]
    answers = _answers(name)[what]
    assert shows(answers[-1]), f"{name}, {what}: {answers}"
