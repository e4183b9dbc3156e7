"""How long deciding every built-in mutant takes: killer-only runs against whole-suite runs.

    python benchmarks/mutants.py [--jobs 2] [--mutant NAME ...] [--json PATH]

Both modes run in this process, one after the other, over the same mutants (the reference's
set, or the ones named), with the same seed and number of jobs:

* killers_s: ``kbconform mutants`` (the default): each mutant's run selects only its killers;
  a smoke runs every test (goal: every built-in mutant decided in at most 120 s with 2 jobs on
  a 2-core machine);
* full_s: ``kbconform mutants --full``: every test against every mutant;
* speedup: full_s / killers_s.

Both modes must kill every mutant; the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kbconform import runner
from kbconform.mutants import discover


def _decide(jobs: int, names: Sequence[str], *, full: bool) -> tuple[float, list[str]]:
    """Seconds to decide the mutants, and the ones that survived."""
    started = time.perf_counter()
    results = runner.run_mutants(workers=jobs, sets=["reference"], full=full, names=names)
    return time.perf_counter() - started, [r.name for r in results if not r.killed]


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--mutant", action="append", default=[], help="only this mutant (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="write the figures here")
    arguments = parser.parse_args(argv)
    with runner.interruptible():
        killers_s, alive_fast = _decide(arguments.jobs, arguments.mutant, full=False)
        full_s, alive_full = _decide(arguments.jobs, arguments.mutant, full=True)
    count = len([m for m in discover(["reference"]) if not arguments.mutant or m.name in arguments.mutant])
    figures = {
        "mutants": float(count),
        "jobs": float(arguments.jobs),
        "killers_s": round(killers_s, 2),
        "full_s": round(full_s, 2),
        "speedup": round(full_s / killers_s, 2),
    }
    print(
        f"{count} mutants, {arguments.jobs} jobs: killer-only {killers_s:.1f} s, full {full_s:.1f} s "
        f"({figures['speedup']:.2f}x)"
    )
    for mode, alive in (("killer-only", alive_fast), ("full", alive_full)):
        if alive:
            print(f"{mode}: survived: {', '.join(alive)}", file=sys.stderr)
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if alive_fast or alive_full:
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
