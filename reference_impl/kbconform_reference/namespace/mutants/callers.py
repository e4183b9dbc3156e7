"""Mutants of the tenant-namespace reference that keep state between callers, keyed by less
than the principal.

A cache or memo shared by every caller answers one principal with what another's call left
behind: the cursor of the last list page, the answer to the last query. Each lives only until
the next call, as a continuation or a retry cache does, so one principal reading at a time never
meets another's; only two principals paging in turns (state-01's ``list_in_turns``) or asking
the very same query one right after another (its invariant) show it.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import Hit, KnowledgeBase
from kbconform_reference.namespace.stores import Rows
from kbconform_reference.namespace.stores._where import matches


class _Remembers(KnowledgeBase):
    """Keeps what the last read call left behind (``kept``); any other call forgets it."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.kept: Any = None

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        self.kept = None
        super()._apply(operation, prior, write, delete)

    def get(self, principal: Principal, chunk_id: str) -> Hit:
        self.kept = None
        return super().get(principal, chunk_id)

    def count(self, principal: Principal, where: Mapping[str, Any] | None = None) -> int:
        self.kept = None
        return super().count(principal, where)


class ListContinuesTheLastPage(_Remembers):
    """list keeps where the last page ended in the store, so that the next page (the call whose
    offset is where the last one stopped) continues from there without reading the store from
    the start: whoever asks for that offset next."""

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        if limit < 1 or offset < 0:
            return super().list(principal, limit, offset, where)
        principal = self._reader(self._authenticated(principal, "list"))
        self._settle("list")
        scope = read_filter.build_where(principal, where)
        with self._store_call("list"):
            rows = self.store.get()
        inside = [n for n, metadata in enumerate(rows.metadatas) if matches(scope, metadata)]
        last, self.kept = self.kept, None
        if last is not None and last[0] == offset:  # the bug: the cursor is not the principal's
            start = last[1]
        else:
            start = inside[offset] if offset < len(inside) else len(rows.ids)
        page = [n for n in inside if n >= start][:limit]
        if page:
            self.kept = (offset + len(page), page[-1] + 1)
        return [Hit(rows.ids[n], rows.documents[n], dict(rows.metadatas[n])) for n in page]


class QueryRepeatAnsweredFromLast(_Remembers):
    """query answers a request repeated right after it (same text, count and client where: a
    retry) with the last answer, whoever repeats it."""

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        self._reader(self._authenticated(principal, "query"))  # identity is still checked
        key = (text, n_results, json.dumps(where, sort_keys=True))  # the bug: no principal
        last = self.kept
        if last is not None and last[0] == key:
            answer: builtins.list[Hit] = last[1]
            return answer
        answer = super().query(principal, text, n_results, where)
        self.kept = (key, answer)
        return answer

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        self.kept = None
        return super().list(principal, limit, offset, where)


_TURNS = ("state-01[overwrite]", "state-01[reject]")

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "list-continues-the-last-page",
        ListContinuesTheLastPage,
        "list continues a page from where the last page stopped, whoever read it",
        _TURNS,
    ),
    Mutant(
        "query-repeat-answered-from-last",
        QueryRepeatAnsweredFromLast,
        "a query repeated right after it (same text, count, where) gets the last answer, whoever asks",
        _TURNS,
    ),
)
