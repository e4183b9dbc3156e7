"""Mutants of the memory-scope reference: each one invariant of ``schemas/memory-scope.md`` broken.

Each mutant is a :class:`ScopedMemory` subclass that breaks the way agent-memory libraries are
reported to break (the spec's "Where the rules come from" names the reports): a read filtered on
one key of the scope, a scope stamped on write and dropped on read, a missing scope that falls
back to everything, metadata merged over the scope, by-id calls that never look at the scope.
``MUTANTS`` is registered as the mutant set ``reference-memory`` (entry-point group
``kbconform.mutants``); ``kbconform mutants --set reference-memory`` runs it. Importing this
module needs no Qdrant: a mutant's backend imports ``qdrant_client`` when it is opened.
"""

from __future__ import annotations

import builtins
import unicodedata
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform.adapter import BackendOptions
from kbconform.errors import BackendUnavailable, NotFound
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MemoryHit
from kbconform_reference import _mutant_base
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.memory.adapter import MemoryAdapter
from kbconform_reference.memory.service import COLLECTION, ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter, Record


def _hits(points: Any) -> builtins.list[MemoryHit]:
    return [MemoryHit(str(p.id), str((p.payload or {})["text"])) for p in points]


# -- identity -------------------------------------------------------------------------------------


class MissingScopeReadsAll(ScopedMemory):
    """A read whose scope names nothing (None, empty, no usable value) runs with no filter: the
    fallback of a memory whose key defaults to 'no filter' when the caller sends none."""

    def _unscoped(self, scope: object) -> bool:
        return not isinstance(scope, Mapping) or not any(type(v) is str and v for v in scope.values())

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        if self._unscoped(scope):
            return _hits(self._scroll(self._everything(), "list"))
        return super().list(scope)

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        if self._unscoped(scope):
            with self._store("search"):
                found = self.client.query_points(COLLECTION, query=self._vector(str(text)), limit=int(limit))  # type: ignore[call-overload]
            return _hits(found.points)
        return super().search(scope, text, limit, where)

    def _everything(self) -> Filter:
        from qdrant_client import models

        return models.Filter()


class UnknownKeysDropped(ScopedMemory):
    """Keys the backend does not know are dropped from the scope instead of refused: a scope
    naming only an unknown key is empty, and an empty filter reads every memory."""

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        if isinstance(scope, Mapping):
            known = {k: v for k, v in scope.items() if k in ("user_id", "agent_id", "run_id")}
            if not known and scope:
                return {}
            return super()._scope(known, operation)
        return super()._scope(scope, operation)


class DeleteAllWithoutScopeDeletesEverything(ScopedMemory):
    """A delete of every memory whose scope names nothing deletes every memory of every scope
    (an endpoint that runs its delete with the filters it was given, none)."""

    def delete_all(self, scope: object, /) -> None:
        from qdrant_client import models

        if isinstance(scope, Mapping) and scope and all(type(v) is str and v for v in scope.values()):
            return super().delete_all(scope)
        with self._store("delete_all"):
            self.client.delete(
                COLLECTION, points_selector=models.FilterSelector(filter=models.Filter()), wait=True
            )
        return None


# -- reads ----------------------------------------------------------------------------------------


class SearchFiltersOnFirstKeyOnly(ScopedMemory):
    """A search filters on the user only, whatever else the scope names (a memory search that
    scopes by one key and forgets the others)."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        if isinstance(scope, Mapping) and "user_id" in scope:
            scope = {"user_id": scope["user_id"]}
        return super().search(scope, text, limit, where)


class ListDropsScope(ScopedMemory):
    """The scope is stamped on every write and dropped on list: a list returns every memory."""

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        from qdrant_client import models

        self._scope(scope, "list")
        return _hits(self._scroll(models.Filter(), "list"))


class ScopeValuesCasefolded(ScopedMemory):
    """Scope values are lower-cased and trimmed on write and read: ``Alice`` is ``alice``."""

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        checked = super()._scope(scope, operation)
        return {key: value.strip().casefold() for key, value in checked.items()}


class ScopeValuesNormalized(ScopedMemory):
    """Scope values are NFKC-normalized and their separators folded to ``_``: ``café`` in either
    Unicode form is one user, and so are ``a/b`` and ``a_b``."""

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        checked = super()._scope(scope, operation)
        return {
            key: unicodedata.normalize("NFKC", value).replace("/", "_").replace(".", "_")
            for key, value in checked.items()
        }


class CompositeKeyByPrefix(ScopedMemory):
    """The scope is one string, the values joined with ``:``, and a read matches the memories
    whose string starts with the caller's: ``u1`` reads ``u10``'s, and ``alice:planner`` alone is
    alice with the agent planner."""

    def _payload(self, scope: Mapping[str, str], text: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        return {**super()._payload(scope, text, metadata), "key": ":".join(scope.values())}

    def _filter(self, scope: Mapping[str, str]) -> Filter:
        from qdrant_client import models

        prefix = ":".join(scope.values())
        points = self.client.scroll(COLLECTION, limit=100_000, with_payload=True)[0]
        chosen = [p.id for p in points if str((p.payload or {}).get("key", "")).startswith(prefix)]
        return models.Filter(must=[models.HasIdCondition(has_id=chosen)])

    def _within(self, payload: Mapping[str, Any], scope: Mapping[str, str]) -> bool:
        return str(payload.get("key", "")).startswith(":".join(scope.values()))


class WildcardValueMatchesAll(ScopedMemory):
    """A scope value ``*`` drops its key's condition, as a store adapter that reads ``*`` as
    "any" does: the scope ``{user_id: *}`` reads, and deletes, every user's memories."""

    def _filter(self, scope: Mapping[str, str]) -> Filter:
        return super()._filter({k: v for k, v in scope.items() if v != "*"})

    def _within(self, payload: Mapping[str, Any], scope: Mapping[str, str]) -> bool:
        return super()._within(payload, {k: v for k, v in scope.items() if v != "*"})


class FilterAfterTopK(ScopedMemory):
    """A search takes the nearest ``limit`` memories of the whole collection, then drops those
    outside the scope: a scope's own memories are crowded out by others nearer the query."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        caller = self._scope(scope, "search")
        if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
            return super().search(scope, text, limit, where)
        with self._store("search"):
            found = self.client.query_points(
                COLLECTION, query=self._vector(str(text)), limit=limit, with_payload=True
            )
        kept = [p for p in found.points if self._within(p.payload or {}, caller)]
        if where is not None:
            allowed = {str(p.id) for p in self._scroll(self._where(caller, where), "search")}
            kept = [p for p in kept if str(p.id) in allowed]
        return _hits(kept)


class EmptyOnStoreError(ScopedMemory):
    """A store that fails is answered with no memories instead of BackendUnavailable."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        try:
            return super().search(scope, text, limit, where)
        except BackendUnavailable:
            return []

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        try:
            return super().list(scope)
        except BackendUnavailable:
            return []


# -- claims inside data ---------------------------------------------------------------------------


class MetadataMergedOverScope(ScopedMemory):
    """Metadata is merged into the stored scope: a key the caller's scope does not name is taken
    from the client's metadata (a payload built from the metadata, then the scope's keys set)."""

    def _payload(self, scope: Mapping[str, str], text: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        claimed = {
            k: v for k, v in metadata.items() if k in ("user_id", "agent_id", "run_id") and type(v) is str
        }
        return super()._payload({**claimed, **scope}, text, metadata)


class FilterMergedIntoScope(ScopedMemory):
    """A where clause's equalities on scope keys replace the scope's values (a caller's filters
    merged over the scope's, the caller's last)."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        if isinstance(scope, Mapping) and isinstance(where, Mapping):
            named = {
                k: v for k, v in where.items() if k in ("user_id", "agent_id", "run_id") and type(v) is str
            }
            if named:
                rest = {k: v for k, v in where.items() if k not in named}
                return super().search({**scope, **named}, text, limit, rest or None)
        return super().search(scope, text, limit, where)


class FilterAndFlattened(ScopedMemory):
    """A where clause's ``$and`` is flattened into the top level, its equalities on scope keys
    written over the scope's (a filter processor that merges nested conditions into one dict)."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        if isinstance(scope, Mapping) and isinstance(where, Mapping) and isinstance(where.get("$and"), list):
            named = {
                k: v
                for part in where["$and"]
                if isinstance(part, Mapping)
                for k, v in part.items()
                if k in ("user_id", "agent_id", "run_id") and type(v) is str
            }
            rest = [p for p in where["$and"] if not (isinstance(p, Mapping) and set(p) & set(named))]
            narrowed = {**where, "$and": rest} if rest else {k: v for k, v in where.items() if k != "$and"}
            return super().search({**scope, **named}, text, limit, narrowed or None)
        return super().search(scope, text, limit, where)


class FilterOrWidens(ScopedMemory):
    """A where clause is combined with the scope as ``should`` beside it: a memory matching the
    clause in any scope is found (``scope OR clause`` instead of ``scope AND clause``)."""

    def _where(self, caller: Mapping[str, str], where: object) -> Filter:
        from qdrant_client import models

        narrowed = super()._where(caller, where)
        if where is None:
            return narrowed
        everywhere = [
            p.id
            for p in self._scroll(models.Filter(), "search")
            if _selects((p.payload or {}).get("metadata") or {}, where)
        ]
        return models.Filter(should=[narrowed, models.HasIdCondition(has_id=everywhere)])


def _selects(metadata: Mapping[str, Any], where: object) -> bool:
    from kbconform.adapter import where_matches

    return where_matches(metadata, where)


# -- by id ----------------------------------------------------------------------------------------


class GetIgnoresScope(ScopedMemory):
    """A memory is got by its id whatever the caller's scope (while the manifest says by-id calls
    take it)."""

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        self._scope(scope, "get")
        found = self._by_id_only(memory, "get")
        return MemoryHit(str(found.id), str((found.payload or {})["text"]))

    def _by_id_only(self, memory: object, operation: str) -> Record:
        with self._store(operation):
            found = (
                self.client.retrieve(COLLECTION, ids=[str(memory)], with_payload=True)
                if _uuid(memory)
                else []
            )
        if not found:
            raise NotFound(str(memory))
        return found[0]


class UpdateIgnoresScope(GetIgnoresScope):
    """A memory's text is replaced by its id whatever the caller's scope."""

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        return ScopedMemory.get(self, scope, memory)

    def update(self, scope: object, memory: object, text: object, /) -> None:
        self._scope(scope, "update")
        found = self._by_id_only(memory, "update")
        checked = self._text(text)
        self._upsert(str(found.id), checked, {**(found.payload or {}), "text": checked}, "update")


class DeleteIgnoresScope(GetIgnoresScope):
    """A memory is deleted by its id whatever the caller's scope."""

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        return ScopedMemory.get(self, scope, memory)

    def delete(self, scope: object, memory: object, /) -> None:
        from qdrant_client import models

        self._scope(scope, "delete")
        found = self._by_id_only(memory, "delete")
        with self._store("delete"):
            self.client.delete(COLLECTION, points_selector=models.PointIdsList(points=[found.id]), wait=True)


class IdAnySpelling(ScopedMemory):
    """A memory id is read as the store reads it: any spelling of its UUID (upper case, no
    hyphens) is the memory."""

    def _found(self, scope: object, memory: object, operation: str) -> Record:
        caller = self._scope(scope, operation)
        if not _uuid(memory):
            raise NotFound(str(memory))
        with self._store(operation):
            found = self.client.retrieve(COLLECTION, ids=[str(memory)], with_payload=True)
        if not found or not self._within(found[0].payload or {}, caller):
            raise NotFound(str(memory))
        return found[0]


def _uuid(memory: object) -> bool:
    try:
        uuid.UUID(str(memory))
    except ValueError:
        return False
    return True


class UpdateRestampsScope(ScopedMemory):
    """An update stores the memory under the caller's scope: alice updating her planner's memory
    takes it out of the planner's scope."""

    def update(self, scope: object, memory: object, text: object, /) -> None:
        with self._lock:
            found = self._found(scope, memory, "update")
            checked = self._text(text)
            payload = {**(found.payload or {}), "text": checked, "scope": self._scope(scope, "update")}
            self._upsert(str(found.id), checked, payload, "update")


# -- contract and faults --------------------------------------------------------------------------


class LimitCoerced(ScopedMemory):
    """A search limit is clamped into 1 to 1000 instead of refused."""

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        clamped = max(1, min(MAX_LIMIT, int(limit))) if isinstance(limit, int) else limit
        return super().search(scope, text, clamped, where)


class EmptyTextStored(ScopedMemory):
    """Text is stored as given, empty or not a string (as its string form)."""

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        return super().add(scope, str(text) if text != "" else "(empty)", metadata)


class DeleteAllOneByOne(ScopedMemory):
    """A scope's memories are deleted one store call each: a store failing midway leaves some
    deleted while the call raises."""

    def delete_all(self, scope: object, /) -> None:
        from qdrant_client import models

        with self._lock:
            caller = self._scope(scope, "delete_all")
            for point in self._scroll(self._filter(caller), "delete_all"):
                with self._store("delete_all"):
                    self.client.delete(
                        COLLECTION, points_selector=models.PointIdsList(points=[point.id]), wait=True
                    )


class NoFilterAnywhere(ScopedMemory):
    """Smoke: every read runs over the whole collection."""

    def _filter(self, scope: Mapping[str, str]) -> Filter:
        from qdrant_client import models

        return models.Filter()


class Mutant(_mutant_base.Mutant[ScopedMemory]):
    """A broken memory-scope backend, served by this module's ``by_name``."""

    __slots__ = ()


def _both(test: str) -> tuple[str, str]:
    return (f"{test}[search-memories]", f"{test}[list-memories]")


def _kinds(*kinds: str) -> tuple[str, ...]:
    """mem-02's ids for these kinds of callers that name no scope."""
    return tuple(f"mem-02[{kind}]" for kind in kinds)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "mem-missing-scope-reads-all",
        MissingScopeReadsAll,
        "a read whose scope names nothing runs with no filter",
        (
            *_both("iso-02"),
            *_kinds("None", "empty scope", "empty value", "None value", "number value", "list value"),
            *_kinds("bare value"),
            "mem-12",
        ),
    ),
    Mutant(
        "mem-unknown-keys-dropped",
        UnknownKeysDropped,
        "keys the backend does not know are dropped: a scope of unknown keys reads everything",
        (*_both("iso-02"), *_kinds("keys naming no scope"), "mem-12"),
    ),
    Mutant(
        "mem-delete-all-without-scope",
        DeleteAllWithoutScopeDeletesEverything,
        "a delete of every memory with no scope deletes every scope's memories",
        (*_kinds("None"), "mem-08"),
    ),
    Mutant(
        "mem-search-first-key-only",
        SearchFiltersOnFirstKeyOnly,
        "a search filters on the user only, whatever else the scope names",
        ("iso-01[search-memories]", "mem-01"),
    ),
    Mutant(
        "mem-list-drops-scope",
        ListDropsScope,
        "the scope is stamped on write and dropped on list",
        ("iso-01[list-memories]", "mem-01"),
    ),
    Mutant(
        "mem-scope-values-casefolded",
        ScopeValuesCasefolded,
        "scope values are lower-cased and trimmed: Alice is alice",
        (*_both("iso-01"), "mem-03[case]", "mem-03[surrounding space]"),
    ),
    Mutant(
        "mem-scope-values-normalized",
        ScopeValuesNormalized,
        "scope values are NFKC-normalized and separators folded: a/b is a_b",
        ("mem-03[unicode form]", "mem-03[separators]"),
    ),
    Mutant(
        "mem-composite-key-by-prefix",
        CompositeKeyByPrefix,
        "the scope is one joined string matched by prefix: u1 reads u10's",
        (*_both("iso-01"), "mem-03[prefix]", "mem-03[composite]"),
    ),
    Mutant(
        "mem-wildcard-value-matches-all",
        WildcardValueMatchesAll,
        "a scope value * drops its key's condition: {user_id: *} is every user",
        ("mem-03[wildcard]",),
    ),
    Mutant(
        "mem-filter-after-top-k",
        FilterAfterTopK,
        "a search takes the nearest memories of everyone, then drops those outside the scope",
        ("mem-10",),
    ),
    Mutant(
        "mem-empty-on-store-error",
        EmptyOnStoreError,
        "a failing store is answered with no memories",
        _both("iso-03"),
    ),
    Mutant(
        "mem-metadata-merged-over-scope",
        MetadataMergedOverScope,
        "metadata keys named like scope keys fill the keys the scope does not name",
        ("mem-07",),
    ),
    Mutant(
        "mem-filter-merged-into-scope",
        FilterMergedIntoScope,
        "a where clause's equalities on scope keys replace the scope's values",
        ("mem-06",),
    ),
    Mutant(
        "mem-filter-and-flattened",
        FilterAndFlattened,
        "a where clause's $and is flattened over the scope: its scope keys replace the scope's",
        ("mem-06",),
    ),
    Mutant(
        "mem-filter-or-widens",
        FilterOrWidens,
        "a where clause is OR-ed with the scope instead of AND-ed",
        ("mem-06",),
    ),
    Mutant(
        "mem-get-ignores-scope",
        GetIgnoresScope,
        "a memory is got by id whatever the caller's scope",
        ("mem-04",),
    ),
    Mutant(
        "mem-update-ignores-scope",
        UpdateIgnoresScope,
        "a memory is updated by id whatever the caller's scope",
        ("mem-05", "mem-11"),
    ),
    Mutant(
        "mem-delete-ignores-scope",
        DeleteIgnoresScope,
        "a memory is deleted by id whatever the caller's scope",
        ("mem-05", "mem-11"),
    ),
    Mutant(
        "mem-id-any-spelling",
        IdAnySpelling,
        "any spelling of a memory's UUID (upper case) is the memory",
        ("mem-04",),
    ),
    Mutant(
        "mem-update-restamps-scope",
        UpdateRestampsScope,
        "an update stores the memory under the caller's scope",
        ("mem-05",),
    ),
    Mutant(
        "mem-limit-clamped",
        LimitCoerced,
        "a search limit out of range is clamped instead of refused",
        ("mem-09",),
    ),
    Mutant(
        "mem-empty-text-stored",
        EmptyTextStored,
        "empty or non-string text is stored instead of refused",
        ("mem-09",),
    ),
    Mutant(
        "mem-delete-all-one-by-one",
        DeleteAllOneByOne,
        "a scope's memories are deleted one store call each: a failure midway deletes some",
        ("mem-13",),
    ),
    Mutant(
        "mem-no-filter-anywhere",
        NoFilterAnywhere,
        "smoke: every read runs over the whole collection",
        (),
        smoke=True,
    ),
)


class MutantAdapter(ServesMutant[Mutant], MemoryAdapter):
    """The memory-scope reference adapter, opening the mutant instead of the reference."""

    def _memory(self, options: BackendOptions) -> ScopedMemory:
        return self.mutant.kind(store_fails=options.store_fails)


#: ``kbconform_reference.memory.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
