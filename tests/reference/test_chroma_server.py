"""The Chroma server the references start (``ChromaServer``) keeps the collections it has read
(``COLLECTION_CACHE``), and what it answers stays current as collections are dropped, made
again under their names and modified."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from kbconform_reference.servers import COLLECTION_CACHE, ChromaServer

#: What ``chroma run`` logs (at info, for its frontend) each time it reads a collection and its
#: segments from its catalogue rather than from its cache.
MISS = "Cache miss for collection"


def _vector(seed: int) -> npt.NDArray[np.float32]:
    """One unit vector of 384 floats, as a batch of one."""
    vector = np.random.default_rng(seed).standard_normal((1, 384)).astype(np.float32)
    unit: npt.NDArray[np.float32] = vector / np.linalg.norm(vector)
    return unit


class _Uncached(ChromaServer):
    """``chroma run``'s own default: no collection kept."""

    def config(self) -> dict[str, Any]:
        uncached = {**COLLECTION_CACHE, "cache": {"nop": None}}
        return {**super().config(), "collections_with_segments_provider": uncached}


def _catalogue_reads(server: ChromaServer, gets: int) -> int:
    """How many times the server read the collection from its catalogue while answering ``gets``
    one-id gets of a collection it has already written and read."""
    from kbconform_reference.namespace.stores.chroma import ChromaClient

    client = ChromaClient(server.host, server.port)
    try:
        store = client.collection()
        store.upsert(["a"], _vector(0), ["text"], [{"tenantId": "acme"}])
        assert store.get(ids=["a"]).ids == ("a",)
        before = server.log_tail(1 << 24).count(MISS)
        for _ in range(gets):
            assert store.get(ids=["a"]).documents == ("text",)
        store.drop()
    finally:
        client.close()
    return server.log_tail(1 << 24).count(MISS) - before


@pytest.fixture
def logging_frontend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUST_LOG", "warn,chroma_frontend=info")


@pytest.mark.usefixtures("logging_frontend")
def test_the_server_reads_a_collection_it_has_read_from_its_cache() -> None:
    """Five gets of a written collection read it from the server's catalogue no more; on
    ``chroma run``'s default (no cache: the control) every get reads it again."""
    with ChromaServer() as server:
        assert _catalogue_reads(server, 5) == 0
    with _Uncached() as control:
        assert _catalogue_reads(control, 5) >= 5


def test_a_collection_dropped_and_made_again_under_its_name_is_read_afresh(chroma_client: Any) -> None:
    """Written and read (so kept by the server), dropped, made again under the same name: the new
    collection holds none of the old rows, and what is written to it is read back."""
    name = f"kb-again-{uuid.uuid4().hex}"
    first = chroma_client.collection(name)
    first.upsert(["old"], _vector(1), ["old text"], [{"tenantId": "acme"}])
    for _ in range(2):
        assert first.get(ids=["old"]).documents == ("old text",)
        assert first.get(where={"tenantId": "acme"}).ids == ("old",)
    first.drop()
    again = chroma_client.collection(name)
    try:
        assert again.get(ids=["old"]).ids == ()
        assert again.get(where={"tenantId": "acme"}).ids == ()
        again.upsert(["new"], _vector(2), ["new text"], [{"tenantId": "beta"}])
        assert again.get().ids == ("new",)
        assert again.get(where={"tenantId": "beta"}, embeddings=True).documents == ("new text",)
        assert [m.id for m in again.nearest(_vector(2)[0], 5, None)] == ["new"]
    finally:
        again.drop()


def test_a_collection_renamed_after_it_was_read_answers_under_its_new_name(chroma_server: Any) -> None:
    """Read (so kept), renamed and given new metadata: the server lists it under the new name with
    the new metadata, and its rows are still read by its id."""
    from kbconform_reference.tenancy.service import connect

    api = connect(chroma_server.host, chroma_server.port)
    name, renamed = f"kb-old-{uuid.uuid4().hex}", f"kb-new-{uuid.uuid4().hex}"
    made = api.create_collection(name, metadata={"v": 1})
    api._add(["a"], made.id, [list(map(float, _vector(3)[0]))], documents=["text"])
    assert api._get(made.id, include=["documents"])["documents"] == ["text"]
    api._modify(made.id, new_name=renamed, new_metadata={"v": 2})
    try:
        listed = {c.name: dict(c.metadata or {}) for c in api.list_collections()}
        assert listed.get(renamed) == {"v": 2}
        assert name not in listed
        assert api._get(made.id, include=["documents"])["documents"] == ["text"]
        assert api.get_collection(renamed).id == made.id
    finally:
        api.delete_collection(renamed)
        api._session.close()
