"""Mutants of the tenant-namespace reference that break at its own page boundaries (schemas/pages.md).

The reference writes and deletes in pages of the store's ``max_batch`` rows (the memory store's is
:data:`~kbconform_reference.namespace.stores.memory.MEMORY_MAX_BATCH`, declared as ``pageSizes``). Each
mutant here pages one more piece of work the same way and gets the boundary wrong, as backends
that page their own work do: only a call spanning more than one page shows it.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import Hit, KnowledgeBase


def _page(kb: KnowledgeBase) -> int:
    return max(1, int(kb.store.max_batch))


class PagedLookupUnscoped(KnowledgeBase):
    """Looks the tombstoned paths up a page of ``max_batch`` paths at a time; the pages after the
    first are read without the tenant."""

    def _doomed(
        self,
        principal: Principal,
        signal: Mapping[str, Any],
        targets: set[tuple[str, str]],
        written: set[tuple[str, str]],
    ) -> tuple[builtins.list[str], set[tuple[str, str]]]:
        targets = set(targets)
        tenant = {"tenantId": {"$eq": principal.tenant_id}}
        doomed: builtins.list[str] = []
        with self._store_call("apply_deletion_signal"):
            manifest = signal.get("manifestSnapshot")
            if manifest is not None:  # as the reference does
                rows = self.store.get(where={"$and": [tenant, {"repoSlug": {"$eq": manifest["repoSlug"]}}]})
                keep = set(manifest["pathsAfterPush"])
                targets |= {
                    (str(manifest["repoSlug"]), str(m["sourcePath"]))
                    for m in rows.metadatas
                    if m["sourcePath"] not in keep
                }
            targets -= written
            for repo in sorted({r for r, _ in targets}):
                paths = sorted(p for r, p in targets if r == repo)
                for start in range(0, len(paths), _page(self)):
                    page = {"sourcePath": {"$in": paths[start : start + _page(self)]}}
                    scope = [tenant] if start == 0 else []  # the bug: the tenant on page one only
                    rows = self.store.get(where={"$and": [*scope, {"repoSlug": {"$eq": repo}}, page]})
                    doomed.extend(rows.ids)
        return doomed, targets


class PagedDeleteDropsPartialPage(KnowledgeBase):
    """Deletes ``len(ids) // max_batch`` full pages: the last, partial page is never deleted."""

    def _delete(self, ids: Sequence[str]) -> None:
        size = _page(self)
        for start in range(0, len(ids) // size * size, size):
            self.store.delete(ids[start : start + size])


class ListPagesPastTheFirstUnscoped(KnowledgeBase):
    """Lists a store page of ``max_batch`` rows at a time; the store pages after the first are
    read without the principal's scope."""

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> builtins.list[Hit]:
        principal = self._reader(self._authenticated(principal, "list"))
        self._settle("list")
        clause: Mapping[str, Any] | None = read_filter.build_where(principal, where)
        hits: builtins.list[Hit] = []
        while len(hits) < limit:
            wanted = min(_page(self), limit - len(hits))
            with self._store_call("list"):
                rows = self.store.get(where=clause, limit=wanted, offset=offset + len(hits))
            hits += [
                Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)
            ]
            if len(rows.ids) < wanted:
                break
            clause = None  # the bug: the next store page is read without the scope
        return hits


class CountStopsAtAFullPage(KnowledgeBase):
    """Counts a store page of ``max_batch`` rows at a time and stops at the first full page (``<=``
    where ``<`` was meant): a scope past one page counts one page."""

    def count(self, principal: Principal, where: Mapping[str, Any] | None = None) -> int:
        principal = self._reader(self._authenticated(principal, "count"))
        self._settle("count")
        clause = read_filter.build_where(principal, where)
        counted = 0
        while True:
            with self._store_call("count"):
                rows = self.store.get(where=clause, limit=_page(self), offset=counted)
            counted += len(rows.ids)
            if len(rows.ids) <= _page(self):  # the bug: a full page ends the count
                return counted


_PAGES = ("page-01",)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "paged-lookup-unscoped",
        PagedLookupUnscoped,
        "a deletion signal's paths are looked up in pages; the pages after the first ignore the tenant",
        _PAGES,
    ),
    Mutant(
        "paged-delete-drops-partial-page",
        PagedDeleteDropsPartialPage,
        "a delete of many ids in pages never deletes the last, partial page",
        _PAGES,
    ),
    Mutant(
        "list-pages-past-the-first-unscoped",
        ListPagesPastTheFirstUnscoped,
        "list reads the store in pages; the pages after the first ignore the principal's scope",
        _PAGES,
    ),
    Mutant(
        "count-stops-at-a-full-page",
        CountStopsAtAFullPage,
        "count reads the store in pages and stops at the first full one",
        (*_PAGES, "state-01[overwrite]", "state-01[reject]"),
    ),
)
