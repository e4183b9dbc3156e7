"""kbconform harness-v1 (stdio), profile memory-scope, for LangGraph's long-term memory store.

Each backend is a fresh ``langgraph.store.memory.InMemoryStore`` with an embedding index over
the value field ``text``. Each operation is one call of LangGraph's ``BaseStore`` API (update:
a get then a put, see README.md); each LangGraph exception is mapped to an error code. The
harness adds no check of its own, drops no key and fills no default: what the store answers is
what the kit judges. README.md lists its departures, and tests/harness/test_departures.py holds
it to them.

Standard library and LangGraph only; the protocol (framing, ids, handles, errors as data) is the
kit's harness runtime, kbharness. stdout carries responses only; the log goes to stderr.
"""

from __future__ import annotations

import logging
import sys
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "kbconform" / "_harness_runtime")]

import kbharness  # noqa: E402

kbharness.claim_stdout()  # before LangGraph loads: anything else that prints goes to stderr

logging.basicConfig(
    stream=sys.stderr, level=logging.WARNING, format="langgraph-harness: %(name)s: %(message)s"
)

from hashing_embedding import DIMENSIONS, embed  # noqa: E402
from langgraph.store.base import InvalidNamespaceError  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

PROFILE = "memory-scope"
SCOPE_KEYS = ("user", "agent")
LIST_LIMIT = 1_000_000  # listMemories: search with no query and this limit ("every memory")


MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "isolationProfile": PROFILE,
    "adapter": {"name": "kbconform langgraph harness", "version": "0.1.0"},
    "backend": {"name": "langgraph", "version": kbharness.installed_version("langgraph")},
    "scopeKeys": list(SCOPE_KEYS),
    "scopeMatch": "prefix",
    "readFacades": ["search", "list"],
    "features": {
        "fault-injection": (
            "InMemoryStore keeps its items in process dictionaries (langgraph/store/memory/"
            "__init__.py:186): it makes no call to a separate store that could fail."
        ),
        "get": True,
        "update": True,
        "delete": True,
        "delete-all": (
            "LangGraph's store has no operation that deletes more than one item: BaseStore "
            "offers delete(namespace, key) only (langgraph/store/base/__init__.py:952); a "
            "delete-all would be a search-and-delete loop of the harness's own."
        ),
        "filter": (
            "LangGraph's store filters on one value field at a time with $eq, $ne, $gt, $gte, $lt "
            "and $lte (langgraph/store/memory/__init__.py:586-601): no $in, $nin, $and or $or, "
            "which the kit's where grammar has"
        ),
    },
    # An item is addressed by its namespace and key (BaseStore.get, langgraph/store/base/
    # __init__.py:756): a by-id call finds a memory only under exactly its namespace.
    "byIdScope": "exact",
    # Labels may not hold a period (langgraph/store/base/__init__.py:1336).
    "reservedCharacters": ".",
    # BaseStore takes no caller: the application builds each namespace from the identity it
    # holds (the documented pattern is (user_id, "memories")), so what a call naming no user
    # means is the application's choice (schemas/declared-design.md).
    "callerIdentity": "application",
    # search(()) matches every namespace (langgraph/store/memory/__init__.py:261-265).
    "emptyScope": "everything",
    # put stores any value it is given, the empty text included (langgraph/store/base/
    # __init__.py:866): a strictness note, not an isolation level.
    "recordSchema": "looser",
}


def hashing_embed(texts: list[str]) -> list[list[float]]:
    """The index's ``embed`` function: LangGraph calls it with a list of texts."""
    return [embed(t) for t in texts]


def new_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMENSIONS, "embed": hashing_embed, "fields": ["text"]})


# ---------------------------------------------------------------------------------------------
# Scope -> namespace: the scope's values, in the order its keys come, every key included (an
# application's tuple of the identity it holds). Values are passed as they are (a non-string
# value, "" and None included, are LangGraph's to refuse), and a scope that is not an object is
# handed to LangGraph as it is. The harness drops no key and fills no default.


def to_namespace(scope: Any) -> Any:
    return tuple(scope.values()) if isinstance(scope, dict) else scope


# ---------------------------------------------------------------------------------------------


def _not_found(key: Any, namespace: tuple[Any, ...]) -> kbharness.HarnessError:
    # LangGraph's get answers None, with no message: this one names the caller's own namespace only.
    return kbharness.HarnessError(
        "KB_NOT_FOUND", f"KB_NOT_FOUND: no item with key {key!r} in namespace {namespace!r}"
    )


def _hit(item: Any) -> dict[str, Any]:
    return {"id": item.key, "text": item.value.get("text")}


class Backend:
    """One fresh store, and the count of its adds (each new item's key)."""

    def __init__(self) -> None:
        self.store = new_store()
        self.added = 0

    def new_key(self) -> str:
        """A new item's key: the version-4 UUID whose low bits count this backend's adds, so that
        one run's keys are the next run's and a recorded transcript replays as recorded."""
        self.added += 1
        return str(uuid.UUID(int=(0x6B62 << 112) | self.added, version=4))


class LangGraphHarness:
    """memory-scope's operations, each one call of LangGraph's BaseStore API."""

    manifest = MANIFEST

    def open(self, params: dict[str, Any], handle: str) -> Backend:
        if params["faults"] is True:
            raise kbharness.invalid("fault-injection is not offered by this harness (see the manifest)")
        return Backend()

    def close(self, backend: Backend) -> None:
        pass

    def error_for(self, exc: Exception) -> tuple[str, str] | None:
        if isinstance(exc, InvalidNamespaceError):
            return "KB_UNAUTHENTICATED", f"KB_UNAUTHENTICATED: {exc}"
        return None

    def addMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        # The metadata's fields are the value's, the text its indexed field (README.md,
        # departure 5): metadata that is not an object makes no value (KB_HARNESS_INTERNAL).
        value = {**params["metadata"], "text": params["text"]}
        key = backend.new_key()
        backend.store.put(to_namespace(params["scope"]), key, value)
        return {"id": key}

    def searchMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        items = backend.store.search(
            to_namespace(params["scope"]), query=params["text"], filter=params["where"], limit=params["limit"]
        )
        return {"hits": [_hit(i) for i in items]}

    def listMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        items = backend.store.search(to_namespace(params["scope"]), limit=LIST_LIMIT)
        return {"hits": [_hit(i) for i in items]}

    def getMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        namespace = to_namespace(params["scope"])
        item = backend.store.get(namespace, params["id"])
        if item is None:
            raise _not_found(params["id"], namespace)
        return {"hit": _hit(item)}

    def updateMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        # An application's update of one field: read the item, put it back with the new text.
        namespace = to_namespace(params["scope"])
        item = backend.store.get(namespace, params["id"])
        if item is None:
            raise _not_found(params["id"], namespace)
        backend.store.put(namespace, item.key, {**item.value, "text": params["text"]})
        return {}

    def deleteMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        backend.store.delete(to_namespace(params["scope"]), params["id"])
        return {}

    def deleteMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        raise kbharness.not_implemented(
            "deleteMemories: LangGraph's store has no delete-all (feature delete-all is not offered)"
        )


if __name__ == "__main__":
    sys.exit(kbharness.serve(LangGraphHarness(), name="langgraph-harness"))
