"""What the reference's query path pays to learn whether a scope is small, in one process.

    python benchmarks/query_scope.py [--rows N] [--repeat N] [--json PATH]

One tenant of ``--rows`` rows (default 2,500, more than the exact-search limit) and a small one
(40 rows) in a Chroma embedded collection. For each, interleaved, the CPU seconds of:

* the probe as it was: the scope's rows fetched with their text and metadata (``get`` of up to
  the limit and one more), only to count them;
* the probe now: the scope's ids alone (:func:`scope_ids`);
* the reference's whole ``query`` (Chroma's own, which ranks a scope within the exact-search
  limit exactly: a scope under 128 rows from one read of its rows);
* the store calls of the query path before Chroma ranked scopes itself (the ids probe, then
  the scope's rows by id, ranked exactly; or Chroma's approximate search past the limit),
  against Chroma's ``query`` alone;
* twenty one-id reads under the read filter (``get(ids=[id], where=...)``: ten of the tenant's
  own ids and ten others, the big tenant's rows for the small one and ids never written for the
  big one), Chroma evaluating the clause as it was, against the store now (the rows by id
  alone, the clause of text applied in Python).

Prints the medians and the ratio of the old probe to the new one (goal: the old one's CPU is
what a Chroma run spent on it; the new one a tenth of it), and of the old store path to
Chroma's ``query`` (a small scope: two store calls against one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from _bench import report

from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import record
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.read_filter import build_where
from kbconform_reference.namespace.stores import Rows, exact_top_k
from kbconform_reference.namespace.stores._protocol import Where, scope_ids
from kbconform_reference.namespace.stores.chroma import ChromaStore


def _cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def _ids_then_rows(store: ChromaStore, embedding: Any, scoped: Where, limit: int) -> object:
    """The store calls of the query path that counted the scope by its ids first."""
    allowed = scope_ids(store, scoped, limit + 1)
    if len(allowed) > limit:
        return store.nearest(embedding, 10, scoped)
    rows = store.get(ids=allowed, embeddings=True) if allowed else Rows((), (), ())
    return exact_top_k(rows, embedding, 10)


def _gets_in_chroma(store: ChromaStore, ids: list[str], scoped: Where) -> None:
    """One-id reads with Chroma evaluating the read filter (the store's read as it was)."""
    for chunk in ids:
        store._get_page([chunk], scoped, None, 0, False)


def _gets(store: ChromaStore, ids: list[str], scoped: Where) -> None:
    for chunk in ids:
        store.get(ids=[chunk], where=scoped)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2500)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    kb = KnowledgeBase(ChromaStore.ephemeral())
    figures: dict[str, float] = {}
    written: dict[str, list[str]] = {}
    for tenant, rows in (("big", args.rows), ("small", 40)):
        principal = Principal(tenant, "agent")
        for start in range(0, rows, 500):
            batch = [
                record(f"docs/{n}.md", f"row {n} of {tenant} deploy notes", tenant=tenant)
                for n in range(start, min(rows, start + 500))
            ]
            written.setdefault(tenant, []).extend(map(str, kb.ingest(principal, batch).ids))
        scoped = build_where(principal)
        limit = kb.settings.exact_search_limit
        embedding = kb.embedder(["deploy notes"])[0]
        store = kb.store
        assert isinstance(store, ChromaStore)
        times: dict[str, list[float]] = {"old_probe": [], "new_probe": [], "query": []}
        times |= {"old_store_path": [], "store_query": [], "old_gets": [], "gets": []}
        # another tenant's rows where there is one (found, not in scope), else ids never written
        foreign = [i for t, ids in written.items() if t != tenant for i in ids[:10]]
        probes = written[tenant][:10] + (foreign or [f"missing-{n}" for n in range(10)])
        calls: dict[str, Callable[[], object]] = {
            "old_probe": partial(store.get, where=scoped, limit=limit + 1),
            "new_probe": partial(scope_ids, store, scoped, limit + 1),
            "query": partial(kb.query, principal, "deploy notes", 10),
            "old_store_path": partial(_ids_then_rows, store, embedding, scoped, limit),
            "store_query": partial(store.query, embedding, 10, scoped),
            "old_gets": partial(_gets_in_chroma, store, probes, scoped),
            "gets": partial(_gets, store, probes, scoped),
        }
        for _ in range(args.repeat):
            for name, call in calls.items():
                times[name].append(_cpu(call))
        for name, values in times.items():
            figures[f"{tenant}_{name}_ms"] = round(1000 * statistics.median(values), 2)
        pairs = (
            ("probe", "old_probe", "new_probe"),
            ("path", "old_store_path", "store_query"),
            ("get", "old_gets", "gets"),
        )
        for ratio, before, now in pairs:
            figures[f"{tenant}_{ratio}_ratio"] = round(
                statistics.median(times[before]) / max(statistics.median(times[now]), 1e-9), 2
            )
    return report(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
