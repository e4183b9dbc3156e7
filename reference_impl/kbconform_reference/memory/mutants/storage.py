"""Mutants of the memory-scope reference, what a store shares, reuses, caches and shortens: a
write merged into a near-identical memory of another scope, ids freed and handed out again
under a stale cache, an embedding stored once per text and deleted from under another scope, a
read cache a delete of every memory leaves standing, scope values cut at a column's width, and
a third scope key accepted and dropped."""

from __future__ import annotations

import builtins
import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform.errors import NotFound
from kbconform.profiles.memory_scope.protocol import MemoryHit
from kbconform_reference.memory.mutants._base import Mutant, both
from kbconform_reference.memory.service import COLLECTION, ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Record

#: The width of the scope column a truncating store keeps (a ``VARCHAR(64)``).
WIDTH = 64


def _near(text: str) -> str:
    """A text as a consolidating write compares it: case and surrounding space folded."""
    return " ".join(text.split()).casefold()


class AddMergesNearDuplicate(ScopedMemory):
    """An add that finds a memory with the same text (case and spacing aside) updates it and
    returns its id, whatever scope that memory was written under: a consolidating write (an
    "add if new, else update") that looks for duplicates across the whole store."""

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self._lock:
            caller = self._scope(scope, "add")
            checked = self._text(text)
            if isinstance(metadata, Mapping):
                for point in self._scroll(_everything(), "add"):
                    payload = dict(point.payload or {})
                    if _near(str(payload.get("text", ""))) == _near(checked):
                        self._upsert(str(point.id), checked, {**payload, "text": checked}, "add")
                        return str(point.id)
            return super().add(caller, checked, metadata)


class RecycledIdsStaleCache(ScopedMemory):
    """Ids are slots: the lowest one a delete freed is handed out again. A by-id read cache
    (each memory's scope and text, filled by a get) is refreshed by an update and forgotten by
    nothing else: a recycled id is still the deleted memory's, under its old scope."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._next = 1
        self._freed: builtins.list[int] = []
        self._cache: dict[str, tuple[dict[str, Any], str]] = {}

    def _slot(self) -> str:
        if self._freed:
            self._freed.sort()
            return str(uuid.UUID(int=self._freed.pop(0)))
        self._next += 1
        return str(uuid.UUID(int=self._next - 1))

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self._lock:
            caller = self._scope(scope, "add")
            checked = self._text(text)
            if not isinstance(metadata, Mapping):
                return super().add(scope, text, metadata)
            memory = self._slot()
            self._upsert(memory, checked, self._payload(caller, checked, metadata), "add")
            return memory

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        with self._lock:
            caller = self._scope(scope, "get")
            if isinstance(memory, str) and memory in self._cache:
                written, text = self._cache[memory]
                if not all(written.get(k) == v for k, v in caller.items()):
                    raise NotFound(memory)
                return MemoryHit(memory, text)
            found = self._found(scope, memory, "get")
            payload = found.payload or {}
            self._cache[str(found.id)] = (dict(payload["scope"]), str(payload["text"]))
            return MemoryHit(str(found.id), str(payload["text"]))

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        with self._lock:
            super().update(scope, memory, text, metadata)
            self._cache.pop(str(memory), None)

    def delete(self, scope: object, memory: object, /) -> None:
        with self._lock:
            found = self._found(scope, memory, "delete")
            super().delete(scope, memory)
            self._freed.append(uuid.UUID(str(found.id)).int)

    def delete_all(self, scope: object, /) -> None:
        with self._lock:
            gone = self._scroll(self._filter(self._scope(scope, "delete_all")), "delete_all")
            super().delete_all(scope)
            self._freed += [uuid.UUID(str(point.id)).int for point in gone]


class SharedTextDeletedWithOne(ScopedMemory):
    """A text's embedding is stored once and shared by every memory holding that text, in any
    scope; a delete removes the embedding, and with it every memory that pointed at it."""

    def _shared(self, points: builtins.list[Record], operation: str) -> None:
        from qdrant_client import models

        for text in {str((p.payload or {}).get("text")) for p in points}:
            same = models.Filter(
                must=[models.FieldCondition(key="text", match=models.MatchValue(value=text))]
            )
            with self._store(operation):
                self.client.delete(COLLECTION, points_selector=models.FilterSelector(filter=same), wait=True)

    def delete(self, scope: object, memory: object, /) -> None:
        with self._lock:
            found = self._found(scope, memory, "delete")
            super().delete(scope, memory)
            self._shared([found], "delete")

    def delete_all(self, scope: object, /) -> None:
        with self._lock:
            gone = self._scroll(self._filter(self._scope(scope, "delete_all")), "delete_all")
            super().delete_all(scope)
            self._shared(gone, "delete_all")


class ReadCacheSurvivesDeleteAll(ScopedMemory):
    """Reads are cached by their scope and arguments; an add, an update and a delete by id clear
    the cache, a delete of every memory of a scope does not: the scope reads what it deleted."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._reads: dict[str, builtins.list[MemoryHit]] = {}

    def _cached(self, key: object, read: Any) -> builtins.list[MemoryHit]:
        named = json.dumps(key, sort_keys=True, default=repr)
        if named not in self._reads:
            self._reads[named] = list(read())
        return list(self._reads[named])

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        with self._lock:
            caller = self._scope(scope, "list")
            return self._cached(["list", caller], lambda: super(ReadCacheSurvivesDeleteAll, self).list(scope))

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        with self._lock:
            caller = self._scope(scope, "search")
            made = super().search  # checks the arguments before anything is cached
            return self._cached(
                ["search", caller, text, limit, where], lambda: made(scope, text, limit, where)
            )

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self._lock:
            memory = super().add(scope, text, metadata)
            self._reads.clear()
            return memory

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        with self._lock:
            super().update(scope, memory, text, metadata)
            self._reads.clear()

    def delete(self, scope: object, memory: object, /) -> None:
        with self._lock:
            super().delete(scope, memory)
            self._reads.clear()


class ScopeValuesTruncated(ScopedMemory):
    """Scope values are kept to the column's width (64 characters) on write and read: two long
    values that share their first 64 characters are one scope."""

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        return {key: value[:WIDTH] for key, value in super()._scope(scope, operation).items()}


class ThirdKeyDropped(ScopedMemory):
    """The store has columns for the first two scope keys only: a third is accepted and dropped,
    on write and read, so runs of one user's agent are one scope (and a scope of the third key
    alone names nothing, which reads everything)."""

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        return {key: value for key, value in super()._scope(scope, operation).items() if key != "run_id"}


def _everything() -> Any:
    from qdrant_client import models

    return models.Filter()


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "mem-add-merges-across-scopes",
        AddMergesNearDuplicate,
        "an add merges into a memory with the same text in any scope",
        ("mem-11", "mem-12"),
    ),
    Mutant(
        "mem-recycled-id-stale-cache",
        RecycledIdsStaleCache,
        "a freed id is handed out again while a by-id cache still holds the deleted memory",
        ("mem-11",),
    ),
    Mutant(
        "mem-shared-text-deleted-with-one",
        SharedTextDeletedWithOne,
        "a text stored once for every scope is deleted with one scope's memory",
        ("mem-11",),
    ),
    Mutant(
        "mem-read-cache-survives-delete-all",
        ReadCacheSurvivesDeleteAll,
        "a read cache is not cleared by a delete of every memory of a scope",
        ("mem-08", "mem-11"),
    ),
    Mutant(
        "mem-scope-values-truncated",
        ScopeValuesTruncated,
        "scope values are cut at 64 characters: long look-alike values are one scope",
        (*both("iso-01"), "mem-03[long]", "mem-11"),
    ),
    Mutant(
        "mem-third-key-dropped",
        ThirdKeyDropped,
        "a third scope key is accepted and dropped: one user's runs are one scope",
        (*both("iso-01"), "mem-01", "mem-11"),
    ),
)
