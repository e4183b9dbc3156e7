"""Mutants of the tenant-namespace reference whose index or cache a delete forgets (a deleted
chunk still found by query, get, count or list), whose cache is keyed by less than the request
and its reader, or whose cache lives a number of calls, not until the next write."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.mutants._base import Mutant
from kbconform_reference.namespace.service import Hit, IngestResult, KnowledgeBase, _Undo
from kbconform_reference.namespace.stores import MemoryStore, Rows


class QueryIndexOutlivesDelete(KnowledgeBase):
    """query searches a second index that ingest and restore fill and deletes never touch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.index = MemoryStore()

    def _mirror(self, ids: Sequence[str]) -> None:
        rows = self.store.get(ids=list(dict.fromkeys(ids)), embeddings=True)
        if rows.ids:
            assert rows.embeddings is not None
            self.index.upsert(rows.ids, rows.embeddings, rows.documents, rows.metadatas)

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        result = super().ingest(principal, records, *args, **kwargs)
        self._mirror(result.ids)
        return result

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        records = builtins.list(records)
        written = super().restore(principal, records)
        self._mirror([r["id"] for r in records])
        return written

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        principal = self._authenticated(principal, "query")
        scoped = read_filter.build_where(principal, where)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        with self._store_call("query"):
            self.store.get(where=scoped, limit=1)  # the store is asked, then the index answers
            matches = self.index.query(embedding, n_results, scoped)
        found = [Hit(m.id, m.document, dict(m.metadata), 1.0 - m.distance) for m in matches]
        return self._checked(principal, "query", found)


class _CacheForgottenByDelete(KnowledgeBase):
    """A read cache that ingest and restore clear and deletion signals forget to."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[Any, Any] = {}

    def ingest(
        self, principal: Any, records: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any
    ) -> IngestResult:
        self.cache.clear()
        return super().ingest(principal, records, *args, **kwargs)

    def restore(self, principal: Any, records: Iterable[Mapping[str, Any]]) -> int:
        self.cache.clear()
        return super().restore(principal, records)


class GetCacheOutlivesDelete(_CacheForgottenByDelete):
    def get(self, principal: Any, chunk_id: str) -> Hit:
        if not isinstance(principal, Principal):
            return super().get(principal, chunk_id)
        key = (principal.tenant_id, principal.agent_identity, principal.readable_tenants, chunk_id)
        if key not in self.cache:
            self.cache[key] = super().get(principal, chunk_id)
        cached: Hit = self.cache[key]
        return cached


class CountCacheOutlivesDelete(_CacheForgottenByDelete):
    def count(self, principal: Any, where: Any = None) -> int:
        if not isinstance(principal, Principal):
            return super().count(principal, where)
        key = (principal.tenant_id, principal.agent_identity, principal.readable_tenants, json.dumps(where))
        if key not in self.cache:
            self.cache[key] = super().count(principal, where)
        cached: int = self.cache[key]
        return cached


class ListCacheOutlivesDelete(_CacheForgottenByDelete):
    def list(
        self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None
    ) -> builtins.list[Hit]:
        if not isinstance(principal, Principal):
            return super().list(principal, limit, offset, where)
        key = (
            principal.tenant_id,
            principal.agent_identity,
            principal.readable_tenants,
            limit,
            offset,
            json.dumps(where),
        )
        if key not in self.cache:
            self.cache[key] = super().list(principal, limit, offset, where)
        cached: builtins.list[Hit] = self.cache[key]
        return builtins.list(cached)


class GetCacheKeyedById(KnowledgeBase):
    """get reads through a cache keyed by the chunk id alone (every write clears it): the first
    reader's answer, a hit or NotFound, is every later reader's until the next write."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache: dict[str, Hit | NotFound] = {}

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        self.cache.clear()
        super()._apply(operation, prior, write, delete)

    def _undo(self, undo: _Undo) -> None:
        self.cache.clear()
        super()._undo(undo)

    def get(self, principal: Any, chunk_id: str) -> Hit:
        if not isinstance(principal, Principal) or not isinstance(chunk_id, str):
            return super().get(principal, chunk_id)
        if chunk_id not in self.cache:
            try:
                self.cache[chunk_id] = super().get(principal, chunk_id)
            except NotFound as missing:
                self.cache[chunk_id] = missing
        cached = self.cache[chunk_id]
        if isinstance(cached, NotFound):
            raise NotFound(chunk_id)
        return cached


#: How many facade calls an answer of :class:`QueryCacheExpiresAfterCalls` is served for.
EXPIRY = 1000


class QueryCacheExpiresAfterCalls(KnowledgeBase):
    """query (and ask through it) answers from a cache keyed by the reader and the request whose
    entries expire after :data:`EXPIRY` facade calls; writes do not clear it, so a read right
    after a write is the answer from before it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls = 0
        self.cache: dict[Any, tuple[int, builtins.list[Hit]]] = {}

    def _settle(self, operation: str) -> None:
        self.calls += 1  # every facade settles first: a clock of calls
        super()._settle(operation)

    def query(self, principal: Any, text: str, n_results: int = 10, where: Any = None) -> builtins.list[Hit]:
        if not isinstance(principal, Principal):
            return super().query(principal, text, n_results, where)
        key = (principal, text, n_results, json.dumps(where, sort_keys=True, default=str))
        stamped = self.cache.get(key)
        if stamped is None or self.calls - stamped[0] > EXPIRY:
            stamped = (self.calls, super().query(principal, text, n_results, where))
            self.cache[key] = stamped
        return builtins.list(stamped[1])


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "query-index-outlives-delete",
        QueryIndexOutlivesDelete,
        "query and ask search a second index that deletes never reach",
        ("delete-15[query]", "delete-15[ask]"),
    ),
    Mutant(
        "get-cache-outlives-delete",
        GetCacheOutlivesDelete,
        "get reads through a cache that deletion signals do not clear",
        ("delete-15[get]", "iso-03[get]"),
    ),
    Mutant(
        "count-cache-outlives-delete",
        CountCacheOutlivesDelete,
        "count is cached, and deletion signals do not clear the cache",
        ("delete-15[count]", "iso-03[count]"),
    ),
    Mutant(
        "list-cache-outlives-delete",
        ListCacheOutlivesDelete,
        "list pages are cached, and deletion signals do not clear the cache",
        ("delete-15[list]", "iso-03[list]", "state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "get-cache-keyed-by-id",
        GetCacheKeyedById,
        "get answers from a cache keyed by the chunk id alone: the first reader's answer is the next one's",
        ("state-01[overwrite]", "state-01[reject]"),
    ),
    Mutant(
        "query-cache-expires-after-calls",
        QueryCacheExpiresAfterCalls,
        f"query and ask answer from a cache that expires after {EXPIRY} calls, not at a write",
        ("delete-15[query]", "delete-15[ask]"),
    ),
)
