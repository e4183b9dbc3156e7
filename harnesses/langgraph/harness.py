"""kbconform harness-v1 (stdio), profile memory-scope, for LangGraph's long-term memory store.

Each backend is a fresh ``langgraph.store.memory.InMemoryStore`` with an embedding index over
the value field ``text``. Each operation is one call of LangGraph's ``BaseStore`` API (update:
a get then a put, see README.md); each LangGraph exception is mapped to an error code. The
harness adds no check of its own: what the store answers is what the kit judges.

Standard library and LangGraph only. stdout carries responses only; the log goes to stderr.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import sys
import time
import traceback
import uuid
from importlib import metadata as _metadata
from typing import Any

# Responses go to the real stdout; anything else that prints (a library included) goes to stderr.
_OUT = sys.stdout
sys.stdout = sys.stderr

logging.basicConfig(
    stream=sys.stderr, level=logging.WARNING, format="langgraph-harness: %(name)s: %(message)s"
)

from langgraph.store.base import InvalidNamespaceError  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

PROTOCOL = "harness-v1"
PROFILE = "memory-scope"
SCOPE_KEYS = ("user", "agent")
DIMENSIONS = 256
LIST_LIMIT = 1_000_000  # listMemories: search with no query and this limit ("every memory")


def _version(dist: str) -> str:
    try:
        return _metadata.version(dist)
    except _metadata.PackageNotFoundError:
        return "unknown"


MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "isolationProfile": PROFILE,
    "adapter": {"name": "kbconform langgraph harness", "version": "0.1.0"},
    "backend": {"name": "langgraph", "version": _version("langgraph")},
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
}

# Operations of the other isolation profiles: never served, answered KB_HARNESS_REQUEST_INVALID.
_OTHER_PROFILES_OPS = frozenset(
    {
        "ingest",
        "query",
        "get",
        "list",
        "count",
        "ask",
        "applyDeletionSignal",
        "export",
        "restore",
        "scan",
        "sync",
        "maintain",
        "createProject",
        "startSession",
        "assignSession",
        "removeSession",
        "writeEpisode",
        "extractEntities",
        "searchEpisodes",
        "searchEntities",
        "createTenant",
        "createKb",
        "shareKb",
        "revokeKb",
        "ingestDocuments",
        "searchKbs",
        "getKb",
        "listKbs",
        "deleteKb",
        "copyKb",
        "moveKb",
    }
)

# ---------------------------------------------------------------------------------------------
# The embedding: kbconform's reference HashingEmbedding (feature hashing of case-folded word
# tokens, BLAKE2b-8, +-1 per token, L2-normalized), in pure Python. No model, no network.
_TOKEN = re.compile(r"\w+", re.UNICODE)


def _embed_one(text: str) -> list[float]:
    row = [0.0] * DIMENSIONS
    for token in _TOKEN.findall(text.casefold()):
        digest = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
        row[digest % DIMENSIONS] += 1.0 if digest >> 63 else -1.0
    norm = math.sqrt(sum(v * v for v in row))
    if norm == 0.0:  # no tokens (or tokens that cancel): a fixed unit vector, never a zero one
        row = [0.0] * DIMENSIONS
        row[0] = 1.0
        return row
    return [v / norm for v in row]


def hashing_embed(texts: list[str]) -> list[list[float]]:
    """The index's ``embed`` function: LangGraph calls it with a list of texts."""
    return [_embed_one(t) for t in texts]


def new_store() -> InMemoryStore:
    return InMemoryStore(index={"dims": DIMENSIONS, "embed": hashing_embed, "fields": ["text"]})


# ---------------------------------------------------------------------------------------------
# Scope -> namespace. The values of the declared keys, in key order, up to the last declared key
# the scope names, a key it skips as None (an application's tuple of the identity it has);
# keys not declared are not read; values are passed as they are (a non-string value, "" and
# None included, is LangGraph's to refuse). A scope that names no declared key (not an object,
# empty, only undeclared keys) is the empty namespace ().


def to_namespace(scope: Any) -> tuple[Any, ...]:
    if not isinstance(scope, dict):
        return ()
    named = [n for n, key in enumerate(SCOPE_KEYS) if key in scope]
    if not named:
        return ()
    return tuple(scope.get(key) for key in SCOPE_KEYS[: named[-1] + 1])


# ---------------------------------------------------------------------------------------------


class WireError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> WireError:
    return WireError("KB_HARNESS_REQUEST_INVALID", message)


def _not_found(key: Any, namespace: tuple[Any, ...]) -> WireError:
    # LangGraph's get answers None, with no message: this one names the caller's own namespace only.
    return WireError("KB_NOT_FOUND", f"KB_NOT_FOUND: no item with key {key!r} in namespace {namespace!r}")


def _log(message: str) -> None:
    print(f"langgraph-harness: {message}", file=sys.stderr)


class Harness:
    def __init__(self) -> None:
        self.backends: dict[str, InMemoryStore] = {}
        self.counters: dict[str, int] = {}
        self.opened = 0

    # -- helpers --
    def _store(self, params: dict[str, Any]) -> InMemoryStore:
        handle = params.get("backend")
        if not isinstance(handle, str) or handle not in self.backends:
            raise _invalid(f"unknown backend handle {handle!r} (not returned by open, or closed)")
        return self.backends[handle]

    @staticmethod
    def _need(params: dict[str, Any], *names: str) -> None:
        missing = [n for n in names if n not in params]
        if missing:
            raise _invalid(f"missing params: {', '.join(missing)}")

    @staticmethod
    def _hit(item: Any) -> dict[str, Any]:
        return {"id": item.key, "text": item.value.get("text")}

    # -- operations --
    def hello(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("protocol") != PROTOCOL:
            raise _invalid(f"this harness speaks {PROTOCOL}, not {params.get('protocol')!r}")
        return {"protocol": PROTOCOL, "manifest": MANIFEST}

    def open(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "spoofMode", "revisionMap", "faults")
        if params["faults"] is True:
            raise _invalid("fault-injection is not offered by this harness (see the manifest)")
        self.opened += 1
        handle = f"b{self.opened}"
        self.backends[handle] = new_store()
        return {"backend": handle}

    def close(self, params: dict[str, Any]) -> dict[str, Any]:
        self._store(params)
        del self.backends[params["backend"]]
        return {}

    def fault(self, params: dict[str, Any]) -> dict[str, Any]:
        self._store(params)
        raise _invalid("the backend was opened without faults: fault-injection is not offered")

    def _key(self, handle: str) -> str:
        """A new item's key: the version-4 UUID whose low bits count this backend's adds, so that
        one run's keys are the next run's and a recorded transcript replays as recorded."""
        self.counters[handle] = self.counters.get(handle, 0) + 1
        return str(uuid.UUID(int=(0x6B62 << 112) | self.counters[handle], version=4))

    def addMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "text", "metadata")
        store = self._store(params)
        metadata = params["metadata"]
        value = {**(metadata if metadata is not None else {}), "text": params["text"]}
        key = self._key(params["backend"])
        store.put(to_namespace(params["scope"]), key, value)
        return {"id": key}

    def searchMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "text", "limit", "where")
        store = self._store(params)
        items = store.search(
            to_namespace(params["scope"]), query=params["text"], filter=params["where"], limit=params["limit"]
        )
        return {"hits": [self._hit(i) for i in items]}

    def listMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope")
        store = self._store(params)
        items = store.search(to_namespace(params["scope"]), limit=LIST_LIMIT)
        return {"hits": [self._hit(i) for i in items]}

    def getMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "id")
        store = self._store(params)
        namespace = to_namespace(params["scope"])
        item = store.get(namespace, params["id"])
        if item is None:
            raise _not_found(params["id"], namespace)
        return {"hit": self._hit(item)}

    def updateMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        # An application's update of one field: read the item, put it back with the new text.
        self._need(params, "scope", "id", "text")
        store = self._store(params)
        namespace = to_namespace(params["scope"])
        item = store.get(namespace, params["id"])
        if item is None:
            raise _not_found(params["id"], namespace)
        store.put(namespace, item.key, {**item.value, "text": params["text"]})
        return {}

    def deleteMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "id")
        store = self._store(params)
        store.delete(to_namespace(params["scope"]), params["id"])
        return {}

    def deleteMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        self._store(params)
        raise WireError(
            "KB_NOT_IMPLEMENTED",
            "deleteMemories: LangGraph's store has no delete-all (feature delete-all is not offered)",
        )

    OPS = frozenset(
        {
            "hello",
            "open",
            "close",
            "fault",
            "addMemory",
            "searchMemories",
            "listMemories",
            "getMemory",
            "updateMemory",
            "deleteMemory",
            "deleteMemories",
        }
    )

    def dispatch(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        if op in self.OPS:
            try:
                return getattr(self, op)(params)
            except WireError:
                raise
            except InvalidNamespaceError as exc:
                raise WireError("KB_UNAUTHENTICATED", f"KB_UNAUTHENTICATED: {exc}") from exc
            except Exception as exc:  # any other library failure
                traceback.print_exc(file=sys.stderr)
                raise WireError("KB_HARNESS_INTERNAL", f"{type(exc).__name__}: {exc}") from exc
        if op in _OTHER_PROFILES_OPS:
            raise _invalid(
                f"{op} is not an operation of the {PROFILE} profile (the manifest's isolationProfile)"
            )
        raise _invalid(f"unknown operation {op!r}")


def _request_id(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int) and raw >= 0:
        return raw
    if isinstance(raw, float) and raw.is_integer() and raw >= 0:
        return int(raw)
    return None


def _write(message: dict[str, Any]) -> None:
    try:
        line = json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        line = json.dumps(
            {
                "id": message.get("id"),
                "error": {"code": "KB_HARNESS_INTERNAL", "message": f"the result has no JSON form: {exc}"},
            },
            ensure_ascii=True,
        )
    _OUT.write(line + "\n")
    _OUT.flush()


def main() -> int:
    harness = Harness()
    stdin = sys.stdin.buffer
    for raw_line in stdin:
        if not raw_line.strip():
            continue
        started = time.monotonic()
        rid: int | None = None
        op = "?"
        try:
            try:
                request = json.loads(raw_line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise _invalid(f"the request is not UTF-8 JSON: {exc}") from exc
            if not isinstance(request, dict):
                raise _invalid("the request is not a JSON object")
            rid = _request_id(request.get("id"))
            if rid is None:
                raise _invalid("the request's id is not an integer >= 0")
            op = request.get("op")
            params = request.get("params")
            if not isinstance(op, str):
                raise _invalid("the request has no op")
            if not isinstance(params, dict):
                raise _invalid("the request's params is not an object")
            if op == "shutdown":
                _write({"id": rid, "result": {}})
                harness.backends.clear()
                _log(f"shutdown ({(time.monotonic() - started) * 1000:.1f} ms)")
                return 0
            result = harness.dispatch(op, params)
            _write({"id": rid, "result": result})
            _log(f"{op} ok ({(time.monotonic() - started) * 1000:.1f} ms)")
        except WireError as exc:
            _write({"id": rid, "error": {"code": exc.code, "message": exc.message}})
            _log(f"{op} {exc.code}: {exc.message}")
        except Exception as exc:  # a failure of the harness itself: answer it, keep serving
            traceback.print_exc(file=sys.stderr)
            message = f"{type(exc).__name__}: {exc}"
            _write({"id": rid, "error": {"code": "KB_HARNESS_INTERNAL", "message": message}})
        sys.stderr.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
