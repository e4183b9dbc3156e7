"""What a call's deadline costs: a thread hand-off per call against one per batch, in one process.

    python benchmarks/handoff.py [--calls 2000] [--rounds 7] [--machine] [--seed N] [--json PATH]

Every call into an adapter runs on a worker thread so that it can have a deadline. On the
in-memory reference, the same ``get`` is timed three ways, interleaved round by round (medians
per call, wall and CPU time of the process):

* direct: the backend's own method, no deadline (the floor);
* per_call: each call through the run's deadline, one hand-off each (``Run.open``'s backend);
* batched: the same calls in one ``Run.batched`` block, one hand-off for all, each call still
  within its own deadline.

``cpu_overhead_ratio`` is the CPU the deadline adds to a call over direct, per call against
batched (the figure that holds on a loaded machine); ``handoff_ratio`` is per_call / batched
wall time per call, which a loaded machine's scheduler bends (a thread that sleeps often is
woken ahead of one that computes). With ``--machine``, state-01 (the L4 state
machine, its invariant's reads batched) also runs with its checks unbatched, interleaved, and
``machine_ratio`` is the unbatched wall time over the batched one.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _bench import report, state_suite

from kbconform.adapter import load_adapter
from kbconform.conformance import Principals, Run, record

ADAPTER = "kbconform_reference.adapter:memory"


def _timed(work: Callable[[], object], calls: int) -> tuple[float, float]:
    """Wall and CPU seconds per call of ``work`` (which makes ``calls`` calls)."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def _machine_seconds(run: Run, suite: Any, batched: bool) -> tuple[float, float]:
    """One run of state-01 in every spoof mode, its invariant's reads batched or not: its wall
    and CPU seconds."""
    if not batched:
        run.batched = lambda block: block()  # type: ignore[method-assign]  # the unbatched control
    started, cpu = time.perf_counter(), time.process_time()
    try:
        for mode in run.manifest.spoof_modes:
            run.run_machine(suite.machine_for(run, mode))
    finally:
        run.__dict__.pop("batched", None)
    return time.perf_counter() - started, time.process_time() - cpu


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--machine", action="store_true", help="state-01 batched and unbatched too")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    run = Run.start(ADAPTER, partial(load_adapter, ADAPTER), seed=args.seed, profile="quick", level="L4")
    principals = Principals.for_manifest(run.manifest)
    guarded: Any = run.open()
    inner = guarded.inner
    tenant = principals.acme.tenant_id
    records = [record(f"docs/{n}.md", f"note {n}", tenant=tenant) for n in range(20)]
    ids = list(guarded.ingest(principals.acme, records).ids)
    asked = [ids[n % len(ids)] for n in range(args.calls)]

    def reads(backend: Any) -> Callable[[], object]:
        return lambda: [backend.get(principals.acme, chunk) for chunk in asked]

    ways: dict[str, Callable[[], object]] = {
        "direct": reads(inner),
        "per_call": reads(guarded),
        "batched": lambda: run.batched(reads(guarded)),
    }
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    calls_before = run.calls
    order = list(ways)
    for turn in range(args.rounds):  # each way first in turn: none always meets a cold machine
        for name in order[turn % 3 :] + order[: turn % 3]:
            work = ways[name]
            spent_wall, spent_cpu = _timed(work, args.calls)
            wall[name].append(spent_wall)
            cpu[name].append(spent_cpu)
    counted = run.calls - calls_before
    run.close(guarded)

    median_us = {name: statistics.median(values) * 1e6 for name, values in wall.items()}
    cpu_us = {name: statistics.median(values) * 1e6 for name, values in cpu.items()}
    figures: dict[str, float] = {
        **{f"{name}_wall_us": round(value, 2) for name, value in median_us.items()},
        **{f"{name}_cpu_us": round(value, 2) for name, value in cpu_us.items()},
        "handoff_ratio": round(median_us["per_call"] / median_us["batched"], 3),
        "cpu_overhead_ratio": round(
            max(cpu_us["per_call"] - cpu_us["direct"], 1e-3)
            / max(cpu_us["batched"] - cpu_us["direct"], 1e-3),
            2,
        ),
        "calls_counted": float(counted),
    }
    if args.machine:
        suite = state_suite("kbconform_state_suite")
        spent: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for turn in range(max(1, args.rounds // 3)):
            for batched in (turn % 2 == 0, turn % 2 == 1):
                spent[batched].append(_machine_seconds(run, suite, batched))
        for batched, name in ((True, "batched"), (False, "unbatched")):
            figures[f"machine_{name}_s"] = round(statistics.median(w for w, _ in spent[batched]), 2)
            figures[f"machine_{name}_cpu_s"] = round(statistics.median(c for _, c in spent[batched]), 2)
        figures["machine_ratio"] = round(figures["machine_unbatched_s"] / figures["machine_batched_s"], 3)
        figures["machine_cpu_ratio"] = round(
            figures["machine_unbatched_cpu_s"] / figures["machine_batched_cpu_s"], 3
        )
    run.shutdown()
    return report(
        figures,
        args.json,
        f"a call's deadline on {ADAPTER} ({args.calls} gets x {args.rounds} rounds, seed {args.seed}):",
    )


if __name__ == "__main__":
    main(sys.argv[1:])
