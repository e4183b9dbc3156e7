"""What the isolation layers cost over raw Chroma, and what they buy in recall, in one process.

    python benchmarks/overhead.py [--chunks 50000] [--tenants 500] [--queries 40] [--quick] [--json PATH]

The same records and the same precomputed embeddings go to both sides (Chroma embedded,
ephemeral collections in one client):

* ingest_ratio: reference ingest throughput / raw ``collection.add`` throughput (goal >= 0.9);
* query_ratio: median tenant-filtered query latency of the reference / raw ``collection.query``
  with the equivalent hand-written where (goal <= 1.5);
* recall_at_10_min: the minimum recall@10 of the reference over the smallest tenants, against
  brute force within the tenant (goal 1.0); raw Chroma's figure is printed beside it.

Tenant sizes follow a Zipf-like curve; the smallest tenants hold under 0.1% of the collection.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _bench import write

from kbconform.conformance import record
from kbconform.identity import Principal
from kbconform_reference import HashingEmbedding, KnowledgeBase
from kbconform_reference.namespace.read_filter import READABLE_VISIBILITY
from kbconform_reference.namespace.stores import MemoryStore, exact_top_k
from kbconform_reference.namespace.stores.chroma import ChromaStore

WORDS = [f"term{i}" for i in range(2000)]
BATCH = 1000


def tenant_sizes(chunks: int, tenants: int) -> list[int]:
    """Zipf-like sizes summing to ``chunks``; the last five tenants get 2 rows each."""
    tiny = min(5, tenants - 1)
    weights = 1.0 / np.arange(1, tenants - tiny + 1)
    rest = chunks - 2 * tiny
    sizes = np.maximum(1, np.floor(weights / weights.sum() * rest)).astype(int)
    sizes[0] += rest - sizes.sum()
    return [*map(int, sizes), *([2] * tiny)]


def make_records(chunks: int, tenants: int, seed: int = 11) -> list[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    records = []
    for t, size in enumerate(tenant_sizes(chunks, tenants)):
        tenant = f"tenant-{t:04d}"
        for i in range(size):
            content = " ".join(rng.choice(WORDS, 12))
            records.append(
                (
                    tenant,
                    record(f"docs/{i}.md", content, tenant=tenant),
                )
            )
    return records


class Precomputed:
    """An embedder that returns precomputed vectors, so both sides pay nothing for embedding."""

    def __init__(self, vectors: dict[str, np.ndarray], dimensions: int) -> None:
        self.vectors = vectors
        self.dimensions = dimensions

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.vectors[t] for t in texts])


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=50_000)
    parser.add_argument("--tenants", type=int, default=500)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="5,000 chunks and 100 tenants")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.chunks, args.tenants = 5_000, 100

    records = make_records(args.chunks, args.tenants)
    embed = HashingEmbedding()
    contents = [r["content"] for _, r in records]
    vectors = dict(zip(contents, embed(contents), strict=True))
    questions = [" ".join(np.random.default_rng(q).choice(WORDS, 3)) for q in range(args.queries)]
    vectors.update(zip(questions, embed(questions), strict=True))
    embedder = Precomputed(vectors, embed.dimensions)

    # raw Chroma: the same rows, ids and stamps, written with collection.add
    kb = KnowledgeBase(ChromaStore.ephemeral(), embedder=embedder)
    by_tenant: dict[str, list[dict[str, Any]]] = {}
    for tenant, chunk in records:
        by_tenant.setdefault(tenant, []).append(chunk)
    kb_ids: dict[int, str] = {}
    started = time.perf_counter()
    for tenant, group in by_tenant.items():
        for start in range(0, len(group), BATCH):
            batch = group[start : start + BATCH]
            result = kb.ingest(Principal(tenant), batch)
            kb_ids.update(zip(map(id, batch), result.ids, strict=True))
    kb_ingest = len(records) / (time.perf_counter() - started)
    stored = kb.store.get(embeddings=True)

    raw = ChromaStore.ephemeral()._collection
    position = {row_id: index for index, row_id in enumerate(stored.ids)}
    started = time.perf_counter()
    for group in by_tenant.values():  # the same batches as the reference wrote
        for start in range(0, len(group), BATCH):
            batch = [position[kb_ids[id(r)]] for r in group[start : start + BATCH]]
            raw.add(
                ids=[stored.ids[i] for i in batch],
                embeddings=stored.embeddings[batch],
                documents=[stored.documents[i] for i in batch],
                metadatas=[dict(stored.metadatas[i]) for i in batch],
            )
    raw_ingest = len(records) / (time.perf_counter() - started)

    sizes = {tenant: len(group) for tenant, group in by_tenant.items()}
    smallest = sorted(sizes, key=lambda t: (sizes[t], t))[:5]
    sampled = [*list(sizes)[:: max(1, len(sizes) // 20)], *smallest]
    kb_times, raw_times = [], []
    for question in questions:
        for tenant in sampled:
            where = {
                "$and": [{"tenantId": {"$in": [tenant]}}, {"visibility": {"$in": list(READABLE_VISIBILITY)}}]
            }
            started = time.perf_counter()
            raw.query(query_embeddings=[vectors[question]], n_results=10, where=where)
            raw_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            kb.query(Principal(tenant), question, 10)
            kb_times.append(time.perf_counter() - started)

    oracle = MemoryStore()
    oracle.upsert(stored.ids, stored.embeddings, stored.documents, stored.metadatas)
    kb_recall, raw_recall = [], []
    for tenant in smallest:
        rows = oracle.get(where={"tenantId": tenant}, embeddings=True)
        for question in questions[:10]:
            truth = {m.id for m in exact_top_k(rows, vectors[question], 10)}
            got = {h.id for h in kb.query(Principal(tenant), question, 10)}
            where = {"tenantId": {"$eq": tenant}}
            found = raw.query(query_embeddings=[vectors[question]], n_results=10, where=where)["ids"][0]
            kb_recall.append(len(got & truth) / len(truth))
            raw_recall.append(len(set(found) & truth) / len(truth))

    figures = {
        "chunks": float(len(records)),
        "tenants": float(len(sizes)),
        "smallest_tenant_share": min(sizes.values()) / len(records),
        "kb_ingest_per_s": kb_ingest,
        "raw_ingest_per_s": raw_ingest,
        "ingest_ratio": kb_ingest / raw_ingest,
        "kb_query_median_ms": statistics.median(kb_times) * 1000,
        "raw_query_median_ms": statistics.median(raw_times) * 1000,
        "query_ratio": statistics.median(kb_times) / statistics.median(raw_times),
        "recall_at_10_min": min(kb_recall),
        "raw_recall_at_10_min": min(raw_recall),
    }
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:,.4f}")
    return write(figures, args.json)


if __name__ == "__main__":
    main()
