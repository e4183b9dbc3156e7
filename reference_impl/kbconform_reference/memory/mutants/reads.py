"""Mutants of the memory-scope reference, the scope of a read: a missing scope that reads or
deletes everything, unknown keys dropped, a search filtered on one key, a list without the scope,
values casefolded, normalized or matched by prefix, a wildcard value, a filter after the top k, a
failing store read as no results."""

from __future__ import annotations

import builtins
import unicodedata
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform.errors import BackendUnavailable
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MemoryHit
from kbconform_reference.memory.mutants._base import Mutant, as_hits, both, kinds
from kbconform_reference.memory.service import COLLECTION, ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


class MissingScopeReadsAll(ScopedMemory):
    """A read whose scope names nothing (None, empty, no usable value) runs with no filter: the
    fallback of a memory whose key defaults to 'no filter' when the caller sends none."""

    def _unscoped(self, scope: object) -> bool:
        return not isinstance(scope, Mapping) or not any(type(v) is str and v for v in scope.values())

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        if self._unscoped(scope):
            return as_hits(self._scroll(self._everything(), "list"))
        return super().list(scope)

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        if self._unscoped(scope):
            with self._store("search"):
                found = self.client.query_points(COLLECTION, query=self._vector(str(text)), limit=int(limit))  # type: ignore[call-overload]
            return as_hits(found.points)
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
        return as_hits(self._scroll(models.Filter(), "list"))


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
        return as_hits(kept)


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


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "mem-missing-scope-reads-all",
        MissingScopeReadsAll,
        "a read whose scope names nothing runs with no filter",
        (
            *both("iso-02"),
            *kinds("None", "empty scope", "empty value", "None value", "number value", "list value"),
            *kinds("bare value"),
            "mem-12",
        ),
    ),
    Mutant(
        "mem-unknown-keys-dropped",
        UnknownKeysDropped,
        "keys the backend does not know are dropped: a scope of unknown keys reads everything",
        (*both("iso-02"), *kinds("keys naming no scope"), "mem-12"),
    ),
    Mutant(
        "mem-delete-all-without-scope",
        DeleteAllWithoutScopeDeletesEverything,
        "a delete of every memory with no scope deletes every scope's memories",
        (*kinds("None"), "mem-08", "mem-12"),
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
        (*both("iso-01"), "mem-03[case]", "mem-03[surrounding space]", "mem-11", "mem-12"),
    ),
    Mutant(
        "mem-scope-values-normalized",
        ScopeValuesNormalized,
        "scope values are NFKC-normalized and separators folded: a/b is a_b",
        ("mem-03[unicode form]", "mem-03[separators]", "mem-11", "mem-12"),
    ),
    Mutant(
        "mem-composite-key-by-prefix",
        CompositeKeyByPrefix,
        "the scope is one joined string matched by prefix: u1 reads u10's",
        (*both("iso-01"), "mem-03[prefix]", "mem-03[composite]", "mem-11", "mem-12"),
    ),
    Mutant(
        "mem-wildcard-value-matches-all",
        WildcardValueMatchesAll,
        "a scope value * drops its key's condition: {user_id: *} is every user",
        ("mem-03[wildcard]", "mem-11", "mem-12"),
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
        both("iso-03"),
    ),
)
