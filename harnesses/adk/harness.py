"""kbconform harness-v1 (stdio), profile memory-scope, for Google ADK's local memory service.

Each backend is a fresh ``google.adk.memory.InMemoryMemoryService`` beside a fresh
``google.adk.sessions.InMemorySessionService``, under one application name. A memory is one
conversation: a session of the scope's user holding one user event whose text is the memory,
added to the memory service with ``add_session_to_memory``. Each operation is one or a few calls
of ADK's public API, run on the harness's own asyncio event loop; each ADK exception is mapped to
an error code (README.md, "Errors"). The harness adds no check of its own: what ADK answers is
what the kit judges.

Standard library and ADK (with what it installs) only. stdout carries responses only; the log
goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import traceback
import uuid
from importlib import metadata as _metadata
from typing import Any

# Responses go to the real stdout; anything else that prints (a library included) goes to stderr.
_OUT = sys.stdout
sys.stdout = sys.stderr

logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="adk-harness: %(name)s: %(message)s")

from google.adk.events import Event  # noqa: E402
from google.adk.memory import InMemoryMemoryService  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402
from pydantic import ValidationError  # noqa: E402

PROTOCOL = "harness-v1"
PROFILE = "memory-scope"
SCOPE_KEY = "user_id"
#: Every backend is one ADK application: an application passes its own fixed app_name to the
#: session and memory services, and its users are the tenants.
APP_NAME = "kbconform-app"
#: ADK's in-memory search returns at most ten memories (in_memory_memory_service.py:36, :198).
ADK_SEARCH_CAP = 10


def _version(dist: str) -> str:
    try:
        return _metadata.version(dist)
    except _metadata.PackageNotFoundError:
        return "unknown"


MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "isolationProfile": PROFILE,
    "adapter": {"name": "kbconform adk harness", "version": "0.1.0"},
    "backend": {"name": "google-adk InMemoryMemoryService", "version": _version("google-adk")},
    # ADK keys memory by (app_name, user_id) (in_memory_memory_service.py:39-40, :100, :147) and
    # search_memory takes exactly those two (base_memory_service.py:124-130): with one fixed
    # app_name per application, the user is the scope. A session is where a memory came from,
    # not a scope a read can name.
    "scopeKeys": [SCOPE_KEY],
    "scopeMatch": "keys",
    # delete_memory(app_name, user_id, memory_id) looks the id up among that user's memories only
    # (in_memory_memory_service.py:211-217).
    "byIdScope": "checked",
    # Keyword matching: only memories sharing a word with the query, at most ten
    # (in_memory_memory_service.py:174-198).
    "searchReturns": "relevant",
    "readFacades": ["search"],
    "features": {
        "fault-injection": (
            "InMemoryMemoryService keeps its events in process dictionaries "
            "(google/adk/memory/in_memory_memory_service.py:89): it makes no call to a separate "
            "store that could fail."
        ),
        "get": (
            "ADK's memory service has no read of one memory by id: BaseMemoryService offers "
            "add_session_to_memory, add_events_to_memory, add_memory, search_memory and "
            "delete_memory only (google/adk/memory/base_memory_service.py:51-165)."
        ),
        "update": (
            "ADK's memory service has no update: re-adding a session replaces that session's "
            "events (google/adk/memory/in_memory_memory_service.py:105), it does not change a "
            "memory by id."
        ),
        "delete": True,
        "delete-all": (
            "ADK's memory service deletes one memory at a time only (delete_memory, "
            "google/adk/memory/base_memory_service.py:142); a delete-all would be a "
            "search-and-delete loop of the harness's own."
        ),
        "filter": (
            "search_memory takes an app name, a user id and a query only "
            "(google/adk/memory/base_memory_service.py:124-130): no metadata filter."
        ),
    },
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


def to_user_id(scope: Any) -> Any:
    """The user id an application holding this scope hands to ADK: the value of ``user_id`` as it
    is (``""``, a number, a list, None included: ADK's to refuse), and None when the scope is not
    an object or does not name ``user_id``. Keys not declared are not read."""
    if not isinstance(scope, dict):
        return None
    return scope.get(SCOPE_KEY)


class WireError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> WireError:
    return WireError("KB_HARNESS_REQUEST_INVALID", message)


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _unauthenticated(exc: BaseException) -> WireError:
    return WireError("KB_UNAUTHENTICATED", f"KB_UNAUTHENTICATED: ADK refused the user id: {_describe(exc)}")


def _memory_invalid(exc: BaseException) -> WireError:
    return WireError("KB_MEMORY_INVALID", f"KB_MEMORY_INVALID: {_describe(exc)}")


def _unhashable(exc: BaseException) -> bool:
    # A value that cannot key ADK's dictionaries of users (in_memory_memory_service.py:156, :211;
    # in_memory_session_service.py:131): the only TypeError these calls raise on a user id.
    return isinstance(exc, TypeError) and str(exc).startswith("unhashable type")


def _log(message: str) -> None:
    print(f"adk-harness: {message}", file=sys.stderr)


class Backend:
    """One ADK application's services."""

    def __init__(self) -> None:
        self.sessions = InMemorySessionService()
        self.memory = InMemoryMemoryService()
        self.count = 0


class Harness:
    def __init__(self) -> None:
        self.backends: dict[str, Backend] = {}
        self.opened = 0
        self.loop = asyncio.new_event_loop()

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    # -- helpers --
    def _backend(self, params: dict[str, Any]) -> Backend:
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
    def _new_ids(backend: Backend) -> tuple[str, str]:
        """The n-th memory of a backend: session id and event id, version-4 UUIDs whose low bits
        count the backend's adds (0x6164 "ad" marks sessions, 0x6576 "ev" events), so that one
        run's ids are the next run's and a recorded transcript replays as recorded."""
        backend.count += 1
        session_id = str(uuid.UUID(int=(0x6164 << 112) | backend.count, version=4))
        event_id = str(uuid.UUID(int=(0x6576 << 112) | backend.count, version=4))
        return session_id, event_id

    @staticmethod
    def _text(content: Any) -> str:
        # The event text as ADK's own search reads it (in_memory_memory_service.py:166-168).
        return " ".join(part.text for part in (content.parts or []) if part.text)

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
        self.backends[handle] = Backend()
        return {"backend": handle}

    def close(self, params: dict[str, Any]) -> dict[str, Any]:
        self._backend(params)
        del self.backends[params["backend"]]
        return {}

    def fault(self, params: dict[str, Any]) -> dict[str, Any]:
        self._backend(params)
        raise _invalid("the backend was opened without faults: fault-injection is not offered")

    def addMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        # One conversation of the user: create its session, append the user's event, add the
        # session to memory (what an application's runner and after-turn callback do).
        self._need(params, "scope", "text", "metadata")
        backend = self._backend(params)
        user_id = to_user_id(params["scope"])
        session_id, event_id = self._new_ids(backend)
        try:
            session = self.run(
                backend.sessions.create_session(app_name=APP_NAME, user_id=user_id, session_id=session_id)
            )
        except (ValidationError, TypeError) as exc:
            raise _unauthenticated(exc) from exc
        try:
            event = Event(
                id=event_id,
                invocation_id=session_id,
                author="user",
                content=types.Content(role="user", parts=[types.Part(text=params["text"])]),
                custom_metadata=params["metadata"],
            )
        except ValidationError as exc:
            raise _memory_invalid(exc) from exc
        self.run(backend.sessions.append_event(session, event))
        self.run(backend.memory.add_session_to_memory(session))
        return {"id": event.id}

    def searchMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "text", "limit", "where")
        backend = self._backend(params)
        if params["where"] is not None:
            raise WireError(
                "KB_NOT_IMPLEMENTED",
                "searchMemories: ADK's search_memory takes no filter (feature filter is not offered)",
            )
        try:
            response = self.run(
                backend.memory.search_memory(
                    app_name=APP_NAME, user_id=to_user_id(params["scope"]), query=params["text"]
                )
            )
        except TypeError as exc:
            if _unhashable(exc):
                raise _unauthenticated(exc) from exc
            raise _memory_invalid(exc) from exc  # a query that is not a string (:51, :159)
        memories = response.memories[: params["limit"]]
        return {"hits": [{"id": m.id, "text": self._text(m.content)} for m in memories]}

    def deleteMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        self._need(params, "scope", "id")
        backend = self._backend(params)
        try:
            self.run(
                backend.memory.delete_memory(
                    app_name=APP_NAME, user_id=to_user_id(params["scope"]), memory_id=params["id"]
                )
            )
        except TypeError as exc:
            if _unhashable(exc):
                raise _unauthenticated(exc) from exc
            raise
        return {}

    def _not_offered(self, params: dict[str, Any], op: str, feature: str) -> dict[str, Any]:
        self._backend(params)
        raise WireError(
            "KB_NOT_IMPLEMENTED",
            f"{op}: ADK's memory service has no such operation (feature {feature} is not offered)",
        )

    def listMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._not_offered(params, "listMemories", "list (read facade)")

    def getMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._not_offered(params, "getMemory", "get")

    def updateMemory(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._not_offered(params, "updateMemory", "update")

    def deleteMemories(self, params: dict[str, Any]) -> dict[str, Any]:
        return self._not_offered(params, "deleteMemories", "delete-all")

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
            except Exception as exc:  # any other failure, ADK's or the harness's
                traceback.print_exc(file=sys.stderr)
                raise WireError("KB_HARNESS_INTERNAL", _describe(exc)) from exc
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
    try:
        for raw_line in sys.stdin.buffer:
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
                _write({"id": rid, "error": {"code": "KB_HARNESS_INTERNAL", "message": _describe(exc)}})
            sys.stderr.flush()
    finally:
        harness.loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
