"""A small in-memory kb-grant backend (``schemas/kb-grant.md``), for harness-v1's tests.

Two stores and two models of dimension 3. The catalogue (tenants, knowledge bases, grants) is
not the store; every read or write of documents consults the fault switch for the store it asks
first, a search from one thread per store group, each group joined within the manifest's group
deadline. Ids count from 1 (``kb-1``, ``doc-1``) and are never reused.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import BackendOptions, grant_invalid, model_mismatch
from kbconform.errors import BackendUnavailable, Forbidden, NotFound, Unauthenticated

MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "kb-grant",
    "adapter": {"name": "grant-double", "version": "1"},
    "backend": {"name": "in-memory", "version": "1"},
    "isolationModel": "metadata-filter",
    "readFacades": ["search", "get", "list"],
    "stores": [{"id": "s1", "engine": "memory"}, {"id": "s2", "engine": "memory"}],
    "models": [{"name": "m-3a", "dimension": 3}, {"name": "m-3b", "dimension": 3}],
    "maxFanOut": 2,
    "groupDeadlineSeconds": 0.5,
    "features": {"fault-injection": True},
}
STORES = {store["id"] for store in MANIFEST["stores"]}  # type: ignore[attr-defined]
MODELS = {model["name"]: model["dimension"] for model in MANIFEST["models"]}  # type: ignore[attr-defined]
DEADLINE = float(MANIFEST["groupDeadlineSeconds"])  # type: ignore[arg-type]
MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    kb: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class View:
    id: str
    owner: str
    store: str
    model: str
    documents: int


@dataclass(slots=True)
class Kb:
    owner: str
    store: str
    model: str
    documents: list[tuple[str, str, tuple[float, ...]]] = field(default_factory=list)
    grantees: set[str] = field(default_factory=set)


def _vector(value: object) -> tuple[float, ...] | None:
    """``value`` as a vector (finite numbers, not all zero), or None."""
    if not isinstance(value, (list, tuple)) or not value:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value):
        return None
    return tuple(float(x) for x in value) if any(value) else None


def _score(a: Sequence[float], b: Sequence[float]) -> float:
    cos = sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))
    return min(1.0, max(0.0, (1 + cos) / 2))


class GrantBackend:
    def __init__(self, store_fails: Callable[[str], bool] | None) -> None:
        self.store_fails = store_fails
        self.tenants: set[str] = set()
        self.kbs: dict[str, Kb] = {}
        self.ids = itertools.count(1)

    def _store(self, store: str, operation: str) -> None:
        if self.store_fails is not None and self.store_fails(store):
            raise BackendUnavailable(operation, f"store {store} failed")

    def _caller(self, caller: object, operation: str) -> str:
        if not isinstance(caller, str) or caller not in self.tenants:
            raise Unauthenticated(operation)
        return caller

    def _readable(self, caller: str, kb: object) -> Kb:
        found = self.kbs.get(kb) if isinstance(kb, str) else None
        if found is None or (found.owner != caller and caller not in found.grantees):
            raise NotFound(str(kb))
        return found

    def _owned(self, caller: str, kb: object, operation: str) -> Kb:
        found = self._readable(caller, kb)
        if found.owner != caller:
            raise Forbidden(operation, "only the owner administers a knowledge base")
        return found

    def _tenant(self, tenant: object, owner: str) -> str:
        if not isinstance(tenant, str) or tenant not in self.tenants or tenant == owner:
            raise grant_invalid("grantee", "another tenant", repr(tenant))
        return tenant

    def _target(self, store: object) -> str:
        if store not in STORES:
            raise grant_invalid("store", f"one of {sorted(STORES)}", repr(store))
        return str(store)

    def create_tenant(self, tenant: str, /) -> None:
        if not isinstance(tenant, str) or not tenant or tenant in self.tenants:
            raise grant_invalid("tenant", "a new, non-empty tenant id", repr(tenant))
        self.tenants.add(tenant)

    def create_kb(self, caller: str, store: str, model: str, /) -> str:
        owner = self._caller(caller, "create_kb")
        if model not in MODELS:
            raise grant_invalid("model", f"one of {sorted(MODELS)}", repr(model))
        kb = f"kb-{next(self.ids)}"
        self.kbs[kb] = Kb(owner, self._target(store), model)
        return kb

    def share_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        owner = self._caller(caller, "share_kb")
        found = self._owned(owner, kb, "share_kb")
        found.grantees.add(self._tenant(grantee, owner))

    def revoke_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        owner = self._caller(caller, "revoke_kb")
        found = self._owned(owner, kb, "revoke_kb")
        found.grantees.discard(self._tenant(grantee, owner))

    def ingest(self, caller: str, kb: str, documents: Sequence[Mapping[str, Any]], /) -> Sequence[str]:
        owner = self._caller(caller, "ingest")
        found = self._owned(owner, kb, "ingest")
        if not isinstance(documents, (list, tuple)) or not documents:
            raise grant_invalid("documents", "a non-empty list of documents", repr(documents))
        batch = []
        for document in documents:
            text = document.get("text") if isinstance(document, Mapping) else None
            vector = _vector(document.get("embedding")) if isinstance(document, Mapping) else None
            if not isinstance(text, str) or not text or vector is None or len(vector) != MODELS[found.model]:
                raise grant_invalid("documents", "{text, embedding} of the model", repr(document))
            batch.append((text, vector))
        self._store(found.store, "ingest")
        made = [(f"doc-{next(self.ids)}", text, vector) for text, vector in batch]
        found.documents += made
        return [id for id, _, _ in made]

    def search(
        self, caller: str, kbs: Sequence[str], embedding: Sequence[float], limit: int, /
    ) -> Sequence[Hit]:
        reader = self._caller(caller, "search")
        if (
            not isinstance(kbs, (list, tuple))
            or not kbs
            or not all(isinstance(kb, str) for kb in kbs)
            or len(set(kbs)) != len(kbs)
        ):
            raise grant_invalid("kbs", "a non-empty list of distinct ids", repr(kbs))
        vector = _vector(embedding)
        if vector is None:
            raise grant_invalid("embedding", "a vector", repr(embedding))
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise grant_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", repr(limit))
        found = {kb: self._readable(reader, kb) for kb in kbs}
        models = sorted({entry.model for entry in found.values()})
        if len(models) > 1:
            raise model_mismatch(models)
        if len(vector) != MODELS[models[0]]:
            raise grant_invalid("embedding", f"a vector of dimension {MODELS[models[0]]}", repr(embedding))
        groups: dict[str, list[tuple[str, list[tuple[str, str, tuple[float, ...]]]]]] = {}
        for kb, entry in found.items():
            groups.setdefault(entry.store, []).append((kb, list(entry.documents)))
        answers: dict[str, list[Hit]] = {}

        def ask(store: str) -> None:
            if self.store_fails is None or not self.store_fails(store):
                answers[store] = [
                    Hit(id, kb, text, _score(vector, stored))
                    for kb, documents in groups[store]
                    for id, text, stored in documents
                ]

        threads = [threading.Thread(target=ask, args=(store,), daemon=True) for store in sorted(groups)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE)
        missing = sorted(set(groups) - set(answers))
        if missing:
            raise BackendUnavailable("search", f"store {missing[0]} failed or missed its deadline")
        hits = [hit for store in sorted(answers) for hit in answers[store]]
        return sorted(hits, key=lambda hit: -hit.score)[:limit]

    def _view(self, kb: str, entry: Kb, operation: str) -> View:
        self._store(entry.store, operation)  # the documents are counted in the store
        return View(kb, entry.owner, entry.store, entry.model, len(entry.documents))

    def get_kb(self, caller: str, kb: str, /) -> View:
        reader = self._caller(caller, "get_kb")
        return self._view(kb, self._readable(reader, kb), "get_kb")

    def list_kbs(self, caller: str, /) -> Sequence[View]:
        reader = self._caller(caller, "list_kbs")
        listed = {
            kb: entry for kb, entry in self.kbs.items() if reader == entry.owner or reader in entry.grantees
        }
        return [self._view(kb, entry, "list_kbs") for kb, entry in listed.items()]

    def delete_kb(self, caller: str, kb: str, /) -> None:
        owner = self._caller(caller, "delete_kb")
        found = self._owned(owner, kb, "delete_kb")
        self._store(found.store, "delete_kb")
        del self.kbs[kb]

    def copy_kb(self, caller: str, source: str, store: str, /) -> str:
        owner = self._caller(caller, "copy_kb")
        found, target = self._readable(owner, source), self._target(store)
        self._store(found.store, "copy_kb")
        self._store(target, "copy_kb")
        kb = f"kb-{next(self.ids)}"
        copied = [(f"doc-{next(self.ids)}", text, vector) for _, text, vector in found.documents]
        self.kbs[kb] = Kb(owner, target, found.model, copied)
        return kb

    def move_kb(self, caller: str, kb: str, store: str, /) -> None:
        owner = self._caller(caller, "move_kb")
        found, target = self._owned(owner, kb, "move_kb"), self._target(store)
        if target != found.store:
            self._store(found.store, "move_kb")
            self._store(target, "move_kb")
            found.store = target


class GrantAdapter:
    manifest: Mapping[str, Any] = MANIFEST

    def open(self, options: BackendOptions, /) -> GrantBackend:
        return GrantBackend(options.store_fails)

    def close(self, backend: Any, /) -> None:
        """Nothing to release."""

    def shutdown(self) -> None:
        """Nothing to release."""


def adapter() -> GrantAdapter:
    return GrantAdapter()
