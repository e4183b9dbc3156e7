"""Read side: every facade filtered by the principal, checked client clauses, fail closed, exact top-k."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pytest

from kbconform.errors import BackendUnavailable, ContractViolation, NotFound, Unauthenticated
from kbconform_reference import KnowledgeBase, Settings
from kbconform_reference.namespace.stores import MemoryStore, VectorStore, exact_top_k
from tests.reference.conftest import ACME, BETA, READER, SHARED_WRITER, chunk


@pytest.fixture
def seeded(kb: KnowledgeBase) -> dict[str, str]:
    """Canary chunks: one per tenant and one shared; returns id by owner."""
    ids = {
        "acme": kb.ingest(ACME, [chunk("acme.md", "canary apple orchard acme")]).ids[0],
        "beta": kb.ingest(BETA, [chunk("beta.md", "canary banana grove beta", tenant="beta")]).ids[0],
        "shared": kb.ingest(
            SHARED_WRITER, [chunk("s.md", "canary shared handbook", tenant="neo-shared", repo="neo")]
        ).ids[0],
    }
    assert len(kb.store.get().ids) == 3  # the seed itself is checked
    return ids


FACADES = ("query", "list", "count", "ask")


def visible(kb: KnowledgeBase, principal: Any, facade: str) -> set[str]:
    """The tenants whose canaries ``facade`` shows ``principal``."""
    if facade == "query":
        return {h.metadata["tenantId"] for h in kb.query(principal, "canary", 10)}
    if facade == "list":
        return {h.metadata["tenantId"] for h in kb.list(principal)}
    assert facade == "ask"
    return {h.metadata["tenantId"] for h in kb.ask(principal, "canary").sources}


@pytest.mark.parametrize("facade", FACADES)
def test_each_tenant_sees_its_own_canary_and_never_another(
    kb: KnowledgeBase, seeded: dict[str, str], facade: str
) -> None:
    """Positive and negative on the same path: own data (and readable shared data) only."""
    if facade == "count":
        assert (kb.count(ACME), kb.count(BETA), kb.count(READER)) == (1, 1, 1)
        return
    assert visible(kb, ACME, facade) == {"acme"}
    assert visible(kb, BETA, facade) == {"beta"}
    assert visible(kb, READER, facade) == {"neo-shared"}
    assert visible(kb, ACME.with_namespaces(frozenset({"neo-shared"})), facade) == {"acme", "neo-shared"}


def test_ask_answers_only_from_the_stored_text_in_scope(kb: KnowledgeBase, seeded: dict[str, str]) -> None:
    """The answer is built from the hits' stored documents: another tenant's words never appear."""
    answer = kb.ask(ACME, "canary banana apple")
    assert "apple orchard" in answer.text
    assert "banana" not in answer.text


def test_a_foreign_id_fails_exactly_like_a_missing_one(kb: KnowledgeBase, seeded: dict[str, str]) -> None:
    """Same type, code and message shape: no existence oracle (control: the owner gets it)."""
    assert kb.get(BETA, seeded["beta"]).document == "canary banana grove beta"
    missing = "0" * 64
    with pytest.raises(NotFound) as foreign:
        kb.get(ACME, seeded["beta"])
    with pytest.raises(NotFound) as absent:
        kb.get(ACME, missing)
    assert foreign.value.code == absent.value.code == "KB_NOT_FOUND"
    assert str(foreign.value).replace(seeded["beta"], "ID") == str(absent.value).replace(missing, "ID")


WIDENING: list[tuple[str, Any]] = [
    ("a reserved key", {"tenantId": "beta"}),
    ("a reserved key under $or", {"$or": [{"kind": "doc-section"}, {"tenantId": {"$ne": "acme"}}]}),
    ("a negation on a reserved key", {"visibility": {"$ne": "private"}}),
    ("an empty $and", {"$and": []}),
    ("an empty $or", {"$or": []}),
    ("an empty clause", {}),
    ("an unknown operator", {"kind": {"$not": "x"}}),
    ("a top-level operator", {"$not": {"kind": "x"}}),
    ("an empty $in", {"kind": {"$in": []}}),
    ("an empty $nin", {"kind": {"$nin": []}}),
    ("two operators at once", {"kind": {"$eq": "a", "$ne": "b"}}),
    ("a nested object", {"kind": {"deep": {"x": 1}}}),
    ("a null", {"kind": None}),
]


@pytest.mark.parametrize("where", [w for _, w in WIDENING], ids=[name for name, _ in WIDENING])
def test_client_clauses_that_could_widen_scope_are_rejected(
    kb: KnowledgeBase, seeded: dict[str, str], where: Any
) -> None:
    """Rejected with contract 'where' on every facade that takes one (control: a narrowing clause works)."""
    for call in (lambda: kb.query(ACME, "canary", 5, where=where), lambda: kb.list(ACME, where=where)):
        with pytest.raises(ContractViolation) as caught:
            call()
        assert caught.value.contract == "where"
    assert [h.metadata["sourcePath"] for h in kb.list(ACME, where={"sourcePath": "acme.md"})] == ["acme.md"]
    assert kb.list(ACME, where={"sourcePath": "beta.md"}) == []


def test_no_principal_is_an_error_on_every_facade(kb: KnowledgeBase, seeded: dict[str, str]) -> None:
    """Never an unfiltered read: each facade raises Unauthenticated naming itself."""
    calls = {
        "query": lambda: kb.query(None, "canary"),  # type: ignore[arg-type]
        "get": lambda: kb.get(None, seeded["acme"]),  # type: ignore[arg-type]
        "list": lambda: kb.list(None),  # type: ignore[arg-type]
        "count": lambda: kb.count(None),  # type: ignore[arg-type]
        "ask": lambda: kb.ask(None, "canary"),  # type: ignore[arg-type]
        "ingest": lambda: kb.ingest(None, [chunk()]),  # type: ignore[arg-type]
        "apply_deletion_signal": lambda: kb.apply_deletion_signal(None, {"deleted": [{"sourcePath": "a"}]}),  # type: ignore[arg-type]
        "export": lambda: kb.export(None),  # type: ignore[arg-type]
        "restore": lambda: kb.restore(None, []),  # type: ignore[arg-type]
    }
    for name, call in calls.items():
        with pytest.raises(Unauthenticated) as caught:
            call()
        assert caught.value.operation == name
    with pytest.raises(Unauthenticated):
        kb.list({"tenant_id": "acme"})  # type: ignore[arg-type]  # a look-alike is not a principal


class FailingStore(MemoryStore):
    def get(self, **kwargs: Any) -> Any:
        raise ConnectionError("store is down")

    def query(self, *args: Any) -> Any:
        raise ConnectionError("store is down")


def test_a_store_error_is_an_error_never_a_fallback() -> None:
    """Every read and write raises BackendUnavailable with the store's reason."""
    kb = KnowledgeBase(FailingStore())
    for call in (
        lambda: kb.query(ACME, "x"),
        lambda: kb.list(ACME),
        lambda: kb.count(ACME),
        lambda: kb.get(ACME, "x"),
        lambda: kb.ingest(ACME, [chunk()]),
    ):
        with pytest.raises(BackendUnavailable) as caught:
            call()
        assert "store is down" in str(caught.value)


class LeakyStore(MemoryStore):
    """A store that ignores every where clause."""

    def get(self, **kwargs: Any) -> Any:
        kwargs.pop("where", None)
        return super().get(**kwargs)

    def query(self, embedding: Any, n_results: int, where: Any) -> Any:
        return super().query(embedding, n_results, None)


def test_the_final_check_drops_and_counts_hits_a_store_leaks(caplog: pytest.LogCaptureFixture) -> None:
    """Defence in depth: even a store that ignores the filter leaks nothing (control: own hits kept)."""
    kb = KnowledgeBase(LeakyStore())
    kb.ingest(ACME, [chunk("a.md", "apple")])
    beta_id = kb.ingest(BETA, [chunk("b.md", "apple", tenant="beta")]).ids[0]
    with caplog.at_level(logging.ERROR, logger="kbconform_reference"):
        assert [h.metadata["tenantId"] for h in kb.query(ACME, "apple")] == ["acme"]
        assert [h.metadata["tenantId"] for h in kb.list(ACME)] == ["acme"]
        with pytest.raises(NotFound):
            kb.get(ACME, beta_id)
    assert kb.stats.dropped == 3
    assert sum("final check dropped" in m for m in caplog.messages) == 3


def test_a_small_tenant_gets_its_exact_top_k_in_a_large_collection(store: VectorStore) -> None:
    """recall@10 = 1.0 against brute force within the tenant, next to a tenant 30 times larger."""
    kb = KnowledgeBase(store, settings=Settings(exact_search_limit=100))
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(60)]

    def text() -> str:
        return " ".join(rng.choice(words, 6))

    big = [chunk(f"big/{i}.md", text(), tenant="big") for i in range(600)]
    for start in range(0, len(big), 200):
        kb.ingest(BETA.with_tenant("big"), big[start : start + 200])
    kb.ingest(ACME, [chunk(f"small/{i}.md", text()) for i in range(20)])
    for question in ("w1 w2 w3", "w10 w20", "w59 w0 w33 w7"):
        hits = kb.query(ACME, question, 10)
        rows = store.get(where={"tenantId": "acme"}, embeddings=True)
        expected = exact_top_k(rows, kb.embedder([question])[0], 10)
        assert len(expected) == 10
        assert {h.id for h in hits} == {m.id for m in expected}
        big_hits = kb.query(BETA.with_tenant("big"), question, 10)  # the approximate path, still in scope
        assert len(big_hits) == 10
        assert {h.metadata["tenantId"] for h in big_hits} == {"big"}


class _ShortIndex(MemoryStore):
    """A store whose own query answers half of what it finds, as a filtered approximate index
    can (Chroma's HNSW past the exact-search limit)."""

    def query(self, embedding: Any, n_results: int, where: Any) -> Any:
        found = super().query(embedding, n_results, where)
        return found[: max(1, len(found) // 2)]


def test_a_query_asking_for_the_whole_scope_gets_it_whole_past_the_exact_search_limit() -> None:
    """A scope of 150 rows past an exact-search limit of 100, on a store whose index answers
    short: asked for 160 (at least the scope), the query returns all 150; control: asked for
    120, fewer than the scope, it takes the store's short answer (the approximate path)."""
    kb = KnowledgeBase(_ShortIndex(), settings=Settings(exact_search_limit=100))
    kb.ingest(ACME, [chunk(f"whole/{i}.md", f"whole scope row {i}") for i in range(150)])
    assert len(kb.query(ACME, "whole scope", 160)) == 150
    assert len(kb.query(ACME, "whole scope", 120)) == 60


def test_list_pages_through_the_scope_and_rejects_bad_pages(kb: KnowledgeBase) -> None:
    """limit/offset page within scope; a non-positive limit is a contract error."""
    kb.ingest(ACME, [chunk(f"{i}.md", f"text {i}") for i in range(5)])
    kb.ingest(BETA, [chunk("x.md", tenant="beta")])
    pages = [kb.list(ACME, limit=2, offset=offset) for offset in (0, 2, 4)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert len({h.id for page in pages for h in page}) == 5
    with pytest.raises(ContractViolation):
        kb.list(ACME, limit=0)


class _CountedStore(MemoryStore):
    """A memory store recording what each read asked for: ids alone, or whole rows."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def ids(self, *, where: Any = None, limit: int | None = None) -> tuple[str, ...]:
        self.reads.append("ids")
        return super().ids(where=where, limit=limit)

    def get(self, **kwargs: Any) -> Any:
        self.reads.append("rows" if kwargs.get("ids") is None else "rows by id")
        return super().get(**kwargs)


class _FilteringStore(MemoryStore):
    """A store whose get of a scope (no ids) keeps no row: a subclass that changes get, not ids."""

    def get(self, **kwargs: Any) -> Any:
        rows = super().get(**kwargs)
        if kwargs.get("ids") is not None:
            return rows
        return type(rows)((), (), (), None if rows.embeddings is None else rows.embeddings[:0])


def test_a_query_counts_its_scope_by_ids_alone_then_reads_those_rows_once() -> None:
    """A small scope's query asks the store for its ids alone, then for those rows by id (one
    read of rows, never the scope's rows twice), and ranks them exactly."""
    store = _CountedStore()
    kb = KnowledgeBase(store)
    kb.ingest(ACME, [chunk(path=f"docs/{n}.md", content=f"deploy notes {n}") for n in range(5)])
    store.reads.clear()
    hits = kb.query(ACME, "deploy notes", 3)
    assert len(hits) == 3
    assert store.reads == ["ids", "rows by id"]


def test_a_store_that_changes_get_alone_is_probed_through_its_get() -> None:
    """A store subclass that overrides get but not ids is counted through its get, so what its
    get keeps is what the query sees (control: the plain memory store finds the rows)."""
    for store, found in ((_FilteringStore(), 0), (MemoryStore(), 2)):
        kb = KnowledgeBase(store)
        kb.ingest(ACME, [chunk(path=f"docs/{n}.md", content=f"deploy notes {n}") for n in range(2)])
        assert len(kb.query(ACME, "deploy notes", 5)) == found


def test_chroma_ranks_a_scope_within_its_exact_limit_exactly_reading_a_small_one_once() -> None:
    """Chroma's own query ranks a scope of up to ``exact_scopes`` rows exactly, as brute force
    over the scope does: a small scope from one read of its rows, a larger one read in two
    parts (its first rows, then the rest by id after its ids are counted)."""
    from kbconform_reference.namespace.stores.chroma import ChromaStore

    class Counted(ChromaStore):
        reads = 0

        def get(self, **kwargs: Any) -> Any:
            self.reads += 1
            return super().get(**kwargs)

    base = ChromaStore.ephemeral()
    store = Counted(base._collection, base.description)
    rng = np.random.default_rng(3)
    try:
        for tenant, rows in (("small", 5), ("mid", 300), ("other", 40)):
            vectors = rng.standard_normal((rows, 8)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            ids = [f"{tenant}-{n}" for n in range(rows)]
            store.upsert(ids, vectors, [f"text {n}" for n in range(rows)], [{"tenantId": tenant}] * rows)
        question = rng.standard_normal(8).astype(np.float32)
        for tenant, reads in (("small", 1), ("mid", 2)):
            where = {"tenantId": {"$eq": tenant}}
            expected = exact_top_k(store.get(where=where, embeddings=True), question, 10)
            store.reads = 0
            found = store.query(question, 10, where)
            assert store.reads == reads
            assert [(m.id, m.document) for m in found] == [(m.id, m.document) for m in expected]
            assert {m.metadata["tenantId"] for m in found} == {tenant}
    finally:
        base.drop()


def test_chroma_sends_a_scope_past_its_exact_limit_to_its_index_without_reading_its_ids() -> None:
    """A scope with a row past ``exact_scopes`` goes to Chroma's approximate index once a read
    at that offset finds one: its ids are not read (control: a scope within the limit is counted
    by its ids and ranked exactly)."""
    from kbconform_reference.namespace.stores.chroma import ChromaStore

    class Counted(ChromaStore):
        counted = searched = 0

        def ids(self, **kwargs: Any) -> Any:
            self.counted += 1
            return super().ids(**kwargs)

        def nearest(self, *args: Any) -> Any:
            self.searched += 1
            return super().nearest(*args)

    base = ChromaStore.ephemeral()
    rng = np.random.default_rng(5)
    try:
        vectors = rng.standard_normal((300, 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        base.upsert([f"r{n}" for n in range(300)], vectors, ["t"] * 300, [{"tenantId": "big"}] * 300)
        question, where = rng.standard_normal(8).astype(np.float32), {"tenantId": {"$eq": "big"}}
        for limit, counted, searched in ((299, 0, 1), (300, 1, 0)):
            store = Counted(base._collection, base.description)
            store.exact_scopes = limit
            found = store.query(question, 5, where)
            assert (store.counted, store.searched) == (counted, searched)
            expected = (
                base.nearest(question, 5, where)
                if searched
                else exact_top_k(base.get(where=where, embeddings=True), question, 5)
            )
            assert [m.id for m in found] == [m.id for m in expected]
    finally:
        base.drop()


def test_chroma_reads_by_id_under_a_clause_of_text_as_chroma_evaluates_it() -> None:
    """Rows by id under a clause of text (the read filter's ``$eq``, ``$ne``, ``$in``, ``$nin``,
    ``$and``, ``$or``; a key some rows lack) are read by id and filtered in Python: the same rows
    as Chroma's own evaluation; a clause comparing numbers stays Chroma's (control)."""
    from kbconform_reference.namespace.stores._where import textual
    from kbconform_reference.namespace.stores.chroma import ChromaStore

    store = ChromaStore.ephemeral()
    metadatas: list[dict[str, Any]] = [
        {"tenantId": "acme", "visibility": "team"},
        {"tenantId": "acme", "visibility": "private", "originAgentIdentity": "a1"},
        {"tenantId": "beta", "visibility": "public", "rank": 2},
        {"tenantId": "beta", "visibility": "private"},
    ]
    ids = [f"c{n}" for n in range(len(metadatas))]
    store.upsert(ids, np.eye(len(ids), 4, dtype=np.float32), ["t"] * len(ids), metadatas)
    asked = [*ids, "missing"]
    clauses: list[dict[str, Any]] = [
        {"tenantId": "acme"},
        {"originAgentIdentity": {"$ne": "a1"}},
        {"originAgentIdentity": {"$nin": ["a1", "a2"]}},
        {"$and": [{"tenantId": {"$in": ["acme", "beta"]}}, {"visibility": {"$eq": "private"}}]},
        {"$or": [{"visibility": {"$in": ["team"]}}, {"originAgentIdentity": {"$eq": "a1"}}]},
        {"rank": {"$gte": 2}},
    ]
    for where in clauses:
        chroma = store._get_page(asked, where, None, 0, False)
        got = store.get(ids=asked, where=where)
        assert (got.ids, got.metadatas) == (chroma.ids, chroma.metadatas), where
        assert got.ids, where
        assert textual(where) == ("rank" not in where), where
    assert store.get(ids=asked, where={"tenantId": "acme"}).ids == ("c0", "c1")
