"""Serving a Python adapter over harness-v1 (``kbconform serve MODULE:FACTORY``), on stdio or
on HTTP at 127.0.0.1.

This is how ``kbconform run`` keeps judged code out of the judging process: the adapter is
imported here, in a child process, and only harness-v1 messages cross back.
"""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

from kbconform._capabilities import concurrency_declined
from kbconform.adapter import (
    Adapter,
    BackendOptions,
    FaultPlan,
    FaultSwitch,
    Manifest,
    RevisionMap,
    check_backend,
)
from kbconform.errors import ContractViolation, Problem
from kbconform.harness._table import Served, WireTable
from kbconform.harness._wire import (
    OPERATIONS,
    PROTOCOL,
    REQUEST_INVALID,
    dumps,
    error_to_wire,
    serves,
)
from kbconform.profiles import profile


def _request_id(message: object) -> int | None:
    """The id to echo: the message's, when it has one (None for an unreadable request). JSON has
    one kind of number: ``7.0`` is the integer 7 (as the schema reads it), echoed as ``7``."""
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, float) and found.is_integer():
        found = int(found)
    return found if isinstance(found, int) and not isinstance(found, bool) and found >= 0 else None


def _invalid(request_id: int | None, message: str) -> dict[str, Any]:
    return {"id": request_id, "error": {"code": REQUEST_INVALID, "message": message}}


class _Unusable(Exception):
    """A valid request the harness cannot carry out: an operation of another isolation profile
    than the manifest's, a backend handle that open did not return (or that close released), or
    faults asked of a backend opened without them."""


class Dispatcher:
    """Answers harness-v1 requests by calling one adapter and the backends it opens: the
    operations of the manifest's isolation profile (a tenant-namespace
    :class:`~kbconform.adapter.Backend`, a :class:`~kbconform.adapter.ProjectPoolBackend` or a
    :class:`~kbconform.adapter.KbGrantBackend`).

    Requests may come at once (HTTP): opening, closing, faults and shutdown take turns, and a
    backend's operations run together only when the manifest declares ``concurrency:
    "threads"`` (``schemas/concurrency.md``); otherwise every request waits its turn.
    """

    def __init__(self, adapter: Adapter, manifest: Manifest) -> None:
        self.adapter, self.manifest = adapter, manifest
        self.backends: dict[str, Served] = {}
        declared = profile(manifest.profile)
        self.table: WireTable = declared.wire
        if set(self.table.handlers) != set(declared.operations):
            raise ContractViolation(
                contract="profile",
                problems=(
                    Problem(
                        "/wire",
                        "operations",
                        f"a handler for each of the profile {declared.name}'s operations "
                        f"{sorted(declared.operations)}, and no other",
                        repr(sorted(self.table.handlers)),
                    ),
                ),
                code="KB_ADAPTER_INVALID",
            )
        self.opened = 0
        self.done = False
        self._turns = threading.RLock()
        self.serial = concurrency_declined(manifest.raw) is not None

    def answer(self, message: object) -> dict[str, Any]:
        """The response to one request message (never raises for anything the adapter does)."""
        request_id = _request_id(message)
        found = self.table.request_problems(message)
        if found:
            return _invalid(request_id, "; ".join(found))
        assert isinstance(message, dict)
        op, params = message["op"], message["params"]
        try:
            if self.serial or op in _COMMON:
                with self._turns:
                    return {"id": request_id, "result": self._dispatch(op, params)}
            return {"id": request_id, "result": self._dispatch(op, params)}
        except _Unusable as error:  # the request's fault, not the adapter's
            return _invalid(request_id, str(error))
        except Exception as error:  # every failure of the adapter travels back as an error
            return {"id": request_id, "error": error_to_wire(error)}

    def _entry(self, params: Mapping[str, Any]) -> Served:
        """The backend the request names, its fault switch and its revision map."""
        try:
            return self.backends[params["backend"]]
        except KeyError:  # only the lookup: a KeyError escaping the adapter is its own failure
            raise _Unusable(f"no backend {params['backend']!r}") from None

    def _dispatch(self, op: str, params: Mapping[str, Any]) -> dict[str, Any]:
        name = self.manifest.profile
        if not serves(name, op):
            raise _Unusable(
                f"{op} is not an operation of the {name} profile (the manifest's isolationProfile)"
            )
        if op == "hello":
            return {"protocol": PROTOCOL, "manifest": dict(self.manifest.raw)}
        if op == "open":
            return self._open(params)
        if op == "close":
            backend = self._entry(params).backend
            del self.backends[params["backend"]]
            self.adapter.close(backend)
            return {}
        if op == "shutdown":
            self.done = True
            for backend, _, _ in self.backends.values():
                self.adapter.close(backend)
            self.backends.clear()
            self.adapter.shutdown()
            return {}
        if op == "fault":
            switch = self._entry(params).switch
            if switch is None:
                raise _Unusable(f"backend {params['backend']!r} was opened without faults")
            return {"consulted": switch.set(_plan(params["plan"]))}
        return self.table.handlers[op](self._entry(params), params)

    def _open(self, params: Mapping[str, Any]) -> dict[str, Any]:
        entries = params["revisionMap"]
        resolver = None
        if entries is not None:
            resolver = RevisionMap(
                {(e["repoSlug"], e["baseRevision"], e["headRevision"]): e["deletedPaths"] for e in entries}
            )
        switch = FaultSwitch() if params["faults"] else None
        options = BackendOptions(spoof_mode=params["spoofMode"], resolver=resolver, store_fails=switch)
        backend = self.adapter.open(options)
        check_backend(backend, self.manifest)
        self.opened += 1
        handle = f"b{self.opened}"
        self.backends[handle] = Served(backend, switch, resolver)
        return {"backend": handle}


#: The operations on the harness's own state, which take turns with each other.
_COMMON = frozenset({"hello", "open", "close", "shutdown", "fault"})


def _plan(plan: Mapping[str, Any] | None) -> FaultPlan | None:
    """A fault request's plan as the switch takes it (``stores`` absent: every store)."""
    if plan is None:
        return None
    stores = plan.get("stores")
    return FaultPlan(
        plan["pass"],
        plan["fail"],
        None if stores is None else frozenset(stores),
        float(plan.get("hang", 0.0)),
    )


def _encode(response: dict[str, Any]) -> bytes:
    """The response as a line; a result with no JSON form becomes an internal error."""
    try:
        return dumps(response)
    except (TypeError, ValueError) as error:
        return dumps({"id": response["id"], "error": error_to_wire(error)})


def protocol_stdout() -> IO[bytes]:
    """The real stdout, kept for protocol messages; file descriptor 1 and ``sys.stdout`` then
    point at stderr, so nothing the adapter prints can break the protocol."""
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol


def serve_stdio(dispatcher: Dispatcher, requests: IO[bytes], responses: IO[bytes]) -> None:
    """Answer one request per line of ``requests`` until ``shutdown`` or the end of input."""
    for line in requests:
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as error:  # RecursionError: nested past Python's limit
            message = None
            response = _invalid(None, f"not JSON: {error}")
        else:
            response = dispatcher.answer(message)
        responses.write(_encode(response))
        responses.flush()
        if dispatcher.done:
            return
    if not dispatcher.done:  # stdin closed without a shutdown: release what the adapter holds
        dispatcher.answer({"id": 0, "op": "shutdown", "params": {}})


class _Handler(http.server.BaseHTTPRequestHandler):
    dispatcher: Dispatcher
    #: Set once the response to ``shutdown`` is sent: the server stops then.
    answered: threading.Event
    protocol_version = "HTTP/1.1"
    #: Seconds a kept connection may wait for its next request before the server closes it.
    timeout = 300
    #: An answer's headers and body are two writes: with Nagle's algorithm on a kept connection
    #: the body waits for the client's delayed acknowledgement of the headers (40 ms a request).
    disable_nagle_algorithm = True

    def _op(self) -> str | None:
        """The operation the path names (``/v1/{op}``), or None."""
        op = self.path.removeprefix("/v1/")
        return op if self.path.startswith("/v1/") and op in OPERATIONS else None

    def do_POST(self) -> None:  # the name http.server calls
        op = self._op()
        length = self.headers.get("Content-Length") or "0"
        if not (length.isascii() and length.isdigit()):
            self._send(400, _invalid(None, f"Content-Length must be a number of bytes; got {length!r}"))
            return
        body = self.rfile.read(int(length))
        if op is None:
            self._send(404, _invalid(None, f"no operation at {self.path!r}"))
            return
        try:
            message = json.loads(body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested past Python's limit
            self._send(400, _invalid(None, f"not JSON: {error}"))
            return
        if not isinstance(message, dict) or message.get("op") != op:
            found = f"the message's op must be {op!r}, as in the path"
            self._send(400, _invalid(_request_id(message), found))
            return
        response = self.dispatcher.answer(message)
        invalid = response.get("error", {}).get("code") == REQUEST_INVALID
        self._send(400 if invalid else 200, response)
        if self.dispatcher.done:
            self.answered.set()

    def _not_allowed(self) -> None:
        """Any other method: 405 (``Allow: POST``) on an operation's path, else 404."""
        op = self._op()
        if op is None:
            self._send(404, _invalid(None, f"no operation at {self.path!r}"))
        else:
            self._send(405, _invalid(None, f"{self.command} is not allowed: POST /v1/{op}"), allow="POST")

    # The methods of RFC 9110 (and QUERY); one that is none of them stays 501 Not Implemented.
    do_GET = do_HEAD = do_PUT = do_PATCH = do_DELETE = _not_allowed
    do_OPTIONS = do_TRACE = do_CONNECT = do_QUERY = _not_allowed

    def _send(self, status: int, response: dict[str, Any], allow: str | None = None) -> None:
        body = _encode(response)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if allow is not None:
            self.send_header("Allow", allow)
        # The connection stays open for the client's next request (HTTP/1.1), and the client
        # closes it: a server closing first keeps each connection in TIME_WAIT, where a new
        # one on the same ports waits. The answer to shutdown closes it.
        if self.dispatcher.done:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Requests are not logged; errors are (to stderr, the harness's log)."""

    def log_message(self, format: str, *args: Any) -> None:  # http.server's name
        sys.stderr.write(f"kbconform serve: {format % args}\n")


class _Server(http.server.ThreadingHTTPServer):
    """A thread per connection (daemon threads: a request stuck in the backend never holds the
    process open after shutdown)."""

    daemon_threads = True
    block_on_close = False
    #: Connections waiting to be accepted: every caller of a concurrency test connects at once.
    request_queue_size = 128


def serve_http(dispatcher: Dispatcher, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Answer ``POST /v1/{op}`` on ``host:port`` until ``shutdown``, each request on a thread of
    its own, so requests overlap (the dispatcher decides what runs at once); ``announce`` gets
    the URL once the server listens (port 0: a free one)."""
    answered = threading.Event()
    handler = type("Handler", (_Handler,), {"dispatcher": dispatcher, "answered": answered})
    with _Server((host, port), handler) as server:
        announce(f"http://{host}:{server.server_address[1]}")
        threading.Thread(target=server.serve_forever, args=(0.1,), name="kbconform-http", daemon=True).start()
        answered.wait()
        server.shutdown()
