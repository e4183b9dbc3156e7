"""``kbconform run``: the suites against an adapter or a harness, a verdict per level, and the
run's outputs written by their writers (:mod:`kbconform.cli.writers`)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from kbconform._levels import LEVELS
from kbconform.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    check_output_path,
)
from kbconform.cli._options import _add_limits, _positive
from kbconform.cli.writers import WRITERS, Finished, dest
from kbconform.errors import ContractViolation

if TYPE_CHECKING:
    from kbconform.report import Report


def add(commands: Any) -> None:
    """``run``: what to test, how, and an option per output (one per writer)."""
    run = commands.add_parser(
        "run",
        help="the main job: run the conformance suites against your adapter or harness, a verdict per level",
        description="Runs the suites through pytest in a fresh process (installed pytest plugins "
        "not loaded, the caller's pytest configuration not read) and prints a table per level and "
        "suite. The verdict comes from the run's own report, never from pytest's exit code: exit 0 "
        "when every test passed or was declined, 1 on a failing test or a run without a sound "
        "report (crashed, stopped, incomplete, overran its deadline), 2 on a usage error.",
    )
    run.add_argument(
        "--adapter",
        default=None,
        metavar="MODULE:FACTORY",
        help="the Python adapter to test, served to the suites over harness-v1 by a child process "
        "(default: the reference knowledge base on Chroma embedded)",
    )
    target = run.add_mutually_exclusive_group()
    target.add_argument(
        "--harness",
        metavar="COMMAND",
        help="test the backend behind this harness-v1 harness, started from COMMAND (split as a "
        "shell would) and spoken to on its stdio; its stderr is kept beside --report",
    )
    target.add_argument(
        "--harness-url",
        metavar="URL",
        help="test the backend behind the harness-v1 server at URL (http://127.0.0.1:PORT)",
    )
    run.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="how --adapter or --harness is spoken to: stdio (default; one request at a time), or "
        "http (the adapter served by 'kbconform serve --http', the harness told where to listen by "
        "KBCONFORM_HARNESS_HTTP): callers at once reach it at once, so the concurrency suite can "
        "judge races",
    )
    run.add_argument("--level", choices=LEVELS, help="run up to this level (default: L4, all)")
    run.add_argument("--seed", type=int, help="seed for canary data and Hypothesis")
    run.add_argument(
        "--hypothesis-profile",
        "--profile",
        dest="hypothesis_profile",
        choices=("quick", "thorough"),
        metavar="NAME",
        help="the Hypothesis profile: how many examples each property test tries, quick (default) "
        "or thorough; --profile is its older spelling",
    )
    for writer in WRITERS:
        run.add_argument(writer.option, metavar="PATH", help=writer.help)
    run.add_argument(
        "--only",
        action="append",
        metavar="ID",
        help="run only the tests with this stable id or glob pattern (repeatable; quote ids with "
        "spaces: --only 'leak-03[an empty $or]', --only 'leak-*'); the report says the run is "
        "partial, and it earns no level",
    )
    run.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first failing test (pytest's -x): the tests not reached are reported as "
        "not run, and the run earns no level",
    )
    run.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing example Hypothesis finds, without shrinking it (faster)",
    )
    run.add_argument(
        "--shrink-budget",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="how long Hypothesis may shrink one test's failing example (default 60); past it, the "
        "example found so far is reported, and the report says it may not be the shortest",
    )
    _add_limits(run)
    run.set_defaults(handler=_run)


def _run(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports
    from kbconform import runner

    chosen = [(writer, path) for writer in WRITERS if (path := getattr(arguments, dest(writer)))]
    for _, path in chosen:
        check_output_path(path)
    if arguments.adapter and (arguments.harness or arguments.harness_url):
        raise UsageError("give --adapter, --harness or --harness-url, not two of them")
    if arguments.harness_url and arguments.transport != "stdio":
        raise UsageError(
            "--transport is how the kit speaks to --adapter or --harness; a --harness-url is HTTP already"
        )
    target: dict[str, Any] = (
        {"harness": arguments.harness}
        if arguments.harness
        else {"harness_url": arguments.harness_url}
        if arguments.harness_url
        else {"adapter": arguments.adapter or runner.DEFAULT_ADAPTER}
    )
    extra = [
        "-q",
        "--tb=no",  # no traceback frames: the summary gives each failure's message, the report all
        "-rN",  # the summary lists each failing test once, under its cause
        "-o",
        "verbosity_assertions=2",  # a failed comparison's message says all of it, not "use -v"
        *(["--exitfirst"] if arguments.fail_fast else []),
        *(argument for writer, path in chosen for argument in writer.pytest_arguments(path)),
    ]
    try:
        select = reports.matching(arguments.only) if arguments.only else None
    except ContractViolation as error:
        raise UsageError(f"--only: {error}") from None
    print(f"kbconform run: {' '.join(target).replace('_', ' ')} {' '.join(target.values())}", flush=True)
    started = time.perf_counter()
    outcome = _suites(
        arguments,
        **target,
        **({"transport": arguments.transport} if not arguments.harness_url else {}),
        level=arguments.level,
        seed=arguments.seed,
        profile=arguments.hypothesis_profile,
        select=select,
        shrink=not arguments.no_shrink,
        shrink_budget=arguments.shrink_budget,
        extra=extra,
        stream=True,
    )
    if not outcome.report:
        print(
            f"kbconform: error: the run gave no report (pytest exited {outcome.returncode}; "
            "see its output above); no verdict",
            file=sys.stderr,
        )
        for problem in outcome.problems:
            print(f"kbconform: error: {problem}", file=sys.stderr)
        return EXIT_USAGE if outcome.returncode == 4 else EXIT_INVALID
    finished = Finished(reports.Report.from_mapping(outcome.report), outcome.harness_log)
    for writer, path in chosen:
        writer.write(path, finished)
    for problem in outcome.problems:
        print(f"kbconform: error: {problem}", file=sys.stderr)
    _verdict(finished.report, outcome, time.perf_counter() - started)
    if target == {"adapter": runner.DEFAULT_ADAPTER}:  # a first run, against the reference
        print(
            "your own backend: 'kbconform new-adapter NAME' writes an adapter to fill in, then "
            "'kbconform run --adapter module:factory'; in another language, a harness-v1 harness: "
            "'kbconform run --harness CMD'. The guide: docs/adapter-guide.md"
        )
    return EXIT_OK if outcome.verdict == "pass" else EXIT_INVALID


def _verdict(report: Report, outcome: Any, seconds: float) -> None:
    """The run's verdict, what its levels mean, and its causes in one line each (the run's own
    summary, above, lists each cause's tests, fix and rerun command)."""
    from kbconform import report as reports

    failed, unknown = outcome.failed, report.unknown
    verdict = f"{len(failed)} failing" if failed else "every test passed or was declined"
    if outcome.problems:
        verdict = f"no sound verdict ({len(outcome.problems)} problems with the run, above); " + verdict
    if unknown:
        verdict += f"; {len(unknown)} tests not in the suite's catalogue (see above)"
    print(
        f"\n{verdict}; highest level earned: {report.earned or 'none'}"
        + (f", {report.design_line}" if report.design else "")
        + f"; seed {report.seed}; {seconds:.1f} s"
    )
    print(reports.level_line(report.data))
    if reports.price_line(report.data):
        print(reports.price_line(report.data))
    if reports.turns_line(report.data):
        print(reports.turns_line(report.data))
    failing = report.failing
    for call, tests in reports.not_implemented(failing):
        print(f"  NOT IMPLEMENTED {call}: {len(tests)} tests ended there ({reports.first_line(tests[0])})")
    made = report.causes
    if made:
        failures = sum(len(cause.tests) for cause in made)
        print(f"  {reports.causes_line(made, failures)}, each above with its tests, fix and rerun command:")
        for cause in made:
            print(f"  {cause.id} [{cause.severity}] {cause.title} ({len(cause.tests)})")
    if failing and report.unshrunk:
        print(f"  {reports.UNSHRUNK}")
    if report.halted:
        print(f"  stopped at the first failure (--fail-fast): {len(report.missing)} tests not reached")


def _suites(arguments: argparse.Namespace, **options: Any) -> Any:
    """Run the suites with the command's limits; an interrupted run leaves nothing behind."""
    from kbconform import runner

    try:
        with runner.interruptible():
            return runner.run_suites(
                call_timeout=arguments.call_timeout,
                run_timeout=arguments.run_timeout or runner.DEFAULT_RUN_TIMEOUT,
                workers=arguments.workers or 0,
                **options,
            )
    except runner.RunError as error:
        raise UsageError(str(error)) from None
