"""kbconform harness-v1 (stdio) for mem0, the open-source memory layer (PyPI package mem0ai).

Profile: memory-scope. Each backend is one `mem0.Memory` over its own local Qdrant store and its
own SQLite history database, in a scratch folder of its own. Each operation is one call of
mem0's public API; each exception mem0 raises is mapped to an error code (README.md, "Errors").
The harness adds no check, filter or validation of its own.

Standard library and mem0 (with what it installs) only. stdout carries the responses and nothing
else: file descriptor 1 is moved aside before mem0 loads, and everything else that would have
gone to stdout goes to stderr, the harness log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

# --- stdout: responses only -----------------------------------------------------------------------
_RESPONSES = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
os.dup2(2, 1)  # C-level writes to fd 1 land in the log
sys.stdout = sys.stderr

# --- environment, before mem0 is imported ---------------------------------------------------------
_SCRATCH = Path(tempfile.mkdtemp(prefix="kbconform-mem0-"))
os.environ["MEM0_TELEMETRY"] = "False"  # mem0/memory/telemetry.py:16: no PostHog client, no notices
os.environ["MEM0_DIR"] = str(_SCRATCH / "mem0-dir")  # mem0/memory/setup.py:11 writes config.json here
os.environ["HOME"] = str(_SCRATCH / "home")
(_SCRATCH / "home").mkdir()
for _var in ("OPENROUTER_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
    os.environ.pop(_var, None)

logging.basicConfig(
    stream=sys.stderr,
    level=getattr(logging, os.environ.get("KBCONFORM_MEM0_LOG", "WARNING").upper(), logging.WARNING),
    format="%(asctime)s %(name)s %(levelname)s %(message)s",
)
log = logging.getLogger("kbconform.mem0")

import itertools  # noqa: E402
import uuid  # noqa: E402

import mem0  # noqa: E402
import mem0.memory.main  # noqa: E402
from mem0 import Memory  # noqa: E402
from mem0.configs.embeddings.base import BaseEmbedderConfig  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
from mem0.exceptions import ValidationError as Mem0ValidationError  # noqa: E402

PROTOCOL = "harness-v1"
ADAPTER_VERSION = "0.1.0"
DIMENSIONS = 256
LIST_LIMIT = 1000  # listMemories: get_all's top_k (its default is 20)
# An address nothing listens on: the LLM and embedder clients mem0 builds at construction are
# never called (infer=False; the embedder is replaced), and if one were, it would fail here.
UNUSED_BASE_URL = "http://127.0.0.1:9/v1"

MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "memory-scope",
    "adapter": {"name": "kbconform mem0 harness", "version": ADAPTER_VERSION},
    "backend": {"name": "mem0ai", "version": mem0.__version__},
    "scopeKeys": ["user_id", "agent_id", "run_id"],
    "scopeMatch": "keys",
    "readFacades": ["search", "list"],
    "features": {
        "fault-injection": True,
        "get": True,
        "update": True,
        "delete": True,
        "delete-all": True,
        "filter": True,
    },
    # mem0's get, update and delete take a memory id and no scope (mem0/memory/main.py:1222,
    # :1829, :1883): the design this harness declares, and the verdict shows beside the level.
    "byIdScope": "none",
    # Memory.search drops memories scoring under its threshold, 0.1 by default
    # (mem0/memory/main.py:1402, mem0/utils/scoring.py:111): fewer than top_k by design.
    "searchReturns": "relevant",
}

OTHER_PROFILE_OPS = {
    "tenant-namespace": (
        "ingest", "query", "get", "list", "count", "ask", "applyDeletionSignal", "export",
        "restore", "scan", "sync", "maintain",
    ),
    "project-pool": (
        "createProject", "startSession", "assignSession", "removeSession", "writeEpisode",
        "extractEntities", "searchEpisodes", "searchEntities",
    ),
    "kb-grant": (
        "createTenant", "createKb", "shareKb", "revokeKb", "ingestDocuments", "searchKbs",
        "getKb", "listKbs", "deleteKb", "copyKb", "moveKb",
    ),
}  # fmt: skip
PARAMS = {
    "hello": ("protocol",),
    "open": ("spoofMode", "revisionMap", "faults"),
    "close": ("backend",),
    "fault": ("backend", "plan"),
    "shutdown": (),
    "addMemory": ("backend", "scope", "text", "metadata"),
    "searchMemories": ("backend", "scope", "text", "limit", "where"),
    "listMemories": ("backend", "scope"),
    "getMemory": ("backend", "scope", "id"),
    "updateMemory": ("backend", "scope", "id", "text"),
    "deleteMemory": ("backend", "scope", "id"),
    "deleteMemories": ("backend", "scope"),
}


# --- memory ids -----------------------------------------------------------------------------------
class SeededIds:
    """The ``uuid`` module as mem0's ``memory/main.py`` sees it, its ``uuid4`` counting per backend.

    mem0 names each memory ``str(uuid.uuid4())`` (mem0/memory/main.py:1981). Here the n-th id a
    backend makes is the version-4 UUID whose low bits are n, so that one run's ids are the next
    run's and a recorded transcript replays as recorded; everything else is the real module.
    """

    def __init__(self) -> None:
        self.counter: itertools.count[int] | None = None

    def uuid4(self) -> uuid.UUID:
        if self.counter is None:
            return uuid.uuid4()
        return uuid.UUID(int=(0x6B62 << 112) | next(self.counter), version=4)

    def __getattr__(self, name: str):
        return getattr(uuid, name)


IDS = SeededIds()
mem0.memory.main.uuid = IDS


# --- the embedding --------------------------------------------------------------------------------
_TOKEN = re.compile(r"\w+", re.UNICODE)


class HashingEmbedding(EmbeddingBase):
    """kbconform's reference hashing embedding (reference_impl/.../embedding.py), as a mem0 embedder.

    Each case-folded word token adds +1 or -1 to one of DIMENSIONS buckets (BLAKE2b, 8-byte
    digest, big-endian: digest mod DIMENSIONS picks the bucket, its top bit the sign); a text
    without tokens is the unit vector on bucket 0; the vector is L2-normalized. Deterministic,
    offline, no model.
    """

    def __init__(self) -> None:
        super().__init__(BaseEmbedderConfig(model=f"hashing-{DIMENSIONS}", embedding_dims=DIMENSIONS))

    def embed(self, text, memory_action=None):
        vector = [0.0] * DIMENSIONS
        for token in _TOKEN.findall(str(text).casefold()):
            digest = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
            vector[digest % DIMENSIONS] += 1.0 if digest >> 63 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            vector[0] = 1.0
            return vector
        return [x / norm for x in vector]


# --- the fault switch -----------------------------------------------------------------------------
class StoreFault(ConnectionError):
    """What a store call raises when the fault plan fails it."""


class FaultSwitch:
    def __init__(self) -> None:
        self.plan = None
        self.consulted = 0
        self._lock = threading.Lock()

    def set(self, plan):
        with self._lock:
            previous, self.consulted, self.plan = self.consulted, 0, plan
        return previous

    def consult(self, call: str) -> None:
        with self._lock:
            index = self.consulted
            self.consulted += 1
            plan = self.plan
        if not plan:
            return
        passing, failing = plan["pass"], plan.get("fail")
        if index < passing or (failing is not None and index >= passing + failing):
            return
        hang = plan.get("hang") or 0
        if hang:
            time.sleep(hang)
        raise StoreFault(f"store unavailable: {call} failed (injected store fault)")


class SwitchedStore:
    """Stands in for a store object: each switched method consults the switch, then calls through.

    `methods` names the switched methods; None switches every public method but close.
    """

    def __init__(self, target, switch: FaultSwitch, label: str, methods=None) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_switch", switch)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_methods", methods)

    def __getattr__(self, name):
        value = getattr(self._target, name)
        if self._methods is not None:
            switched = name in self._methods
        else:
            switched = not name.startswith("_") and name != "close"
        if not switched or not callable(value):
            return value
        switch, label = self._switch, self._label

        def call(*args, **kwargs):
            switch.consult(f"{label}.{name}")
            return value(*args, **kwargs)

        return call

    def __setattr__(self, name, value):
        setattr(self._target, name, value)


# mem0's history database (mem0/memory/storage.py, SQLiteManager): the methods Memory calls.
HISTORY_METHODS = frozenset(
    {"add_history", "batch_add_history", "get_history", "save_messages", "get_last_messages", "reset"}
)


# --- backends -------------------------------------------------------------------------------------
def _unused_openai(**extra):
    return {"api_key": "unused", "openai_base_url": UNUSED_BASE_URL, **extra}


class Backend:
    def __init__(self, handle: str, faults: bool) -> None:
        self.handle = handle
        self.ids = itertools.count(1)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{handle}-", dir=_SCRATCH))
        config = {
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "mem0",
                    "embedding_model_dims": DIMENSIONS,
                    "path": str(self.dir / "qdrant"),
                },
            },
            "llm": {"provider": "openai", "config": _unused_openai()},
            "embedder": {"provider": "openai", "config": _unused_openai(embedding_dims=DIMENSIONS)},
            "history_db_path": str(self.dir / "history.db"),
        }
        try:
            self.memory = Memory.from_config(config)
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.memory.embedding_model = HashingEmbedding()
        self.qdrant = self.memory.vector_store.client
        self.switch = None
        if faults:
            self.switch = FaultSwitch()
            self.memory.vector_store.client = SwitchedStore(self.qdrant, self.switch, "qdrant")
            self.memory.db = SwitchedStore(self.memory.db, self.switch, "history", HISTORY_METHODS)

    def close(self) -> None:
        try:
            self.memory.close()
        except Exception as exc:
            log.warning("%s: Memory.close failed: %s", self.handle, exc)
        try:
            self.qdrant.close()
        except Exception as exc:
            log.warning("%s: Qdrant client close failed: %s", self.handle, exc)
        shutil.rmtree(self.dir, ignore_errors=True)


class RequestInvalid(Exception):
    """A request the harness cannot carry out (KB_HARNESS_REQUEST_INVALID)."""


class Missing(Exception):
    """Memory.get answered None: no memory with that id (KB_NOT_FOUND)."""


# --- scope ----------------------------------------------------------------------------------------
def scope_items(scope):
    """The scope's keys and values, as given; a scope that is not an object has none."""
    return dict(scope) if isinstance(scope, dict) else {}


#: The kit's where grammar (schemas/client-where.md) in mem0's filter language (the operators
#: Memory.search documents, mem0/memory/main.py:1416-1430): the same conditions, spelt mem0's way.
_OPERATORS = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$in": "in",
    "$nin": "nin",
}
_LOGICAL = {"$and": "AND", "$or": "OR"}


def mem0_where(where):
    """A where clause of the kit's grammar, spelt in mem0's filter language: ``$and``/``$or``
    become ``AND``/``OR`` and each ``$`` comparison its mem0 name. Anything else (an operator
    the grammar lacks, a malformed clause) passes unchanged, for mem0 to take or refuse: the
    harness translates, it does not check."""
    if isinstance(where, list):
        return [mem0_where(part) for part in where]
    if not isinstance(where, dict):
        return where
    spelt = {}
    for key, value in where.items():
        if key in _LOGICAL:
            spelt[_LOGICAL[key]] = mem0_where(value)
        elif isinstance(value, dict):
            spelt[key] = {_OPERATORS.get(op, op): operand for op, operand in value.items()}
        else:
            spelt[key] = value
    return spelt


def scope_filters(scope, where=None):
    """mem0's filters for a read: the caller's where clause (in mem0's spelling) with the scope's
    keys written over it.

    This is mem0's own rule for combining entity ids with caller filters
    (_build_filters_and_metadata, mem0/memory/main.py:366-388: the filters are copied, then each
    entity id is set on them). Every scope key goes in as given, an undeclared one included: in
    search and get_all, filters are the only place mem0 takes a scope.
    """
    filters = dict(mem0_where(where)) if isinstance(where, dict) else {}
    filters.update(scope_items(scope))
    return filters


def hit(item) -> dict:
    return {"id": item["id"], "text": item["memory"]}


# --- error mapping --------------------------------------------------------------------------------
_MEM0_DIR = Path(mem0.__file__).resolve().parent
_ENTITY_ID_REFUSAL = re.compile(r"Invalid (user_id|agent_id|run_id): cannot (be empty|contain whitespace)")
_NOT_FOUND = re.compile(r"Memory with id .* not found", re.DOTALL)


def _chain(exc):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _innermost_code(exc):
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return None if last is None else last.tb_frame.f_code


def _raised_by_mem0(exc) -> bool:
    """Whether the innermost frame of the exception is mem0's own code."""
    code = _innermost_code(exc)
    return code is not None and Path(code.co_filename).resolve().is_relative_to(_MEM0_DIR)


def _binding_error(exc) -> bool:
    """A TypeError Python raised binding the arguments of the mem0 call (an unknown keyword).

    Python raises it in the calling frame, _call's, before any frame of mem0 starts.
    """
    return _innermost_code(exc) is _call.__code__


def error_for(exc: BaseException) -> tuple[str, str]:
    message = f"{type(exc).__name__}: {exc}"
    fault = next((e for e in _chain(exc) if isinstance(e, StoreFault)), None)
    if fault is not None:
        return "KB_BACKEND_UNAVAILABLE", message if fault is exc else f"{message} ({fault})"
    text = str(exc)
    if isinstance(exc, Mem0ValidationError):
        if getattr(exc, "error_code", None) == "VALIDATION_001":
            return "KB_UNAUTHENTICATED", message
        return "KB_MEMORY_INVALID", message
    if isinstance(exc, ValueError) and _raised_by_mem0(exc):
        if text.startswith(
            (
                "filters must contain at least one of: user_id, agent_id, run_id",
                "At least one filter is required to delete all memories",
            )
        ) or _ENTITY_ID_REFUSAL.match(text):
            return "KB_UNAUTHENTICATED", message
        if _NOT_FOUND.match(text):
            return "KB_NOT_FOUND", message
        return "KB_MEMORY_INVALID", message
    if isinstance(exc, TypeError) and _binding_error(exc):
        # Only a scope's keys reach mem0 as keyword names the wire chose (add, delete_all): a key
        # mem0 has no argument for names no scope it knows.
        return "KB_UNAUTHENTICATED", message
    return "KB_HARNESS_INTERNAL", message


def _call(function, *args, scope=None, **kwargs):
    """Every mem0 call goes through here, so that a TypeError of argument binding is told apart.

    `scope` holds the scope's keys and values, passed as keyword arguments of their own names.
    """
    return function(*args, **(scope or {}), **kwargs)


# --- the harness ----------------------------------------------------------------------------------
def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_plan(plan) -> bool:
    return (
        isinstance(plan, dict)
        and _is_int(plan.get("pass"))
        and plan["pass"] >= 0
        and "fail" in plan
        and (plan["fail"] is None or (_is_int(plan["fail"]) and plan["fail"] >= 1))
        and (plan.get("hang") is None or (_is_number(plan["hang"]) and 0 <= plan["hang"] <= 60))
    )


class Harness:
    def __init__(self) -> None:
        self.backends: dict[str, Backend] = {}
        self.opened = 0
        self.done = False

    def backend(self, params) -> Backend:
        handle = params["backend"]
        if not isinstance(handle, str) or handle not in self.backends:
            raise RequestInvalid(
                f"unknown backend handle {handle!r}: open did not return it, or close released it"
            )
        IDS.counter = self.backends[handle].ids
        return self.backends[handle]

    # protocol
    def op_hello(self, params):
        if params["protocol"] != PROTOCOL:
            raise RequestInvalid(f"this harness speaks {PROTOCOL}, not {params['protocol']!r}")
        return {"protocol": PROTOCOL, "manifest": MANIFEST}

    def op_open(self, params):
        faults = params["faults"]
        if not isinstance(faults, bool):
            raise RequestInvalid("open: faults must be true or false")
        self.opened += 1
        handle = f"b{self.opened}"
        self.backends[handle] = Backend(handle, faults)
        return {"backend": handle}

    def op_close(self, params):
        backend = self.backend(params)
        del self.backends[backend.handle]
        backend.close()
        return {}

    def op_fault(self, params):
        backend = self.backend(params)
        if backend.switch is None:
            raise RequestInvalid(f"fault: backend {backend.handle} was opened without faults")
        plan = params["plan"]
        if plan is not None and not _is_plan(plan):
            raise RequestInvalid(f"fault: not a fault plan: {plan!r}")
        # The plan's "stores" is ignored: a memory-scope backend names no store.
        return {"consulted": backend.switch.set(plan)}

    def op_shutdown(self, params):
        self.done = True
        return {}

    # memory-scope
    def op_addMemory(self, params):
        memory = self.backend(params).memory
        result = _call(
            memory.add,
            params["text"],
            scope=scope_items(params["scope"]),
            metadata=params["metadata"],
            infer=False,
        )
        stored = result.get("results") if isinstance(result, dict) else None
        if not isinstance(stored, list) or len(stored) != 1:
            raise RuntimeError(f"Memory.add did not report exactly one stored memory: {result!r}")
        return {"id": stored[0]["id"]}

    def op_searchMemories(self, params):
        memory = self.backend(params).memory
        result = _call(
            memory.search,
            params["text"],
            top_k=params["limit"],
            filters=scope_filters(params["scope"], params["where"]),
        )
        return {"hits": [hit(item) for item in result["results"]]}

    def op_listMemories(self, params):
        memory = self.backend(params).memory
        result = _call(memory.get_all, filters=scope_filters(params["scope"]), top_k=LIST_LIMIT)
        return {"hits": [hit(item) for item in result["results"]]}

    def op_getMemory(self, params):
        memory = self.backend(params).memory
        item = _call(memory.get, params["id"])
        if item is None:  # mem0/memory/main.py:1233-1236: get answers None for a missing memory
            raise Missing(f"Memory.get returned None: no memory with id {params['id']!r}")
        return {"hit": hit(item)}

    def op_updateMemory(self, params):
        memory = self.backend(params).memory
        _call(memory.update, params["id"], text=params["text"])
        return {}

    def op_deleteMemory(self, params):
        memory = self.backend(params).memory
        _call(memory.delete, params["id"])
        return {}

    def op_deleteMemories(self, params):
        memory = self.backend(params).memory
        _call(memory.delete_all, scope=scope_items(params["scope"]))
        return {}

    def shutdown(self) -> None:
        for handle in list(self.backends):
            self.backends.pop(handle).close()
        shutil.rmtree(_SCRATCH, ignore_errors=True)


def _request_id(message):
    if isinstance(message, dict):
        rid = message.get("id")
        if _is_int(rid) and rid >= 0:
            return rid
        if isinstance(rid, float) and rid.is_integer() and rid >= 0:
            return int(rid)
    return None


def _error(rid, code: str, message: str) -> dict:
    return {"id": rid, "error": {"code": code, "message": message}}


def handle_line(harness: Harness, line: str) -> dict:
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, "KB_HARNESS_REQUEST_INVALID", f"not JSON: {exc}")
    rid = _request_id(message)
    if rid is None or not isinstance(message.get("op"), str):
        return _error(
            rid, "KB_HARNESS_REQUEST_INVALID", "not a request: needs an integer id >= 0, an op and params"
        )
    op, params = message["op"], message.get("params")
    if not isinstance(params, dict):
        return _error(rid, "KB_HARNESS_REQUEST_INVALID", f"{op}: params must be an object")
    for profile, ops in OTHER_PROFILE_OPS.items():
        if op in ops:
            return _error(
                rid,
                "KB_HARNESS_REQUEST_INVALID",
                f"{op} is not an operation of the memory-scope profile "
                f"(the manifest's isolationProfile; it is {profile}'s)",
            )
    if op not in PARAMS:
        return _error(rid, "KB_HARNESS_REQUEST_INVALID", f"unknown operation {op!r}")
    missing = [name for name in PARAMS[op] if name not in params]
    if missing:
        return _error(rid, "KB_HARNESS_REQUEST_INVALID", f"{op}: params lack {', '.join(missing)}")
    started = time.monotonic()
    code = "ok"
    try:
        return {"id": rid, "result": getattr(harness, f"op_{op}")(params)}
    except RequestInvalid as exc:
        code = "KB_HARNESS_REQUEST_INVALID"
        return _error(rid, code, str(exc))
    except Missing as exc:
        code = "KB_NOT_FOUND"
        return _error(rid, code, str(exc))
    except Exception as exc:
        code, text = error_for(exc)
        if code == "KB_HARNESS_INTERNAL":
            log.error("%s failed:\n%s", op, "".join(traceback.format_exception(exc)))
        return _error(rid, code, text)
    finally:
        log.info("%s %s %.0f ms", op, code, (time.monotonic() - started) * 1000)


def _send(response: dict) -> None:
    try:
        line = json.dumps(response, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        line = json.dumps(_error(response.get("id"), "KB_HARNESS_INTERNAL", f"response not JSON: {exc}"))
    _RESPONSES.write(line + "\n")
    _RESPONSES.flush()


def _terminate(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through main's finally: backends closed, scratch removed


def main() -> int:
    signal.signal(signal.SIGTERM, _terminate)
    harness = Harness()
    try:
        for raw in sys.stdin.buffer:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                _send(_error(None, "KB_HARNESS_REQUEST_INVALID", f"not UTF-8: {exc}"))
                continue
            if not line.strip():
                continue
            _send(handle_line(harness, line))
            if harness.done:
                break
    finally:
        harness.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
