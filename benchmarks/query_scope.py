"""What the reference's query path pays to learn whether a scope is small, in one process.

    python benchmarks/query_scope.py [--rows N] [--repeat N] [--json PATH]

One tenant of ``--rows`` rows (default 2,500, more than the exact-search limit) and a small one
(40 rows) in a Chroma embedded collection. For each, interleaved, the CPU seconds of:

* the probe as it was: the scope's rows fetched with their text and metadata (``get`` of up to
  the limit and one more), only to count them;
* the probe now: the scope's ids alone (:func:`scope_ids`);
* the reference's whole ``query`` (probe, then the exact rows or the store's own search).

Prints the medians and the ratio of the old probe to the new one (goal: the old one's CPU is
what a Chroma run spent on it; the new one a tenth of it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import record
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.read_filter import build_where
from kbconform_reference.namespace.stores._protocol import scope_ids
from kbconform_reference.namespace.stores.chroma import ChromaStore


def _cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2500)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    kb = KnowledgeBase(ChromaStore.ephemeral())
    figures: dict[str, float] = {}
    for tenant, rows in (("big", args.rows), ("small", 40)):
        principal = Principal(tenant, "agent")
        for start in range(0, rows, 500):
            batch = [
                record(f"docs/{n}.md", f"row {n} of {tenant} deploy notes", tenant=tenant)
                for n in range(start, min(rows, start + 500))
            ]
            kb.ingest(principal, batch)
        scoped = build_where(principal)
        limit = kb.settings.exact_search_limit
        times: dict[str, list[float]] = {"old_probe": [], "new_probe": [], "query": []}
        calls: dict[str, Callable[[], object]] = {
            "old_probe": partial(kb.store.get, where=scoped, limit=limit + 1),
            "new_probe": partial(scope_ids, kb.store, scoped, limit + 1),
            "query": partial(kb.query, principal, "deploy notes", 10),
        }
        for _ in range(args.repeat):
            for name, call in calls.items():
                times[name].append(_cpu(call))
        for name, values in times.items():
            figures[f"{tenant}_{name}_ms"] = round(1000 * statistics.median(values), 2)
        figures[f"{tenant}_probe_ratio"] = round(
            statistics.median(times["old_probe"]) / max(statistics.median(times["new_probe"]), 1e-9), 1
        )
    for name, value in figures.items():
        print(f"  {name}: {value:g}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
