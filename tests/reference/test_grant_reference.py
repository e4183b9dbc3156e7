"""The kb-grant reference (Chroma embedded and Qdrant local mode at once, catalogue in SQLite).

The suites hold the reference to ``schemas/kb-grant.md`` through the adapter; these tests pin
its own mechanics through the protocol: the merged ranking against an exact float64 oracle
(with a control that the data tells normalized scores from raw ones), all or nothing over the
store groups, the per-group deadline, authorization before any store call, and writes, copies
and moves that a failing store leaves as they were.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch
from kbconform.adapter._manifest import Manifest, check_backend
from kbconform.errors import BackendUnavailable, ContractViolation, Forbidden, NotFound, Unauthenticated
from kbconform.profiles.kb_grant.protocol import GRANT_INVALID, MODEL_MISMATCH, KbGrantBackend
from kbconform_reference.grant import KbGrantService, unit_score
from kbconform_reference.grant.adapter import GROUP_DEADLINE_SECONDS, GrantAdapter, multi_store

DIMENSION = 8
#: How long a hanging store hangs: far past every bound the tests hold a search to.
HANG = 20.0
#: grant-08's clock (schemas/kb-grant.md): a search over a hanging store fails within the group
#: deadline, as much again and a second; a search that waited the hang would take far longer.
LIMIT = 2 * GROUP_DEADLINE_SECONDS + 1.0


@pytest.fixture(scope="module")
def adapter() -> Iterator[GrantAdapter]:
    opened = multi_store()
    yield opened
    opened.shutdown()


@pytest.fixture
def switch() -> FaultSwitch:
    return FaultSwitch()


@pytest.fixture
def service(adapter: GrantAdapter, switch: FaultSwitch) -> Iterator[KbGrantService]:
    backend = adapter.open(BackendOptions(store_fails=switch))
    assert isinstance(backend, KbGrantService)
    backend.create_tenant("ann")
    backend.create_tenant("bob")
    yield backend
    adapter.close(backend)


def documents(rng: np.random.Generator, count: int, tag: str) -> list[dict[str, Any]]:
    return [
        {"text": f"{tag}-{i}", "embedding": rng.standard_normal(DIMENSION).tolist()} for i in range(count)
    ]


def fill(
    service: KbGrantService, owner: str, store: str, docs: list[dict[str, Any]], model: str = "m-8a"
) -> str:
    kb = service.create_kb(owner, store, model)
    service.ingest(owner, kb, docs)
    return kb


def cosine(query: Sequence[float], vector: Sequence[float]) -> float:
    q, v = np.asarray(query, dtype=np.float64), np.asarray(vector, dtype=np.float64)
    return float(q @ v / (np.linalg.norm(q) * np.linalg.norm(v)))


def texts(
    service: KbGrantService, caller: str, kbs: list[str], query: Sequence[float], limit: int
) -> list[str]:
    return [hit.text for hit in service.search(caller, kbs, list(query), limit)]


def test_the_adapter_is_a_kb_grant_adapter_on_two_stores(
    adapter: GrantAdapter, service: KbGrantService
) -> None:
    """The manifest is a valid kb-grant manifest naming both engines; the backend has every facade."""
    manifest = Manifest.from_mapping(adapter.manifest)
    assert manifest.profile == "kb-grant"
    assert {store["engine"] for store in adapter.manifest["stores"]} == {"chroma", "qdrant"}
    assert isinstance(service, KbGrantBackend)
    check_backend(service, manifest)


def test_scores_from_either_engine_land_on_one_scale() -> None:
    """A Chroma distance 0, 1, 2 and a Qdrant similarity 1, 0, -1 are 1, 0.5, 0."""
    assert [unit_score("chroma", d) for d in (0.0, 1.0, 2.0)] == [1.0, 0.5, 0.0]
    assert [unit_score("qdrant", s) for s in (1.0, 0.0, -1.0)] == [1.0, 0.5, 0.0]
    with pytest.raises(ValueError, match="no score scale"):
        unit_score("faiss", 0.5)


# -- the merged ranking against the exact oracle ---------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_search_over_both_stores_is_the_exact_cosine_ranking(service: KbGrantService, seed: int) -> None:
    """G8: over KBs on Chroma and Qdrant (one of them granted), the hits are the true top-k by
    float64 cosine, scores (1 + cos) / 2 within 1e-4; the control: merging the engines' raw
    scores (Chroma's distance, Qdrant's similarity) ranks the same data differently, and the
    true top-k holds documents of both stores."""
    rng = np.random.default_rng(seed)
    corpus = {
        "chroma-a": documents(rng, 60, "ca"),
        "chroma-b": documents(rng, 25, "cb"),
        "qdrant-a": documents(rng, 60, "qa"),
    }
    kbs = [
        fill(service, "ann", "chroma", corpus["chroma-a"]),
        fill(service, "bob", "chroma", corpus["chroma-b"]),
        fill(service, "ann", "qdrant", corpus["qdrant-a"]),
    ]
    service.share_kb("bob", kbs[1], "ann")
    engines = {doc["text"]: name.split("-")[0] for name, docs in corpus.items() for doc in docs}
    for _ in range(4):
        query = rng.standard_normal(DIMENSION).tolist()
        limit = int(rng.integers(5, 40))
        exact = {doc["text"]: cosine(query, doc["embedding"]) for docs in corpus.values() for doc in docs}
        truth = sorted(exact, key=lambda text: -exact[text])[:limit]
        hits = service.search("ann", kbs, query, limit)
        assert [hit.text for hit in hits] == truth
        assert all(abs(hit.score - (1 + exact[hit.text]) / 2) <= 1e-4 for hit in hits)
        assert {hit.kb for hit in hits} <= set(kbs)
        raw = {text: (1 - cos if engines[text] == "chroma" else cos) for text, cos in exact.items()}
        assert sorted(raw, key=lambda text: -raw[text])[:limit] != truth
        assert {engines[text] for text in truth} == {"chroma", "qdrant"}


@pytest.mark.parametrize("store", ["chroma", "qdrant"])
def test_knowledge_bases_on_one_store_give_the_exact_ranking(service: KbGrantService, store: str) -> None:
    """G9: the single-store path (two KBs on one store) answers the exact ranking and scores; the
    KB of the same tenant on the other store is not searched (control: it would rank first)."""
    rng = np.random.default_rng(7)
    query = rng.standard_normal(DIMENSION).tolist()
    first, second = documents(rng, 40, "one"), documents(rng, 40, "two")
    kbs = [fill(service, "ann", store, first), fill(service, "ann", store, second)]
    other = "qdrant" if store == "chroma" else "chroma"
    fill(service, "ann", other, [{"text": "elsewhere", "embedding": query}])
    exact = {doc["text"]: cosine(query, doc["embedding"]) for doc in first + second}
    hits = service.search("ann", kbs, query, 15)
    assert [hit.text for hit in hits] == sorted(exact, key=lambda text: -exact[text])[:15]
    assert all(abs(hit.score - (1 + exact[hit.text]) / 2) <= 1e-4 for hit in hits)


def test_documents_carry_the_internal_id_of_their_knowledge_base(service: KbGrantService) -> None:
    """Stores are kept apart by the catalogue's internal id, never the external one."""
    kb = fill(service, "ann", "chroma", documents(np.random.default_rng(0), 3, "x"))
    row = service.catalogue.kb(kb)
    assert row is not None
    assert (row.external, type(row.id)) == (kb, int)
    assert {point.kb for point in service.stores["chroma"].points("m-8a", row.id)} == {row.id}
    assert service.stores["chroma"].count("m-8a", row.id) == 3
    assert service.stores["qdrant"].count("m-8a", row.id) == 0


# -- all or nothing, deadlines --------------------------------------------------------------------


@pytest.fixture
def spread(service: KbGrantService) -> list[str]:
    """Ann's two KBs, one on each store, each with ten documents."""
    rng = np.random.default_rng(11)
    return [fill(service, "ann", store, documents(rng, 10, store)) for store in ("chroma", "qdrant")]


QUERY = [1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25]


@pytest.mark.parametrize("failing", ["chroma", "qdrant"])
def test_one_failing_group_fails_the_whole_search(
    service: KbGrantService, switch: FaultSwitch, spread: list[str], failing: str
) -> None:
    """G10: BackendUnavailable, never the other store's hits (control: without the fault, hits
    of both stores)."""
    assert {hit.text.split("-")[0] for hit in service.search("ann", spread, QUERY, 20)} == {
        "chroma",
        "qdrant",
    }
    switch.set(FaultPlan(0, None, frozenset({failing})))
    with pytest.raises(BackendUnavailable, match=failing):
        service.search("ann", spread, QUERY, 20)
    assert switch.set(None) == 1


@pytest.mark.parametrize("kbs", ["both", "one"])
def test_a_hanging_store_fails_the_search_within_the_group_deadline(
    service: KbGrantService, switch: FaultSwitch, spread: list[str], kbs: str
) -> None:
    """G11: a store that hangs far longer than the deadline fails the search with
    BackendUnavailable within grant-08's clock, over both stores and on the single-store path;
    the backend answers the next search while that store call still hangs (control: the plan
    fails and hangs only the first call). The upper bounds are far below the hang, not a time a
    correct backend must keep on a loaded machine."""
    switch.set(FaultPlan(0, 1, frozenset({"qdrant"}), hang=HANG))
    started = time.monotonic()
    with pytest.raises(BackendUnavailable, match="did not answer within"):
        service.search("ann", spread if kbs == "both" else spread[1:], QUERY, 5)
    elapsed = time.monotonic() - started
    assert GROUP_DEADLINE_SECONDS <= elapsed < LIMIT
    started = time.monotonic()
    assert len(service.search("ann", spread, QUERY, 5)) == 5
    assert time.monotonic() - started < LIMIT
    switch.set(None)


def test_groups_are_asked_in_parallel(service: KbGrantService, spread: list[str]) -> None:
    """Each group runs on a thread of its own, at once: each store's call waits inside the
    switch until the other store's call is there too, and the search answers (a backend asking
    one store after the other waits until the group deadline fails it); control: each store is
    consulted from a worker thread."""
    import threading

    seen: dict[str, str] = {}
    together = threading.Barrier(2, timeout=HANG)  # only a backend that does not ask at once waits

    def meeting(store: str | None = None) -> bool:
        seen[str(store)] = threading.current_thread().name
        together.wait()
        return False

    service._fails = meeting
    assert len(service.search("ann", spread, QUERY, 5)) == 5
    assert set(seen) == {"chroma", "qdrant"}
    assert all(name.startswith("kb-grant-group") for name in seen.values())


# -- authorization before retrieval -----------------------------------------------------------------


def test_an_unreadable_knowledge_base_fails_the_search_before_any_store_is_asked(
    service: KbGrantService, switch: FaultSwitch, spread: list[str]
) -> None:
    """G4, G5: Bob's KB among Ann's is NotFound, exactly like a missing id, with zero
    consultations, even with its store failing; once granted, the same search consults both
    stores (control)."""
    foreign = fill(service, "bob", "qdrant", documents(np.random.default_rng(3), 4, "bob"))
    switch.set(FaultPlan(0, None))
    for kbs in ([*spread, foreign], [foreign], [*spread, "kb-never-made"]):
        with pytest.raises(NotFound) as raised:
            service.search("ann", kbs, QUERY, 5)
        assert type(raised.value) is NotFound
    assert switch.set(None) == 0
    service.share_kb("bob", foreign, "ann")
    assert len(service.search("ann", [*spread, foreign], QUERY, 30)) == 24
    assert switch.set(None) == 2


def test_rights_grants_and_revokes(service: KbGrantService, spread: list[str]) -> None:
    """G6: a grant makes a KB readable (search, get, list) and nothing more (administering is
    Forbidden); a revoke takes effect at once; a stranger gets NotFound everywhere."""
    kb = spread[0]
    for call in (
        lambda: service.get_kb("bob", kb),
        lambda: service.ingest("bob", kb, [{"text": "t", "embedding": QUERY}]),
        lambda: service.delete_kb("bob", kb),
    ):
        with pytest.raises(NotFound):
            call()
    assert service.list_kbs("bob") == []
    service.share_kb("ann", kb, "bob")
    assert service.get_kb("bob", kb).documents == 10
    assert [info.id for info in service.list_kbs("bob")] == [kb]
    assert len(service.search("bob", [kb], QUERY, 50)) == 10
    for call in (
        lambda: service.ingest("bob", kb, [{"text": "t", "embedding": QUERY}]),
        lambda: service.delete_kb("bob", kb),
        lambda: service.move_kb("bob", kb, "qdrant"),
        lambda: service.share_kb("bob", kb, "ann"),
    ):
        with pytest.raises(Forbidden):
            call()
    service.revoke_kb("ann", kb, "bob")
    with pytest.raises(NotFound):
        service.search("bob", [kb], QUERY, 5)
    assert service.list_kbs("bob") == []


@pytest.mark.parametrize("caller", [None, 7, "", "ghost"])
def test_no_identity_is_refused_on_every_facade(
    service: KbGrantService, spread: list[str], caller: Any
) -> None:
    """G2: None, a non-string, an empty string and a tenant never created are Unauthenticated."""
    kb = spread[0]
    calls = {
        "create_kb": lambda: service.create_kb(caller, "chroma", "m-8a"),
        "share_kb": lambda: service.share_kb(caller, kb, "bob"),
        "revoke_kb": lambda: service.revoke_kb(caller, kb, "bob"),
        "ingest": lambda: service.ingest(caller, kb, [{"text": "t", "embedding": QUERY}]),
        "search": lambda: service.search(caller, [kb], QUERY, 5),
        "get_kb": lambda: service.get_kb(caller, kb),
        "list_kbs": lambda: service.list_kbs(caller),
        "delete_kb": lambda: service.delete_kb(caller, kb),
        "copy_kb": lambda: service.copy_kb(caller, kb, "qdrant"),
        "move_kb": lambda: service.move_kb(caller, kb, "qdrant"),
    }
    for name, call in calls.items():
        with pytest.raises(Unauthenticated):
            call()
        assert service.get_kb("ann", kb).documents == 10, name


def test_knowledge_bases_of_two_models_are_not_searched_together(service: KbGrantService) -> None:
    """G7: KB_MODEL_MISMATCH; a vector of another dimension is KB_GRANT_INVALID (control: each
    model's KB alone answers)."""
    rng = np.random.default_rng(5)
    a = fill(service, "ann", "chroma", documents(rng, 3, "a"), "m-8a")
    b = fill(service, "ann", "qdrant", documents(rng, 3, "b"), "m-8b")
    with pytest.raises(ContractViolation) as raised:
        service.search("ann", [a, b], QUERY, 5)
    assert raised.value.code == MODEL_MISMATCH
    assert len(service.search("ann", [a], QUERY, 5)) == len(service.search("ann", [b], QUERY, 5)) == 3
    with pytest.raises(ContractViolation) as raised:
        service.search("ann", [a], QUERY[:4], 5)
    assert raised.value.code == GRANT_INVALID


# -- writes, copies and moves under faults ------------------------------------------------------------


def state(service: KbGrantService, tenant: str) -> dict[str, tuple[str, int, list[str]]]:
    """Every KB ``tenant`` reads: its store, document count and every text it holds."""
    return {
        info.id: (info.store, info.documents, sorted(texts(service, tenant, [info.id], QUERY, 1000)))
        for info in service.list_kbs(tenant)
    }


@pytest.mark.parametrize("failing", [1, None])
def test_a_move_that_fails_at_any_store_call_leaves_the_knowledge_base_whole(
    service: KbGrantService, switch: FaultSwitch, spread: list[str], failing: int | None
) -> None:
    """G13: a move's store calls (read the source, write the target, delete the source, and the
    undo) each fail in turn: BackendUnavailable, and every KB is as it was; a move that meets no
    fault rebinds the KB with every document (control)."""
    before = state(service, "ann")
    kb = spread[0]
    for passing in range(3):
        switch.set(FaultPlan(passing, failing))
        with pytest.raises(BackendUnavailable):
            service.move_kb("ann", kb, "qdrant")
        switch.set(None)
        assert state(service, "ann") == before, passing
    service.move_kb("ann", kb, "qdrant")
    after = state(service, "ann")
    assert after[kb] == ("qdrant", 10, before[kb][2])
    assert service.stores["chroma"].count("m-8a", service.catalogue.kb(kb).id) == 0  # type: ignore[union-attr]


@pytest.mark.parametrize("failing", [1, None])
def test_a_copy_that_fails_leaves_no_new_knowledge_base(
    service: KbGrantService, switch: FaultSwitch, spread: list[str], failing: int | None
) -> None:
    """G12, G13: a copy whose read or write fails creates nothing; one that meets no fault is
    the caller's alone, on the target store, with every document under new ids (control)."""
    service.share_kb("ann", spread[1], "bob")
    before = (state(service, "ann"), state(service, "bob"))
    for passing in range(2):
        switch.set(FaultPlan(passing, failing))
        with pytest.raises(BackendUnavailable):
            service.copy_kb("bob", spread[1], "chroma")
        switch.set(None)
        assert (state(service, "ann"), state(service, "bob")) == before, passing
    copy = service.copy_kb("bob", spread[1], "chroma")
    assert state(service, "bob")[copy] == ("chroma", 10, before[0][spread[1]][2])
    assert copy not in state(service, "ann")
    ids = {hit.id for hit in service.search("bob", [copy, spread[1]], QUERY, 1000)}
    assert len(ids) == 20


def test_an_ingest_whose_later_page_fails_stores_nothing(
    service: KbGrantService, switch: FaultSwitch, spread: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """All or nothing over pages: the pages written before the failing one are deleted again; a
    refused undo stays pending and the store answers nothing until it lands (fail closed)."""
    monkeypatch.setattr(service.stores["chroma"], "max_batch", 2)
    kb = spread[0]
    batch = documents(np.random.default_rng(9), 5, "late")
    switch.set(FaultPlan(2, 1))  # pages 1 and 2 land, page 3 fails, the undo lands
    with pytest.raises(BackendUnavailable):
        service.ingest("ann", kb, batch)
    switch.set(None)
    assert service.get_kb("ann", kb).documents == 10
    switch.set(FaultPlan(1, None))  # page 1 lands, page 2 fails, and so does the undo
    with pytest.raises(BackendUnavailable):
        service.ingest("ann", kb, batch)
    with pytest.raises(BackendUnavailable):
        service.search("ann", [kb], QUERY, 50)
    switch.set(None)
    assert service.get_kb("ann", kb).documents == 10
    assert len(service.ingest("ann", kb, batch)) == 5
    assert service.get_kb("ann", kb).documents == 15


def test_a_deleted_knowledge_base_is_gone_for_everyone_and_its_id_is_never_reused(
    service: KbGrantService, spread: list[str]
) -> None:
    """G14: after delete, owner and grantee get NotFound and list nothing of it; a new KB gets a
    new internal id and none of the old documents (control: the grantee read it before)."""
    kb = spread[0]
    service.share_kb("ann", kb, "bob")
    assert service.get_kb("bob", kb).documents == 10
    old = service.catalogue.kb(kb)
    service.delete_kb("ann", kb)
    for tenant in ("ann", "bob"):
        with pytest.raises(NotFound):
            service.get_kb(tenant, kb)
        assert kb not in {info.id for info in service.list_kbs(tenant)}
    fresh = service.create_kb("ann", "chroma", "m-8a")
    row = service.catalogue.kb(fresh)
    assert old is not None
    assert row is not None
    assert row.id > old.id
    assert service.get_kb("ann", fresh).documents == 0
