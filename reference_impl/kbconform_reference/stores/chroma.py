"""Chroma as a store: embedded (persistent or ephemeral) or a server over HTTP.

The collection never has an embedding function (Chroma's default one downloads a model): the
knowledge base always passes embeddings. Distances are cosine.
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
        if not ids:
            return
        self._collection.upsert(
            ids=list(ids),
            embeddings=np.asarray(embeddings, dtype=np.float32),
            documents=list(documents),
            metadatas=[dict(m) for m in metadatas],
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
        if ids is not None and not ids:
            return Rows((), (), ())
        include = ["documents", "metadatas", *(["embeddings"] if embeddings else [])]
        result = self._collection.get(
            ids=list(ids) if ids is not None else None,
            where=dict(where) if where else None,
            limit=limit,
            offset=offset or None,
            include=include,
        )
        found = tuple(result["ids"])
        vectors = None
        if embeddings:
            raw = result["embeddings"]
            vectors = np.asarray(raw, dtype=np.float32) if len(found) else np.zeros((0, 0), np.float32)
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
        if ids:
            self._collection.delete(ids=list(ids))

    def drop(self) -> None:
        """Delete the whole collection (test clean-up)."""
        self._collection._client.delete_collection(self._collection.name)


def _collection(client: Any, name: str | None) -> Any:
    return client.get_or_create_collection(
        name or f"kb-{uuid.uuid4().hex}", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
