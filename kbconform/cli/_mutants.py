"""``kbconform mutants``: every mutant against the tests named to kill it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kbconform.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _print_problems,
    check_output_path,
)
from kbconform.cli._options import _positive_int
from kbconform.errors import ContractViolation


def add(commands: Any) -> None:
    """``mutants``."""
    mutants = commands.add_parser(
        "mutants",
        help="run every mutant against the tests named to kill it; exit 1 if one survives",
        description="Runs every installed mutant set (entry-point group kbconform.mutants; the "
        "reference registers 'reference'). Each mutant is a backend with one invariant broken; it "
        "is killed when every suite test named for it (its killers) fails. By default each "
        "mutant's run selects only its killers (a partial run, which earns no level); a smoke "
        "(accept everything, reject everything) names none, runs every test and is killed when "
        "the run fails. --full runs every test against every mutant and lists all it fails. A "
        "killer that passes, is skipped, does not run or is not in the suites' catalogue leaves "
        "its mutant alive, and the output says which. First one backend of each set is opened "
        "and closed here (the control): a set whose backend does not open (a store client not "
        "installed) kills nothing, and its mutants are errors. Exit 0 when every mutant is killed, 1 when "
        "one survives or gives no sound report, 2 when no set can be loaded.",
    )
    mutants.add_argument("--json", metavar="PATH", help="write {'mutants': [...]} here")
    mutants.add_argument("--seed", type=int, default=0, help="seed for every run (default 0)")
    mutants.add_argument(
        "--full",
        action="store_true",
        help="run every suite test against each mutant, not only its killers (slower)",
    )
    mutants.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME",
        dest="sets",
        help="run only this mutant set (repeatable; default: every installed set)",
    )
    mutants.add_argument(
        "--mutant",
        action="append",
        default=[],
        metavar="NAME",
        dest="names",
        help="run only the mutant of this name (repeatable; default: every mutant of the sets)",
    )
    mutants.add_argument(
        "--variants",
        metavar="FILE",
        help="run the mutants a Python file lists (MUTANTS: each with name, breaks, killers and "
        "adapter, a factory of the file or a module:factory) instead of the installed sets: "
        "broken variants of your own adapter, no packaging needed",
    )
    mutants.add_argument(
        "--jobs", type=_positive_int, default=2, metavar="N", help="mutants run at once (default 2)"
    )
    mutants.add_argument(
        "--transport",
        choices=("stdio", "http", "in-process"),
        default="stdio",
        help="how the suites reach each mutant: served over harness-v1 on stdio (default) or HTTP, "
        "or loaded into the suites' process",
    )
    mutants.set_defaults(handler=_mutants)


def _mutants(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports
    from kbconform import runner
    from kbconform.mutants import from_file

    if arguments.json:
        check_output_path(arguments.json)
    started = time.perf_counter()
    if arguments.variants and arguments.sets:
        raise UsageError("give --variants or --set, not both")
    try:
        variants = from_file(arguments.variants) if arguments.variants else None
        with runner.interruptible():
            results = runner.run_mutants(
                seed=arguments.seed,
                workers=arguments.jobs,
                sets=arguments.sets,
                full=arguments.full,
                names=arguments.names,
                transport=arguments.transport,
                variants=variants,
            )
    except runner.RunError as error:
        raise UsageError(str(error)) from None
    except ContractViolation as error:
        print(f"kbconform: error: {error.code}: no mutants to run", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_USAGE
    width = max(len(r.name) for r in results)
    for result in results:
        if result.error is not None:
            print(f"{result.name:<{width}}  ERROR     the suites did not run:\n{result.error}")
            continue
        if result.not_applicable is not None:
            print(f"{result.name:<{width}}  n/a       {result.not_applicable}")
            continue
        state = "killed" if result.killed else "SURVIVED"
        shown = ", ".join(result.killed_by[:4]) + (" ..." if len(result.killed_by) > 4 else "")
        print(f"{result.name:<{width}}  {state:<8}  {shown or '-'}")
        for why in result.unmet:
            print(f"{'':<{width}}  not killed: {why}")
    if arguments.json:
        data = {
            "mutants": [
                {
                    "name": r.name,
                    "set": r.source,
                    "breaks": r.breaks,
                    "mode": r.mode,
                    "killers": r.expected,
                    "killed": r.killed,
                    "killed_by": r.killed_by,
                    "unmet": r.unmet,
                    "seconds": r.seconds,
                    **({"error": r.error} if r.error is not None else {}),
                    **({"notApplicable": r.not_applicable} if r.not_applicable is not None else {}),
                }
                for r in results
            ]
        }
        reports.write(arguments.json, json.dumps(data, indent=2) + "\n")
    survivors = [r.name for r in results if not r.killed and r.not_applicable is None]
    skipped = len(results) - len(survivors) - sum(r.killed for r in results)
    how = (
        "every test against each" if arguments.full else "each against its killers; smokes against every test"
    )
    alone = f", {skipped} in process only (not applicable through {arguments.transport})" if skipped else ""
    print(
        f"\n{sum(r.killed for r in results)} of {len(results) - skipped} mutants killed{alone} ({how}); "
        f"{time.perf_counter() - started:.1f} s"
    )
    return EXIT_OK if not survivors else EXIT_INVALID
