"""A small kb-grant adapter, as an adapter author would write one: everything in memory.

Correct by ``schemas/kb-grant.md``: a catalogue of tenants, knowledge bases and grants (never a
store call), and two fake vector stores of different engines whose native scores differ: the
``cosine`` engine answers the cosine similarity in [-1, 1], the ``l2`` engine the squared
euclidean distance of unit vectors in [0, 4] (lower is nearer). A search checks everything
before it asks any store, groups the knowledge bases by store, asks the groups in parallel
(``maxFanOut`` at once) each with the group deadline, and merges on ``(1 + cos) / 2``. The fault
switch is consulted, with the store's id, in the thread that makes each store call.

A group's deadline is its store's to answer: it counts from when the group's store call starts
(a group waiting for a worker has not started) and a group misses it only while that call has
not returned. A fake store answers once the switch lets it (a hanging switch is a store that
does not answer); reading its memory afterwards is the double's own work, which no deadline cuts
short, so a loaded machine slows a correct search but never fails it. A search that gave up on a
group leaves that call's thread behind and takes fresh workers.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import MAX_LIMIT, BackendOptions
from kbconform.errors import BackendUnavailable, Forbidden, NotFound, Unauthenticated
from kbconform.profiles.kb_grant.protocol import grant_invalid, model_mismatch

DEADLINE = 0.5
MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "concurrency": "threads",
    "isolationProfile": "kb-grant",
    "adapter": {"name": "grant-double", "version": "0.0.1"},
    "backend": {"name": "kb-grant in memory", "version": "test"},
    "isolationModel": "metadata-filter",
    "readFacades": ["search", "get", "list"],
    "stores": [{"id": "north", "engine": "cosine"}, {"id": "south", "engine": "l2"}],
    "models": [{"name": "m-6a", "dimension": 6}, {"name": "m-6b", "dimension": 6}],
    "maxFanOut": 2,
    "groupDeadlineSeconds": DEADLINE,
    "features": {"fault-injection": True},
}


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    kb: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class KbRow:
    id: str
    owner: str
    store: str
    model: str
    documents: int


@dataclass(frozen=True, slots=True)
class _Doc:
    id: str
    text: str
    unit: tuple[float, ...]  # the vector, normalized


class _StoreCall:
    """One group's store call: when it started, and whether the store has answered."""

    def __init__(self) -> None:
        self.at = 0.0
        self.started = threading.Event()
        self.answered = threading.Event()

    def begin(self) -> None:
        self.at = time.monotonic()
        self.started.set()

    def in_time(self, group: concurrent.futures.Future[Any]) -> bool:
        """Whether the store answered within :data:`DEADLINE` of the call's start; a group that
        never starts (its future cancelled) never answered."""
        while not self.started.wait(DEADLINE):
            if group.done():
                return self.answered.is_set()
        return self.answered.wait(max(0.0, self.at + DEADLINE - time.monotonic()))


def _unit(vector: Sequence[float]) -> tuple[float, ...]:
    norm = math.sqrt(sum(x * x for x in vector))
    return tuple(x / norm for x in vector)


class FakeStore:
    """One vector store: collections by knowledge base id. ``native`` is its engine's score."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.collections: dict[str, list[_Doc]] = {}

    def native(self, cos: float) -> float:
        return cos if self.engine == "cosine" else 2.0 - 2.0 * cos

    def cosine(self, native: float) -> float:
        return native if self.engine == "cosine" else 1.0 - native / 2.0

    def put(self, kb: str, docs: Sequence[_Doc]) -> None:
        self.collections[kb] = list(docs)

    def add(self, kb: str, docs: Sequence[_Doc]) -> None:
        self.collections.setdefault(kb, []).extend(docs)

    def read(self, kb: str) -> list[_Doc]:
        return list(self.collections.get(kb, ()))

    def drop(self, kb: str) -> None:
        self.collections.pop(kb, None)

    def count(self, kb: str) -> int:
        return len(self.collections.get(kb, ()))

    def query(self, kbs: Sequence[str], unit: Sequence[float], k: int) -> list[tuple[str, str, _Doc, float]]:
        """The ``k`` nearest documents of ``kbs``: (kb, id, document, native score), nearest first."""
        found = [
            (kb, doc.id, doc, self.native(sum(a * b for a, b in zip(unit, doc.unit, strict=True))))
            for kb in kbs
            for doc in self.collections.get(kb, ())
        ]
        nearest_first = sorted(found, key=lambda f: -f[3] if self.engine == "cosine" else f[3])
        return nearest_first[:k]


@dataclass
class _Kb:
    id: str
    owner: str
    store: str
    model: str


class MemoryGrants:
    """Knowledge bases on several stores, shared by grant (kbconform.adapter.KbGrantBackend)."""

    def __init__(self, store_fails: Callable[..., bool] | None = None) -> None:
        self.store_fails = store_fails
        self.tenants: set[str] = set()
        self.kbs: dict[str, _Kb] = {}
        self.grants: dict[str, set[str]] = {}
        self.stores = {s["id"]: FakeStore(s["engine"]) for s in MANIFEST["stores"]}
        self.models = {m["name"]: m["dimension"] for m in MANIFEST["models"]}
        self.ids = itertools.count(1)
        self.pool = self._workers()
        self.pool_lock = threading.Lock()

    # -- plumbing --------------------------------------------------------------------------------

    @staticmethod
    def _workers() -> concurrent.futures.ThreadPoolExecutor:
        return concurrent.futures.ThreadPoolExecutor(max_workers=int(MANIFEST["maxFanOut"]))

    def _id(self, kind: str) -> str:
        return f"{kind}-{next(self.ids)}"

    def _store(self, store: str, operation: str) -> FakeStore:
        """The store, after consulting the switch for it (in this thread)."""
        if self.store_fails is not None and self.store_fails(store):
            raise BackendUnavailable(operation, f"the store {store} is unavailable (fault injected)")
        return self.stores[store]

    def _caller(self, caller: object, operation: str) -> str:
        if not isinstance(caller, str) or caller not in self.tenants:
            raise Unauthenticated(operation)
        return caller

    def _readable(self, caller: str, kb: object) -> bool:
        found = self.kbs.get(kb) if isinstance(kb, str) else None
        return found is not None and (found.owner == caller or caller in self.grants.get(found.id, set()))

    def _read(self, caller: str, kb: object) -> _Kb:
        if not isinstance(kb, str) or not kb:
            raise grant_invalid("kb", "a knowledge base id", repr(kb))
        if not self._readable(caller, kb):
            raise NotFound(kb)
        return self.kbs[kb]

    def _own(self, caller: str, kb: object, operation: str) -> _Kb:
        found = self._read(caller, kb)
        if found.owner != caller:
            raise Forbidden(operation, "only the owner administers a knowledge base")
        return found

    def _store_id(self, store: object) -> str:
        if not isinstance(store, str) or store not in self.stores:
            raise grant_invalid("store", f"one of {sorted(self.stores)}", repr(store))
        return store

    @staticmethod
    def _vector(value: object, what: str) -> list[float]:
        if (
            not isinstance(value, Sequence)
            or isinstance(value, str)
            or not value
            or any(
                not isinstance(x, int | float) or isinstance(x, bool) or not math.isfinite(x) for x in value
            )
            or not any(value)
        ):
            raise grant_invalid(what, "a vector of finite numbers, not all zero", repr(value)[:80])
        return [float(x) for x in value]

    # -- the operator and knowledge bases ----------------------------------------------------------

    def create_tenant(self, tenant: str, /) -> None:
        if not isinstance(tenant, str) or not tenant or tenant in self.tenants:
            raise grant_invalid("tenant", "a new, non-empty tenant name", repr(tenant))
        self.tenants.add(tenant)

    def create_kb(self, caller: str, store: str, model: str, /) -> str:
        owner = self._caller(caller, "create_kb")
        self._store_id(store)
        if model not in self.models:
            raise grant_invalid("model", f"one of {sorted(self.models)}", repr(model))
        kb = _Kb(self._id("kb"), owner, store, model)
        self.kbs[kb.id] = kb
        return kb.id

    def share_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        owner = self._caller(caller, "share_kb")
        found = self._own(owner, kb, "share_kb")
        if grantee not in self.tenants or grantee == owner:
            raise grant_invalid("grantee", "another tenant", repr(grantee))
        self.grants.setdefault(found.id, set()).add(grantee)

    def revoke_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        owner = self._caller(caller, "revoke_kb")
        found = self._own(owner, kb, "revoke_kb")
        if grantee not in self.tenants:
            raise grant_invalid("grantee", "a tenant", repr(grantee))
        self.grants.get(found.id, set()).discard(grantee)

    def ingest(self, caller: str, kb: str, documents: Sequence[Mapping[str, Any]], /) -> list[str]:
        owner = self._caller(caller, "ingest")
        if not isinstance(documents, Sequence) or isinstance(documents, str) or not documents:
            raise grant_invalid("documents", "a non-empty list", repr(documents)[:80])
        vectors = []
        for index, document in enumerate(documents):
            if (
                not isinstance(document, Mapping)
                or not isinstance(document.get("text"), str)
                or not document["text"]
            ):
                raise grant_invalid(f"documents[{index}]", "{text, embedding} with a non-empty text", "")
            vectors.append(self._vector(document.get("embedding"), f"documents[{index}].embedding"))
        found = self._own(owner, kb, "ingest")
        if any(len(v) != self.models[found.model] for v in vectors):
            raise grant_invalid("embedding", f"a vector of dimension {self.models[found.model]}", "another")
        docs = [_Doc(self._id("doc"), d["text"], _unit(v)) for d, v in zip(documents, vectors, strict=True)]
        self._store(found.store, "ingest").add(found.id, docs)
        return [doc.id for doc in docs]

    def _row(self, kb: _Kb) -> KbRow:
        return KbRow(kb.id, kb.owner, kb.store, kb.model, self._store(kb.store, "count").count(kb.id))

    def get_kb(self, caller: str, kb: str, /) -> KbRow:
        return self._row(self._read(self._caller(caller, "get_kb"), kb))

    def list_kbs(self, caller: str, /) -> list[KbRow]:
        tenant = self._caller(caller, "list_kbs")
        return [self._row(kb) for kb in list(self.kbs.values()) if self._readable(tenant, kb.id)]

    def delete_kb(self, caller: str, kb: str, /) -> None:
        found = self._own(self._caller(caller, "delete_kb"), kb, "delete_kb")
        self._store(found.store, "delete_kb").drop(found.id)
        del self.kbs[found.id]
        self.grants.pop(found.id, None)

    def copy_kb(self, caller: str, source: str, store: str, /) -> str:
        owner = self._caller(caller, "copy_kb")
        original = self._read(owner, source)
        target = self._store_id(store)
        docs = self._store(original.store, "copy_kb").read(original.id)
        kb = _Kb(self._id("kb"), owner, target, original.model)
        copied = [_Doc(self._id("doc"), d.text, d.unit) for d in docs]
        self._store(target, "copy_kb").put(kb.id, copied)
        self.kbs[kb.id] = kb
        return kb.id

    def move_kb(self, caller: str, kb: str, store: str, /) -> None:
        found = self._own(self._caller(caller, "move_kb"), kb, "move_kb")
        target = self._store_id(store)
        if target == found.store:
            return
        docs = self._store(found.store, "move_kb").read(found.id)
        self._store(target, "move_kb").put(found.id, self._moved(docs))
        self._store(found.store, "move_kb").drop(found.id)
        found.store = target

    def _moved(self, docs: list[_Doc]) -> list[_Doc]:
        return docs

    # -- search ----------------------------------------------------------------------------------

    def search(self, caller: str, kbs: Sequence[str], embedding: Sequence[float], limit: int, /) -> list[Hit]:
        tenant = self._caller(caller, "search")
        if not isinstance(kbs, Sequence) or isinstance(kbs, str) or not kbs:
            raise grant_invalid("kbs", "a non-empty list of knowledge base ids", repr(kbs))
        if any(not isinstance(kb, str) or not kb for kb in kbs) or len(set(kbs)) != len(kbs):
            raise grant_invalid("kbs", "knowledge base ids, each once", repr(kbs))
        vector = self._vector(embedding, "embedding")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise grant_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
        named = self._authorize(tenant, kbs)
        models = {kb.model for kb in named}
        if len(models) > 1:
            raise model_mismatch(sorted(models))
        if len(vector) != self.models[models.pop()]:
            raise grant_invalid("embedding", "a vector of the model's dimension", f"dimension {len(vector)}")
        groups: dict[str, list[str]] = {}
        for kb in named:
            groups.setdefault(kb.store, []).append(kb.id)
        return self._merge(self._fan_out(groups, _unit(vector), limit), limit)

    def _authorize(self, tenant: str, kbs: Sequence[str]) -> list[_Kb]:
        return [self._read(tenant, kb) for kb in kbs]

    def _group(
        self, call: _StoreCall, store: str, kbs: list[str], unit: Sequence[float], k: int
    ) -> list[Hit]:
        call.begin()
        try:
            engine = self._store(store, "search")
        finally:
            call.answered.set()
        return [
            Hit(doc_id, kb, doc.text, (1.0 + engine.cosine(native)) / 2.0)
            for kb, doc_id, doc, native in engine.query(kbs, unit, k)
        ]

    def _fan_out(self, groups: dict[str, list[str]], unit: Sequence[float], limit: int) -> list[list[Hit]]:
        calls = [_StoreCall() for _ in groups]
        with self.pool_lock:
            pool = self.pool
            futures = [
                pool.submit(self._group, call, store, kbs, unit, limit)
                for call, (store, kbs) in zip(calls, groups.items(), strict=True)
            ]
        if not all(call.in_time(future) for call, future in zip(calls, futures, strict=True)):
            for future in futures:
                future.cancel()
            with self.pool_lock:
                if self.pool is pool:
                    self.pool = self._workers()
            pool.shutdown(wait=False)
            raise BackendUnavailable("search", "a store group missed its deadline")
        return [future.result() for future in futures]  # a group's failure raises here

    @staticmethod
    def _merge(results: list[list[Hit]], limit: int) -> list[Hit]:
        merged = [hit for hits in results for hit in hits]
        return sorted(merged, key=lambda hit: -hit.score)[:limit]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


# -- broken on purpose ----------------------------------------------------------------------------


class Grants:
    """The adapter: a fresh :class:`MemoryGrants` (or ``kind``) per open."""

    manifest = MANIFEST

    def __init__(self, kind: type[MemoryGrants] = MemoryGrants) -> None:
        self.kind = kind

    def open(self, options: BackendOptions) -> Any:
        return self.kind(options.store_fails)

    def close(self, backend: Any) -> None:
        backend.close()

    def shutdown(self) -> None:
        pass


def make() -> Grants:
    return Grants()
