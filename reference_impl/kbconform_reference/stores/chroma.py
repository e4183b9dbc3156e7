"""Chroma as a store: embedded (persistent or ephemeral) or a server over HTTP.

The collection never has an embedding function (Chroma's default one downloads a model): the
knowledge base always passes embeddings.

Collections use inner-product space, not cosine: Chroma's cosine space re-normalizes every
embedding it stores, and in float32 that moves values by an ulp on each write, so an exported
embedding would not restore bit for bit. The knowledge base's embeddings are unit vectors, for
which the inner-product distance (1 - dot) is the cosine distance.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbconform_reference.stores._protocol import Match, Metadata, Rows, Where

_NO_TELEMETRY: dict[str, Any] = {"anonymized_telemetry": False}
_PAGE = 5000  # rows per call: under SQLite's variable limit and Chroma's maximum batch size


class ChromaStore:
    """One Chroma collection."""

    def __init__(self, collection: Any, description: str) -> None:
        self._collection = collection
        self.description = description

    @classmethod
    def ephemeral(cls, name: str | None = None) -> ChromaStore:
        """An in-process, in-memory collection (ephemeral clients in one process share data: the
        name defaults to a fresh one)."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.EphemeralClient(settings=Settings(**_NO_TELEMETRY))
        return cls(_collection(client, name), f"chroma-embedded {chromadb.__version__}")

    @classmethod
    def persistent(cls, path: str | Path, name: str = "knowledge-base") -> ChromaStore:
        """An embedded collection persisted under ``path``."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.PersistentClient(path=str(path), settings=Settings(**_NO_TELEMETRY))
        return cls(_collection(client, name), f"chroma-persistent {chromadb.__version__}")

    @classmethod
    def http(cls, host: str, port: int, name: str | None = None) -> ChromaStore:
        """A collection on a Chroma server (``chroma run``)."""
        import chromadb
        from chromadb.config import Settings

        client = chromadb.HttpClient(host=host, port=port, settings=Settings(**_NO_TELEMETRY))
        return cls(_collection(client, name), f"chroma-server {chromadb.__version__}")

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        vectors = np.asarray(embeddings, dtype=np.float32)
        for start in range(0, len(ids), _PAGE):
            end = start + _PAGE
            self._collection.upsert(
                ids=list(ids[start:end]),
                embeddings=vectors[start:end],
                documents=list(documents[start:end]),
                metadatas=[dict(m) for m in metadatas[start:end]],
            )

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
            parts = [
                self._get_page(list(ids[i : i + _PAGE]), where, None, 0, embeddings)
                for i in range(0, len(ids), _PAGE)
            ]
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

    def _get_page(
        self, ids: list[str] | None, where: Where | None, limit: int | None, offset: int, embeddings: bool
    ) -> Rows:
        include = ["documents", "metadatas", *(["embeddings"] if embeddings else [])]
        result = self._collection.get(
            ids=ids, where=dict(where) if where else None, limit=limit, offset=offset or None, include=include
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
        result = self._collection.query(
            query_embeddings=np.asarray([embedding], dtype=np.float32),
            n_results=n_results,
            where=dict(where) if where else None,
            include=["documents", "metadatas", "distances"],
        )
        return [
            Match(i, d, m, float(x))
            for i, d, m, x in zip(
                result["ids"][0],
                result["documents"][0],
                result["metadatas"][0],
                result["distances"][0],
                strict=True,
            )
        ]

    def delete(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), _PAGE):
            self._collection.delete(ids=list(ids[start : start + _PAGE]))

    def drop(self) -> None:
        """Delete the whole collection (test clean-up)."""
        self._collection._client.delete_collection(self._collection.name)


def _collection(client: Any, name: str | None) -> Any:
    return client.get_or_create_collection(
        name or f"kb-{uuid.uuid4().hex}", embedding_function=None, metadata={"hnsw:space": "ip"}
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
