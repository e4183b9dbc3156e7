"""What the kb-grant reference's search costs over the stores' own queries, in one process.

    python benchmarks/bench_grant.py [--documents 500] [--rounds 200] [--latency-ms 5] [--json PATH]

One backend of the reference (Chroma embedded and Qdrant local mode, ``multi_store``) holds four
knowledge bases of one tenant, two on each store, ``--documents`` each, and as many of another
tenant on each store (so every query filters). The same search vector and limit (10) go, in
interleaved rounds, to:

* the direct Chroma query (``collection.query`` with ``where={"kb": {"$in": [...]}}``) and the
  direct Qdrant query (``query_points`` with the same match-any filter) over one store's two
  knowledge bases, exactly as the service asks them;
* the service's search over all four (two store groups: the fan-out);
* the service's search over one store's two (the single-store path).

Figures (medians): ``fanout_ratio`` = search over both / the slower direct query (goal
<= 1.3), ``fanout_vs_sum`` = search over both / (Chroma + Qdrant); ``single_chroma_ratio`` and
``single_qdrant_ratio`` = single-store search / that store's direct query (goal <= 1.1). Both
embedded engines hold the GIL while they compute (Chroma's Rust query included), so two groups
cannot compute at once in one process: their CPU adds up whatever the threads do. The fan-out is
parallel where a store waits: ``latency_*`` repeat the measure with ``--latency-ms`` of waiting
before each store call (the fault switch sleeping, as a store over a network would), where
``latency_fanout_ratio`` = search over both / (latency + the slower direct query) and
``latency_serial_ratio`` what asking the groups one after the other would cost on that scale.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _bench import report

from kbconform.adapter import BackendOptions
from kbconform_reference.grant.adapter import multi_store
from kbconform_reference.grant.service import KbGrantService

MODEL = "m-8a"
DIMENSION = 8
LIMIT = 10


def _fill(service: KbGrantService, tenant: str, store: str, count: int, rng: np.random.Generator) -> str:
    kb = service.create_kb(tenant, store, MODEL)
    for start in range(0, count, 1000):
        size = min(1000, count - start)
        docs = [
            {"text": f"{store}-{start + i}", "embedding": v.tolist()}
            for i, v in enumerate(rng.standard_normal((size, DIMENSION)))
        ]
        service.ingest(tenant, kb, docs)
    return kb


def _internal(service: KbGrantService, kbs: Sequence[str]) -> list[int]:
    rows = [service.catalogue.kb(kb) for kb in kbs]
    return [row.id for row in rows if row is not None]


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _medians(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Each call's median seconds over ``rounds`` interleaved rounds (after one warm-up each)."""
    for call in calls.values():
        call()
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            seconds[name].append(_timed(call))
    return {name: statistics.median(values) for name, values in seconds.items()}


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=500, help="documents per knowledge base")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=5.0, help="simulated wait per store call")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    adapter = multi_store()
    service = adapter.open(BackendOptions())
    assert isinstance(service, KbGrantService)
    rng = np.random.default_rng(17)
    try:
        for tenant in ("reader", "other"):
            service.create_tenant(tenant)
        kbs = {
            store: [_fill(service, "reader", store, args.documents, rng) for _ in range(2)]
            for store in ("chroma", "qdrant")
        }
        for store in ("chroma", "qdrant"):
            for _ in range(2):
                _fill(service, "other", store, args.documents, rng)
        query = rng.standard_normal(DIMENSION).tolist()

        from qdrant_client import models

        collection = service.stores["chroma"]._collections[MODEL]  # type: ignore[attr-defined]
        qdrant = service.stores["qdrant"]._client  # type: ignore[attr-defined]
        qdrant_name = service.stores["qdrant"]._names[MODEL]  # type: ignore[attr-defined]
        chroma_where = {"kb": {"$in": _internal(service, kbs["chroma"])}}
        qdrant_filter = models.Filter(
            must=[
                models.FieldCondition(key="kb", match=models.MatchAny(any=_internal(service, kbs["qdrant"])))
            ]
        )
        both = kbs["chroma"] + kbs["qdrant"]
        calls: dict[str, Callable[[], Any]] = {
            "chroma": lambda: collection.query(
                query_embeddings=[query],
                n_results=LIMIT,
                where=chroma_where,
                include=["documents", "metadatas", "distances"],
            ),
            "qdrant": lambda: qdrant.query_points(
                qdrant_name, query=query, query_filter=qdrant_filter, limit=LIMIT, with_payload=True
            ),
            "fanout": lambda: service.search("reader", both, query, LIMIT),
            "single_chroma": lambda: service.search("reader", kbs["chroma"], query, LIMIT),
            "single_qdrant": lambda: service.search("reader", kbs["qdrant"], query, LIMIT),
        }
        plain = _medians(calls, args.rounds)

        wait = args.latency_ms / 1000.0

        def latency(store: str | None = None) -> bool:
            time.sleep(wait)
            return False

        def waiting(call: Callable[[], Any]) -> Callable[[], Any]:
            return lambda: (time.sleep(wait), call())

        service._fails = latency
        slow = _medians(
            {
                "chroma": waiting(calls["chroma"]),
                "qdrant": waiting(calls["qdrant"]),
                "fanout": calls["fanout"],
            },
            max(10, args.rounds // 4),
        )
    finally:
        adapter.close(service)
        adapter.shutdown()

    slower = max(plain["chroma"], plain["qdrant"])
    slower_waiting = max(slow["chroma"], slow["qdrant"])
    figures = {
        "chroma_ms": plain["chroma"] * 1000,
        "qdrant_ms": plain["qdrant"] * 1000,
        "fanout_ms": plain["fanout"] * 1000,
        "single_chroma_ms": plain["single_chroma"] * 1000,
        "single_qdrant_ms": plain["single_qdrant"] * 1000,
        "fanout_ratio": plain["fanout"] / slower,
        "fanout_vs_sum": plain["fanout"] / (plain["chroma"] + plain["qdrant"]),
        "single_chroma_ratio": plain["single_chroma"] / plain["chroma"],
        "single_qdrant_ratio": plain["single_qdrant"] / plain["qdrant"],
        "latency_fanout_ms": slow["fanout"] * 1000,
        "latency_fanout_ratio": slow["fanout"] / slower_waiting,
        "latency_serial_ratio": (slow["chroma"] + slow["qdrant"]) / slower_waiting,
    }
    return report(figures, args.json)


if __name__ == "__main__":
    main()
