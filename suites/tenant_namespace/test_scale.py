"""L4 scale: a tenant big enough to take another code path must not change anyone's scope.

Backends often search exactly below some number of rows and through an approximate index above
it (the reference: 2,000 rows in scope). Past that threshold the filter must still be pushed
into the search, not dropped or applied after an unfiltered top-k.
"""

from __future__ import annotations

from typing import Any

import pytest

from kbconform.conformance import Run
from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import ingest_batches, record

#: The isolation profile these tests are written for (schemas/read-filter.md).
PROFILES = ("tenant-namespace",)

#: More rows than common exact-search thresholds (1,000; 2,000), written in batches.
BIG = 2_500
BATCH = 500
#: acme's rows: twice what an approximate index's candidate list holds by default (pgvector's
#: hnsw.ef_search is 40), so that a filter applied after that list leaves bulk next to nothing
#: near acme's texts (pgvector's iterative scans exist for this).
SMALL = 80
K = 10


def _write(backend: Any, writer: Principal, contents: list[str], prefix: str, limit: int | None) -> list[str]:
    """Ingest ``contents`` in batches of BATCH, or of the manifest's ``maxWriteBatch`` when smaller;
    one id for each."""
    records = [
        record(f"docs/{prefix}-{n}.md", text, tenant=writer.tenant_id) for n, text in enumerate(contents)
    ]
    ids = ingest_batches(backend, writer, records, min(BATCH, limit or BATCH))
    assert len(set(ids)) == len(contents), f"ingest returned {len(set(ids))} ids for {len(contents)} records"
    return ids


@pytest.mark.kbconform(
    id="scale-01", rule="read-filter.md#top-k-inside-the-tenant", guide="every-facade", level="L4"
)
def test_a_tenant_past_the_exact_search_threshold_changes_no_ones_scope(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """bulk holds 2,500 chunks, acme 80 near-identical ones. acme's query (its exact top-k, each
    canary first for its own text), list, count and get return exactly its rows and no bulk id
    reads for it; bulk's top-k for acme's own texts is k of bulk's chunks (none of acme's, none
    missing), its own texts find k of its own chunks (an approximate search ranks as it may, scope
    is exact), and bulk counts and lists all of its rows. acme's 80 are twice what a filtered
    approximate search's candidate list holds by default: one that filters after that list
    gives bulk fewer than k for acme's texts."""
    rng = kbconform_run.rng("scale-01")
    backend = kbconform_backend
    facades = kbconform_run.manifest.read_facades
    bulk, acme = Principal("bulk", "agent-bulk"), Principal("acme", "agent-acme")
    tokens = [f"kbc{rng.getrandbits(48):012x}" for _ in range(BIG + 3 * SMALL)]
    topic = "rotate the deploy keys of the billing service"
    big_texts = [f"{t} {topic} bulk note {n}" for n, t in enumerate(tokens[:BIG])]
    big_ids = _write(backend, bulk, big_texts, "bulk", kbconform_run.manifest.max_write_batch)
    # three unique tokens each, so that no two of acme's texts embed alike even where a
    # backend's embedding hashes words into few buckets, and five words of acme's own, so that
    # acme's texts are one another's nearest neighbours, before any of bulk's
    own = [" ".join(tokens[BIG + 3 * n : BIG + 3 * n + 3]) for n in range(SMALL)]
    small_texts = [f"{t} {topic} acme staging runbook drill rota note {n}" for n, t in enumerate(own)]
    small_ids = _write(backend, acme, small_texts, "acme", kbconform_run.manifest.max_write_batch)
    assert not set(big_ids) & set(small_ids), "two tenants' chunks share an id"
    small = dict(zip(small_ids, small_texts, strict=True))

    for chunk_id, text in small.items():
        hits = list(backend.query(acme, text, SMALL, None))
        assert [h.id for h in hits][:1] == [chunk_id], f"acme's top hit for {chunk_id}'s own text"
        assert {h.id for h in hits} == set(small), "acme's top-k is not exactly its scope"
        assert backend.get(acme, chunk_id).document == text
    listed = [h.id for h in backend.list(acme, 100, 0)]
    assert sorted(listed) == sorted(small), "acme's list is not exactly its rows"
    if "count" in facades:
        assert backend.count(acme) == SMALL
    for chunk_id in rng.sample(big_ids, 5):
        with pytest.raises(NotFound):
            backend.get(acme, chunk_id)
        assert backend.get(bulk, chunk_id).id == chunk_id  # control: the owner reads it

    big = set(big_ids)
    for text in small.values():  # acme's texts: an unfiltered top-k would be acme's rows
        hits = [h.id for h in backend.query(bulk, text, K, None)]
        assert len(hits) == K, f"bulk's query returned {len(hits)} of {K} (a filter after top-k?)"
        assert set(hits) <= big, f"bulk's query returned acme's chunks {sorted(set(hits) - big)}"
    for index in rng.sample(range(BIG), 3):  # past the threshold a search may be approximate:
        hits = [h.id for h in backend.query(bulk, big_texts[index], K, None)]  # scope, not rank
        assert len(hits) == K, f"bulk's query for its own text returned {len(hits)} of {K}"
        assert set(hits) <= big, f"bulk's query returned acme's chunks {sorted(set(hits) - big)}"
    if "count" in facades:
        assert backend.count(bulk) == BIG
    seen: list[str] = []
    while len(seen) <= BIG:
        page = [h.id for h in backend.list(bulk, 1_000, len(seen))]
        if not page:
            break
        seen += page
    assert len(seen) == len(set(seen)), "bulk's pages repeat rows"
    assert set(seen) == big, "bulk's pages are not exactly its rows"
