"""The memory-scope reference: agent memory scoped by ``user_id``, ``agent_id`` and ``run_id``.

Memories live in one Qdrant collection (local mode, in memory), each point's payload
``{"scope": {key: value}, "text", "metadata"}``: the scope exactly as the caller named it, and
the client's metadata apart from it, so a metadata key named like a scope key is never read as
one. Every read, and every by-id call, filters on ``scope.<key>`` for each key the caller's
scope names (a keyword match: exact, case and Unicode form included); a scope names at least
one key, so no call runs without that filter. A where clause is decided in Python over the
scope's memories (:func:`~kbconform.adapter.where_matches`), and the search then runs over those
ids and within the scope. Search is exact (Qdrant's local mode is brute force).

Identity: the scope is checked before anything else. Anything but a non-empty mapping of
declared keys to non-empty strings is :class:`Unauthenticated`: never "every memory".

Faults: the ``store_fails`` switch is consulted once before every Qdrant call; while it says
True the call raises :class:`BackendUnavailable`. Every write is one Qdrant call (an upsert, a
delete by ids or by filter), so a failed write changes nothing. Calls on one backend are
serialized.
"""

from __future__ import annotations

import builtins
import threading
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from kbconform.adapter import where_matches
from kbconform.errors import BackendUnavailable, KbconformError, NotFound, Unauthenticated
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, MemoryHit, memory_invalid
from kbconform_reference._arguments import describe
from kbconform_reference._store_calls import store_call
from kbconform_reference.embedding import HashingEmbedding

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http.models import Filter, Record

#: The scope keys the reference declares, in order.
SCOPE_KEYS = ("user_id", "agent_id", "run_id")
COLLECTION = "memories"
#: How many points one scroll of a list reads.
PAGE = 256


class ScopedMemory:
    """One backend: its own Qdrant client and collection, empty when made.

    ``store_fails`` is the fault switch (consulted before every store call); ``embedder`` turns
    texts into vectors (the offline hashing embedding by default).
    """

    def __init__(
        self, *, store_fails: Callable[[], bool] | None = None, embedder: HashingEmbedding | None = None
    ) -> None:
        from qdrant_client import QdrantClient, models

        self.embedder = embedder or HashingEmbedding()
        self.client: QdrantClient = QdrantClient(":memory:")
        self.client.create_collection(
            COLLECTION,
            vectors_config=models.VectorParams(
                size=self.embedder.dimensions, distance=models.Distance.COSINE
            ),
        )
        self._fails = store_fails
        self._lock = threading.RLock()

    def close(self) -> None:
        with self._lock:
            self.client.close()

    # -- guards ---------------------------------------------------------------------------------

    def _store(self, operation: str) -> AbstractContextManager[None]:
        """One store call (:func:`~kbconform_reference._store_calls.store_call`)."""
        return store_call(self._fails, operation)

    def _scope(self, scope: object, operation: str) -> dict[str, str]:
        """The caller's scope: a non-empty mapping of declared keys to non-empty strings."""
        if not isinstance(scope, Mapping) or not scope:
            raise Unauthenticated(operation)
        checked = {}
        for key, value in scope.items():
            if key not in SCOPE_KEYS or type(value) is not str or not value:
                raise Unauthenticated(operation)
            checked[key] = value
        return checked

    def _filter(self, scope: Mapping[str, str]) -> Filter:
        """The points written under every key and value ``scope`` names."""
        from qdrant_client import models

        return models.Filter(
            must=[
                models.FieldCondition(key=f"scope.{key}", match=models.MatchValue(value=value))
                for key, value in scope.items()
            ]
        )

    def _within(self, payload: Mapping[str, Any], scope: Mapping[str, str]) -> bool:
        """Whether a point written under ``payload['scope']`` matches ``scope``."""
        written = payload.get("scope") or {}
        return all(written.get(key) == value for key, value in scope.items())

    def _vector(self, text: str) -> builtins.list[float]:
        vector: list[float] = self.embedder([text])[0].tolist()
        return vector

    @staticmethod
    def _text(text: object) -> str:
        if type(text) is not str or not text:
            raise memory_invalid("text", "a non-empty string", describe(text))
        return text

    # -- writes ---------------------------------------------------------------------------------

    def _payload(self, scope: Mapping[str, str], text: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
        return {"scope": dict(scope), "text": text, "metadata": dict(metadata)}

    def _upsert(self, memory: str, text: str, payload: Mapping[str, Any], operation: str) -> None:
        from qdrant_client import models

        vector = self._vector(text)
        with self._store(operation):
            self.client.upsert(
                COLLECTION,
                points=[models.PointStruct(id=memory, vector=vector, payload=dict(payload))],
                wait=True,
            )

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        with self._lock:
            caller = self._scope(scope, "add")
            checked = self._text(text)
            if not isinstance(metadata, Mapping):
                raise memory_invalid("metadata", "an object", describe(metadata))
            memory = str(uuid.uuid4())
            self._upsert(memory, checked, self._payload(caller, checked, metadata), "add")
            return memory

    def _found(self, scope: object, memory: object, operation: str) -> Record:
        """The point ``memory`` names, when it matches the caller's scope; else NotFound (an id
        outside the scope fails as an id no memory has)."""
        caller = self._scope(scope, operation)
        if type(memory) is not str or not memory:
            raise NotFound(describe(memory))
        try:
            canonical = str(uuid.UUID(memory))
        except ValueError:
            raise NotFound(memory) from None
        if canonical != memory:  # Qdrant reads any spelling of a UUID as the point's id
            raise NotFound(memory)
        with self._store(operation):
            found = self.client.retrieve(COLLECTION, ids=[memory], with_payload=True)
        if not found or not self._within(found[0].payload or {}, caller):
            raise NotFound(memory)
        return found[0]

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        with self._lock:
            found = self._found(scope, memory, "get")
            return MemoryHit(str(found.id), str((found.payload or {})["text"]))

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        with self._lock:
            found = self._found(scope, memory, "update")
            checked = self._text(text)
            payload = self._updated(dict(found.payload or {}), checked, metadata)
            self._upsert(str(found.id), checked, payload, "update")

    @staticmethod
    def _updated(payload: Mapping[str, Any], text: str, metadata: object) -> dict[str, Any]:
        """``payload`` with ``text``, and the keys of ``metadata`` (None: none given) set in its
        metadata: client data, kept apart from the scope."""
        if metadata is None:
            return {**payload, "text": text}
        if not isinstance(metadata, Mapping):
            raise memory_invalid("metadata", "an object", describe(metadata))
        return {**payload, "text": text, "metadata": {**(payload.get("metadata") or {}), **metadata}}

    def delete(self, scope: object, memory: object, /) -> None:
        from qdrant_client import models

        with self._lock:
            found = self._found(scope, memory, "delete")
            with self._store("delete"):
                self.client.delete(
                    COLLECTION, points_selector=models.PointIdsList(points=[found.id]), wait=True
                )

    def delete_all(self, scope: object, /) -> None:
        from qdrant_client import models

        with self._lock:
            caller = self._scope(scope, "delete_all")
            with self._store("delete_all"):
                self.client.delete(
                    COLLECTION, points_selector=models.FilterSelector(filter=self._filter(caller)), wait=True
                )

    # -- reads ----------------------------------------------------------------------------------

    def _scroll(self, where: Filter, operation: str) -> builtins.list[Record]:
        """Every point ``where`` matches, a page per store call."""
        found: builtins.list[Record] = []
        offset: Any = None
        while True:
            with self._store(operation):
                page, offset = self.client.scroll(
                    COLLECTION, scroll_filter=where, limit=PAGE, offset=offset, with_payload=True
                )
            found += page
            if offset is None:
                return found

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        with self._lock:
            caller = self._scope(scope, "list")
            points = self._scroll(self._filter(caller), "list")
            return [MemoryHit(str(p.id), str((p.payload or {})["text"])) for p in points]

    def _where(self, caller: Mapping[str, str], where: object) -> Filter:
        """The scope's filter, narrowed to the memories whose metadata ``where`` selects."""
        from qdrant_client import models

        scoped = self._filter(caller)
        if where is None:
            return scoped
        try:
            chosen = [
                p.id
                for p in self._scroll(scoped, "search")
                if where_matches((p.payload or {}).get("metadata") or {}, where)
            ]
        except KbconformError as error:
            if isinstance(error, BackendUnavailable):
                raise
            raise memory_invalid(
                "where", "a client where clause (client-where.md)", describe(where)
            ) from None
        return models.Filter(must=[*(scoped.must or []), models.HasIdCondition(has_id=chosen)])

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        with self._lock:
            caller = self._scope(scope, "search")
            if type(text) is not str:
                raise memory_invalid("text", "a string", describe(text))
            if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
                raise memory_invalid("limit", f"an integer from 1 to {MAX_LIMIT}", describe(limit))
            selected = self._where(caller, where)
            vector = self._vector(text)
            with self._store("search"):
                found = self.client.query_points(
                    COLLECTION, query=vector, query_filter=selected, limit=limit, with_payload=True
                )
            return [MemoryHit(str(p.id), str((p.payload or {})["text"])) for p in found.points]
