"""The project-pool reference as a kbconform adapter: ``kbconform_reference.pool.adapter:qdrant_local``.

Each backend it opens is a :class:`ProjectPool` with its own in-memory SQLite membership
database and its own local-mode Qdrant client (``QdrantClient(":memory:")``): independent of
every other one, and empty. Needs the ``qdrant`` extra (``pip install 'kbconform[qdrant]'``).
"""

from __future__ import annotations

from typing import Any

from kbconform.adapter import BackendOptions, ProjectPoolBackend
from kbconform_reference._adapter import OpenBackends, version
from kbconform_reference.pool import qdrant
from kbconform_reference.pool.service import ProjectPool


class PoolAdapter(OpenBackends):
    """Opens a fresh :class:`ProjectPool` per request; closes what it opened."""

    @property
    def manifest(self) -> dict[str, Any]:
        return {
            "manifestVersion": "1",
            "isolationProfile": "project-pool",
            "adapter": {"name": "kbconform-reference-pool", "version": version("kbconform")},
            "backend": {"name": "qdrant", "version": version("qdrant-client")},
            "isolationModel": "metadata-filter",
            "readFacades": ["search-episodes", "search-entities"],
            "features": {"fault-injection": True},
            "concurrency": "threads",
            "config": {
                "vectorStore": "qdrant-client local mode (:memory:), one client per backend",
                "collections": [qdrant.EPISODES, qdrant.ENTITIES],
                "membership": "sqlite3 :memory:, one database per backend",
                "embedding": "hashing-256",
            },
        }

    def _pool(self, options: BackendOptions) -> ProjectPool:
        return ProjectPool(store_fails=options.store_fails)

    def open(self, options: BackendOptions, /) -> ProjectPoolBackend:
        pool = self._pool(options)
        return self._opened(pool, pool.close)


def qdrant_local() -> PoolAdapter:
    """The project-pool reference over Qdrant in local mode (in memory), membership in SQLite."""
    return PoolAdapter()
