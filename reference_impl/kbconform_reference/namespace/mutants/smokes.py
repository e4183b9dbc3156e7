"""The two smokes: backends that break everything, one accepting every call and keeping nothing,
one refusing every call. A suite run against either must fail."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kbconform.errors import Forbidden
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import Answer, DeletionResult, Hit, IngestResult


class AcceptsEverything:
    """Every call succeeds and nothing is kept: a backend that 'passes' vacuous checks."""

    def ingest(self, principal: Any, records: Sequence[Mapping[str, Any]]) -> IngestResult:
        return IngestResult(tuple(f"id-{n}" for n in range(len(records))), 0, 0)

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        return []

    def get(self, principal: Any, chunk_id: str) -> Hit:
        return Hit(chunk_id, None, {})

    def list(self, principal: Any, limit: int = 100, offset: int = 0) -> builtins.list[Hit]:
        return []

    def count(self, principal: Any) -> int:
        return 0

    def ask(self, principal: Any, question: str, n_results: int = 5) -> Answer:
        return Answer(question, "", ())

    def scan(self, *args: Any) -> builtins.list[dict[str, Any]]:
        return []

    def apply_deletion_signal(self, principal: Any, signal: Mapping[str, Any]) -> DeletionResult:
        return DeletionResult((), ())

    def export(self, principal: Any) -> builtins.list[dict[str, Any]]:
        return []

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        return len(list(records))


class RejectsEverything(AcceptsEverything):
    """Every call is refused: a backend that 'passes' every negative check."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return super().__getattribute__(name)

        def refuse(*args: Any, **kwargs: Any) -> Any:
            raise Forbidden(name, "this backend refuses everything")

        return refuse


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "accepts-everything", AcceptsEverything, "smoke: every call succeeds, nothing is kept", (), smoke=True
    ),
    Mutant("rejects-everything", RejectsEverything, "smoke: every call is refused", (), smoke=True),
)
