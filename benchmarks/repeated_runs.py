"""The L4 state machine (state-01) run again and again in one process on the reference over
Chroma embedded: each run's CPU seconds and the process's resident memory after it, with the
adapter's Chroma client closed at shutdown (as the reference does) and left open (as it did).

    python benchmarks/repeated_runs.py [--runs N] [--seed N] [--mode overwrite|reject]
                                       [--collections N] [--json PATH]

Chroma keeps one in-process System for every ephemeral client, and about 3 MB of every
collection dropped in it, until its last client is closed. A process that runs the suites again
(the project's tests, ``kbconform mutants``, a benchmark) carried every earlier run's. The closed
runs go first: their memory is what a run leaves once its client is closed; then the runs that
leave it open, each adding what its collections left. Before them, the same for ``--collections``
collections of 100 rows each, opened, written and dropped through a client per round (three
rounds a side): the resident memory after each round's client is closed or left open.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from _bench import state_suite, write

from kbconform.adapter import load_adapter
from kbconform.conformance import Run
from kbconform_reference.namespace.adapter import ReferenceAdapter

ADAPTER = "kbconform_reference.adapter:chroma_embedded"


def _resident_mb() -> int:
    """The process's resident memory in MB (Linux), or 0 where it cannot be read."""
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return 0
    return int(status.split("VmRSS:")[1].split()[0]) // 1024


def _left_open(self: ReferenceAdapter) -> None:
    """The reference's shutdown as it was: its Chroma client dropped, never closed."""
    super(ReferenceAdapter, self).shutdown()
    self._embedded = None


def _rounds(collections: int, close: bool) -> list[int]:
    """Three rounds of ``collections`` collections of 100 rows through a client each, opened,
    written and dropped: the resident memory after each round's client is closed or dropped."""
    import numpy as np

    from kbconform_reference.embedding import HashingEmbedding
    from kbconform_reference.namespace.stores.chroma import ChromaStore, embedded_client

    ids = [f"row-{n}" for n in range(100)]
    vectors = np.asarray(HashingEmbedding()(ids), dtype=np.float32)
    metadatas = [{"tenantId": "acme", "sourcePath": f"docs/{n}.md"} for n in range(100)]
    resident = []
    for _ in range(3):
        client = embedded_client()
        for _ in range(collections):
            store = ChromaStore.ephemeral(client=client)
            store.upsert(ids, vectors, ids, metadatas)
            store.drop()
        if close:
            client.close()
        del client
        resident.append(_resident_mb())
    return resident


def _run(suite: Any, seed: int, mode: str) -> float:
    loaded = Run.start(ADAPTER, partial(load_adapter, ADAPTER), seed=seed, profile="quick", level="L4")
    start = time.process_time()
    try:
        loaded.run_machine(suite.machine_for(loaded, mode))
    finally:
        loaded.shutdown()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="state-01 runs a side (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=["overwrite", "reject"], default="overwrite")
    parser.add_argument("--collections", type=int, default=30)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {
        "collections_closed_mb": _rounds(args.collections, close=True),
        "collections_left_open_mb": _rounds(args.collections, close=False),
    }
    print(f"  {args.collections} collections a round, closed: {figures['collections_closed_mb']} MB")
    print(f"  {args.collections} collections a round, left open: {figures['collections_left_open_mb']} MB")
    if args.runs < 1:
        return write(figures, args.json)
    suite = state_suite("kbconform_state_suite_repeated")
    figures.update({"closed": [], "left_open": []})
    shutdown = ReferenceAdapter.shutdown
    try:
        for side in ("closed", "left_open"):
            if side == "left_open":
                ReferenceAdapter.shutdown = _left_open  # type: ignore[method-assign]
            for _ in range(args.runs):
                cpu = _run(suite, args.seed, args.mode)
                figures[side].append({"cpu_seconds": round(cpu, 2), "resident_mb": _resident_mb()})
    finally:
        ReferenceAdapter.shutdown = shutdown  # type: ignore[method-assign]
    for side in ("closed", "left_open"):
        runs = figures[side]
        figures[f"{side}_mb_per_run"] = round(
            (runs[-1]["resident_mb"] - runs[0]["resident_mb"]) / max(1, len(runs) - 1), 1
        )
        print(f"  {side}: " + ", ".join(f"{r['cpu_seconds']} s CPU, {r['resident_mb']} MB" for r in runs))
        print(f"  {side}: {figures[f'{side}_mb_per_run']} MB more a run")
    return write(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
