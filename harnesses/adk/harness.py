"""kbconform harness-v1 (stdio), profile memory-scope, for Google ADK's local memory service.

Each backend is a fresh ``google.adk.memory.InMemoryMemoryService`` beside a fresh
``google.adk.sessions.InMemorySessionService``, under one application name. A memory is one
conversation: a session of the scope's user holding one user event whose text is the memory,
added to the memory service with ``add_session_to_memory``. Each operation is one or a few calls
of ADK's public API, run on the harness's own asyncio event loop; each ADK exception is mapped to
an error code (README.md, "Errors"). The harness adds no check of its own, drops no key and
fills no default: what ADK answers is what the kit judges. README.md lists its departures, and
tests/harness/test_departures.py holds it to them.

Standard library and ADK (with what it installs) only; the protocol (framing, ids, handles, errors
as data) is the kit's harness runtime, kbharness. stdout carries responses only; the log goes to
stderr.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "kbconform" / "_harness_runtime"))

import kbharness  # noqa: E402

kbharness.claim_stdout()  # before ADK loads: anything else that prints goes to stderr

logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="adk-harness: %(name)s: %(message)s")

from google.adk.events import Event  # noqa: E402
from google.adk.memory import InMemoryMemoryService  # noqa: E402
from google.adk.sessions import InMemorySessionService  # noqa: E402
from google.genai import types  # noqa: E402
from pydantic import ValidationError  # noqa: E402

PROFILE = "memory-scope"
SCOPE_KEY = "user_id"
#: Every backend is one ADK application: an application passes its own fixed app_name to the
#: session and memory services, and its users are the tenants.
APP_NAME = "kbconform-app"
#: ADK's in-memory search returns at most ten memories (in_memory_memory_service.py:36, :198).
ADK_SEARCH_CAP = 10


MANIFEST: dict[str, Any] = {
    "manifestVersion": "1",
    "isolationProfile": PROFILE,
    "adapter": {"name": "kbconform adk harness", "version": "0.1.0"},
    "backend": {
        "name": "google-adk InMemoryMemoryService",
        "version": kbharness.installed_version("google-adk"),
    },
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
    # The memory service takes no caller: the application passes the user_id it holds
    # (base_memory_service.py:124-130), so what a call naming no user means is the
    # application's choice (schemas/declared-design.md).
    "callerIdentity": "application",
    # A session event with empty text is added to memory and given an id: a strictness note.
    "recordSchema": "looser",
    "readFacades": ["search"],
    # "This class is thread-safe" (InMemoryMemoryService's docstring, in_memory_memory_service.py:
    # 82-83; its lock, :87): callers at once, as ADK's own server serves them on one loop.
    "concurrency": "threads",
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


def scope_arguments(scope: Any) -> dict[str, Any]:
    """The scope's keys and values as ADK's keyword arguments of their own names, every key as it
    is (``user_id`` with any value; a key ADK has no argument for is passed too, for ADK to
    refuse), as an application passing its scope object's fields does. A scope that is not an
    object has no keys: the call names none (README.md, departure 6)."""
    return dict(scope) if isinstance(scope, dict) else {}


def _call(function: Any, *args: Any, scope: Any, **kwargs: Any) -> Any:
    """Every ADK call taking a scope goes through here, so that a TypeError of argument binding
    (a user_id missing, a scope key ADK has no argument for) is told apart: Python raises it in
    this frame, before any frame of ADK starts."""
    return function(*args, **scope_arguments(scope), **kwargs)


def _binding_error(exc: BaseException) -> bool:
    tb, last = exc.__traceback__, None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return isinstance(exc, TypeError) and last is not None and last.tb_frame.f_code is _call.__code__


def _describe(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def _unauthenticated(exc: BaseException) -> kbharness.HarnessError:
    message = f"KB_UNAUTHENTICATED: ADK refused the user id: {_describe(exc)}"
    return kbharness.HarnessError("KB_UNAUTHENTICATED", message)


def _memory_invalid(exc: BaseException) -> kbharness.HarnessError:
    return kbharness.HarnessError("KB_MEMORY_INVALID", f"KB_MEMORY_INVALID: {_describe(exc)}")


def _refused_scope(exc: BaseException) -> bool:
    # A value that cannot key ADK's dictionaries of users (in_memory_memory_service.py:156, :211;
    # in_memory_session_service.py:131), or a call ADK's signature refuses for its scope (no
    # user_id, or a key it has no argument for): the TypeErrors these calls raise on a scope.
    return _binding_error(exc) or (isinstance(exc, TypeError) and str(exc).startswith("unhashable type"))


def _not_offered(op: str, feature: str) -> kbharness.HarnessError:
    return kbharness.not_implemented(
        f"{op}: ADK's memory service has no such operation (feature {feature} is not offered)"
    )


def _text(content: Any) -> str:
    # The event text as ADK's own search reads it (in_memory_memory_service.py:166-168).
    return " ".join(part.text for part in (content.parts or []) if part.text)


class Backend:
    """One ADK application's services."""

    def __init__(self) -> None:
        self.sessions = InMemorySessionService()
        self.memory = InMemoryMemoryService()
        self.counted = itertools.count(1)

    def new_ids(self) -> tuple[str, str]:
        """The n-th memory of a backend: session id and event id, version-4 UUIDs whose low bits
        count the backend's adds (0x6164 "ad" marks sessions, 0x6576 "ev" events), so that one
        run's ids are the next run's and a recorded transcript replays as recorded."""
        count = next(self.counted)  # one step, so requests at once never share a count
        session_id = str(uuid.UUID(int=(0x6164 << 112) | count, version=4))
        event_id = str(uuid.UUID(int=(0x6576 << 112) | count, version=4))
        return session_id, event_id


class AdkHarness:
    """memory-scope's operations, each one or a few calls of ADK's public API, run on the
    harness's own asyncio event loop, one loop on a thread of its own for every request, as
    ADK's own server (``get_fast_api_app``) runs every request's coroutines on its one loop:
    requests at once interleave where ADK awaits."""

    manifest = MANIFEST

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="adk-loop", daemon=True)
        self.thread.start()

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def open(self, params: dict[str, Any], handle: str) -> Backend:
        if params["faults"] is True:
            raise kbharness.invalid("fault-injection is not offered by this harness (see the manifest)")
        return Backend()

    def close(self, backend: Backend) -> None:
        pass

    def shutdown(self, backends: list[Backend]) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

    def error_for(self, exc: Exception) -> tuple[str, str]:
        return "KB_HARNESS_INTERNAL", _describe(exc)

    def addMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        # One conversation of the user: create its session, append the user's event, add the
        # session to memory (what an application's runner and after-turn callback do).
        session_id, event_id = backend.new_ids()
        try:
            session = self.run(
                _call(
                    backend.sessions.create_session,
                    scope=params["scope"],
                    app_name=APP_NAME,
                    session_id=session_id,
                )
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

    def searchMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        if params["where"] is not None:
            raise kbharness.not_implemented(
                "searchMemories: ADK's search_memory takes no filter (feature filter is not offered)"
            )
        try:
            response = self.run(
                _call(
                    backend.memory.search_memory,
                    scope=params["scope"],
                    app_name=APP_NAME,
                    query=params["text"],
                )
            )
        except TypeError as exc:
            if _refused_scope(exc):
                raise _unauthenticated(exc) from exc
            raise _memory_invalid(exc) from exc  # a query that is not a string (:51, :159)
        memories = response.memories[: params["limit"]]
        return {"hits": [{"id": m.id, "text": _text(m.content)} for m in memories]}

    def deleteMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        try:
            self.run(
                _call(
                    backend.memory.delete_memory,
                    scope=params["scope"],
                    app_name=APP_NAME,
                    memory_id=params["id"],
                )
            )
        except TypeError as exc:
            if _refused_scope(exc):
                raise _unauthenticated(exc) from exc
            raise
        return {}

    def listMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        raise _not_offered("listMemories", "list (read facade)")

    def getMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        raise _not_offered("getMemory", "get")

    def updateMemory(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        raise _not_offered("updateMemory", "update")

    def deleteMemories(self, backend: Backend, params: dict[str, Any]) -> dict[str, Any]:
        raise _not_offered("deleteMemories", "delete-all")


if __name__ == "__main__":
    sys.exit(kbharness.serve(AdkHarness(), name="adk-harness"))
