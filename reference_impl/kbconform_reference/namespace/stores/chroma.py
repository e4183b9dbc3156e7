"""Chroma as a store: embedded (persistent or ephemeral) or a server over HTTP.

The collection never has an embedding function (Chroma's default one downloads a model): the
knowledge base always passes embeddings.

Collections use inner-product space, not cosine: Chroma's cosine space re-normalizes every
embedding it stores, and in float32 that moves values by an ulp on each write, so an exported
embedding would not restore bit for bit. The knowledge base's embeddings are unit vectors, for
which the inner-product distance (1 - dot) is the cosine distance.

``max_batch`` is Chroma's own maximum batch size (at most 5,000 rows). A write or delete of
more rows goes in several Chroma calls, each of which may land while a later one fails: the
knowledge base never passes more than ``max_batch`` rows at once and rolls back a write that
fails part-way (``service.py``), so a facade call is all or nothing even so.

Server mode bounds every HTTP request (connecting, sending, waiting for the answer, each read):
by ``timeout`` seconds, else by the environment variable ``KBCONFORM_CHROMA_TIMEOUT``, else by
:data:`DEFAULT_HTTP_TIMEOUT`. chromadb's ``HttpClient`` (1.5.x) builds its httpx session with
``timeout=None`` and has no setting for it, and it sends requests while it is being built, so
the store builds the HTTP client from its parts and sets the session's timeout before the
first request. A stalled server (stopped, or a port that accepts and never answers) therefore
fails the call: a request that times out raises :class:`TimeoutError`, which the knowledge base
reports as ``BackendUnavailable``, and a server that cannot be reached when the store is opened
raises ``BackendUnavailable`` itself.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbconform.errors import BackendUnavailable
from kbconform_reference._vectors import Match, Metadata, Rows, exact_top_k, query_rows
from kbconform_reference.namespace.stores._protocol import STORED_KEYS, Where, upserted_vectors
from kbconform_reference.namespace.stores._where import matches, textual

_NO_TELEMETRY: dict[str, Any] = {"anonymized_telemetry": False}
_PAGE = 5000  # rows per call: under SQLite's variable limit and Chroma's maximum batch size
#: A scope of fewer rows is ranked from one read of its rows (:meth:`ChromaStore.query`).
_SMALL_SCOPE = 128

#: Seconds one HTTP request to a Chroma server may take (each phase: connect, write, read).
DEFAULT_HTTP_TIMEOUT = 10.0
#: The environment variable that overrides :data:`DEFAULT_HTTP_TIMEOUT` (seconds, positive).
TIMEOUT_VARIABLE = "KBCONFORM_CHROMA_TIMEOUT"


def http_timeout(seconds: float | None = None) -> float:
    """The request timeout to use: ``seconds``, else ``$KBCONFORM_CHROMA_TIMEOUT``, else the default.

    Raises :class:`ValueError` for a value that is not a positive, finite number of seconds.
    """
    source, given = "timeout", repr(seconds)
    if seconds is None:
        text = os.environ.get(TIMEOUT_VARIABLE)
        if text is None:
            return DEFAULT_HTTP_TIMEOUT
        source, given = TIMEOUT_VARIABLE, repr(text)
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{source}: expected a positive, finite number of seconds, got {given}")
    return float(seconds)


class ChromaStore:
    """One Chroma collection.

    :meth:`query` ranks a scope of at most :attr:`exact_scopes` rows exactly itself (the
    knowledge base then asks it once): a scope smaller than :data:`_SMALL_SCOPE` rows in one
    read of its rows (most scopes), a larger one counted by its ids, then its other rows read
    by id; a scope past :attr:`exact_scopes` (a row at that offset) goes to Chroma's
    approximate index, its ids not read.
    """

    #: The largest scope :meth:`query` ranks exactly (the knowledge base's exact-search limit).
    exact_scopes = 2000

    def __init__(
        self,
        collection: Any,
        description: str,
        *,
        timeout_errors: tuple[type[BaseException], ...] = (),
        timeout: float | None = None,
        close: Callable[[], None] | None = None,
        max_batch: int = _PAGE,
    ) -> None:
        self._collection = collection
        self.description = description
        self.max_batch = max_batch
        self._timeout_errors = timeout_errors
        self._timeout = timeout
        self._close = close

    @classmethod
    def ephemeral(cls, name: str | None = None, *, client: Any = None) -> ChromaStore:
        """An in-process, in-memory collection (ephemeral clients in one process share data: the
        name defaults to a fresh one), through ``client`` (:func:`embedded_client`) or a new
        one. Building a client builds chromadb's settings again, which read the environment
        (about 10 ms, eight times opening and dropping a collection through a kept client:
        ``benchmarks/chroma_server.py``)."""
        import chromadb

        client = embedded_client() if client is None else client
        return cls(
            _collection(client, name), f"chroma-embedded {chromadb.__version__}", max_batch=_max_batch(client)
        )

    @classmethod
    def persistent(cls, path: str | Path, name: str = "knowledge-base") -> ChromaStore:
        """An embedded collection persisted under ``path``."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(path), settings=Settings(**_NO_TELEMETRY))
        return cls(
            _collection(client, name),
            f"chroma-persistent {chromadb.__version__}",
            max_batch=_max_batch(client),
        )

    @classmethod
    def http(
        cls, host: str, port: int, name: str | None = None, *, timeout: float | None = None
    ) -> ChromaStore:
        """A collection on a Chroma server (``chroma run``) through a client of its own, every
        request bounded (module docstring), the client closed with the store.

        A server that cannot be reached, or does not answer within the timeout, raises
        :class:`~kbconform.errors.BackendUnavailable` (operation ``connect``).
        """
        client = ChromaClient(host, port, timeout=timeout)
        try:
            return client.collection(name, close=client.close)
        except BaseException:
            client.close()
            raise

    @contextmanager
    def _bounded(self) -> Iterator[None]:
        """Turn a request that timed out into :class:`TimeoutError` naming the server and bound."""
        try:
            yield
        except self._timeout_errors as error:
            raise TimeoutError(f"{self.description} did not answer within {self._timeout:g} s") from error

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        vectors = upserted_vectors(ids, embeddings, documents, metadatas)
        for start in range(0, len(ids), self.max_batch):
            end = start + self.max_batch
            page = list(ids[start:end])
            # Chroma merges an upsert's metadata into the stored one: a key the new metadata
            # lacks would survive (a stale originAgentIdentity). A None value removes it. The
            # stored keys are the writer's (``STORED_KEYS``: its undo log), else read here.
            known = STORED_KEYS.get()
            stale: Mapping[str, Set[str]] = (
                {i: set(m) for i, m in zip(*self._stored_keys(page), strict=True)} if known is None else known
            )
            replaced = [
                {**m, **dict.fromkeys(stale.get(i, set()) - set(m))}
                for i, m in zip(page, metadatas[start:end], strict=True)
            ]
            with self._bounded():
                self._collection.upsert(
                    ids=page,
                    embeddings=vectors[start:end],
                    documents=list(documents[start:end]),
                    metadatas=replaced,  # a None value deletes the key
                )

    def _stored_keys(self, ids: Sequence[str]) -> tuple[Sequence[str], Sequence[Metadata]]:
        rows = self.get(ids=ids)
        return rows.ids, rows.metadatas

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        # Large reads go in pages: one SQLite statement holds a bounded number of variables.
        if ids is not None:
            if not ids:
                return Rows((), (), ())
            # Rows by id are read by id alone and a clause of text (the read filter) is applied
            # here: Chroma's own evaluation of the clause costs a one-id read 1.5 to 1.8 times
            # the CPU (``benchmarks/query_scope.py``).
            here = where is not None and textual(where)
            parts = [
                self._get_page(list(ids[i : i + _PAGE]), None if here else where, None, 0, embeddings)
                for i in range(0, len(ids), _PAGE)
            ]
            if here:
                return _matching(_concat(parts, embeddings), where)
        else:
            parts, position, remaining = [], offset, limit
            while remaining is None or remaining > 0:
                size = _PAGE if remaining is None else min(_PAGE, remaining)
                part = self._get_page(None, where, size, position, embeddings)
                parts.append(part)
                position += len(part.ids)
                remaining = None if remaining is None else remaining - len(part.ids)
                if len(part.ids) < size:
                    break
        return _concat(parts, embeddings)

    def ids(self, *, where: Where | None = None, limit: int | None = None) -> tuple[str, ...]:
        """The ids of the rows matching ``where`` (at most ``limit``), as :meth:`get` orders
        them, read with no document or metadata (in pages, as :meth:`get` reads)."""
        found: list[str] = []
        while limit is None or len(found) < limit:
            size = _PAGE if limit is None else min(_PAGE, limit - len(found))
            with self._bounded():
                result = self._collection.get(
                    where=dict(where) if where else None, limit=size, offset=len(found) or None, include=[]
                )
            found += result["ids"]
            if len(result["ids"]) < size:
                break
        return tuple(found)

    def _get_page(
        self, ids: list[str] | None, where: Where | None, limit: int | None, offset: int, embeddings: bool
    ) -> Rows:
        include = ["documents", "metadatas", *(["embeddings"] if embeddings else [])]
        with self._bounded():
            result = self._collection.get(
                ids=ids,
                where=dict(where) if where else None,
                limit=limit,
                offset=offset or None,
                include=include,
            )
        found = tuple(result["ids"])
        vectors = None
        if embeddings:
            vectors = (
                np.asarray(result["embeddings"], dtype=np.float32) if found else np.zeros((0, 0), np.float32)
            )
        return Rows(found, tuple(result["documents"]), tuple(result["metadatas"]), vectors)

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        if n_results <= 0:
            return []
        first = self.get(where=where, limit=_SMALL_SCOPE, embeddings=True)
        if len(first.ids) < _SMALL_SCOPE:  # the whole scope, in one read
            return exact_top_k(first, embedding, n_results)
        if self._has_row_at(where, self.exact_scopes):  # past the limit: no need to count it
            return self.nearest(embedding, n_results, where)
        allowed = self.ids(where=where, limit=self.exact_scopes + 1)
        if len(allowed) <= self.exact_scopes:
            read = set(first.ids)
            rest = self.get(ids=[i for i in allowed if i not in read], embeddings=True)
            return exact_top_k(_concat([first, rest], embeddings=True), embedding, n_results)
        return self.nearest(embedding, n_results, where)

    def _has_row_at(self, where: Where | None, offset: int) -> bool:
        """Whether the rows matching ``where`` go past ``offset``: one id read at that offset,
        Chroma stepping over the others without handing them back (a 3,000-row scope, 2.9 ms of
        CPU against 7.5 ms for its first 2,001 ids, 2 shared cores at load ~8)."""
        with self._bounded():
            result = self._collection.get(
                where=dict(where) if where else None, limit=1, offset=offset, include=[]
            )
        return bool(result["ids"])

    def nearest(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        """Chroma's own search of its approximate index, nearest first (any scope size)."""
        if n_results <= 0:
            return []
        with self._bounded():
            result = self._collection.query(
                query_embeddings=np.asarray([embedding], dtype=np.float32),
                n_results=n_results,
                where=dict(where) if where else None,
                include=["documents", "metadatas", "distances"],
            )
        return [Match(i, d, m, float(x)) for i, d, m, x in query_rows(result)]

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), self.max_batch):
            with self._bounded():
                self._collection.delete(ids=list(ids[start : start + self.max_batch]))

    def drop(self) -> None:
        """Delete the whole collection, then :meth:`close` (test clean-up)."""
        try:
            with self._bounded():
                self._collection._client.delete_collection(self._collection.name)
        finally:
            self.close()

    def close(self) -> None:
        """Close the HTTP session of server mode (the collection stays); embedded: nothing to do."""
        if self._close is not None:
            self._close()


class ChromaClient:
    """One HTTP client of a Chroma server (``chroma run``), every request bounded (module
    docstring), for as many collections as are opened through it: opening a collection is one
    request, not a client built and checked again (about 75 ms, 60% of opening and dropping a
    collection on a loaded machine: ``benchmarks/chroma_server.py``). httpx's client may be
    shared by threads; :meth:`close` ends it (a collection opened through it then fails).

    A server that cannot be reached, or does not answer within the timeout, raises
    :class:`~kbconform.errors.BackendUnavailable` (operation ``connect``), here or when a
    collection is opened.
    """

    def __init__(self, host: str, port: int, *, timeout: float | None = None) -> None:
        import chromadb
        import httpx
        from chromadb.api.fastapi import FastAPI
        from chromadb.config import Settings, System

        self.timeout = http_timeout(timeout)
        self.address = f"http://{host}:{port}"
        self.description = f"chroma-server {chromadb.__version__} at {self.address}"
        settings = Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host=host,
            chroma_server_http_port=port,
            **_NO_TELEMETRY,
        )
        system = System(settings)
        self._api = system.instance(FastAPI)  # builds the httpx session and sends nothing yet
        session = getattr(self._api, "_session", None)
        if not isinstance(session, httpx.Client):
            raise RuntimeError(
                f"chromadb {chromadb.__version__}: its HTTP client has no httpx session to bound; "
                "kbconform_reference.namespace.stores.chroma needs updating for this chromadb"
            )
        session.timeout = httpx.Timeout(self.timeout)
        self._session = session
        self._timeout_errors: tuple[type[BaseException], ...] = (httpx.TimeoutException,)
        try:
            with self._connecting():
                system.start()
                self.max_batch = _max_batch(self._api)
        except BaseException:
            self.close()
            raise

    @contextmanager
    def _connecting(self) -> Iterator[None]:
        """Raise ``BackendUnavailable`` when the server fails to answer."""
        try:
            yield
        except Exception as error:
            if isinstance(error, self._timeout_errors):
                reason = f"no answer within {self.timeout:g} s"
            else:
                reason = f"{type(error).__name__}: {error}"
            raise BackendUnavailable("connect", f"chroma server at {self.address}: {reason}") from error

    def collection(self, name: str | None = None, *, close: Callable[[], None] | None = None) -> ChromaStore:
        """The collection ``name`` (a fresh one by default), created when missing, as a store;
        ``close``: what closing the store does (the client stays open by default)."""
        from chromadb.api.models.Collection import Collection

        with self._connecting():
            model = self._api.get_or_create_collection(name or _fresh_name(), metadata=_SPACE)
        return ChromaStore(
            Collection(client=self._api, model=model, embedding_function=None),
            self.description,
            timeout_errors=self._timeout_errors,
            timeout=self.timeout,
            close=close,
            max_batch=self.max_batch,
        )

    def close(self) -> None:
        self._session.close()


_SPACE = {"hnsw:space": "ip"}


def embedded_client() -> Any:
    """A new in-process, in-memory Chroma client (telemetry off), for as many collections as are
    opened through it (:meth:`ChromaStore.ephemeral`). Ephemeral clients share one Chroma
    System, which keeps about 3 MB of every collection that held data after it is dropped, until
    the last of them is closed (``close()``): its owner closes it when done."""
    import chromadb
    from chromadb.config import Settings

    return chromadb.EphemeralClient(settings=Settings(**_NO_TELEMETRY))


def _fresh_name() -> str:
    return f"kb-{uuid.uuid4().hex}"


def _max_batch(client: Any) -> int:
    """The most rows one write takes: Chroma's own maximum batch size, at most :data:`_PAGE`."""
    return max(1, min(_PAGE, int(client.get_max_batch_size())))


def _collection(client: Any, name: str | None) -> Any:
    return client.get_or_create_collection(name or _fresh_name(), embedding_function=None, metadata=_SPACE)


def _matching(rows: Rows, where: Where | None) -> Rows:
    """The rows of ``rows`` whose metadata satisfy ``where``, in their order."""
    kept = [n for n, metadata in enumerate(rows.metadatas) if matches(metadata, where)]
    if len(kept) == len(rows.ids):
        return rows
    return Rows(
        tuple(rows.ids[n] for n in kept),
        tuple(rows.documents[n] for n in kept),
        tuple(rows.metadatas[n] for n in kept),
        None if rows.embeddings is None else rows.embeddings[kept],
    )


def _concat(parts: list[Rows], embeddings: bool) -> Rows:
    if len(parts) == 1:
        return parts[0]
    vectors = None
    if embeddings:
        filled = [p.embeddings for p in parts if p.embeddings is not None and len(p.ids)]
        vectors = np.concatenate(filled) if filled else np.zeros((0, 0), np.float32)
    return Rows(
        tuple(i for p in parts for i in p.ids),
        tuple(d for p in parts for d in p.documents),
        tuple(m for p in parts for m in p.metadatas),
        vectors,
    )
