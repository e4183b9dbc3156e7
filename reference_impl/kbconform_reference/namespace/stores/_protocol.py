"""The storage interface the knowledge base is built on: a vector collection with metadata.

``where`` clauses use Chroma's dialect (``$and``/``$or`` of ``{key: value}`` or
``{key: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin: value}}``); the service builds every one of them,
clients never reach a store directly. Embeddings are float32. Any failure raises; a store never
answers "nothing" for "could not look".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kbconform.identity import Principal
from kbconform_reference._vectors import Match as Match
from kbconform_reference._vectors import Metadata as Metadata
from kbconform_reference._vectors import Rows as Rows

Where = Mapping[str, Any]


def upserted_vectors(
    ids: Sequence[str],
    embeddings: npt.NDArray[np.float32],
    documents: Sequence[str | None],
    metadatas: Sequence[Metadata],
) -> npt.NDArray[np.float32]:
    """An upsert's embeddings as float32 rows; ValueError unless there is one of each per id."""
    vectors = np.asarray(embeddings, dtype=np.float32)
    if not (len(ids) == len(vectors) == len(documents) == len(metadatas)):
        raise ValueError("upsert: ids, embeddings, documents and metadatas differ in length")
    return vectors


#: How far a store call may reach: ``read``, the read filter of the principal
#: (``schemas/read-filter.md``); ``write``, every row of the principal's own tenant (a write, a
#: sync, a deletion signal); ``operator``, every row (export, restore, maintenance).
Reach = Literal["read", "write", "operator"]


@dataclass(frozen=True, slots=True)
class Acting:
    """Whom the store calls of one facade call are made for, and how far they may reach."""

    operation: str
    principal: Principal
    reach: Reach


#: The :class:`Acting` of the facade call in progress (None outside one). A store that enforces
#: isolation itself (PostgreSQL row-level security) reads it for every call and refuses a call
#: made for nobody; the other stores ignore it.
ACTING: ContextVar[Acting | None] = ContextVar("kbconform_reference_acting", default=None)


@contextmanager
def acting(acts: Acting | None) -> Iterator[None]:
    """Make ``acts`` the :data:`ACTING` of the calls inside the block."""
    token = ACTING.set(acts)
    try:
        yield
    finally:
        ACTING.reset(token)


#: The metadata keys of the rows an upsert inside the block overwrites, as read for its undo
#: log under the writer's lock (an id it lacks: no row), or None (unknown). A store whose upsert
#: merges metadata (Chroma) clears the keys the new metadata drops from it instead of reading
#: the stored rows again; the other stores ignore it.
STORED_KEYS: ContextVar[Mapping[str, frozenset[str]] | None] = ContextVar(
    "kbconform_reference_stored_keys", default=None
)


@contextmanager
def stored_keys(rows: Rows) -> Iterator[None]:
    """Make the keys of ``rows`` (every row an upsert inside the block overwrites, as stored)
    the :data:`STORED_KEYS` of the block."""
    token = STORED_KEYS.set({i: frozenset(m or ()) for i, m in zip(rows.ids, rows.metadatas, strict=True)})
    try:
        yield
    finally:
        STORED_KEYS.reset(token)


def scopes_reads(store: object) -> bool:
    """True when ``store`` applies the read filter itself (its ``scopes_reads`` attribute): the
    knowledge base then sends it only the client's clause, and the store's own scope is all
    that stands between a tenant and another's rows (the final check aside)."""
    return bool(getattr(store, "scopes_reads", False))


def exact_scopes(store: object) -> int:
    """The most rows a scope may hold for ``store``'s own :meth:`VectorStore.query` to rank it
    exactly (its ``exact_scopes`` attribute; 0: no promise). A knowledge base whose exact-search
    limit is within it asks the store once, instead of fetching the scope and ranking it itself."""
    return int(getattr(store, "exact_scopes", 0))


def scope_ids(store: object, where: Where | None, limit: int | None) -> tuple[str, ...]:
    """The ids of at most ``limit`` rows matching ``where``, in the store's order: the store's
    own ``ids``, which reads ids alone (no text or metadata), where the class that defines it
    also defines the store's ``get`` or derives from the one that does; else the ids of its
    :meth:`VectorStore.get` (a wrapper or subclass that changes ``get`` stays in the path)."""
    order = type(store).__mro__
    counts = next((n for n, kind in enumerate(order) if "ids" in vars(kind)), None)
    gets = next((n for n, kind in enumerate(order) if "get" in vars(kind)), len(order))
    if counts is not None and counts <= gets:
        found: tuple[str, ...] = store.ids(where=where, limit=limit)  # type: ignore[attr-defined]
        return found
    return tuple(store.get(where=where, limit=limit).ids)  # type: ignore[attr-defined]


@runtime_checkable
class VectorStore(Protocol):
    """One collection of rows (id, float32 embedding, document, flat metadata)."""

    #: A short description for reports (for example ``chroma-embedded 1.5.9``).
    description: str

    #: The most rows one :meth:`upsert` or :meth:`delete` takes as a single call. The knowledge
    #: base pages its writes and deletes by it, so that each page is one store call.
    max_batch: int

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        """Insert or replace the rows, as one call (more than :attr:`max_batch` rows may take several)."""
        ...

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        """The rows with these ids (all when None) that match ``where``, in a stable order."""
        ...

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        """The nearest rows matching ``where``, nearest first (approximate for large sets)."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Delete these rows; absent ids are ignored (more than :attr:`max_batch` may take several calls)."""
        ...
