"""The kb-grant reference as a kbconform adapter: ``kbconform_reference.grant.adapter:multi_store``.

Each backend it opens is a :class:`KbGrantService` with its own in-memory SQLite catalogue and
two stores of its own: Chroma embedded (store ``chroma``, cosine distance) and Qdrant in local
mode (store ``qdrant``, cosine similarity), each with a collection per model. Needs the
``chroma`` and ``qdrant`` extras (``pip install 'kbconform[grant]'``).
"""

from __future__ import annotations

from typing import Any

from kbconform.adapter import BackendOptions, KbGrantBackend
from kbconform_reference._adapter import OpenBackends, version
from kbconform_reference.grant import chroma, qdrant
from kbconform_reference.grant.index import VectorIndex
from kbconform_reference.grant.service import KbGrantService

#: The embedding models: the caller supplies every vector, so a model is a name and a dimension.
MODELS = {"m-8a": 8, "m-8b": 8}
#: The stores, by id: the engine behind each.
STORES = {"chroma": "chroma", "qdrant": "qdrant"}
MAX_FAN_OUT = 4
#: Each store group's deadline: a search Qdrant local mode answers in milliseconds took more
#: than 1.5 s on two cores loaded by a test run's workers and their children.
GROUP_DEADLINE_SECONDS = 3.0


class GrantAdapter(OpenBackends):
    """Opens a fresh :class:`KbGrantService` per request; closes what it opened."""

    @property
    def manifest(self) -> dict[str, Any]:
        return {
            "manifestVersion": "1",
            "isolationProfile": "kb-grant",
            "adapter": {"name": "kbconform-reference-grant", "version": version("kbconform")},
            "backend": {"name": "kbconform-reference-grant", "version": version("kbconform")},
            "isolationModel": "metadata-filter",
            "readFacades": ["search", "get", "list"],
            "stores": [{"id": store, "engine": engine} for store, engine in STORES.items()],
            "models": [{"name": name, "dimension": dimension} for name, dimension in MODELS.items()],
            "maxFanOut": MAX_FAN_OUT,
            "groupDeadlineSeconds": GROUP_DEADLINE_SECONDS,
            "features": {"fault-injection": True},
            "concurrency": "threads",
            "config": {
                "stores": {
                    "chroma": f"chromadb {version('chromadb')} EphemeralClient, cosine space",
                    "qdrant": f"qdrant-client {version('qdrant-client')} local mode (:memory:), cosine",
                },
                "collections": "one per model in each store",
                "catalogue": "sqlite3 :memory:, one database per backend",
                "keptApart": "by the knowledge base's internal id in each document's metadata",
            },
        }

    def _stores(self) -> dict[str, VectorIndex]:
        return {"chroma": chroma.ChromaIndex(MODELS), "qdrant": qdrant.QdrantIndex(MODELS)}

    #: What :meth:`open` opens (a mutant's adapter opens its own kind).
    kind: type[KbGrantService] = KbGrantService

    def _service(self, options: BackendOptions) -> KbGrantService:
        return self.kind(
            self._stores(),
            MODELS,
            store_fails=options.store_fails,
            max_fan_out=MAX_FAN_OUT,
            group_deadline=GROUP_DEADLINE_SECONDS,
        )

    def open(self, options: BackendOptions, /) -> KbGrantBackend:
        service = self._service(options)
        return self._opened(service, service.close)


def multi_store() -> GrantAdapter:
    """The kb-grant reference over Chroma embedded and Qdrant local mode, catalogue in SQLite."""
    return GrantAdapter()
