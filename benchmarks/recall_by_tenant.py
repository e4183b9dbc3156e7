"""Recall under tenant filters: what an approximate index gives a small tenant among many.

    python benchmarks/recall_by_tenant.py [--rows 100000] [--tenants 1000] [--queries 20]
        [--stores memory,chroma,qdrant,postgres] [--json PATH]

One corpus (clustered unit vectors of the reference's 256 dimensions; tenant sizes Zipf-like,
s = 1) is written once through the reference (in-memory store) and copied row for row into
each store. For one tenant at each selectivity (10%, 1%, 0.1%, 0.01% of the rows, the tenant
whose share is nearest on a log scale), ``--queries`` queries (a row of the tenant, perturbed)
ask for the top 10, and each answer is held to the exact top 10 within the tenant (float64
cosine):

* ``recall``: the mean recall@10 (the tenant's rows found / min(10, the tenant's size));
* ``foreign``: rows of other tenants returned, over every query (must be 0);
* ``ratio``: the median query time / the same store's median unfiltered query time, measured
  interleaved in one process.

Each store is asked twice: its own filtered query (Chroma's and Qdrant's ``where``/filter,
pgvector's HNSW under the row-level security policy, with iterative scans and without), and
the reference's ``query`` over that store (exact search for scopes of at most 2,000 rows, the
store's filtered query above). Qdrant runs in local mode (an exact scan in the process).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import write
from overhead import Precomputed

from kbconform.conformance import record
from kbconform.identity import Principal
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.stores import MemoryStore, Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import Acting, acting, scopes_reads

DIMENSIONS = 256
TARGETS = (0.1, 0.01, 0.001, 0.0001)
K = 10
OPERATOR = Principal("ops", role="operator")


def tenant_sizes(rows: int, tenants: int) -> list[int]:
    """Zipf sizes (s = 1) summing to ``rows``, each at least 1, largest first."""
    weights = 1.0 / np.arange(1, tenants + 1)
    sizes = np.maximum(1, np.floor(weights / weights.sum() * rows)).astype(int)
    sizes[0] += rows - int(sizes.sum())
    return [int(size) for size in sizes]


def corpus(rows: int, tenants: int, seed: int) -> tuple[list[str], np.ndarray]:
    """Each row's tenant, and unit vectors around 64 shared topics."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((64, DIMENSIONS))
    owners = [f"tenant-{t:04d}" for t, size in enumerate(tenant_sizes(rows, tenants)) for _ in range(size)]
    vectors = centers[rng.integers(0, len(centers), rows)] + 0.6 * rng.standard_normal((rows, DIMENSIONS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return owners, vectors.astype(np.float32)


def chosen_tenants(owners: list[str]) -> dict[float, str]:
    """For each target selectivity, the tenant whose share is nearest on a log scale."""
    counts: dict[str, int] = {}
    for owner in owners:
        counts[owner] = counts.get(owner, 0) + 1
    share = {tenant: count / len(owners) for tenant, count in counts.items()}
    return {t: min(share, key=lambda tenant: abs(np.log(share[tenant] / t))) for t in TARGETS}


class Side:
    """One way to ask a store: a filtered query for a tenant, and the same store unfiltered."""

    def __init__(
        self,
        name: str,
        filtered: Callable[[str, np.ndarray], list[str]],
        unfiltered: Callable[[np.ndarray], list[str]],
    ) -> None:
        self.name, self.filtered, self.unfiltered = name, filtered, unfiltered


def _store_side(name: str, store: VectorStore, scoped: Callable[[str], AbstractContextManager[None]]) -> Side:
    def filtered(tenant: str, vector: np.ndarray) -> list[str]:
        where = None if scopes_reads(store) else {"tenantId": {"$eq": tenant}}
        with scoped(tenant):
            return [m.id for m in store.query(vector, K, where)]

    def unfiltered(vector: np.ndarray) -> list[str]:
        with scoped(""):
            return [m.id for m in store.query(vector, K, None)]

    return Side(name, filtered, unfiltered)


def _reference_side(name: str, kb: KnowledgeBase, texts: dict[bytes, str], base: Side) -> Side:
    def filtered(tenant: str, vector: np.ndarray) -> list[str]:
        return [hit.id for hit in kb.query(Principal(tenant), texts[vector.tobytes()], K)]

    return Side(name, filtered, base.unfiltered)


def _acting_for(store: VectorStore) -> Callable[[str], AbstractContextManager[None]]:
    """How a call to ``store`` names its principal: PostgreSQL's policies need one (a tenant's
    read, or the operator's reach for an unfiltered query); the other stores ignore it."""
    if not scopes_reads(store):
        return lambda tenant: nullcontext()
    return lambda tenant: acting(
        Acting("query", Principal(tenant), "read") if tenant else Acting("query", OPERATOR, "operator")
    )


def _copy(stored: Rows, store: VectorStore) -> None:
    with acting(Acting("restore", OPERATOR, "operator")):
        for start in range(0, len(stored.ids), store.max_batch):
            page = slice(start, start + store.max_batch)
            assert stored.embeddings is not None
            store.upsert(
                stored.ids[page], stored.embeddings[page], stored.documents[page], stored.metadatas[page]
            )


def _sides(
    names: list[str], stored: Rows, embedder: Precomputed, texts: dict[bytes, str]
) -> tuple[list[Side], Callable[[], None]]:
    sides: list[Side] = []
    closers: list[Callable[[], None]] = []
    for name in names:
        if name == "qdrant":
            sides.append(_qdrant_side(stored))
            continue
        store: VectorStore
        if name == "memory":
            store = MemoryStore()
        elif name == "chroma":
            from kbconform_reference.namespace.stores.chroma import ChromaStore

            store = ChromaStore.ephemeral()
            closers.append(store.drop)
        elif name == "postgres":
            from kbconform_reference.namespace.stores.postgres import Database
            from kbconform_reference.namespace.stores.postgres_server import PostgresServer

            server = PostgresServer().start()
            database = Database(server)
            store = database.collection()
            closers += [database.close, server.stop]
        else:
            raise SystemExit(f"--stores: unknown store {name!r} (memory, chroma, qdrant, postgres)")
        started = time.perf_counter()
        _copy(stored, store)
        if name == "postgres":
            store.analyze()  # type: ignore[attr-defined]  # what autovacuum does after a load
        print(
            f"{name}: {len(stored.ids):,} rows written in {time.perf_counter() - started:.1f} s", flush=True
        )
        base = _store_side(name, store, _acting_for(store))
        sides.append(base)
        if name == "postgres":
            sides.append(_without_iterative_scans(database, base))
        sides.append(
            _reference_side(f"reference on {name}", KnowledgeBase(store, embedder=embedder), texts, base)
        )

    def close() -> None:
        for closer in reversed(closers):
            closer()

    return sides, close


def _without_iterative_scans(database: Any, base: Side) -> Side:
    """pgvector's HNSW with iterative scans off: set on the pool's one connection for each call."""

    def filtered(tenant: str, vector: np.ndarray) -> list[str]:
        with database.pool.connection() as connection:
            connection.execute("SET hnsw.iterative_scan = off")
            connection.commit()
        try:
            return base.filtered(tenant, vector)
        finally:
            with database.pool.connection() as connection:
                connection.execute(f"SET hnsw.iterative_scan = {database.iterative_scan}")
                connection.commit()

    return Side("postgres, iterative scans off", filtered, base.unfiltered)


def _qdrant_side(stored: Rows) -> Side:
    from qdrant_client import QdrantClient, models

    client = QdrantClient(location=":memory:")
    client.create_collection(
        "rows", vectors_config=models.VectorParams(size=DIMENSIONS, distance=models.Distance.COSINE)
    )
    assert stored.embeddings is not None
    started = time.perf_counter()
    for start in range(0, len(stored.ids), 1000):
        client.upsert(
            "rows",
            points=[
                models.PointStruct(
                    id=start + i,
                    vector=stored.embeddings[start + i].tolist(),
                    payload={"row": row_id, "tenant": str(stored.metadatas[start + i]["tenantId"])},
                )
                for i, row_id in enumerate(stored.ids[start : start + 1000])
            ],
        )
    print(f"qdrant: {len(stored.ids):,} rows written in {time.perf_counter() - started:.1f} s", flush=True)

    def ask(vector: np.ndarray, only: str | None) -> list[str]:
        condition = (
            None
            if only is None
            else models.Filter(
                must=[models.FieldCondition(key="tenant", match=models.MatchValue(value=only))]
            )
        )
        found = client.query_points("rows", query=vector.tolist(), query_filter=condition, limit=K).points
        return [str(point.payload["row"]) for point in found if point.payload]

    return Side(
        "qdrant (local mode)", lambda tenant, vector: ask(vector, tenant), lambda vector: ask(vector, None)
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--tenants", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--stores", default="memory,chroma,qdrant,postgres")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)

    owners, vectors = corpus(args.rows, args.tenants, args.seed)
    contents = [f"row {i}" for i in range(args.rows)]
    rng = np.random.default_rng(args.seed + 1)
    tenants = chosen_tenants(owners)
    rows_of = {
        tenant: [i for i, owner in enumerate(owners) if owner == tenant] for tenant in tenants.values()
    }
    queries: dict[str, list[np.ndarray]] = {}
    for tenant, rows in rows_of.items():
        picked = vectors[rng.choice(rows, args.queries)] + 0.3 * rng.standard_normal(
            (args.queries, DIMENSIONS)
        )
        queries[tenant] = list((picked / np.linalg.norm(picked, axis=1, keepdims=True)).astype(np.float32))
    asked = [v for vs in queries.values() for v in vs]
    texts = {v.tobytes(): f"query {n}" for n, v in enumerate(asked)}
    embedder = Precomputed(
        {
            **dict(zip(contents, vectors, strict=True)),
            **{t: np.frombuffer(b, np.float32) for b, t in texts.items()},
        },
        DIMENSIONS,
    )

    started = time.perf_counter()
    writer = KnowledgeBase(MemoryStore(max_batch=5_000), embedder=embedder)
    ids: list[str] = []
    for tenant in dict.fromkeys(owners):
        batch = [i for i, owner in enumerate(owners) if owner == tenant]  # owners are grouped
        for start in range(0, len(batch), 5_000):
            part = batch[start : start + 5_000]
            records = [record(f"docs/{i}.md", contents[i], tenant=tenant) for i in part]
            ids += writer.ingest(Principal(tenant), records).ids
    stored = writer.store.get(embeddings=True)
    print(
        f"corpus: {args.rows:,} rows, {args.tenants:,} tenants, written through the reference in "
        f"{time.perf_counter() - started:.1f} s",
        flush=True,
    )
    owner_of = dict(zip(ids, owners, strict=True))
    truth: dict[str, list[set[str]]] = {}
    for tenant, rows in rows_of.items():
        own = vectors[rows].astype(np.float64)
        scores = np.stack(queries[tenant]).astype(np.float64) @ own.T
        truth[tenant] = [{ids[rows[j]] for j in np.argsort(-row, kind="stable")[:K]} for row in scores]

    sides, close = _sides(args.stores.split(","), stored, embedder, texts)
    results: list[dict[str, Any]] = []
    try:
        for side in sides:
            for target, tenant in tenants.items():
                recalls, foreign, times, base_times = [], 0, [], []
                for vector, wanted in zip(queries[tenant], truth[tenant], strict=True):
                    started = time.perf_counter()
                    side.unfiltered(vector)
                    base_times.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    got = side.filtered(tenant, vector)
                    times.append(time.perf_counter() - started)
                    foreign += sum(owner_of.get(i) != tenant for i in got)
                    recalls.append(len(set(got) & wanted) / len(wanted))
                results.append(
                    {
                        "store": side.name,
                        "target": target,
                        "tenant_rows": len(rows_of[tenant]),
                        "selectivity": len(rows_of[tenant]) / args.rows,
                        "recall": float(np.mean(recalls)),
                        "foreign": foreign,
                        "ratio": statistics.median(times) / statistics.median(base_times),
                        "median_ms": statistics.median(times) * 1000,
                    }
                )
    finally:
        close()

    print("| store | selectivity | tenant rows | recall@10 | foreign rows | time vs unfiltered |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['store']} | {r['selectivity']:.4%} | {r['tenant_rows']:,} | {r['recall']:.3f} | "
            f"{r['foreign']} | {r['ratio']:.2f}x ({r['median_ms']:.1f} ms) |"
        )
    figures = {"rows": args.rows, "tenants": args.tenants, "queries": args.queries, "results": results}
    return write(figures, args.json)


if __name__ == "__main__":
    main()
