"""Mutants of the kb-grant reference: each one rule of ``schemas/kb-grant.md`` broken.

Each mutant is a :class:`KbGrantService` subclass that breaks the way such a service really
breaks (most are readings of the system the profile models: a scope that falls back to the
first knowledge base, scores normalized only when engines are mixed, a group error dropped, a
grant looked up once). ``MUTANTS`` is registered as the mutant set ``reference-grant``
(entry-point group ``kbconform.mutants``); ``kbconform mutants --set reference-grant`` runs it.
Importing this module needs neither Chroma nor Qdrant: a mutant's stores are opened with it.
"""

from __future__ import annotations

import math
import unicodedata
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kbconform.adapter import GrantHit, KbInfo
from kbconform.errors import BackendUnavailable, Forbidden, NotFound
from kbconform_reference import _mutant_base
from kbconform_reference._arguments import describe
from kbconform_reference._mutant_base import Delegating, ServesMutant, factories
from kbconform_reference.grant.adapter import GrantAdapter
from kbconform_reference.grant.catalogue import _COLUMNS, _READABLE, Catalogue, KbRow, Tenant, _row
from kbconform_reference.grant.fanout import FanOut, GroupFailed
from kbconform_reference.grant.index import Point, VectorIndex
from kbconform_reference.grant.service import KbGrantService, _name

T = TypeVar("T")

# -- search: authorization and scope ----------------------------------------------------------------


class AuthorizesAfterRetrieval(KbGrantService):
    """The stores are asked first, for every knowledge base named that exists; read access is
    checked on the way out: a refused search has asked the stores (and a failing store answers
    BackendUnavailable before NotFound)."""

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        existing = [row for name in names if (row := self.catalogue.kb(name)) is not None]
        if existing:
            self._retrieve(
                self._groups(existing), existing[0].model, [1.0] * self.models[existing[0].model], 1
            )
        return super()._authorize(tenant, names)


class ForbiddenWhereNotFound(KbGrantService):
    """A knowledge base that exists but is not shared with the caller is Forbidden (403), a
    missing one NotFound (404): the answer tells which ids exist."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        row = self.catalogue.kb(kb) if type(kb) is str else None
        if row is not None and not self.catalogue.readable(tenant.id, [row.external]):
            raise Forbidden("read", "the knowledge base is not shared with you")
        return super()._readable(tenant, kb)

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]


class PivotsToFirstReadable(KbGrantService):
    """Knowledge bases the caller may not read are dropped from the scope, and a scope left
    empty falls back to the caller's first knowledge base (``kbs[0]`` of its own list): never
    NotFound while the caller reads anything."""

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        readable = self.catalogue.readable(tenant.id, names)
        kept = [readable[name] for name in names if name in readable]
        if kept:
            return kept
        own = self.catalogue.readable_by(tenant.id)
        if not own:
            raise NotFound(describe(names[0]))
        return own[:1]


class UnknownTenantUnfiltered(KbGrantService):
    """A caller id that names no tenant (a string, not empty) falls through the tenant lookup
    and is served unfiltered: it reads every knowledge base it names, and lists them all."""

    def _caller(self, caller: object, operation: str) -> Tenant:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            return Tenant(-1, caller)
        return super()._caller(caller, operation)

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        if tenant.id == -1:
            row = self.catalogue.kb(_name(kb, "kb"))
            if row is None:
                raise NotFound(describe(kb))
            return row
        return super()._readable(tenant, kb)

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        if tenant.id == -1:
            return [self._readable(tenant, name) for name in names]
        return super()._authorize(tenant, names)

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            rows = self.catalogue._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE k.state = 'live'"
            )
            return [self._info(_row(row), "list_kbs") for row in rows]
        return super().list_kbs(caller)


class UnknownTenantCreatedOnFirstCall(KbGrantService):
    """A caller id never created is created on its first call (an upsert of the tenant), and
    served as a new tenant instead of Unauthenticated."""

    def _caller(self, caller: object, operation: str) -> Tenant:
        if type(caller) is str and caller and self.catalogue.tenant(caller) is None:
            return self.catalogue.create_tenant(caller)
        return super()._caller(caller, operation)


# -- search: models, scores, merge ------------------------------------------------------------------


class MixedModelsMerged(KbGrantService):
    """Knowledge bases of different models are searched together, each in its model's
    collection, and their scores merged as if comparable."""

    def _model(self, rows: Sequence[KbRow]) -> str:
        return rows[0].model

    def _dimension(self, model: str, vector: tuple[float, ...], what: str) -> None:
        if not any(len(vector) == dimension for dimension in self.models.values()):
            super()._dimension(model, vector, what)

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        found: list[list[GrantHit]] = []
        for store, rows in groups.items():
            for each in sorted({row.model for row in rows}):
                same = [row for row in rows if row.model == each]
                found += super()._retrieve({store: same}, each, vector, limit)
        return found


class RawScoresMerged(KbGrantService):
    """Each engine's own score is merged as it comes: Chroma's distance (lower is nearer) ranks
    beside Qdrant's similarity as if it were one."""

    def _score(self, engine: str, native: float) -> float:
        return native


class NormalizedOnlyWhenMixed(KbGrantService):
    """Scores are normalized only when the hits span more than one engine (the modelled code's
    'mixed-engine normalization'): a single-store search returns the engine's own scores,
    Chroma's distances ranked highest first."""

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        found = super()._retrieve(groups, model, vector, limit)
        engines = {self.stores[store].engine for store in groups}
        if len(engines) > 1:
            return found
        (engine,) = engines
        return [[_raw(hit, engine) for hit in hits] for hits in found]


def _raw(hit: GrantHit, engine: str) -> GrantHit:
    cos = 2.0 * hit.score - 1.0
    native = 1.0 - cos if engine == "chroma" else cos
    return GrantHit(hit.id, hit.kb, hit.text, native)


class LimitPerStoreNotOverall(KbGrantService):
    """Each store group returns ``limit`` hits and the merge keeps them all: up to ``limit``
    per store, never cut to ``limit`` overall."""

    def _merge(self, groups: Sequence[Sequence[GrantHit]], limit: int) -> list[GrantHit]:
        return super()._merge(groups, limit * max(1, len(groups)))


class LimitSplitAcrossStores(KbGrantService):
    """The limit is split evenly over the store groups (``ceil(limit / groups)`` each): a store
    holding most of the nearest documents is cut short."""

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        return super()._retrieve(groups, model, vector, math.ceil(limit / len(groups)))


# -- search: all or nothing, deadlines --------------------------------------------------------------


class PartialResultsOnGroupFailure(KbGrantService):
    """A store group that fails or misses its deadline is left out; the other groups' hits are
    returned (a partial result), and a search whose every group failed answers nothing."""

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        found: list[list[GrantHit]] = []
        for store, rows in groups.items():
            try:
                found += super()._retrieve({store: rows}, model, vector, limit)
            except BackendUnavailable:
                continue
        return found


class EmptyOnStoreError(KbGrantService):
    """A failing store is answered with nothing: no hits, no knowledge bases listed."""

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        try:
            return super().search(caller, kbs, embedding, limit)
        except BackendUnavailable:
            return []

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        try:
            return super().list_kbs(caller)
        except BackendUnavailable:
            return []

    def _info(self, row: KbRow, operation: str) -> KbInfo:
        try:
            return super()._info(row, operation)
        except BackendUnavailable:
            return KbInfo(row.external, row.owner_name, row.store, row.model, 0)


class _Patient(FanOut):
    """A fan-out that waits for every group, however long it takes."""

    def run(self, tasks: Sequence[Callable[[], T]]) -> list[T]:
        futures = [self._executor.submit(task) for task in tasks]
        results: list[T] = []
        for index, future in enumerate(futures):
            try:
                results.append(future.result())
            except Exception as error:
                raise GroupFailed(index, error) from error
        return results

    def run_one(self, task: Callable[[], T]) -> T:
        return self.run([task])[0]


class NoGroupDeadline(KbGrantService):
    """Every store group is waited for, however long it takes."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self.fan_out.close()
        self.fan_out = _Patient(self.fan_out.max_workers, self.fan_out.deadline)


class HealthCheckOnCallerThread(KbGrantService):
    """Before the fan-out, each group's store is checked from the caller's thread (a health
    check): a store that hangs holds the whole search, past every deadline."""

    def _retrieve(
        self, groups: Mapping[str, Sequence[KbRow]], model: str, vector: Sequence[float], limit: int
    ) -> list[list[GrantHit]]:
        for store in groups:
            self._consult(store, "search")
        return super()._retrieve(groups, model, vector, limit)


# -- grants and rights ----------------------------------------------------------------------------


class GrantCached(KbGrantService):
    """A grant, once read, is kept per (tenant, knowledge base): a revoke never reaches it."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self._seen: dict[tuple[int, str], KbRow] = {}

    def _remember(self, tenant: Tenant, rows: Mapping[str, KbRow]) -> dict[str, KbRow]:
        for external, row in rows.items():
            self._seen[(tenant.id, external)] = row
        return {
            external: row
            for (holder, external), row in self._seen.items()
            if holder == tenant.id and self.catalogue.kb(external) is not None
        }

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        name = _name(kb, "kb")
        known = self._remember(tenant, self.catalogue.readable(tenant.id, [name]))
        if name not in known:
            raise NotFound(describe(kb))
        return known[name]

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]


class GranteeMayAdminister(KbGrantService):
    """Administering a knowledge base checks read access only: a grantee shares, revokes,
    ingests, moves and deletes."""

    def _administered(self, tenant: Tenant, kb: object, operation: str) -> KbRow:
        return self._readable(tenant, kb)


class _OtherCatalogue(KbGrantService):
    """The service over a broken catalogue: ``catalogue_kind``, in place of the reference's."""

    catalogue_kind: type[Catalogue] = Catalogue

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self.catalogue.close()
        self.catalogue = self.catalogue_kind()


class _KeptGrants(Catalogue):
    """Deleting a knowledge base marks it gone for its owner; grants stay, and a grantee's
    reads go through the grants table without looking at the knowledge base's state."""

    def discard(self, kb: int) -> None:
        with self._transaction():
            self._db.execute("UPDATE kbs SET state = 'gone' WHERE id = ?", (kb,))

    def _visible(self, tenant: int, where: str, args: Mapping[str, object]) -> list[KbRow]:
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE {where} AND "
            "((k.owner = :tenant AND k.state = 'live') OR "
            "EXISTS (SELECT 1 FROM grants g WHERE g.kb = k.id AND g.grantee = :tenant)) ORDER BY k.id",
            {**args, "tenant": tenant},
        )
        return [_row(row) for row in rows]

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        marks = ", ".join(f":e{index}" for index in range(len(externals)))
        named = {f"e{index}": external for index, external in enumerate(externals)}
        return {row.external: row for row in self._visible(tenant, f"k.external IN ({marks})", named)}

    def readable_by(self, tenant: int) -> list[KbRow]:
        return self._visible(tenant, "1 = 1", {})


class DeleteKeepsGrants(_OtherCatalogue):
    """Deleting a knowledge base keeps its grants, and grantees still read it (empty)."""

    catalogue_kind = _KeptGrants


class _OwnerAsGrant(Catalogue):
    """The owner's own read access is one more grant row: a revoke naming the owner deletes it,
    and the owner no longer reads its knowledge base."""

    def __init__(self) -> None:
        super().__init__()
        self._ousted: set[int] = set()

    def revoke(self, kb: int, grantee: int) -> None:
        super().revoke(kb, grantee)
        owner = self._db.execute("SELECT owner FROM kbs WHERE id = ?", (kb,)).fetchone()
        if owner is not None and int(owner[0]) == grantee:
            self._ousted.add(kb)

    def _kept(self, tenant: int, rows: list[KbRow]) -> list[KbRow]:
        return [row for row in rows if not (row.owner == tenant and row.id in self._ousted)]

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        found = super().readable(tenant, externals)
        return {row.external: row for row in self._kept(tenant, list(found.values()))}

    def readable_by(self, tenant: int) -> list[KbRow]:
        return self._kept(tenant, super().readable_by(tenant))


class OwnerRevokesItself(_OtherCatalogue):
    """Ownership is kept as a grant row (:class:`_OwnerAsGrant`)."""

    catalogue_kind = _OwnerAsGrant


class _ReusedIds(Catalogue):
    """Knowledge bases get ``INTEGER PRIMARY KEY`` ids without ``AUTOINCREMENT``, and a delete
    removes the row: the newest knowledge base's id is given again after it is deleted."""

    def __init__(self) -> None:
        super().__init__()
        self._db.executescript(
            "PRAGMA foreign_keys = OFF; DROP TABLE grants; DROP TABLE kbs;"
            "CREATE TABLE kbs (id INTEGER PRIMARY KEY, external TEXT NOT NULL UNIQUE, owner INTEGER NOT NULL,"
            " store TEXT NOT NULL, model TEXT NOT NULL, state TEXT NOT NULL);"
            "CREATE TABLE grants (kb INTEGER NOT NULL, grantee INTEGER NOT NULL, PRIMARY KEY (kb, grantee));"
        )

    def discard(self, kb: int) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM grants WHERE kb = ?", (kb,))
            self._db.execute("DELETE FROM kbs WHERE id = ?", (kb,))


class DeleteReusesIds(_OtherCatalogue):
    """Deleting a knowledge base drops its catalogue row and leaves its documents to a purge
    that never comes; ids are reused, so the next knowledge base made inherits them."""

    catalogue_kind = _ReusedIds

    def delete_kb(self, caller: object, kb: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "delete_kb")
            row = self._administered(tenant, kb, "delete_kb")
            self.catalogue.discard(row.id)


class ListShowsShared(KbGrantService):
    """``list_kbs`` shows the caller's own knowledge bases and every one that is shared with
    anybody (a 'shared' flag read as shared with everyone)."""

    def list_kbs(self, caller: object, /) -> list[KbInfo]:
        with self._lock:
            tenant = self._caller(caller, "list_kbs")
            rows = self.catalogue._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner WHERE k.state = 'live' "
                "AND (k.owner = ? OR EXISTS (SELECT 1 FROM grants g WHERE g.kb = k.id)) ORDER BY k.id",
                (tenant.id,),
            )
            return [self._info(_row(row), "list_kbs") for row in rows]


# -- copies and moves ------------------------------------------------------------------------------


class CopyTrustsSource(KbGrantService):
    """A copy checks that its source exists, not that the caller may read it."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        if self._copying:
            row = self.catalogue.kb(_name(kb, "kb"))
            if row is None:
                raise NotFound(describe(kb))
            return row
        return super()._readable(tenant, kb)

    _copying = False

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        self._copying = True
        try:
            return super().copy_kb(caller, source, store)
        finally:
            self._copying = False


class CopySharesGrants(KbGrantService):
    """A copy carries the source's grants along: the source's grantees read the copy."""

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        copy = super().copy_kb(caller, source, store)
        with self._lock:
            original, made = self.catalogue.kb(str(source)), self.catalogue.kb(copy)
            assert original is not None
            assert made is not None
            self.catalogue._db.execute(
                "INSERT OR IGNORE INTO grants (kb, grantee) SELECT ?, grantee FROM grants WHERE kb = ? "
                "AND grantee != ?",
                (made.id, original.id, made.owner),
            )
        return copy


class _FirstPage(Delegating[VectorIndex]):
    """A store whose reads of a knowledge base's documents return the first page only (ten)."""

    def points(self, model: str, kb: int, /) -> list[Point]:
        return self.inner.points(model, kb)[:10]


class CopyAndMoveReadOnePage(KbGrantService):
    """A copy or a move reads the source's documents in one page of ten (a scroll never
    continued): the rest are left behind, and lost by a move."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__({k: _FirstPage(v) for k, v in stores.items()}, models, **options)


class MoveDeletesSourceFirst(KbGrantService):
    """A move deletes the source's documents first and then writes the target: a target that
    fails loses them all."""

    def _move(self, row: KbRow, target: str) -> None:
        read = self._call(row.store, "move_kb", lambda index: index.points(row.model, row.id))
        self._call(row.store, "move_kb", lambda index: index.delete_kb(row.model, row.id))
        self.catalogue.rebind(row.id, target)
        self._write(target, row.model, read, "move_kb", visible=True)


class FailedCopyLeavesEmptyKb(KbGrantService):
    """A copy creates its knowledge base first and fills it after: a copy whose store fails
    leaves a new, empty (or half-filled) knowledge base behind."""

    def _copy(self, row: KbRow, external: str, owner: int, target: str) -> None:
        copy = self.catalogue.create_kb(external, owner, target, row.model)
        self._write(target, row.model, self._copies(row, copy), "copy_kb", visible=True)


class DeleteCatalogueFirst(KbGrantService):
    """A delete drops the knowledge base from the catalogue first and then deletes its documents
    from the store: a store that fails leaves the knowledge base gone for everyone while the
    call raises BackendUnavailable (and its documents orphaned on the store)."""

    def delete_kb(self, caller: object, kb: object, /) -> None:
        with self._lock:
            tenant = self._caller(caller, "delete_kb")
            row = self._administered(tenant, kb, "delete_kb")
            self.catalogue.discard(row.id)
            self._call(row.store, "delete_kb", lambda index: index.delete_kb(row.model, row.id))


class IngestWritesEachDocument(KbGrantService):
    """An ingest writes its documents one store call each, with no undo: a store that fails
    midway keeps the documents written before it while the call raises."""

    def _write(
        self, store: str, model: str, points: Sequence[Point], operation: str, *, visible: bool
    ) -> None:
        if operation != "ingest":
            super()._write(store, model, points, operation, visible=visible)
            return
        for point in points:
            self._call(store, operation, lambda index, point=point: index.upsert(model, [point]))  # type: ignore[misc]


# -- the call contract ---------------------------------------------------------------------------


class IngestStoresValidPrefix(KbGrantService):
    """An ingest checks and stores one document at a time: the documents before a malformed one
    are stored, then the call fails."""

    def ingest(self, caller: object, kb: object, documents: object, /) -> list[str]:
        if isinstance(documents, Sequence) and not isinstance(documents, (str, bytes)) and len(documents) > 1:
            ids: list[str] = []
            for document in documents:
                ids += super().ingest(caller, kb, [document])
            return ids
        return super().ingest(caller, kb, documents)


class LimitAndKbsUnchecked(KbGrantService):
    """A search's limit is passed through ``int()`` and its knowledge bases deduplicated
    silently: a bool, a float, 0 or 1001 and a repeated id are answered, not refused."""

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        if isinstance(kbs, list) and all(type(kb) is str for kb in kbs):
            kbs = list(dict.fromkeys(kbs))
        try:
            count = min(max(int(limit), 1), 1000)  # type: ignore[call-overload]  # the bug: whatever int() takes
        except (TypeError, ValueError):
            count = 10
        return super().search(caller, kbs, embedding, count)


# -- smoke ----------------------------------------------------------------------------------------


class NoAuthorizationAnywhere(KbGrantService):
    """Smoke: every known tenant reads and administers every knowledge base."""

    def _readable(self, tenant: Tenant, kb: object) -> KbRow:
        row = self.catalogue.kb(_name(kb, "kb"))
        if row is None:
            raise NotFound(describe(kb))
        return row

    def _authorize(self, tenant: Tenant, names: Sequence[str]) -> list[KbRow]:
        return [self._readable(tenant, name) for name in names]

    def _administered(self, tenant: Tenant, kb: object, operation: str) -> KbRow:
        return self._readable(tenant, kb)


# -- the catalogue --------------------------------------------------------------------------------


# -- state shared between callers ------------------------------------------------------------------


class SearchCacheWithoutCaller(KbGrantService):
    """A search (knowledge bases, vector, limit) answered before is answered again from a cache
    keyed by the request alone, whoever asks; every write and every grant change empties it."""

    def __init__(self, stores: Mapping[str, VectorIndex], models: Mapping[str, int], **options: Any) -> None:
        super().__init__(stores, models, **options)
        self._answers: dict[str, list[GrantHit]] = {}

    def search(self, caller: object, kbs: object, embedding: object, limit: object, /) -> list[GrantHit]:
        with self._lock:
            self._caller(caller, "search")  # identity is still checked
            key = repr((kbs, embedding, limit))  # the bug: no caller
            if key not in self._answers:
                self._answers[key] = super().search(caller, kbs, embedding, limit)
            return list(self._answers[key])

    def _forget(self) -> None:
        with self._lock:
            self._answers.clear()

    def create_tenant(self, tenant: object, /) -> None:
        self._forget()
        super().create_tenant(tenant)

    def create_kb(self, caller: object, store: object, model: object, /) -> str:
        self._forget()
        return super().create_kb(caller, store, model)

    def share_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        self._forget()
        super().share_kb(caller, kb, grantee)

    def revoke_kb(self, caller: object, kb: object, grantee: object, /) -> None:
        self._forget()
        super().revoke_kb(caller, kb, grantee)

    def delete_kb(self, caller: object, kb: object, /) -> None:
        self._forget()
        super().delete_kb(caller, kb)

    def ingest(self, caller: object, kb: object, documents: object, /) -> list[str]:
        self._forget()
        return super().ingest(caller, kb, documents)

    def copy_kb(self, caller: object, source: object, store: object, /) -> str:
        self._forget()
        return super().copy_kb(caller, source, store)

    def move_kb(self, caller: object, kb: object, store: object, /) -> None:
        self._forget()
        super().move_kb(caller, kb, store)


# -- pages (schemas/pages.md) -------------------------------------------------------------------

#: The page the paged catalogue reads below read knowledge bases in.
CATALOGUE_PAGE = 100


class _ListPagesUnscoped(Catalogue):
    """Lists a tenant's knowledge bases a page of :data:`CATALOGUE_PAGE` at a time; the pages
    after the first are read without the tenant's access (every live knowledge base)."""

    def readable_by(self, tenant: int) -> list[KbRow]:
        rows: list[KbRow] = []
        while True:
            access = f"AND {_READABLE} " if not rows else ""  # the bug: page one only
            page = self._db.execute(
                f"SELECT {_COLUMNS} FROM kbs k JOIN tenants t ON t.id = k.owner "
                f"WHERE k.state = 'live' {access}ORDER BY k.id LIMIT :size OFFSET :skip",
                {"tenant": tenant, "size": CATALOGUE_PAGE, "skip": len(rows)},
            ).fetchall()
            rows += [_row(row) for row in page]
            if len(page) < CATALOGUE_PAGE:
                return rows


class ListPagesUnscoped(_OtherCatalogue):
    """``list_kbs`` reads the catalogue in pages; the pages after the first ignore access."""

    catalogue_kind = _ListPagesUnscoped


class _LookupDropsPartialPage(Catalogue):
    """Looks named knowledge bases up in ``max(1, n // CATALOGUE_PAGE)`` full pages: the names
    on the last, partial page are never looked up, so they read as unknown."""

    def readable(self, tenant: int, externals: Sequence[str]) -> dict[str, KbRow]:
        pages = max(1, len(externals) // CATALOGUE_PAGE)  # the bug: floor division
        found: dict[str, KbRow] = {}
        for start in range(0, pages * CATALOGUE_PAGE, CATALOGUE_PAGE):
            found |= super().readable(tenant, externals[start : start + CATALOGUE_PAGE])
        return found


class LookupDropsPartialPage(_OtherCatalogue):
    """A search's knowledge bases are looked up in full pages only: past a page, the last ones
    are unknown and the whole search is refused."""

    catalogue_kind = _LookupDropsPartialPage


# -- identifiers and claims inside the data -------------------------------------------------------


def _folded(name: str) -> str:
    """A name as an accent- and case-insensitive collation that pads spaces compares it."""
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().rstrip(" ")


class _FoldedTenants(Catalogue):
    """Tenant names compare as a case- and accent-insensitive collation that pads spaces (a
    database's default collation): ``Acme`` is ``acme``, and ``beta `` is ``beta``."""

    def tenant(self, name: str) -> Tenant | None:
        rows = self._db.execute("SELECT id, name FROM tenants ORDER BY id").fetchall()
        return next((Tenant(int(i), str(n)) for i, n in rows if _folded(str(n)) == _folded(name)), None)


class TenantNamesFolded(_OtherCatalogue):
    """The catalogue's tenant names compare folded (:class:`_FoldedTenants`): a second tenant
    whose name folds to a first one's cannot be created, and a caller or a grantee named so is
    that first tenant."""

    catalogue_kind = _FoldedTenants


class DocumentIdHonoured(KbGrantService):
    """An ingested document that carries an ``id`` is stored under it (an upsert, as a batch
    import keeps its ids): a document naming another's id overwrites it, wherever it is."""

    def _document_ids(self, documents: object, count: int) -> list[str]:
        assert isinstance(documents, Sequence)
        claimed = [d.get("id") for d in documents if isinstance(d, Mapping)]
        return [i if isinstance(i, str) and i else str(uuid.uuid4()) for i in claimed]


class Mutant(_mutant_base.Mutant[KbGrantService]):
    """A broken kb-grant backend, served by this module's ``by_name``."""

    __slots__ = ()


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-authorizes-after-retrieval",
        AuthorizesAfterRetrieval,
        "the stores are asked before read access is checked: a refused search consults them",
        ("grant-03",),
    ),
    Mutant(
        "grant-forbidden-where-not-found",
        ForbiddenWhereNotFound,
        "a foreign knowledge base is Forbidden, a missing one NotFound: existence is revealed",
        ("grant-02", "iso-01[get-kb]"),
    ),
    Mutant(
        "grant-pivots-to-first-readable",
        PivotsToFirstReadable,
        "unreadable knowledge bases are dropped from a search, an empty scope falls back to the "
        "caller's first knowledge base",
        ("grant-02", "iso-01[search-kbs]"),
    ),
    Mutant(
        "grant-unknown-tenant-unfiltered",
        UnknownTenantUnfiltered,
        "a caller id naming no tenant is served unfiltered",
        ("iso-02[search-kbs]", "iso-02[get-kb]", "iso-02[list-kbs]", "grant-14"),
    ),
    Mutant(
        "grant-unknown-tenant-created-on-first-call",
        UnknownTenantCreatedOnFirstCall,
        "a caller id never created is created on its first call",
        ("iso-02[search-kbs]", "iso-02[get-kb]", "iso-02[list-kbs]", "grant-14"),
    ),
    Mutant(
        "grant-mixed-models-merged",
        MixedModelsMerged,
        "knowledge bases of different models are searched together and their scores merged",
        ("grant-05", "grant-03"),
    ),
    Mutant(
        "grant-raw-scores-merged",
        RawScoresMerged,
        "each engine's own score (a distance, a similarity) is merged as it comes",
        ("grant-06", "iso-01[search-kbs]"),
    ),
    Mutant(
        "grant-normalized-only-when-mixed",
        NormalizedOnlyWhenMixed,
        "scores are normalized only when the hits span several engines",
        ("grant-06", "iso-01[search-kbs]"),
    ),
    Mutant(
        "grant-limit-per-store-not-overall",
        LimitPerStoreNotOverall,
        "each store group returns limit hits and the merge is not cut to limit",
        ("grant-06",),
    ),
    Mutant(
        "grant-limit-split-across-stores",
        LimitSplitAcrossStores,
        "the limit is split evenly over the store groups",
        ("grant-06", "grant-10"),
    ),
    Mutant(
        "grant-partial-results-on-group-failure",
        PartialResultsOnGroupFailure,
        "a store group that fails or misses its deadline is left out of the result",
        ("grant-07", "grant-08", "iso-03[search-kbs]"),
    ),
    Mutant(
        "grant-empty-on-store-error",
        EmptyOnStoreError,
        "a failing store is answered with no hits and no knowledge bases",
        ("iso-03[search-kbs]", "iso-03[get-kb]", "iso-03[list-kbs]", "grant-07"),
    ),
    Mutant(
        "grant-no-group-deadline",
        NoGroupDeadline,
        "every store group is waited for, however long it takes",
        ("grant-08",),
    ),
    Mutant(
        "grant-health-check-on-caller-thread",
        HealthCheckOnCallerThread,
        "each group's store is checked from the caller's thread before the fan-out",
        ("grant-08",),
    ),
    Mutant(
        "grant-grant-cached",
        GrantCached,
        "a grant once read is kept: a revoke never takes effect",
        ("grant-04", "grant-13", "grant-14"),
    ),
    Mutant(
        "grant-grantee-may-administer",
        GranteeMayAdminister,
        "administering checks read access only: a grantee shares, ingests, moves and deletes",
        ("grant-04", "grant-12"),
    ),
    Mutant(
        "grant-delete-keeps-grants",
        DeleteKeepsGrants,
        "a deleted knowledge base keeps its grants and its grantees still read it",
        ("grant-12", "grant-13", "iso-01[list-kbs]"),
    ),
    Mutant(
        "grant-owner-revokes-itself",
        OwnerRevokesItself,
        "the owner's read access is a grant row: revoking the owner as grantee locks it out of "
        "its own knowledge base",
        ("grant-04",),
    ),
    Mutant(
        "grant-delete-reuses-ids",
        DeleteReusesIds,
        "a delete drops the catalogue row only and ids are reused: a new knowledge base inherits "
        "the deleted one's documents",
        ("grant-12",),
    ),
    Mutant(
        "grant-list-shows-shared",
        ListShowsShared,
        "list_kbs shows every knowledge base shared with anybody",
        ("iso-01[list-kbs]",),
    ),
    Mutant(
        "grant-copy-trusts-source",
        CopyTrustsSource,
        "a copy checks that its source exists, not that the caller reads it",
        ("grant-09",),
    ),
    Mutant(
        "grant-copy-shares-grants",
        CopySharesGrants,
        "a copy carries the source's grants along",
        ("grant-04", "grant-09", "iso-01[list-kbs]"),
    ),
    Mutant(
        "grant-copy-and-move-read-one-page",
        CopyAndMoveReadOnePage,
        "a copy or move reads the source's first ten documents only",
        ("grant-10",),
    ),
    Mutant(
        "grant-move-deletes-source-first",
        MoveDeletesSourceFirst,
        "a move deletes the source before it writes the target: a failing target loses everything",
        ("grant-11",),
    ),
    Mutant(
        "grant-failed-copy-leaves-empty-kb",
        FailedCopyLeavesEmptyKb,
        "a copy creates its knowledge base before filling it: a failed copy leaves it behind",
        ("grant-11",),
    ),
    Mutant(
        "grant-delete-catalogue-first",
        DeleteCatalogueFirst,
        "a delete drops the catalogue row before the store's documents: a failing store leaves "
        "the knowledge base gone while the call raises",
        ("grant-16",),
    ),
    Mutant(
        "grant-ingest-writes-each-document",
        IngestWritesEachDocument,
        "an ingest writes each document in its own store call with no undo: a store failing "
        "midway keeps the first documents while the call raises",
        ("grant-16",),
    ),
    Mutant(
        "grant-ingest-stores-valid-prefix",
        IngestStoresValidPrefix,
        "an ingest stores documents one at a time: those before a malformed one stay",
        ("grant-01",),
    ),
    Mutant(
        "grant-limit-and-kbs-unchecked",
        LimitAndKbsUnchecked,
        "a search's limit goes through int() and repeated knowledge bases are deduplicated silently",
        ("grant-01",),
    ),
    Mutant(
        "grant-search-cache-without-caller",
        SearchCacheWithoutCaller,
        "a search is cached by its knowledge bases, vector and limit, not by caller, until the next write",
        ("grant-14",),
    ),
    Mutant(
        "grant-list-pages-unscoped",
        ListPagesUnscoped,
        "list_kbs reads the catalogue in pages; the pages after the first ignore access",
        ("grant-15",),
    ),
    Mutant(
        "grant-lookup-drops-partial-page",
        LookupDropsPartialPage,
        "a search's knowledge bases are looked up in full pages only: the last partial page is unknown",
        ("grant-15",),
    ),
    Mutant(
        "grant-tenant-names-folded",
        TenantNamesFolded,
        "tenant names (callers and grantees) compare case- and accent-insensitively, trailing spaces ignored",
        ("grant-13", "grant-14"),
    ),
    Mutant(
        "grant-document-id-honoured",
        DocumentIdHonoured,
        "an ingested document's own id key is its id: a document naming another's id overwrites it",
        ("grant-13", "grant-14"),
    ),
    Mutant(
        "grant-no-authorization-anywhere",
        NoAuthorizationAnywhere,
        "smoke: every known tenant reads and administers every knowledge base",
        (),
        smoke=True,
    ),
)


class MutantAdapter(ServesMutant[Mutant], GrantAdapter):
    """The kb-grant reference adapter, opening the mutant instead of the reference."""

    @property
    def kind(self) -> type[KbGrantService]:  # type: ignore[override]
        return self.mutant.kind


#: ``kbconform_reference.grant.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
