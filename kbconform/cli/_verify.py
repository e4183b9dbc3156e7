"""``kbconform verify`` (a report checked, and with ``--replay`` run again) and ``kbconform
replay`` (a failing test's transcript sent to a backend again)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kbconform.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _print_problems,
    read_report,
)
from kbconform.cli._options import _add_limits, _positive
from kbconform.cli._run import _suites
from kbconform.errors import ContractViolation


def add(commands: Any) -> None:
    """``verify`` and ``replay``."""
    verify = commands.add_parser(
        "verify",
        help="check a report against the installed suites; --replay reruns it",
        description="Proves that REPORT is well-formed evidence from the installed suites: strict "
        "JSON within size and depth bounds, a valid report-v1 with a valid manifest, the installed "
        "suite version and test-list hash, exactly the tests its manifest and level select (none "
        "missing, none added, none repeated, none recorded as missing), each in its catalogued "
        "suite and level, and level verdicts that follow from the test statuses. It cannot prove "
        "that the tests ran or that the statuses are true: a report is a claim. --replay makes it "
        "evidence: it reruns the report's tests with its adapter, seed, Hypothesis profile and level, checks "
        "that the adapter declares the same manifest, and fails when any outcome differs. "
        "Exit 0 valid (and replayed alike), 1 rejected or replayed differently, 2 unreadable.",
    )
    verify.add_argument("report", metavar="REPORT", help="a JSON report from 'kbconform run --report'")
    verify.add_argument(
        "--replay",
        action="store_true",
        help="rerun the report's tests against its adapter and compare every outcome",
    )
    _add_limits(verify)
    verify.set_defaults(handler=_verify)

    replay = commands.add_parser(
        "replay",
        help="send a failing test's transcript to a backend again and compare every response",
        description="Reads a transcript: a failing test's harness-v1 exchanges from a report "
        "(--test ID chooses the test; a report with one failing test with a transcript needs none) "
        "or a JSON Lines file (--save writes one). Sends each request to the backend again, with "
        "the backend handles it gives now, and compares each response with the recorded one "
        "(server clock stamps aside), naming each that differs. The ids the backend assigns (backend "
        "handles, created objects' ids) are mapped by their order of creation; a request naming an "
        "object this replay did not create does not reproduce. --standalone DIR writes the requests, "
        "the recorded responses and a standard-library script that replays them with the harness "
        "alone. Exit 0 when the failure "
        "reproduces: the last response, the one the failing test's check rests on, is as recorded "
        "(the recorded message says what the contract expected); 1 when it does not; 2 when the "
        "transcript or the command line is unusable, or the replay cannot run (the harness does not "
        "start, a backend does not open).",
    )
    replay.add_argument(
        "transcript", metavar="TRANSCRIPT", help="a report (JSON) or a transcript (JSON Lines)"
    )
    replay.add_argument(
        "--test", metavar="ID", help="the failing test of the report whose transcript to replay"
    )
    replay.add_argument("--save", metavar="PATH", help="write the transcript as JSON Lines here")
    replay.add_argument(
        "--standalone",
        metavar="DIR",
        help="write a reproduction to run with the harness alone (python3 DIR/replay.py HARNESS)",
    )
    target = replay.add_mutually_exclusive_group()
    target.add_argument("--harness", metavar="CMD", help="the harness-v1 harness to start (stdio)")
    target.add_argument("--url", metavar="URL", help="a harness-v1 server on http://127.0.0.1:PORT")
    target.add_argument(
        "--adapter", metavar="MODULE:FACTORY", help="a Python adapter, served over harness-v1"
    )
    replay.add_argument(
        "--call-timeout",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="deadline of each request (default 60)",
    )
    replay.set_defaults(handler=_replay_transcript)


def _verify(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports

    data = read_report(arguments.report)
    if data is None:
        return EXIT_INVALID
    try:
        reports.verify(data)
    except ContractViolation as error:
        print(f"{arguments.report}: {error.code}: rejected", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_INVALID
    manifest = data["manifest"]
    chosen = reports.selection(data)
    print(
        f"{arguments.report}: valid: suites {data['suiteVersion']} ({data['testListHash'][:19]}...), "
        f"{manifest['adapter']['name']} {manifest['adapter']['version']} on {manifest['backend']['name']} "
        f"{manifest['backend']['version']}, {len(data['tests'])} tests, highest level earned: "
        f"{reports.earned(data) or 'none'}"
        + (f", {reports.design_line(data)}" if reports.design(data) else "")
        + ("" if chosen is None else f"; partial: a run of {len(chosen)} selected tests earns no level")
    )
    return _replay(arguments, data) if arguments.replay else EXIT_OK


def _replay_transcript(arguments: argparse.Namespace) -> int:
    from kbconform.cli import _replay as replaying
    from kbconform.harness import to_jsonl

    try:
        recorded = replaying.load(arguments.transcript, arguments.test)
    except ContractViolation as error:
        print(f"{arguments.transcript}: {error.code}: not a transcript", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_USAGE
    if arguments.save:
        from kbconform import report as reports

        reports.write(arguments.save, to_jsonl(recorded.lines, test=recorded.test, message=recorded.message))
        print(f"{arguments.save}: {len(recorded.lines)} exchanges")
    if arguments.standalone:
        try:
            written = replaying.standalone(recorded, arguments.standalone)
        except ContractViolation as error:
            print(f"{arguments.standalone}: {error.code}: cannot write", file=sys.stderr)
            _print_problems(error.problems)
            return EXIT_USAGE
        print(
            f"{arguments.standalone}: {', '.join(written)} (python3 {arguments.standalone}/replay.py HARNESS)"
        )
    command = replaying.harness_command(arguments.harness, arguments.adapter)
    if command is None and arguments.url is None:
        if arguments.save or arguments.standalone:
            return EXIT_OK
        raise UsageError(
            "give the backend to replay against: --harness CMD, --url URL or --adapter MODULE:FACTORY"
        )
    try:
        steps, backend = replaying.replay(
            recorded, command=command, url=arguments.url, call_timeout=arguments.call_timeout
        )
    except replaying.Unreplayable as error:
        print(f"kbconform replay: KB_REPLAY_CANNOT_RUN: {error}", file=sys.stderr)
        return EXIT_USAGE
    text, reproduced = replaying.render(recorded, steps, backend)
    print(text)
    return EXIT_OK if reproduced else EXIT_INVALID


def _replay(arguments: argparse.Namespace, claimed: dict[str, Any]) -> int:
    """Rerun the report's tests as it records them (a partial run's selection only); exit 1
    when any outcome differs."""
    from kbconform import report as reports

    adapter = claimed["config"]["adapter"]
    harness = claimed["config"].get("harness")
    target = (
        {"adapter": adapter, "transport": "in-process"}
        if harness is None
        else {"harness": harness["command"]}
        if harness["transport"] == "stdio"
        else {"harness_url": harness["url"]}
    )
    if arguments.call_timeout is None:  # the report's deadline, unless the command says otherwise
        arguments.call_timeout = claimed["execution"]["callTimeout"]
    print(
        f"replaying with adapter {adapter}, seed {claimed['seed']}, "
        f"Hypothesis profile {claimed['profile']}, {claimed['level']}"
    )
    outcome = _suites(
        arguments,
        **target,
        level=claimed["level"],
        seed=claimed["seed"],
        profile=claimed["profile"],
        select=reports.selection(claimed),
        extra=["-q"],
    )
    differences = _differences(claimed, outcome.report) if outcome.report else []
    problems = [*outcome.problems, *differences]
    if not outcome.report:
        problems.insert(0, f"the replay gave no report (pytest exited {outcome.returncode})")
    if problems:
        print(
            f"{arguments.report}: KB_REPLAY_DIFFERS: the replay does not reproduce the report",
            file=sys.stderr,
        )
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(f"{arguments.report}: replayed: all {len(claimed['tests'])} outcomes reproduced")
    return EXIT_OK


def _differences(claimed: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    from kbconform.report import status_changes

    found: list[str] = []
    if claimed["manifest"] != replayed["manifest"]:
        changed = sorted(
            key
            for key in set(claimed["manifest"]) | set(replayed["manifest"])
            if claimed["manifest"].get(key) != replayed["manifest"].get(key)
        )
        found.append(f"the adapter now declares another manifest (differs in: {', '.join(changed)})")
    before = {test["id"]: test["status"] for test in claimed["tests"]}
    after = {test["id"]: test["status"] for test in replayed["tests"]}
    changed = status_changes(before, after)
    return found + [f"{stable}: {old} in the report, {new} now" for stable, old, new in changed]
