"""The kb-grant reference: knowledge bases on several stores, shared by grant (``schemas/kb-grant.md``).

The catalogue (tenants, knowledge bases, grants) lives in SQLite
(:mod:`~kbconform_reference.grant.catalogue`) and is read on every call; documents live in the
store their knowledge base is bound to (:mod:`~kbconform_reference.grant.chroma`,
:mod:`~kbconform_reference.grant.qdrant`), tagged with its internal id. The caller supplies
every vector.

A search, in the spec's order: the caller; the call's shape; every knowledge base readable by
the caller, checked in the catalogue before any store is asked anything (one that is not is
``NotFound`` for the whole search); one embedding model; then the knowledge bases grouped by
store, each group one query on the :class:`~kbconform_reference.grant.fanout.FanOut` (in
parallel, at most ``max_fan_out`` at once, each with ``group_deadline`` seconds; a group that
fails or misses its deadline fails the search with ``BackendUnavailable``); each engine's score
brought to ``(1 + cos) / 2``; the ``limit`` highest over every group. One group is the
single-store path: the same query, the same deadline, no merge.

Faults: ``store_fails(store)`` is consulted once before every call to a vector store, from the
thread that makes the call (a group's query runs on its worker thread); never for the
catalogue. Every write is all or nothing: an ingest's pages that landed before a failing one are
deleted again (if that delete is refused, it is kept pending and the store answers nothing until
it lands); a move writes the whole target before it deletes the source and deletes the target
copy again when the source delete fails; a copy's knowledge base is published only once every
document is written. Calls on one backend are serialized.
"""

from __future__ import annotations

import math
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from kbconform.adapter import MAX_LIMIT, GrantHit, KbInfo, grant_invalid, model_mismatch
from kbconform.errors import BackendUnavailable, Forbidden, KbconformError, NotFound, Unauthenticated
from kbconform_reference._arguments import checked_name, describe
from kbconform_reference.grant.catalogue import Catalogue, KbRow, Tenant
from kbconform_reference.grant.fanout import FanOut, GroupFailed, GroupTimedOut
from kbconform_reference.grant.index import Found, Point, VectorIndex

T = TypeVar("T")


def unit_score(engine: str, native: float) -> float:
    """``(1 + cos) / 2`` from an engine's own score: Chroma's cosine distance ``1 - cos`` in
    [0, 2], Qdrant's cosine similarity in [-1, 1]."""
    if engine == "chroma":
        cos = 1.0 - native
    elif engine == "qdrant":
        cos = native
    else:
        raise ValueError(f"no score scale known for engine {engine!r}")
    return min(1.0, max(0.0, (1.0 + cos) / 2.0))


# -- the call's shape ---------------------------------------------------------------------------


def _name(value: object, what: str) -> str:
    """A non-empty string argument (a knowledge base, tenant or store name), else ``KB_GRANT_INVALID``."""
    return checked_name(value, what, grant_invalid)


def _vector(value: object, what: str) -> tuple[float, ...]:
    """A vector: a list of finite numbers, not all zero (its dimension is checked later)."""
    if not isinstance(value, (list, tuple)) or not value:
        raise grant_invalid(what, "a non-empty list of numbers", describe(value))
    if not all(type(x) in (int, float) and math.isfinite(x) for x in value):
        raise grant_invalid(what, "finite numbers (not bools)", describe(value))
    if not any(value):
        raise grant_invalid(what, "a vector that is not all zero", describe(value))
    return tuple(float(x) for x in value)


def _kb_list(value: object) -> list[str]:
    if not isinstance(value, (list, tuple)) or not value or not all(type(kb) is str and kb for kb in value):
        raise grant_invalid("kbs", "a non-empty list of knowledge base ids", describe(value))
    if len(set(value)) != len(value):
        raise grant_invalid("kbs", "knowledge base ids without duplicates", describe(value))
    return list(value)


def _limit(value: object) -> int:
    if type(value) is not int or not 1 <= value <= MAX_LIMIT:
        raise grant_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", describe(value))
    return value


def _documents(value: object) -> list[tuple[str, tuple[float, ...]]]:
    """Every document checked before anything is stored; keys beside text and embedding dropped."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
        raise grant_invalid("documents", "a non-empty list of documents", describe(value))
    checked = []
    for index, document in enumerate(value):
        if not isinstance(document, Mapping):
            raise grant_invalid(f"documents[{index}]", "a document {text, embedding}", describe(document))
        text = _name(document.get("text"), f"documents[{index}].text")
        checked.append((text, _vector(document.get("embedding"), f"documents[{index}].embedding")))
    return checked


class KbGrantService:
    """One backend: its catalogue and its stores (``stores``: store id -> an open store), empty.

    ``models`` maps each embedding model to its dimension; ``store_fails`` is the fault switch;
    ``max_fan_out`` bounds the groups asked at once and ``group_deadline`` is each group's
    deadline in seconds.
    """

    def __init__(
        self,
        stores: Mapping[str, VectorIndex],
        models: Mapping[str, int],
        *,
        store_fails: Callable[..., bool] | None = None,
        max_fan_out: int = 4,
        group_deadline: float = 2.0,
    ) -> None:
        self.stores = dict(stores)
        self.models = dict(models)
        self.catalogue = Catalogue()
        self.fan_out = FanOut(max_fan_out, group_deadline)
        self._fails = store_fails
        self._lock = threading.RLock()
        self._unsettled: dict[str, list[tuple[str, list[str]]]] = {}

    def close(self) -> None:
        """Release the executor (without waiting for an abandoned group), stores and catalogue."""
        with self._lock:
            self.fan_out.close()
            for index in self.stores.values():
                index.close()
            self.catalogue.close()

    # -- guards ---------------------------------------------------------------------------------

    def _consult(self, store: str, operation: str) -> None:
        """The fault switch, for one call to ``store`` about to be made from this thread."""
        if self._fails is not None and self._fails(store):
            raise BackendUnavailable(operation, f"store {store!r} is unavailable (fault injected)")

    def _call(self, store: str, operation: str, call: Callable[[VectorIndex], T]) -> T:
        """One call to ``store``: the switch first; any error of the store is BackendUnavailable.
        Deletes kept pending on the store land first."""
        self._settle(store, operation)
        self._consult(store, operation)
        return self._guarded(store, operation, call)

    def _guarded(self, store: str, operation: str, call: Callable[[VectorIndex], T]) -> T:
        try:
            return call(self.stores[store])
        except KbconformError:
            raise
        except Exception as error:
            reason = f"store {store!r}: {type(error).__name__}: {error}"
            raise BackendUnavailable(operation, reason) from error

    def _settle(self, store: str, operation: str) -> None:
        """Deletes an ingest's undo could not make: made now, each one store call, or the call fails."""
        pending = self._unsettled.get(store)
        while pending:
            model, ids = pending[0]
            self._consult(store, operation)
            self._guarded(store, operation, lambda index, model=model, ids=ids: index.delete(model, ids))  # type: ignore[misc]
            pending.pop(0)

    def _caller(self, caller: object, operation: str) -> Tenant:
        """The calling tenant, read from the catalogue now; no identity is Unauthenticated."""
        if type(caller) is not str or not caller:
            raise Unauthenticated(operation)
        tenant = self.catalogue.tenant(caller)
        if tenant is None:
            raise Unauthenticated(operation)
        return tenant

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        """``kb`` if ``tenant`` may read it; else NotFound, exactly as for an id never given (a
        value that is no id at all, not a non-empty string, is ``KB_GRANT_INVALID``)."""
        name = _name(kb, "kb")
        row = self.catalogue.readable(tenant.id, [name]).get(name)
        if row is None:
            raise NotFound(describe(kb))
        return row

    def _administered(self, tenant: Tenant, kb: object, operation: str) -> KbRow:
        """``kb`` if ``tenant`` owns it; a grantee gets Forbidden, anyone else NotFound."""
        row = self._readable(tenant, kb)
        if row.owner != tenant.id:
            raise Forbidden(operation, "only the owner administers a knowledge base")
        return row

    def _store(self, value: object) -> str:
        if type(value) is not str or value not in self.stores:
            raise grant_invalid("store", f"one of the stores {sorted(self.stores)}", describe(value))
        return value

    def _dimension(self, model: str, vector: tuple[float, ...], what: str) -> None:
        if len(vector) != self.models[model]:
            expected = f"a vector of {self.models[model]} numbers (model {model})"
            raise grant_invalid(what, expected, str(len(vector)))

    # -- the operator's ---------------------------------------------------------------------------

    def create_tenant(self, tenant: object, /) -> None:
        name = _name(tenant, "tenant")
        with self._lock:
            if self.catalogue.tenant(name) is not None:
                raise grant_invalid("tenant", "a tenant name not in use", describe(name))
            self.catalogue.create_tenant(name)

    # -- knowledge bases and grants ---------------------------------------------------------------

    def create_kb(self, caller: object, store: object, model: object, /) -> str:
        with self._lock:
            tenant = self._caller(caller, "create_kb")
            bound = self._store(store)
            if type(model) is not str or model not in self.models:
                raise grant_invalid("model", f"one of the models {sorted(self.models)}", describe(model))
            external = f"kb-{uuid.uuid4().hex}"
            self.catalogue.create_kb(external, tenant.id, bound, model)
            return external

    def _grantee(self, grantee: object) -> Tenant:
        found = self.catalogue.tenant(grantee) if type(grantee) is str and grantee else None
        if found is None:
            raise grant_invalid("grantee", "a tenant", describe(grantee))
        return found

    def share_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "share_kb")
            row = self._administered(tenant, kb, "share_kb")
            other = self._grantee(grantee)
            if other.id == row.owner:
                raise grant_invalid("grantee", "a tenant other than the owner", describe(grantee))
            self.catalogue.share(row.id, other.id)

    def revoke_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "revoke_kb")
            row = self._administered(tenant, kb, "revoke_kb")
            self.catalogue.revoke(row.id, self._grantee(grantee).id)

    def get_kb(self, caller: object, kb: object, /) -> KbInfo:
        with self._lock:
            tenant = self._caller(caller, "get_kb")
            return self._info(self._readable(tenant, kb), "get_kb")

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        with self._lock:
            tenant = self._caller(caller, "list_kbs")
            return [self._info(row, "list_kbs") for row in self.catalogue.readable_by(tenant.id)]

    def _info(self, row: KbRow, operation: str) -> KbInfo:
        documents = self._call(row.store, operation, lambda index: index.count(row.model, row.id))
        return KbInfo(row.external, row.owner_name, row.store, row.model, documents)

    def delete_kb(self, caller: object, kb: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "delete_kb")
            row = self._administered(tenant, kb, "delete_kb")
            self._call(row.store, "delete_kb", lambda index: index.delete_kb(row.model, row.id))
            self.catalogue.discard(row.id)

    # -- documents ------------------------------------------------------------------------------

    def ingest(self, caller: object, kb: object, documents: object, /) -> list[str]:
        with self._lock:
            tenant = self._caller(caller, "ingest")
            checked = _documents(documents)
            row = self._administered(tenant, kb, "ingest")
            for index, (_, vector) in enumerate(checked):
                self._dimension(row.model, vector, f"documents[{index}].embedding")
            ids = self._document_ids(documents, len(checked))
            points = [Point(i, row.id, text, vector) for i, (text, vector) in zip(ids, checked, strict=True)]
            self._write(row.store, row.model, points, "ingest", visible=True)
            return [point.id for point in points]

    def _document_ids(self, documents: object, count: int) -> list[str]:
        """The ids of ``count`` new documents (of the checked batch ``documents``): fresh ones,
        whatever a document carries (its other keys are dropped)."""
        return [str(uuid.uuid4()) for _ in range(count)]

    def _write(
        self, store: str, model: str, points: Sequence[Point], operation: str, *, visible: bool
    ) -> None:
        """Write ``points`` in pages, each one store call; if one fails, the pages that may have
        landed are deleted again. ``visible``: the points would be read if left behind (their
        knowledge base is live), so a refused undo stays pending until it lands."""
        batch = self.stores[store].max_batch
        attempted: list[str] = []
        try:
            for start in range(0, len(points), batch):
                page = list(points[start : start + batch])
                self._settle(store, operation)
                self._consult(store, operation)
                attempted += [point.id for point in page]
                self._guarded(store, operation, lambda index, page=page: index.upsert(model, page))  # type: ignore[misc]
        except BackendUnavailable:
            if attempted:
                self._undo(store, model, attempted, operation, visible=visible)
            raise

    def _undo(self, store: str, model: str, ids: list[str], operation: str, *, visible: bool) -> None:
        try:
            self._call(store, operation, lambda index: index.delete(model, ids))
        except BackendUnavailable:
            if visible:
                self._unsettled.setdefault(store, []).append((model, ids))

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        with self._lock:
            tenant = self._caller(caller, "copy_kb")
            row = self._readable(tenant, source)
            target = self._store(store)
            external = f"kb-{uuid.uuid4().hex}"
            self._copy(row, external, tenant.id, target)
            return external

    def _copy(self, row: KbRow, external: str, owner: int, target: str) -> None:
        """A new knowledge base ``external`` of ``owner`` on the store ``target``, holding a copy
        of each of ``row``'s documents: published once every copy is written, else discarded."""
        copy = self.catalogue.create_kb(external, owner, target, row.model, pending=True)
        try:
            self._write(target, row.model, self._copies(row, copy), "copy_kb", visible=False)
        except BaseException:
            self.catalogue.discard(copy)
            raise
        self.catalogue.publish(copy)

    def _copies(self, row: KbRow, copy: int) -> list[Point]:
        """``row``'s documents, read from its store, as new documents (new ids) of ``copy``."""
        read = self._call(row.store, "copy_kb", lambda index: index.points(row.model, row.id))
        return [Point(str(uuid.uuid4()), copy, p.text, p.vector) for p in read]

    def move_kb(self, caller: object, kb: object, store: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "move_kb")
            row = self._administered(tenant, kb, "move_kb")
            target = self._store(store)
            if target != row.store:
                self._move(row, target)

    def _move(self, row: KbRow, target: str) -> None:
        """``row``'s documents moved to the store ``target``: the whole target written first, then
        the source deleted (the target's copy deleted again when that fails), then rebound."""
        read = self._call(row.store, "move_kb", lambda index: index.points(row.model, row.id))
        self._write(target, row.model, read, "move_kb", visible=False)
        try:
            self._call(row.store, "move_kb", lambda index: index.delete_kb(row.model, row.id))
        except BackendUnavailable:
            self._undo(target, row.model, [p.id for p in read], "move_kb", visible=False)
            raise
        self.catalogue.rebind(row.id, target)

    # -- search -----------------------------------------------------------------------------------

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        with self._lock:
            tenant = self._caller(caller, "search")
            names, vector, top = _kb_list(kbs), _vector(embedding, "embedding"), _limit(limit)
            rows = self._authorize(tenant, names)
            model = self._model(rows)
            self._dimension(model, vector, "embedding")
            groups = self._groups(rows)
            return self._merge(self._retrieve(groups, model, vector, top), top)

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        """Every knowledge base of the search, each readable by ``tenant``; else NotFound, for
        the whole search, before any store is asked."""
        readable = self.catalogue.readable(tenant.id, names)
        for name in names:
            if name not in readable:
                raise NotFound(describe(name))
        return [readable[name] for name in names]

    def _model(self, rows: Sequence[KbRow]) -> str:
        models = {row.model for row in rows}
        if len(models) != 1:
            raise model_mismatch([row.model for row in rows])
        return rows[0].model

    def _groups(self, rows: Sequence[KbRow]) -> dict[str, list[KbRow]]:
        """The knowledge bases by store, in the order the stores first appear."""
        groups: dict[str, list[KbRow]] = {}
        for row in rows:
            groups.setdefault(row.store, []).append(row)
        return groups

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        """Each group's hits; all or nothing (BackendUnavailable)."""
        stores = list(groups)
        tasks = [
            (lambda store=store: self._ask(store, groups[store], model, vector, limit, "search"))
            for store in stores
        ]
        try:
            if len(tasks) == 1:
                return [self.fan_out.run_one(tasks[0])]
            return self.fan_out.run(tasks)
        except GroupTimedOut as late:
            raise BackendUnavailable(
                "search", f"store {stores[late.index]!r} did not answer within {self.fan_out.deadline:g} s"
            ) from None
        except GroupFailed as failed:
            if isinstance(failed.error, BackendUnavailable):
                raise failed.error from None
            raise BackendUnavailable("search", f"store {stores[failed.index]!r}: {failed.error}") from None

    def _ask(
        self,
        store: str,
        rows: Sequence[KbRow],
        model: str,
        vector: Sequence[float],
        limit: int,
        operation: str,
    ) -> list[GrantHit]:
        """One group's query, made on the calling thread, its scores on the one scale."""
        external = {row.id: row.external for row in rows}
        engine = self.stores[store].engine
        found: list[Found] = self._call(
            store, operation, lambda index: index.query(model, vector, list(external), limit)
        )
        return [GrantHit(f.id, external[f.kb], f.text, self._score(engine, f.native)) for f in found]

    def _score(self, engine: str, native: float) -> float:
        return unit_score(engine, native)

    def _merge(self, groups: Sequence[Sequence[GrantHit]], limit: int) -> list[GrantHit]:
        """The ``limit`` highest scores over every group, highest first."""
        hits = [hit for group in groups for hit in group]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return hits[:limit]
