"""Mutants of the memory-scope reference, the call contract and faults: a limit coerced, empty
text stored, a delete of everything one memory at a time; and the smoke, which filters nothing."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MemoryHit
from kbconform_reference.memory.mutants._base import Mutant
from kbconform_reference.memory.service import COLLECTION, ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


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


MUTANTS: tuple[Mutant, ...] = (
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
