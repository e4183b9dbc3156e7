"""Agent-memory libraries from PyPI keep the verdicts recorded beside their harnesses
(harnesses/mem0, harnesses/langgraph, harnesses/adk), and so does Chroma's Python server
(harnesses/chroma_server, store-tenancy): each harness installs its pinned library into a
virtualenv of its own (``harnesses/NAME/install``), the whole catalogue of its profile run on it
with the recorded seed gives every test the recorded status and earns exactly the recorded
levels, and each cause its VERDICT.md explains replays from its transcript. A changed verdict is
news, not noise: the failure names each changed id with its old and new status.

Re-record (after reading why it changed): ``python harnesses/record_verdict.py NAME`` (a fresh
run) or ``python harnesses/record_verdict.py NAME --from-report REPORT``; then update the prose of
``harnesses/NAME/VERDICT.md`` by hand. The first install downloads the pinned packages (about 20
s each); the runs take seconds.
"""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from tests.harness.installs import load_script, needing, run_install

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HARNESSES = ROOT / "harnesses"
LIBRARIES = ("mem0", "langgraph", "adk")
#: Each harness whose verdict is recorded, with its isolation profile.
PROFILES = {**dict.fromkeys(LIBRARIES, "memory-scope"), "chroma_server": "store-tenancy"}
INSTALL_TIMEOUT = 900  # seconds


def _recorder() -> Any:
    """harnesses/record_verdict.py, whose recorded form and comparison these tests use."""
    return load_script(HARNESSES / "record_verdict.py")


def _install(name: str) -> None:
    """``harnesses/NAME/install``, with its output shown if it fails or overruns."""
    run_install(HARNESSES / name / "install", INSTALL_TIMEOUT)


@pytest.mark.parametrize("name", [needing(name, name) for name in PROFILES])
def test_the_library_gives_every_test_its_recorded_status(name: str) -> None:
    """The run with the recorded seed is sound, has a harness log, and equals verdict.json:
    every status, every level, the library's version, the seed and the profile."""
    recorded = json.loads((HARNESSES / name / "verdict.json").read_text(encoding="utf-8"))
    assert recorded["tests"], "verdict.json records no test"
    assert set(recorded["levels"]) == {"L0", "L1", "L2", "L3", "L4"}
    _install(name)
    outcome = runner.run_suites(
        harness=str(HARNESSES / name / "harness"),
        seed=recorded["seed"],
        shrink=False,
        transport=recorded.get("transport", "stdio"),
    )
    assert outcome.problems == (), (
        f"the {name} run gave no sound report:\n"
        + "\n".join(outcome.problems)
        + f"\n{outcome.output[-6000:]}\nharness log (tail):\n{outcome.harness_log[-3000:]}"
    )
    assert outcome.report is not None
    assert outcome.report["manifest"]["isolationProfile"] == PROFILES[name]
    recorder = _recorder()
    changed = recorder.changes(recorded, recorder.verdict_of(outcome.report, name))
    assert not changed, (
        f"{name}'s verdict changed (seed {recorded['seed']}), {len(changed)} differences "
        "(recorded -> now):\n  "
        + "\n  ".join(changed)
        + f"\nre-record with `python harnesses/record_verdict.py {name}` once the change is understood, "
        f"and update harnesses/{name}/VERDICT.md\nthe run's output (tail):\n{outcome.output[-4000:]}"
    )


def _kept(open_backends: set[str], send: Any, op: str, params: Any) -> Any:
    """``send(op, params)``, keeping in ``open_backends`` each backend opened and not closed."""
    response = send(op, params)
    if op == "open" and "result" in response:
        open_backends.add(response["result"]["backend"])
    elif op == "close":
        open_backends.discard(params["backend"])
    return response


@pytest.mark.parametrize("name", [needing(name, name) for name in PROFILES])
def test_each_cause_of_the_verdict_replays_from_its_transcript(name: str) -> None:
    """Every cause VERDICT.md explains (``**C1.``) has a transcript (transcripts/<cause>.jsonl,
    of the test causes.json names, which verdict.json records as failing), and replayed on the
    harness (as ``kbconform replay`` does) every response is as recorded. The transcripts replay
    in one harness session, each backend a transcript left open closed after it, as the suite closes
    a test's backends: what a closed backend held is the harness's to reuse (the Chroma server
    harness keeps a server per plan, emptied by the next provisionStore, as in the recorded run)."""
    from kbconform.cli._replay import load, render
    from kbconform.harness import connect, replay

    folder = HARNESSES / name
    causes: dict[str, str] = json.loads((folder / "transcripts" / "causes.json").read_text(encoding="utf-8"))
    recorded = json.loads((folder / "verdict.json").read_text(encoding="utf-8"))["tests"]
    explained = (folder / "VERDICT.md").read_text(encoding="utf-8")
    assert {cause: recorded.get(stable) for cause, stable in causes.items()} == dict.fromkeys(causes, "fail")
    named = set(re.findall(r"^- \*\*(C\d+)\.", explained, re.MULTILINE))
    assert named == set(causes), "every cause VERDICT.md explains has a transcript, and no other"
    _install(name)
    adapter, _ = connect(command=str(folder / "harness"), call_timeout=120)
    differing = {}
    try:
        for cause in causes:
            transcript = load(str(folder / "transcripts" / f"{cause}.jsonl"), None)
            open_backends: set[str] = set()
            steps = replay(transcript.lines, partial(_kept, open_backends, adapter.send_raw))
            text, reproduced = render(transcript, steps, cause)
            if not reproduced:
                differing[cause] = text[-2000:]
            for handle in sorted(open_backends):
                closed = adapter.send_raw("close", {"backend": handle})
                assert "result" in closed, f"{cause}: close answered {closed}"
    finally:
        adapter.shutdown()
    assert not differing, "\n".join(f"{cause}:\n{text}" for cause, text in differing.items())


def _imported(path: Path) -> set[str]:
    source = path.read_text(encoding="utf-8")
    return set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_][\w]*)", source, re.MULTILINE))


def test_a_harness_needs_no_kbconform_and_no_network_module() -> None:
    """A harness is the library's side of the wire: it imports neither kbconform nor a network
    client of its own (the library's own imports are its business), standard library, the
    harness runtime (kbharness, a file of the kit loaded by path) and the library only; the
    runtime and the shared embedding import the standard library alone."""
    for name in LIBRARIES:
        imported = _imported(HARNESSES / name / "harness.py")
        assert {"kbharness", "sys"} <= imported, (name, imported)  # control: the imports are read
        assert "kbconform" not in imported, name
        assert not imported & {"requests", "httpx", "urllib3", "socket"}, (name, imported)
    for shared in (
        ROOT / "kbconform" / "_harness_runtime" / "kbharness.py",
        HARNESSES / "hashing_embedding.py",
    ):
        imported = _imported(shared)
        assert "json" in imported or "hashlib" in imported, shared  # control
        assert imported - {"__future__"} <= set(sys.stdlib_module_names), (shared, imported)
