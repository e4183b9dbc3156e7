"""The store-tenancy reference as a kbconform adapter:
``kbconform_reference.tenancy.adapter:chroma_server``.

The adapter starts one Chroma server (``chroma run`` on 127.0.0.1) when it first opens a
backend and stops it at shutdown; each backend it opens is a :class:`TenantStore` with its own
tenants on that server. With ``KBCONFORM_TENANCY_SERVER`` set (``127.0.0.1:PORT``) it uses that
running server instead and leaves it running (the mutant sweeps share one server). Needs the
``chroma`` extra.
"""

from __future__ import annotations

import os
from typing import Any

from kbconform.adapter import BackendOptions
from kbconform_reference._adapter import OpenBackends, version
from kbconform_reference.tenancy.service import TenantStore, connect

#: A running Chroma server to use (``host:port``) instead of starting one.
SERVER_VARIABLE = "KBCONFORM_TENANCY_SERVER"


class TenancyAdapter(OpenBackends):
    """Opens a fresh :class:`TenantStore` per request on the adapter's one server."""

    def __init__(self) -> None:
        super().__init__()
        self._server: Any = None
        self._api: Any = None

    @property
    def manifest(self) -> dict[str, Any]:
        return {
            "manifestVersion": "1",
            "isolationProfile": "store-tenancy",
            "adapter": {"name": "kbconform-reference-tenancy", "version": version("kbconform")},
            "backend": {"name": "chroma-server", "version": version("chromadb")},
            "readFacades": ["get", "list"],
            "concurrency": "threads",
            "features": {"fault-injection": True, "fork": True},
            "config": {
                "vectorStore": "chroma run on 127.0.0.1, started by the adapter",
                "route": "v2",
                "tenancy": "checked by the reference before each call; a plan's tenant is a server tenant",
            },
        }

    def _store(self, options: BackendOptions) -> TenantStore:
        return TenantStore(self._connected(), options.store_fails)

    def _connected(self) -> Any:
        running = os.environ.get(SERVER_VARIABLE)
        if self._api is None and running:
            host, _, port = running.rpartition(":")
            self._api = connect(host, int(port))
        if self._server is None and self._api is None:
            from kbconform_reference.servers import ChromaServer

            self._server = ChromaServer().start()
        if self._api is None:
            self._api = connect(self._server.host, self._server.port)
        return self._api

    def open(self, options: BackendOptions, /) -> TenantStore:
        store = self._store(options)
        return self._opened(store, store.close)

    def shutdown(self) -> None:
        super().shutdown()
        if self._server is not None:
            self._server.stop()
            self._server = None
            self._api = None


def chroma_server() -> TenancyAdapter:
    """The store-tenancy reference over a Chroma server the adapter starts."""
    return TenancyAdapter()
