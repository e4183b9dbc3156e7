"""The memory-scope reference as a kbconform adapter: ``kbconform_reference.memory.adapter:qdrant_local``.

Each backend it opens is a :class:`ScopedMemory` with its own local-mode Qdrant client
(``QdrantClient(":memory:")``): independent of every other one, and empty. Needs the ``qdrant``
extra (``pip install 'kbconform[qdrant]'``).
"""

from __future__ import annotations

from typing import Any

from kbconform.adapter import BackendOptions
from kbconform_reference._adapter import OpenBackends, version
from kbconform_reference.memory.service import COLLECTION, SCOPE_KEYS, ScopedMemory


class MemoryAdapter(OpenBackends):
    """Opens a fresh :class:`ScopedMemory` per request; closes what it opened."""

    @property
    def manifest(self) -> dict[str, Any]:
        return {
            "manifestVersion": "1",
            "isolationProfile": "memory-scope",
            "adapter": {"name": "kbconform-reference-memory", "version": version("kbconform")},
            "backend": {"name": "qdrant", "version": version("qdrant-client")},
            "scopeKeys": list(SCOPE_KEYS),
            "scopeMatch": "keys",
            "byIdScope": "checked",
            "readFacades": ["search", "list"],
            "concurrency": "threads",
            "features": {
                "fault-injection": True,
                "get": True,
                "update": True,
                "update-metadata": True,
                "delete": True,
                "delete-all": True,
                "filter": True,
            },
            "config": {
                "vectorStore": "qdrant-client local mode (:memory:), one client per backend",
                "collection": COLLECTION,
                "embedding": "hashing-256",
            },
        }

    def _memory(self, options: BackendOptions) -> ScopedMemory:
        return ScopedMemory(store_fails=options.store_fails)

    def open(self, options: BackendOptions, /) -> ScopedMemory:
        memory = self._memory(options)
        return self._opened(memory, memory.close)


def qdrant_local() -> MemoryAdapter:
    """The memory-scope reference over Qdrant in local mode (in memory)."""
    return MemoryAdapter()
