"""Neo's knowledge base keeps the verdict recorded in harnesses/neo/verdict.json: the Neo harness
installs (``harnesses/neo/install``) and the whole catalogue run on it with the recorded seed gives
every test the recorded status and earns exactly the recorded levels. A changed verdict is news,
not noise: the failure names each changed id with its old and new status.

Re-record (after reading why it changed): ``python harnesses/record_verdict.py neo`` (a fresh run)
or ``python harnesses/record_verdict.py neo --from-report REPORT`` (the report of
``kbconform run --harness harnesses/neo/harness --transport http --seed 1 --report REPORT``);
then update the prose of ``harnesses/neo/VERDICT.md`` by hand.

Needs Node.js >= 20 with npm (the test fails without them: it is never skipped), g++, make and
python3 for the first install (it compiles better-sqlite3: 2-4 minutes on 2 cores), and the
``chroma`` server that
``kbconform[chroma]`` installs beside this interpreter. The run itself takes about 3 minutes: it
does not shrink failing examples (statuses are what it compares).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from tests.harness.installs import load_script, run_install

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = [pytest.mark.slow, pytest.mark.installs("neo")]

ROOT = Path(__file__).resolve().parents[2]
NEO = ROOT / "harnesses" / "neo"
VERDICT = NEO / "verdict.json"
#: The first install downloads the packages and compiles better-sqlite3; a second one is a no-op.
INSTALL_TIMEOUT = 1800  # seconds
RERECORD = (
    "If the change is understood, re-record it: `python harnesses/record_verdict.py neo` (a fresh run), "
    "or `python harnesses/record_verdict.py neo --from-report REPORT` with the report of "
    "`kbconform run --harness harnesses/neo/harness --transport http --seed {seed} --report REPORT`; "
    "then update harnesses/neo/VERDICT.md by hand."
)


def _recorder() -> Any:
    """harnesses/record_verdict.py, whose recorded form and comparison this test uses."""
    return load_script(NEO.parent / "record_verdict.py")


def _install() -> None:
    """``harnesses/neo/install``, with its output shown if it fails or overruns."""
    run_install(NEO / "install", INSTALL_TIMEOUT, cwd=ROOT)


def test_neo_gives_every_test_its_recorded_status_and_earns_the_recorded_levels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Neo run with the recorded seed is sound, has a harness log, and equals verdict.json:
    every status, every level, Neo's version, the seed and the profile."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    assert not missing, (
        f"{' and '.join(missing)} not on PATH: the Neo harness needs Node.js 20 or later with npm"
    )
    recorded = json.loads(VERDICT.read_text(encoding="utf-8"))
    assert recorded["tests"], "verdict.json records no test"
    assert set(recorded["levels"]) == {"L0", "L1", "L2", "L3", "L4"}, "verdict.json records other levels"
    _install()
    # The harness starts `chroma run`: the server kbconform[chroma] installs beside this interpreter.
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    # Statuses only: a failing example unshrunk fails as the shrunk one does, and shrinking
    # Neo's 73 failures took more than half of the run.
    outcome = runner.run_suites(
        harness=str(NEO / "harness"),
        seed=recorded["seed"],
        shrink=False,
        transport=recorded.get("transport", "stdio"),
    )
    assert outcome.problems == (), (
        "the Neo run gave no sound report:\n"
        + "\n".join(outcome.problems)
        + (f"\n{outcome.output[-6000:]}\nharness log (tail):\n{outcome.harness_log[-3000:]}")
    )
    assert outcome.harness_log.strip(), "the Neo harness wrote no log on stderr"
    recorder = _recorder()
    changed = recorder.changes(recorded, recorder.verdict_of(outcome.report, "neo"))
    assert not changed, (
        f"Neo's verdict changed (seed {recorded['seed']}), {len(changed)} differences "
        "(recorded -> now):\n  "
        + "\n  ".join(changed)
        + "\n"
        + RERECORD.format(seed=recorded["seed"])
        + f"\nthe run's output (tail):\n{outcome.output[-4000:]}"
    )


#: Causes whose failing call is a query over chunks at equal distance, a tie Neo breaks
#: differently from run to run: the replay holds if every other response is as recorded and
#: the query returns as many hits as recorded (N10's failure is the count: 5 of a scope of 6).
TIED = frozenset({"N10"})


def _kept(answers: list[Any], send: Any, op: str, params: Any) -> Any:
    """``send(op, params)``, its response kept in ``answers``."""
    response = send(op, params)
    answers.append(response)
    return response


def test_each_cause_of_the_verdict_replays_on_neo_from_its_transcript(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every cause VERDICT.md explains has a transcript (harnesses/neo/transcripts/<cause>.jsonl,
    the failing test causes.json names, which verdict.json records as failing), and replayed on
    the Neo harness (as ``kbconform replay`` does; one harness for them all, each transcript on
    backends of its own) its last response, the one its test failed on, is as recorded."""
    from kbconform.cli._replay import load, render
    from kbconform.harness import connect, replay

    causes: dict[str, str] = json.loads((NEO / "transcripts" / "causes.json").read_text(encoding="utf-8"))
    recorded = json.loads(VERDICT.read_text(encoding="utf-8"))["tests"]
    explained = (NEO / "VERDICT.md").read_text(encoding="utf-8")
    assert {cause: recorded.get(stable) for cause, stable in causes.items()} == dict.fromkeys(causes, "fail")
    assert [cause for cause in causes if f"**{cause}." not in explained] == []
    named = set(re.findall(r"^- \*\*(N\d+)\.", explained, re.MULTILINE))
    assert sorted(named - set(causes)) == ["N2"], "every cause but N2 (the declared design) has a transcript"
    _install()
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    adapter, _ = connect(command=str(NEO / "harness"), call_timeout=120)
    differing = {}
    try:
        for cause in causes:
            transcript = load(str(NEO / "transcripts" / f"{cause}.jsonl"), None)
            answers: list[Any] = []
            steps = replay(transcript.lines, partial(_kept, answers, adapter.send_raw))
            text, reproduced = render(transcript, steps, cause)
            if not reproduced and cause in TIED:
                recorded = transcript.lines[-1]["response"]["result"]["hits"]
                before = all(step.difference is None for step in steps[:-1])
                reproduced = before and len(answers[-1].get("result", {}).get("hits", ())) == len(recorded)
            if not reproduced:
                differing[cause] = text[-2000:]
    finally:
        adapter.shutdown()
    assert not differing, "\n".join(f"{cause}:\n{text}" for cause, text in differing.items())
