"""How long deciding every built-in mutant takes: warm killer-only runs against cold ones and
against whole-suite runs.

    python benchmarks/mutants.py [--jobs 2] [--set NAME] [--mutant NAME ...] [--json PATH]

Every mode runs in this process, one after the other, over the same mutants (the reference's
set, another set with --set, or the ones named), with the same seed and number of jobs:

* killers_s: ``kbconform mutants`` (the default): each mutant's run selects only its killers
  and is forked from a warm process; a smoke runs every test (goal: every built-in mutant
  decided in at most 150 s with 2 jobs on a 2-core machine);
* per_mutant_s: killers_s / mutants;
* cold_s: the same runs, each started cold (a new interpreter importing pytest and the kit);
* warm_speedup: cold_s / killers_s;
* full_s: ``kbconform mutants --full``: every test against every mutant, warm;
* speedup: full_s / killers_s.

Every mode must kill every mutant; the script exits 1 otherwise.
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


def _decide(
    jobs: int, chosen: str, names: Sequence[str], *, full: bool, warm: bool = True
) -> tuple[float, list[str]]:
    """Seconds to decide the mutants, and the ones that survived."""
    started = time.perf_counter()
    results = runner.run_mutants(workers=jobs, sets=[chosen], full=full, names=names, warm=warm)
    return time.perf_counter() - started, [r.name for r in results if not r.killed]


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    parser.add_argument("--set", default="reference", help="the mutant set (default reference)")
    parser.add_argument("--mutant", action="append", default=[], help="only this mutant (repeatable)")
    parser.add_argument("--json", metavar="PATH", help="write the figures here")
    arguments = parser.parse_args(argv)
    with runner.interruptible():
        killers_s, alive_fast = _decide(arguments.jobs, arguments.set, arguments.mutant, full=False)
        cold_s, alive_cold = _decide(arguments.jobs, arguments.set, arguments.mutant, full=False, warm=False)
        full_s, alive_full = _decide(arguments.jobs, arguments.set, arguments.mutant, full=True)
    count = len([m for m in discover([arguments.set]) if not arguments.mutant or m.name in arguments.mutant])
    figures = {
        "mutants": float(count),
        "jobs": float(arguments.jobs),
        "killers_s": round(killers_s, 2),
        "per_mutant_s": round(killers_s / count, 2),
        "cold_s": round(cold_s, 2),
        "warm_speedup": round(cold_s / killers_s, 2),
        "full_s": round(full_s, 2),
        "speedup": round(full_s / killers_s, 2),
    }
    print(
        f"{count} mutants, {arguments.jobs} jobs: killer-only {killers_s:.1f} s "
        f"({figures['per_mutant_s']:.2f} s a mutant; cold {cold_s:.1f} s, {figures['warm_speedup']:.2f}x), "
        f"full {full_s:.1f} s ({figures['speedup']:.2f}x)"
    )
    for mode, alive in (("killer-only", alive_fast), ("cold", alive_cold), ("full", alive_full)):
        if alive:
            print(f"{mode}: survived: {', '.join(alive)}", file=sys.stderr)
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if alive_fast or alive_cold or alive_full:
        raise SystemExit(1)
    return figures


if __name__ == "__main__":
    main()
