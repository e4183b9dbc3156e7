"""Writes are all or nothing when the store fails part-way, in every store mode.

The knowledge base writes and deletes in pages of the store's ``max_batch`` rows; these tests
give the stores a small page (4 rows) so that ten rows take three pages, and fail the second
one. One real-size case: 12,000 records on Chroma embedded with its own maximum batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import rfc8785

from kbconform.errors import BackendUnavailable
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.stores import Match, MemoryStore, Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import Metadata, Where
from tests.reference.conftest import ACME, BETA, OPERATOR, chunk

PAGE = 4


class Flaky:
    """A store whose ``fail_at``-th write (upsert or delete, 1-based) fails. ``lasting``: from
    then on every call fails, reads included, until :meth:`recover` (the store went down)."""

    def __init__(self, store: VectorStore, fail_at: int | None = None, *, lasting: bool = False) -> None:
        self.store = store
        self.description = store.description
        self.max_batch = store.max_batch
        self.fail_at = fail_at
        self.lasting = lasting
        self.down = False
        self.writes: list[int] = []  # rows per write call, in order (the failing one included)
        self.landed_at_failure: int | None = None  # rows stored when the fault opened

    def recover(self) -> None:
        self.down, self.fail_at = False, None

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("store is down")

    def _write(self, rows: int) -> None:
        self._check()
        self.writes.append(rows)
        if self.fail_at is not None and len(self.writes) == self.fail_at:
            self.landed_at_failure = len(self.store.get().ids)
            self.down = self.lasting
            raise ConnectionError(f"store failed at write {self.fail_at}")

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        self._write(len(ids))
        self.store.upsert(ids, embeddings, documents, metadatas)

    def get(self, **kwargs: Any) -> Rows:
        self._check()
        return self.store.get(**kwargs)

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        self._check()
        return self.store.query(embedding, n_results, where)

    def delete(self, ids: Sequence[str]) -> None:
        self._write(len(ids))
        self.store.delete(ids)


def _state(store: VectorStore) -> list[bytes]:
    """Every stored row, canonical: id, document, metadata and the float32 bits of its embedding."""
    rows = store.get(embeddings=True)
    if not rows.ids:
        return []
    assert rows.embeddings is not None
    return sorted(
        rfc8785.dumps([i, d, dict(m), np.asarray(e, dtype=np.float32).tobytes().hex()])
        for i, d, m, e in zip(rows.ids, rows.documents, rows.metadatas, rows.embeddings, strict=True)
    )


def _seeded(store: VectorStore) -> KnowledgeBase:
    """acme holds docs/old-0..9.md (hashInputs without content, so a rewrite keeps the ids);
    beta holds one chunk."""
    store.max_batch = PAGE  # both reference stores take a page size as an attribute
    kb = KnowledgeBase(store)
    kb.ingest(ACME, [_old(n, "first") for n in range(10)])
    kb.ingest(BETA, [chunk("docs/beta.md", "beta", tenant="beta")])
    return kb


def _old(n: int, text: str) -> dict[str, Any]:
    return chunk(f"docs/old-{n}.md", f"{text} {n}", hashInputs=["sourcePath", "kind", "name"])


def _ingest(kb: KnowledgeBase) -> Any:
    """Five rewrites and five new chunks: ten rows, three pages."""
    return kb.ingest(
        ACME, [*(_old(n, "second") for n in range(5)), *(chunk(f"docs/new-{n}.md") for n in range(5))]
    )


def _restore(kb: KnowledgeBase) -> Any:
    """Every stored row with its text changed and its embedding reversed, and three new rows."""
    rows = [
        {**r, "document": f"restored {r['document']}", "embedding": r["embedding"][::-1]}
        for r in kb.export(OPERATOR)
    ]
    new = [{**rows[0], "id": f"restored-{n}"} for n in range(3)]
    return kb.restore(OPERATOR, [*rows, *new])


def _delete(kb: KnowledgeBase) -> Any:
    """A manifest that keeps two of acme's ten chunks: eight deletes, two pages."""
    return kb.apply_deletion_signal(
        ACME, {"manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/old-0.md", "docs/old-1.md"]}}
    )


OPERATIONS: dict[str, Callable[[KnowledgeBase], Any]] = {
    "ingest": _ingest,
    "restore": _restore,
    "apply_deletion_signal": _delete,
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_write_that_fails_at_its_second_page_is_rolled_back(store: VectorStore, operation: str) -> None:
    """The first page lands, the second fails: BackendUnavailable, and every row is as before
    (embeddings bit for bit). The same call without a fault lands whole (control)."""
    _seeded(store)
    before = _state(store)
    flaky = Flaky(store, fail_at=2)
    failing = KnowledgeBase(flaky)
    with pytest.raises(BackendUnavailable, match="rolled back") as caught:
        OPERATIONS[operation](failing)
    assert caught.value.operation == operation
    assert flaky.writes[:2] == [PAGE, PAGE], "the write was not paged"
    assert flaky.landed_at_failure is not None
    assert _state(store) == before
    OPERATIONS[operation](KnowledgeBase(store))
    after = _state(store)
    assert after != before
    assert len(after) == {"ingest": 16, "restore": 14, "apply_deletion_signal": 3}[operation]


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_a_rollback_the_store_refuses_stays_pending_until_it_can_be_replayed(
    store: VectorStore, operation: str
) -> None:
    """The store goes down at the second page: the call raises BackendUnavailable, and so does
    every later call, read or write, while it stays down; once it is back, the first call
    replays the rollback and reads exactly the state before the failed write, and the write
    then lands (control)."""
    kb = _seeded(store)
    before = _state(store)
    acme_before = {h.id for h in kb.list(ACME)}
    flaky = Flaky(store, fail_at=2, lasting=True)
    failing = KnowledgeBase(flaky)
    with pytest.raises(BackendUnavailable, match="rollback failed"):
        OPERATIONS[operation](failing)
    assert _state(store) != before, "the first page did not land: the test proves nothing"
    for call in (
        lambda: failing.list(ACME),
        lambda: failing.count(ACME),
        lambda: failing.get(ACME, next(iter(acme_before))),
        lambda: failing.query(ACME, "alpha"),
        lambda: failing.export(OPERATOR),
        lambda: failing.ingest(BETA, [chunk("docs/beta-2.md", "beta two", tenant="beta")]),
    ):
        with pytest.raises(BackendUnavailable, match="not rolled back yet"):
            call()
    flaky.recover()
    assert {h.id for h in failing.list(ACME)} == acme_before
    assert _state(store) == before
    OPERATIONS[operation](failing)
    assert _state(store) != before


def test_a_failed_rollback_is_replayed_by_the_next_write_too() -> None:
    """With the store back, a write (not a read) comes first: it replays the pending rollback,
    then lands alone."""
    from kbconform_reference.namespace.stores import MemoryStore

    store = MemoryStore(max_batch=PAGE)
    kb = _seeded(store)
    before = _state(store)
    flaky = Flaky(store, fail_at=2, lasting=True)
    failing = KnowledgeBase(flaky)
    with pytest.raises(BackendUnavailable):
        _ingest(failing)
    flaky.recover()
    failing.ingest(BETA, [chunk("docs/beta-2.md", "beta two", tenant="beta")])
    assert len(_state(store)) == len(before) + 1
    assert {h.metadata["sourcePath"] for h in kb.list(ACME)} == {f"docs/old-{n}.md" for n in range(10)}


def test_an_interrupted_write_is_rolled_back_before_the_next_call() -> None:
    """A BaseException between two pages (Ctrl-C) propagates as it is; the next call rolls back first."""
    from kbconform_reference.namespace.stores import MemoryStore

    store = MemoryStore(max_batch=PAGE)
    kb = _seeded(store)
    before = _state(store)

    class Interrupting(Flaky):
        def _write(self, rows: int) -> None:
            self.writes.append(rows)
            if len(self.writes) == 2:
                raise KeyboardInterrupt

    interrupted = KnowledgeBase(Interrupting(store))
    with pytest.raises(KeyboardInterrupt):
        _ingest(interrupted)
    assert _state(store) != before
    assert {h.id for h in interrupted.list(ACME)} == {h.id for h in kb.list(ACME)}
    assert _state(store) == before


def test_twelve_thousand_records_on_chroma_leave_no_row_when_the_second_page_fails() -> None:
    """Chroma embedded with its own maximum batch: the first page (5,000 rows) lands, the second
    fails; the rollback leaves zero rows."""
    pytest.importorskip("chromadb")
    from kbconform_reference.namespace.stores.chroma import ChromaStore

    chroma = ChromaStore.ephemeral()
    try:
        flaky = Flaky(chroma, fail_at=2)
        kb = KnowledgeBase(flaky)
        records = [chunk(f"docs/{n}.md", f"note {n}") for n in range(12_000)]
        with pytest.raises(BackendUnavailable, match="rolled back"):
            kb.ingest(ACME, records)
        assert chroma.max_batch == flaky.writes[0] >= 1000
        assert flaky.landed_at_failure == chroma.max_batch
        assert chroma.get().ids == ()
        assert kb.count(ACME) == 0
    finally:
        chroma.drop()


class _CountedReads(MemoryStore):
    """The exact store, counting its reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, **kwargs: Any) -> Rows:
        self.reads += 1
        return super().get(**kwargs)


def test_a_deletion_signal_and_a_sync_read_each_row_they_delete_once() -> None:
    """A manifest signal reads its repository once (its undo log is that read, not a read of the
    rows again), a tombstone of another repository adds one read; a sync reads the rows it
    writes and its repository, once each. Either rolls back from those reads (the tests above)."""
    store = _CountedReads()
    kb = _seeded(store)
    kb.ingest(ACME, [chunk("docs/other.md", "other", repo="docs-repo")])
    store.reads = 0
    assert len(_delete(kb).deleted_ids) == 8
    assert store.reads == 1
    store.reads = 0
    signal = {
        "repoSlug": "app",
        "manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/old-0.md"]},
        "deleted": [{"repoSlug": "docs-repo", "sourcePath": "docs/other.md"}],
    }
    assert len(kb.apply_deletion_signal(ACME, signal).deleted_ids) == 2
    assert store.reads == 2
    store.reads = 0
    result = kb.sync(ACME, "app", [_old(0, "third")])
    assert (len(result.ids), list(result.deleted_ids)) == (1, [])
    kb.ingest(ACME, [_old(n, "again") for n in (1, 2)])
    store.reads = 0
    assert len(kb.sync(ACME, "app", [_old(0, "fourth")]).deleted_ids) == 2
    assert store.reads == 2


@pytest.mark.parametrize("mode", ["memory", "chroma-embedded"])
def test_a_sync_of_no_records_whose_delete_fails_is_rolled_back(mode: str) -> None:
    """A sync of no records deletes every row of its repository, its undo log the lookup alone
    (no row written: nothing else read with embeddings); its second delete page fails: every row
    is back, embeddings bit for bit."""
    if mode == "memory":
        store: VectorStore = MemoryStore()
    else:
        from kbconform_reference.namespace.stores.chroma import ChromaStore

        store = ChromaStore.ephemeral()
    try:
        kb = _seeded(store)
        before = _state(store)
        flaky = Flaky(store, fail_at=2)
        kb.store = flaky
        with pytest.raises(BackendUnavailable):
            kb.sync(ACME, "app", [])
        assert _state(store) == before
        kb.store = store
        assert len(kb.sync(ACME, "app", []).deleted_ids) == 10  # control
    finally:
        if hasattr(store, "drop"):
            store.drop()
