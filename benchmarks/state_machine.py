"""What the L4 state machine (state-01) costs on the reference, in one process.

    python benchmarks/state_machine.py [--adapter MODULE:FACTORY] [--profile quick|thorough]
                                       [--seed N] [--json PATH]

Runs the state machine once per spoof mode the adapter declares, as ``kbconform run`` does, and
prints:

* seconds: wall time of the whole L4 machine (goal: at most 90 s on the in-memory reference in
  the ``quick`` profile, on 2 cores);
* backend_calls: how much it did;
* model_ratio: total time / time spent inside backend calls (what the model, the strategies and
  Hypothesis cost on top of the backend itself, measured in the same process).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from _bench import report, state_suite

from kbconform.adapter import load_adapter
from kbconform.conformance import Run


class Timed:
    """A backend whose every facade call adds its duration and count to ``totals``."""

    def __init__(self, backend: Any, totals: dict[str, float]) -> None:
        self.inner = backend
        self._totals = totals

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            try:
                return value(*args)
            finally:
                self._totals["backend_seconds"] += time.perf_counter() - start
                self._totals["backend_calls"] += 1

        return timed


class TimedRun(Run):
    totals: dict[str, float]

    def open(self, options: Any = None) -> Any:
        return Timed(super().open(options), self.totals)

    def close(self, backend: Any) -> None:
        super().close(backend.inner if isinstance(backend, Timed) else backend)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="kbconform_reference.adapter:memory")
    parser.add_argument("--profile", choices=["quick", "thorough"], default="quick")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    suite = state_suite("kbconform_state_suite")

    loaded = Run.start(
        args.adapter, partial(load_adapter, args.adapter), seed=args.seed, profile=args.profile, level="L4"
    )
    run = TimedRun(loaded.adapter, loaded.manifest, loaded.seed, loaded.profile, "L4")
    run.totals = {"backend_seconds": 0.0, "backend_calls": 0.0}
    start = time.perf_counter()
    try:
        for mode in run.manifest.spoof_modes:
            run.run_machine(suite.machine_for(run, mode))
    finally:
        run.shutdown()
        loaded.shutdown()
    seconds = time.perf_counter() - start
    figures = {
        "seconds": round(seconds, 2),
        "backend_calls": run.totals["backend_calls"],
        "model_ratio": round(seconds / max(run.totals["backend_seconds"], 1e-9), 2),
    }
    return report(figures, args.json, f"state-01 on {args.adapter} ({args.profile}, seed {args.seed}):")


if __name__ == "__main__":
    main(sys.argv[1:])
