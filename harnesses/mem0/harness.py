"""kbconform harness-v1 (stdio) for mem0, the open-source memory layer (PyPI package mem0ai).

Profile: memory-scope. Each backend is one `mem0.Memory` over its own local Qdrant store and its
own SQLite history database, in a scratch folder of its own. Each operation is one call of
mem0's public API; each exception mem0 raises is mapped to an error code (README.md, "Errors").
The harness adds no check, filter or validation of its own.

Standard library and mem0 (with what it installs) only; the protocol (framing, ids, handles, errors
as data) is the kit's harness runtime, kbharness. stdout carries the responses and nothing else:
file descriptor 1 is moved aside before mem0 loads, and everything else that would have gone to
stdout goes to stderr, the harness log.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "kbconform" / "_harness_runtime")]

import kbharness  # noqa: E402

# --- stdout: responses only (C-level writes to fd 1 land in the log) -----------------------------
kbharness.claim_stdout()

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
from hashing_embedding import DIMENSIONS, embed  # noqa: E402
from mem0 import Memory  # noqa: E402
from mem0.configs.embeddings.base import BaseEmbedderConfig  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
from mem0.exceptions import ValidationError as Mem0ValidationError  # noqa: E402

ADAPTER_VERSION = "0.1.0"
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
        "update-metadata": True,
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
class HashingEmbedding(EmbeddingBase):
    """kbconform's reference hashing embedding (harnesses/hashing_embedding.py), as a mem0 embedder:
    deterministic, offline, no model."""

    def __init__(self) -> None:
        super().__init__(BaseEmbedderConfig(model=f"hashing-{DIMENSIONS}", embedding_dims=DIMENSIONS))

    def embed(self, text, memory_action=None):
        return embed(str(text))


# --- the fault switch: kbharness.FaultSwitch, consulted by kbharness.SwitchedStore -----------------
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
            self.switch = kbharness.FaultSwitch()
            self.memory.vector_store.client = kbharness.SwitchedStore(self.qdrant, self.switch, "qdrant")
            self.memory.db = kbharness.SwitchedStore(self.memory.db, self.switch, "history", HISTORY_METHODS)

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
    fault = next((e for e in _chain(exc) if isinstance(e, kbharness.StoreFault)), None)
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
def _memory(backend: Backend):
    """The backend's Memory, its ids counting from the backend's own counter."""
    IDS.counter = backend.ids
    return backend.memory


class Mem0Harness:
    """memory-scope's operations, each one call of mem0's public API."""

    manifest = MANIFEST

    def open(self, params, handle: str) -> Backend:
        faults = params["faults"]
        if not isinstance(faults, bool):
            raise kbharness.invalid("open: faults must be true or false")
        return Backend(handle, faults)

    def close(self, backend: Backend) -> None:
        backend.close()

    def fault(self, backend: Backend, plan) -> int:
        if backend.switch is None:
            raise kbharness.invalid(f"fault: backend {backend.handle} was opened without faults")
        # The plan's "stores" is ignored: a memory-scope backend names no store.
        return backend.switch.set(plan)  # refused (KB_HARNESS_REQUEST_INVALID) unless a fault plan

    def shutdown(self, backends: list[Backend]) -> None:
        for backend in backends:
            backend.close()
        shutil.rmtree(_SCRATCH, ignore_errors=True)

    def error_for(self, exc: Exception) -> tuple[str, str]:
        return error_for(exc)

    def addMemory(self, backend: Backend, params):
        result = _call(
            _memory(backend).add,
            params["text"],
            scope=scope_items(params["scope"]),
            metadata=params["metadata"],
            infer=False,
        )
        stored = result.get("results") if isinstance(result, dict) else None
        if not isinstance(stored, list) or len(stored) != 1:
            raise RuntimeError(f"Memory.add did not report exactly one stored memory: {result!r}")
        return {"id": stored[0]["id"]}

    def searchMemories(self, backend: Backend, params):
        result = _call(
            _memory(backend).search,
            params["text"],
            top_k=params["limit"],
            filters=scope_filters(params["scope"], params["where"]),
        )
        return {"hits": [hit(item) for item in result["results"]]}

    def listMemories(self, backend: Backend, params):
        result = _call(_memory(backend).get_all, filters=scope_filters(params["scope"]), top_k=LIST_LIMIT)
        return {"hits": [hit(item) for item in result["results"]]}

    def getMemory(self, backend: Backend, params):
        item = _call(_memory(backend).get, params["id"])
        if item is None:  # mem0/memory/main.py:1233-1236: get answers None for a missing memory
            raise kbharness.HarnessError(
                "KB_NOT_FOUND", f"Memory.get returned None: no memory with id {params['id']!r}"
            )
        return {"hit": hit(item)}

    def updateMemory(self, backend: Backend, params):
        # metadata only when the kit sent it (feature update-metadata), as mem0's update takes it
        given = {"metadata": params["metadata"]} if "metadata" in params else {}
        _call(_memory(backend).update, params["id"], text=params["text"], **given)
        return {}

    def deleteMemory(self, backend: Backend, params):
        _call(_memory(backend).delete, params["id"])
        return {}

    def deleteMemories(self, backend: Backend, params):
        _call(_memory(backend).delete_all, scope=scope_items(params["scope"]))
        return {}


if __name__ == "__main__":
    sys.exit(kbharness.serve(Mem0Harness(), name="mem0-harness"))
