"""Mutants of the memory-scope reference, calls by id: get, update or delete that never look at
the scope, an id taken in any spelling, an update that stamps the scope anew or takes it from
its metadata."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform.errors import NotFound
from kbconform.profiles.memory_scope.protocol import MemoryHit
from kbconform_reference.memory.mutants._base import Mutant
from kbconform_reference.memory.service import COLLECTION, ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Record


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

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        self._scope(scope, "update")
        found = self._by_id_only(memory, "update")
        checked = self._text(text)
        self._upsert(str(found.id), checked, self._updated(found.payload or {}, checked, metadata), "update")


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

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        with self._lock:
            found = self._found(scope, memory, "update")
            checked = self._text(text)
            payload = {
                **self._updated(found.payload or {}, checked, metadata),
                "scope": self._scope(scope, "update"),
            }
            self._upsert(str(found.id), checked, payload, "update")


class UpdateMetadataOverScope(ScopedMemory):
    """An update's metadata is merged over the memory's whole payload, its scope keys included
    (mem0 before 2.0.13, #6277): an update with ``{"user_id": "bob"}`` moves the memory to bob."""

    @staticmethod
    def _updated(payload: Mapping[str, Any], text: str, metadata: object) -> dict[str, Any]:
        updated = ScopedMemory._updated(payload, text, metadata)
        if isinstance(metadata, Mapping):
            claimed = {k: v for k, v in metadata.items() if k in ("user_id", "agent_id", "run_id")}
            updated["scope"] = {**(payload.get("scope") or {}), **claimed}
        return updated


class UpdateLeftOutOfSearch(ScopedMemory):
    """An update writes a memory's new text and leaves the memory out of every later search (a
    search index kept apart from the records and not refreshed): its scope's list still shows
    it, and nothing of another scope's is shown anywhere."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.unindexed: set[str] = set()

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        super().update(scope, memory, text, metadata)
        self.unindexed.add(str(memory))

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        found = super().search(scope, text, limit, where)
        return [hit for hit in found if hit.id not in self.unindexed]


MUTANTS: tuple[Mutant, ...] = (
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
        ("mem-05", "mem-11", "mem-12"),
    ),
    Mutant(
        "mem-delete-ignores-scope",
        DeleteIgnoresScope,
        "a memory is deleted by id whatever the caller's scope",
        ("mem-05", "mem-11", "mem-12"),
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
        ("mem-05", "mem-11"),
    ),
    Mutant(
        "mem-update-left-out-of-search",
        UpdateLeftOutOfSearch,
        "an updated memory is left out of every later search, while its scope's list shows it",
        ("mem-05", "mem-14"),
    ),
    Mutant(
        "mem-update-metadata-over-scope",
        UpdateMetadataOverScope,
        "an update's metadata keys named like scope keys move the memory into that scope",
        ("mem-14",),
    ),
)
