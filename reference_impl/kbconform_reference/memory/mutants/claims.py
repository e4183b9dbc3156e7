"""Mutants of the memory-scope reference that take a claim from inside the data: metadata merged
over the scope, a filter merged into it, a filter's ``$and`` flattened or its ``$or`` widening
the read."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform.profiles.memory_scope.protocol import MemoryHit
from kbconform_reference.memory.mutants._base import Mutant
from kbconform_reference.memory.service import ScopedMemory

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


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


MUTANTS: tuple[Mutant, ...] = (
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
)
