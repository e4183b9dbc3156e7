"""The tenant-namespace knowledge base's read side: one filter built from the principal, a final
in-scope check on every hit, exact search when the allowed set is small."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kbconform.errors import ContractViolation, NotFound, Problem
from kbconform.identity import Principal
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace._core import Core
from kbconform_reference.namespace.records import Answer, Hit, as_hit, as_hits
from kbconform_reference.namespace.stores import Rows, exact_top_k
from kbconform_reference.namespace.stores._protocol import exact_scopes, scope_ids

LOG = logging.getLogger("kbconform_reference")


class Reads(Core):
    """query, get, list, count and ask."""

    # -- read side ------------------------------------------------------------------------------

    def _checked(self, principal: Principal, operation: str, found: Iterable[Hit]) -> list[Hit]:
        kept = []
        for hit in found:
            if read_filter.in_scope(principal, hit.metadata):
                kept.append(hit)
                continue
            with self.stats.lock:
                self.stats.dropped += 1
            LOG.error(
                "final check dropped chunk %s of tenant %r from %s for tenant %r",
                hit.id,
                hit.metadata.get("tenantId"),
                operation,
                principal.tenant_id,
                extra={"kb_event": "out-of-scope-hit-dropped"},
            )
        return kept

    def query(
        self, principal: Principal, text: str, n_results: int = 10, where: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The ``n_results`` chunks nearest to ``text`` within the principal's scope."""
        principal = self._reader(self._authenticated(principal, "query"))
        scoped = self._read_where(principal, where)
        embedding = np.asarray(self.embedder([text]), dtype=np.float32)[0]
        # A scope within the exact-search limit is ranked exactly, and so is one the query asks
        # for whole (n_results at least its size): an approximate index may answer a filtered
        # query short of the rows in scope (Chroma's HNSW did, past 2,000 rows: page-01).
        limit = max(self.settings.exact_search_limit, n_results)
        with self._as("query", principal, "read"):
            self._settle("query")
            with self._store_call("query"):
                if exact_scopes(self.store) >= limit:  # the store ranks a small scope exactly itself
                    matches = self.store.query(embedding, n_results, scoped)
                elif len(allowed := scope_ids(self.store, scoped, limit + 1)) <= limit:
                    # a small allowed set, counted by its ids alone: exact top-k over those rows
                    rows = self.store.get(ids=allowed, embeddings=True) if allowed else Rows((), (), ())
                    matches = exact_top_k(rows, embedding, n_results)
                else:
                    matches = self.store.query(embedding, n_results, scoped)
        return self._checked(principal, "query", (as_hit(m) for m in matches))

    def get(self, principal: Principal, chunk_id: str) -> Hit:
        """One chunk by id; a foreign id raises exactly what a missing one does."""
        principal = self._reader(self._authenticated(principal, "get"))
        with self._as("get", principal, "read"):
            self._settle("get")
            with self._store_call("get"):
                rows = self.store.get(ids=[chunk_id], where=self._read_where(principal))
        hits = self._checked(principal, "get", as_hits(rows))
        if not hits:
            raise NotFound(chunk_id)
        return hits[0]

    def list(
        self, principal: Principal, limit: int = 100, offset: int = 0, where: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """A page of the chunks in scope, in the store's order."""
        principal = self._reader(self._authenticated(principal, "list"))
        self._settle("list")  # each rollback it replays is made for its own principal
        if limit < 1 or offset < 0:
            raise ContractViolation(
                contract="list",
                problems=(Problem("/limit", "minimum", "limit >= 1 and offset >= 0", f"{limit}, {offset}"),),
            )
        clause = self._read_where(principal, where)
        with self._as("list", principal, "read"), self._store_call("list"):
            rows = self.store.get(where=clause, limit=limit, offset=offset)
        return self._checked(principal, "list", as_hits(rows))

    def count(self, principal: Principal, where: Mapping[str, Any] | None = None) -> int:
        """How many chunks are in scope."""
        principal = self._reader(self._authenticated(principal, "count"))
        clause = self._read_where(principal, where)
        with self._as("count", principal, "read"):
            self._settle("count")
            with self._store_call("count"):
                rows = self.store.get(where=clause)
        return len(self._checked(principal, "count", as_hits(rows)))

    def ask(self, principal: Principal, question: str, n_results: int = 5) -> Answer:
        """Search, then answer from the stored text of the hits only (no files, no other tenant)."""
        principal = self._authenticated(principal, "ask")
        self._settle("ask")
        hits = self.query(principal, question, n_results)
        text = "\n\n".join(hit.document for hit in hits if hit.document)
        return Answer(question, text, tuple(hits))
