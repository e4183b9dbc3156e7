"""Mutants of the kb-grant reference, a search's fan-out: partial results when a store group
fails, a failing store read as no results, no deadline per group, a health check on the caller's
thread."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kbconform.adapter import GrantHit, KbInfo
from kbconform.errors import BackendUnavailable
from kbconform_reference.grant.catalogue import KbRow
from kbconform_reference.grant.fanout import FanOut, GroupFailed
from kbconform_reference.grant.index import VectorIndex
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService


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


T = TypeVar("T")


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


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "grant-partial-results-on-group-failure",
        PartialResultsOnGroupFailure,
        "a store group that fails or misses its deadline is left out of the result",
        ("grant-07", "grant-08", "grant-14", "iso-03[search-kbs]"),
    ),
    Mutant(
        "grant-empty-on-store-error",
        EmptyOnStoreError,
        "a failing store is answered with no hits and no knowledge bases",
        ("iso-03[search-kbs]", "iso-03[get-kb]", "iso-03[list-kbs]", "grant-07", "grant-14"),
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
)
