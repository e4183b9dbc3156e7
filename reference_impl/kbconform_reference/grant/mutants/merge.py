"""Mutants of the kb-grant reference, merging a search across stores: embedding models mixed,
raw scores merged or normalized only when engines are mixed, a limit per store or split across
stores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from kbconform.adapter import GrantHit
from kbconform_reference.grant.catalogue import KbRow
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService


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


MUTANTS: tuple[Mutant, ...] = (
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
        ("grant-06", "grant-10", "grant-14"),
    ),
)
