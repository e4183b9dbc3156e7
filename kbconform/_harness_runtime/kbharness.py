"""kbharness: the harness-v1 runtime in Python, standard library only.

A harness is a small object holding its system's calls; this module speaks the protocol around
it (``schemas/harness-v1.md``): one JSON request per line on stdin, one JSON response per line on
stdout, ids checked and echoed, errors answered as data, backend handles kept, ``hello`` answered
with the harness's manifest and ``shutdown`` (or the end of stdin) releasing every backend. The
operations and their required params are read from ``harness-v1.schema.json``, never retyped.

The harness object has (nothing else is read):

- ``manifest``: the manifest ``hello`` returns (its ``isolationProfile`` names the profile);
- ``open(params, handle)``: a new backend (any object) for ``open``'s params, which requests will
  name ``handle``; ``close(backend)`` releases it;
- ``fault(backend, plan)`` (optional): set a fault plan, return how often the switch was
  consulted (a backend's :class:`FaultSwitch` does both; its store calls consult it first, or a
  :class:`SwitchedStore` in front of the store object does); without it ``fault`` is refused;
- one method per operation of its profile, named as the operation (``addMemory``,
  ``createKb``, ...), called as ``op(backend, params)``, returning the result object;
- ``operations`` (optional): the names of operations the schema does not name (a profile
  registered by another package adds its own), served by their methods, params unchecked;
- ``error_for(exc)`` (optional): the ``(code, message)`` of an exception the system raised;
  without it, or when it answers None, the exception is ``KB_HARNESS_INTERNAL``;
- ``shutdown(backends)`` (optional): release the backends still open, and whatever else the
  harness holds; without it each open backend is closed.

An operation fails with :class:`HarnessError` (``invalid``, ``not_implemented``, or any code).
Run it with ``serve(harness)``; call ``claim_stdout()`` first, before importing a library that
might print, so that stdout carries responses only.

Kept in kbconform (``kbconform/_harness_runtime``, shipped in the wheel) so that ``kbconform
new-harness`` copies this very file beside a new harness; the harnesses of the repository load
it from there by path.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import IO, Any

PROTOCOL = "harness-v1"
SCHEMA = "harness-v1.schema.json"
#: The operations of every profile, which the runtime answers itself or hands to the harness's
#: own open, close and fault.
LIFECYCLE = ("hello", "open", "close", "fault", "shutdown")


class HarnessError(Exception):
    """An error response: a kbconform error code (``KB_NOT_FOUND``, ``KB_UNAUTHENTICATED``, ...)
    and the message the system gave."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> HarnessError:
    """A request the harness cannot read or carry out (``KB_HARNESS_REQUEST_INVALID``)."""
    return HarnessError("KB_HARNESS_REQUEST_INVALID", message)


def not_implemented(message: str) -> HarnessError:
    """An operation the system does not offer, or the harness does not serve yet."""
    return HarnessError("KB_NOT_IMPLEMENTED", message)


class StoreFault(ConnectionError):
    """What a store call raises when the fault plan fails it (map it to ``KB_BACKEND_UNAVAILABLE``)."""


def is_fault_plan(plan: object) -> bool:
    """Whether ``plan`` is a fault plan other than null: ``{pass, fail, stores?, hang?}``."""
    if not isinstance(plan, dict) or "fail" not in plan:
        return False
    passing, failing, hang = plan.get("pass"), plan["fail"], plan.get("hang")
    if any(isinstance(value, bool) for value in (passing, failing, hang)) or not isinstance(passing, int):
        return False
    counts = passing >= 0 and (failing is None or (isinstance(failing, int) and failing >= 1))
    return counts and (hang is None or (isinstance(hang, (int, float)) and 0 <= hang <= 60))


class FaultSwitch:
    """A backend's store-fault switch (feature ``fault-injection``, ``schemas/harness-v1.md``):
    :meth:`set` takes each ``fault`` request's plan; the backend calls :meth:`consult` once before
    every call it makes to its store, which waits the plan's ``hang`` (or until the plan is
    replaced) and raises if it fails."""

    def __init__(self) -> None:
        self.plan: dict[str, Any] | None = None
        self.consulted = 0
        self._lock = threading.Lock()
        self._replaced = threading.Event()  # set when the plan in force is replaced

    def set(self, plan: Any) -> int:
        """Make ``plan`` the plan (None: no store call fails), refused as :func:`invalid` unless
        :func:`is_fault_plan`; return how many store calls consulted the plan it replaces."""
        if plan is not None and not is_fault_plan(plan):
            raise invalid(f"fault: not a fault plan: {plan!r}")
        with self._lock:
            previous, self.consulted, self.plan = self.consulted, 0, plan
            self._replaced.set()
            self._replaced = threading.Event()
        return previous

    def consult(self, call: str, store: str | None = None) -> None:
        """Before the store call ``call``: raise :class:`StoreFault` if the plan fails it. A plan
        whose ``stores`` lacks ``store`` (kb-grant) neither fails nor counts it; None ignores them."""
        with self._lock:
            plan = self.plan
            if plan and store is not None and plan.get("stores") is not None and store not in plan["stores"]:
                return
            index, self.consulted, replaced = self.consulted, self.consulted + 1, self._replaced
        if not plan:
            return
        passing, failing = plan["pass"], plan.get("fail")
        if index < passing or (failing is not None and index >= passing + failing):
            return
        if plan.get("hang"):
            replaced.wait(plan["hang"])  # the hang, or until the plan is replaced
        raise StoreFault(f"store unavailable: {call} failed (injected store fault)")


class SwitchedStore:
    """Stands in for a store object (a database client): each switched method consults the
    switch as ``LABEL.METHOD``, then calls through; attributes set on it are set on the store.
    ``methods`` names the switched methods; None switches every public method but ``close``."""

    def __init__(
        self, target: object, switch: FaultSwitch, label: str, methods: Collection[str] | None = None
    ) -> None:
        self.__dict__.update(_target=target, _switch=switch, _label=label, _methods=methods)

    def __getattr__(self, name: str) -> Any:
        value, methods = getattr(self._target, name), self._methods
        switched = name in methods if methods is not None else not name.startswith("_") and name != "close"
        if not switched or not callable(value):
            return value
        switch, label = self._switch, self._label

        def call(*args: Any, **kwargs: Any) -> Any:
            switch.consult(f"{label}.{name}")
            return value(*args, **kwargs)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)


def installed_version(distribution: str) -> str:
    """The version of an installed distribution (a manifest's backend version), or "unknown"."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def schema_path() -> Path:
    """``harness-v1.schema.json``: beside this file (a copy), in the kit's ``schemas`` (a wheel)
    or at the top of a source checkout."""
    here = Path(__file__).resolve().parent
    for candidate in (here / SCHEMA, here.parent / "schemas" / SCHEMA, here.parents[1] / "schemas" / SCHEMA):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{SCHEMA} is neither beside {here} nor in kbconform's schemas")


class Operations:
    """harness-v1's operations, as its schema names them: each one's required params."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        definitions = schema["$defs"]
        names = definitions["request"]["properties"]["op"]["enum"]
        self.required: dict[str, tuple[str, ...]] = {
            name: tuple(definitions.get(f"{name}Params", {}).get("required", ())) for name in names
        }

    @classmethod
    def load(cls, path: Path | None = None) -> Operations:
        return cls(json.loads((path or schema_path()).read_text(encoding="utf-8")))

    def __contains__(self, op: object) -> bool:
        return op in self.required

    def served_by(self, harness: object) -> frozenset[str]:
        """The operations ``harness`` has a method for (its profile's), the lifecycle aside."""
        named = [*self.required, *getattr(harness, "operations", ())]
        return frozenset(op for op in named if op not in LIFECYCLE and callable(getattr(harness, op, None)))


def request_id(raw: object) -> int | None:
    """A request's id as echoed: an integer >= 0 (``7.0`` is 7), else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int) and raw >= 0:
        return raw
    if isinstance(raw, float) and raw.is_integer() and raw >= 0:
        return int(raw)
    return None


def encode(message: Mapping[str, Any]) -> str:
    """One line of JSON; a result with no JSON form is answered as the harness's own failure."""
    try:
        return json.dumps(message, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        failed = {"code": "KB_HARNESS_INTERNAL", "message": f"the result has no JSON form: {exc}"}
        return json.dumps({"id": message.get("id"), "error": failed}, ensure_ascii=True)


def error_response(rid: int | None, error: HarnessError) -> dict[str, Any]:
    return {"id": rid, "error": {"code": error.code, "message": error.message}}


_claimed: IO[str] | None = None


def claim_stdout() -> IO[str]:
    """Keep file descriptor 1 for responses: everything else written to stdout (Python's or a C
    library's) goes to stderr, the harness log. Call before importing the system's library."""
    global _claimed
    if _claimed is None:
        _claimed = os.fdopen(os.dup(1), "w", encoding="utf-8", newline="\n")
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _claimed


class Runtime:
    """One harness served: its backends by handle, and each request answered."""

    def __init__(self, harness: Any, operations: Operations, log: Callable[[str], None]) -> None:
        self.harness = harness
        self.operations = operations
        self.served = operations.served_by(harness)
        self.backends: dict[str, Any] = {}
        self.opened = 0
        self._lock = threading.Lock()
        self.log = log

    @property
    def profile(self) -> str:
        return str(self.harness.manifest.get("isolationProfile", "tenant-namespace"))

    def answer(self, line: bytes) -> tuple[dict[str, Any], bool]:
        """The response to one request line, and whether the harness is to end."""
        started = time.monotonic()
        rid: int | None = None
        op = "?"
        try:
            try:
                request = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise invalid(f"the request is not UTF-8 JSON: {exc}") from exc
            if not isinstance(request, dict):
                raise invalid("the request is not a JSON object")
            rid = request_id(request.get("id"))
            if rid is None:
                raise invalid("the request's id is not an integer >= 0")
            named = request.get("op")
            params = request.get("params")
            if not isinstance(named, str):
                raise invalid("the request has no op")
            op = named
            if not isinstance(params, dict):
                raise invalid(f"{op}: the request's params is not an object")
            response = {"id": rid, "result": self.call(op, params)}
            self.log(f"{op} ok ({(time.monotonic() - started) * 1000:.1f} ms)")
            return response, op == "shutdown"
        except HarnessError as exc:
            self.log(f"{op} {exc.code}: {exc.message}")
            return error_response(rid, exc), False
        except Exception as exc:  # a failure of the runtime itself: answered, and serving goes on
            self.log(traceback.format_exc().rstrip())
            return error_response(
                rid, HarnessError("KB_HARNESS_INTERNAL", f"{type(exc).__name__}: {exc}")
            ), False

    def call(self, op: str, params: dict[str, Any]) -> Any:
        if op not in self.operations and op not in self.served:
            raise invalid(f"unknown operation {op!r}")
        if op not in LIFECYCLE and op not in self.served:
            raise invalid(
                f"{op} is not an operation of the {self.profile} profile (the manifest's isolationProfile)"
            )
        missing = [name for name in self.operations.required.get(op, ()) if name not in params]
        if missing:
            raise invalid(f"{op}: params lack {', '.join(missing)}")
        if op == "hello":
            if params["protocol"] != PROTOCOL:
                raise invalid(f"this harness speaks {PROTOCOL}, not {params['protocol']!r}")
            return {"protocol": PROTOCOL, "manifest": self.harness.manifest}
        if op == "shutdown":
            return {}
        try:
            return self._on_backend(op, params)
        except HarnessError:
            raise
        except Exception as exc:
            raise self._translated(exc) from exc

    def _on_backend(self, op: str, params: dict[str, Any]) -> Any:
        if op == "open":
            with self._lock:  # callers at once (HTTP) each get a handle of their own
                self.opened += 1
                opened = f"b{self.opened}"
            self.backends[opened] = self.harness.open(params, opened)
            return {"backend": opened}
        handle = params.get("backend")
        if not isinstance(handle, str) or handle not in self.backends:
            raise invalid(f"unknown backend handle {handle!r}: open did not return it, or close released it")
        backend = self.backends[handle]
        if op == "close":
            del self.backends[handle]
            self.harness.close(backend)
            return {}
        if op == "fault":
            if not callable(getattr(self.harness, "fault", None)):
                raise invalid("fault: the backend was opened without faults (fault-injection is not offered)")
            return {"consulted": self.harness.fault(backend, params["plan"])}
        return getattr(self.harness, op)(backend, params)

    def _translated(self, exc: Exception) -> HarnessError:
        error_for = getattr(self.harness, "error_for", None)
        mapped = error_for(exc) if callable(error_for) else None
        if mapped is None:
            mapped = ("KB_HARNESS_INTERNAL", f"{type(exc).__name__}: {exc}")
        if mapped[0] == "KB_HARNESS_INTERNAL":
            self.log("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip())
        return HarnessError(*mapped)

    def release(self) -> None:
        """The harness's own shutdown with the backends still open, or else each one closed."""
        left = list(self.backends.values())
        self.backends.clear()
        shutdown = getattr(self.harness, "shutdown", None)
        if callable(shutdown):
            shutdown(left)
            return
        for backend in left:
            try:
                self.harness.close(backend)
            except Exception as exc:
                self.log(f"close failed: {type(exc).__name__}: {exc}")


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through serve's finally: every backend released


#: Set in a harness's environment by the kit that starts it for HTTP: ``HOST:PORT`` to listen on.
HTTP_ADDRESS = "KBCONFORM_HARNESS_HTTP"


def serve(harness: Any, *, name: str = "harness", schema: Path | None = None) -> int:
    """Serve ``harness`` on stdin and stdout until ``shutdown`` or the end of stdin; return 0.
    With :data:`HTTP_ADDRESS` in the environment, serve ``POST /v1/{op}`` there instead, callers
    at once each on a thread of their own, until ``shutdown`` (:func:`serve_http`)."""
    out = _claimed or sys.stdout

    def log(message: str) -> None:
        print(f"{name}: {message}", file=sys.stderr, flush=True)

    runtime = Runtime(harness, Operations.load(schema), log)
    signal.signal(signal.SIGTERM, _terminate)
    if os.environ.get(HTTP_ADDRESS):
        try:
            serve_http(runtime, os.environ[HTTP_ADDRESS], out)
        finally:
            runtime.release()
        return 0
    try:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            response, done = runtime.answer(line)
            out.write(encode(response) + "\n")
            out.flush()
            if done:
                break
    finally:
        runtime.release()
    return 0


#: The interpreter's thread switch interval while requests overlap, in seconds: the value the
#: kit's concurrency suite uses in its own process (schemas/concurrency.md, "How the suite makes
#: the race likely"), so that a request's state kept anywhere shared meets another request here
#: as it would there. One request alone runs at the interpreter's default.
OVERLAP_SWITCH_INTERVAL = 1e-5


class Overlapping:
    """Entered by each request while it is answered: while two or more are inside at once, the
    interpreter switches threads every :data:`OVERLAP_SWITCH_INTERVAL` seconds; once one is
    left, as before. Scheduling only: no request waits for another."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.before = sys.getswitchinterval()

    def __enter__(self) -> None:
        with self.lock:
            self.inside += 1
            if self.inside == 2:
                self.before = sys.getswitchinterval()
                sys.setswitchinterval(OVERLAP_SWITCH_INTERVAL)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.inside -= 1
            if self.inside == 1:
                sys.setswitchinterval(self.before)


def serve_http(runtime: Runtime, address: str, out: IO[str]) -> None:
    """Answer ``POST /v1/{op}`` on ``address`` (``HOST:PORT``; port 0: a free one), each
    connection on a thread of its own and kept open, as ``schemas/harness-v1.md`` (Transports)
    says; the URL is the first line on ``out``. Requests overlap only when the manifest declares
    ``concurrency: threads``. Returns once ``shutdown`` is answered."""
    host, _, port = address.rpartition(":")
    answered = threading.Event()
    # Requests overlap only for a backend that declares it serves callers at once
    # (schemas/concurrency.md); any other waits its turn, as kbconform serve does.
    turns: Any = (
        Overlapping() if runtime.harness.manifest.get("concurrency") == "threads" else threading.Lock()
    )

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = 300  # seconds a kept connection may wait for its next request
        disable_nagle_algorithm = True  # an answer's headers and body are two writes

        def do_POST(self) -> None:  # the name http.server calls
            op = self.path.removeprefix("/v1/")
            length = self.headers.get("Content-Length") or "0"
            body = self.rfile.read(int(length)) if length.isdigit() else b""
            if not (self.path.startswith("/v1/") and (op in runtime.operations or op in runtime.served)):
                self._send(404, error_response(None, invalid(f"no operation at {self.path!r}")))
                return
            try:
                named = json.loads(body.decode("utf-8")).get("op", op)
            except (UnicodeDecodeError, ValueError, AttributeError):
                named = op  # not a request object: the runtime's answer says what is wrong
            if named != op:
                self._send(
                    400, error_response(None, invalid(f"the message's op must be {op!r}, as in the path"))
                )
                return
            with turns:
                response, done = runtime.answer(body)
            refused = response.get("error", {}).get("code") == "KB_HARNESS_REQUEST_INVALID"
            self._send(400 if refused else 200, response, close=done)
            if done:
                answered.set()

        def _not_allowed(self) -> None:
            self._send(405, error_response(None, invalid(f"{self.command} is not allowed: POST only")))

        do_GET = do_PUT = do_PATCH = do_DELETE = _not_allowed

        def _send(self, status: int, response: Mapping[str, Any], close: bool = False) -> None:
            encoded = encode(response).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(encoded)))
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(encoded)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the runtime logs each request

    listening = host or "127.0.0.1"
    server = http.server.ThreadingHTTPServer((listening, int(port or 0)), Handler)
    server.daemon_threads = True
    try:
        out.write(f"http://{listening}:{server.server_port}\n")
        out.flush()
        threading.Thread(target=server.serve_forever, daemon=True).start()
        answered.wait()
    finally:
        server.shutdown()
        server.server_close()
