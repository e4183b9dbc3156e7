"""Mutants of the project-pool reference, the call contract and faults: a failing store read as
no results, a limit coerced, an entity's missing fields defaulted; and the smoke, which filters
nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kbconform.errors import BackendUnavailable
from kbconform_reference.pool.membership import SessionRow
from kbconform_reference.pool.mutants._base import Mutant, both
from kbconform_reference.pool.qdrant import unchecked_any_of
from kbconform_reference.pool.service import PoolHit, ProjectPool

if TYPE_CHECKING:
    from qdrant_client.http.models import Filter


class EmptyOnStoreError(ProjectPool):
    """A store that fails is answered with no hits instead of BackendUnavailable."""

    def search_episodes(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_episodes(session, text, limit)
        except BackendUnavailable:
            return []

    def search_entities(self, session: object, text: object, limit: object, /) -> list[PoolHit]:
        try:
            return super().search_entities(session, text, limit)
        except BackendUnavailable:
            return []


class NoFilterAnywhere(ProjectPool):
    """Smoke: every search of every known session runs over the whole collection."""

    def _episode_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        return unchecked_any_of("sessionId", [])

    def _entity_filter(self, caller: SessionRow, operation: str) -> Filter | None:
        return unchecked_any_of("projectId", [])


class LimitCoerced(ProjectPool):
    """A search limit is not checked, only passed through ``int()`` to Qdrant: 0, -1 and 1001
    reach the store as they are (and ``"3"``, ``True`` and ``2.0`` are answered in process)."""

    def _query(self, text: object, limit: object) -> tuple[str, int]:
        if not isinstance(text, str):
            return super()._query(text, limit)
        return text, int(limit)  # type: ignore[call-overload]  # the bug: whatever int() takes


class EntityFieldsDefaulted(ProjectPool):
    """An extracted entity missing a field, or with an empty or non-string one, is stored with
    the field defaulted to an empty string (``entity.get(key) or ""``) instead of refused."""

    def extract_entities(self, session: object, entities: object, /) -> list[str]:
        if isinstance(entities, Sequence) and not isinstance(entities, (str, bytes)):
            entities = [
                {key: str(entity.get(key) or "-") for key in ("name", "type", "notes")}
                if isinstance(entity, Mapping)
                else entity
                for entity in entities
            ]
        return super().extract_entities(session, entities)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pool-empty-on-store-error",
        EmptyOnStoreError,
        "a failing store is answered with no hits",
        both("iso-03"),
    ),
    Mutant(
        "pool-limit-coerced",
        LimitCoerced,
        "a search limit is passed through int(): strings, bools and floats are answered, and "
        "limits out of range reach the store",
        ("pool-10",),
    ),
    Mutant(
        "pool-entity-fields-defaulted",
        EntityFieldsDefaulted,
        "an entity missing a field, or with an empty or non-string one, is stored with the field "
        "defaulted instead of refused",
        ("pool-10",),
    ),
    Mutant(
        "pool-no-filter-anywhere",
        NoFilterAnywhere,
        "smoke: every search runs over the whole collection",
        (),
        smoke=True,
    ),
)
