"""Fixtures for the reference knowledge base: the same tests run in every store mode.

``store`` is parametrized over the exact in-memory store, Chroma embedded (ephemeral) and a
real Chroma server (``chroma run`` on 127.0.0.1, started once per session and stopped by its
process id).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import record
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.stores import MemoryStore, VectorStore

MODES = ("memory", "chroma-embedded", "chroma-server")

ACME = Principal("acme")
BETA = Principal("beta")
OPERATOR = Principal("ops", role="operator")
SHARED_WRITER = Principal("neo-shared", role="operator")
READER = Principal("reader", readable_namespaces=frozenset({"neo-shared"}))


def chunk(
    path: str = "docs/a.md", content: str = "alpha", *, tenant: str = "acme", repo: str = "app", **extra: Any
) -> dict[str, Any]:
    """A valid parsed-chunk-v1 record (the suites' :func:`~kbconform.conformance.record`)."""
    return record(path, content, tenant=tenant, repo=repo, **extra)


@pytest.fixture(scope="session")
def chroma_server() -> Iterator[Any]:
    from kbconform_reference.namespace.stores.server import ChromaServer

    with ChromaServer() as server:
        yield server


@pytest.fixture(scope="session")
def chroma_client(chroma_server: Any) -> Iterator[Any]:
    """One client of the session's server for every collection the tests open on it."""
    from kbconform_reference.namespace.stores.chroma import ChromaClient

    client = ChromaClient(chroma_server.host, chroma_server.port)
    yield client
    client.close()


#: A server request's deadline in a test marked ``bulk``, whose single requests move thousands of
#: rows: what it checks is that they come back whole, not how fast (on a loaded two-core machine
#: one such request can take longer than the default deadline).
BULK_TIMEOUT = 60.0


@pytest.fixture(params=MODES)
def store(request: pytest.FixtureRequest) -> Iterator[VectorStore]:
    if request.param == "memory":
        yield MemoryStore()
        return
    from kbconform_reference.namespace.stores.chroma import ChromaStore

    if request.param == "chroma-embedded":
        chroma = ChromaStore.ephemeral()
    else:
        server = request.getfixturevalue("chroma_server")
        if request.node.get_closest_marker("bulk") is not None:
            chroma = ChromaStore.http(server.host, server.port, timeout=BULK_TIMEOUT)
        else:
            chroma = request.getfixturevalue("chroma_client").collection()
    yield chroma
    chroma.drop()


@pytest.fixture
def kb(store: VectorStore) -> KnowledgeBase:
    return KnowledgeBase(store)
