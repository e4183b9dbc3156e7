"""The kit's side of harness-v1: an :class:`~kbconform.adapter.Adapter` whose backends live in
another process, reached over the harness's stdio or over HTTP on 127.0.0.1.

Every request has a deadline. A harness that exits, hangs, answers another request, or writes
anything but a harness-v1 response breaks the call with :class:`HarnessBroken`, naming the
call (and, for a hang, the deadline it overran: a run then takes the backend as broken); the
harness is then stopped, and every later call fails the same way.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch, Manifest, RevisionMap, adapter_directory
from kbconform.errors import ContractViolation, Problem
from kbconform.harness._http import HttpTransport
from kbconform.harness._table import WireTable
from kbconform.harness._transcript import Transcript
from kbconform.harness._wire import (
    COMMON_OPERATIONS,
    OPERATIONS,
    PROTOCOL,
    HarnessBroken,
    dumps,
    error_from_wire,
    problems,
    read_response,
)
from kbconform.profiles import profile, profile_of

#: The deadline of starting a harness and its ``hello``, at least (seconds).
START_TIMEOUT = 120.0
#: How much of the harness's log a failure shows, in characters.
LOG_TAIL = 4000
#: How much of the harness's log is kept (its first and last halves), in bytes.
LOG_LIMIT = 2 * 1024 * 1024
_STOP_GRACE = 10.0


class Transport(Protocol):
    """Sends one request and returns its response message, or raises HarnessBroken."""

    description: str

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        """``line``: the message as :func:`~kbconform.harness._wire.dumps` encodes it, when the
        caller has it (else the transport encodes it)."""
        ...

    def log_tail(self) -> str: ...

    @property
    def broken(self) -> bool: ...

    def stop(self) -> None: ...

    def abandon(self) -> None: ...


#: The environment variable naming a file where every harness process group is listed, so a
#: supervisor (``kbconform run``) can end them with the run, whatever ends it.
GROUPS_FILE = "KBCONFORM_HARNESS_GROUPS"
#: The environment variable a harness started to serve HTTP is given: the ``HOST:PORT`` to listen
#: on (port 0: a free one); it prints its URL as the first line of its output.
HTTP_ADDRESS = "KBCONFORM_HARNESS_HTTP"


class _BoundedLog:
    """The harness's stderr as it arrives: its first and last ``limit // 2`` bytes, and how many
    were cut between; a harness that writes without end costs no memory and no disk."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.cut = 0
        self.lock = threading.Lock()

    def write(self, chunk: bytes) -> None:
        with self.lock:
            room = self.half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > self.half:
                self.cut += len(self.tail) - self.half
                del self.tail[: len(self.tail) - self.half]

    def text(self, last: int | None = None) -> str:
        """The log kept, or its last ``last`` characters (decoding only the bytes they can take:
        a call's answer reads the tail, and a chatty harness keeps megabytes)."""
        with self.lock:
            cut = f"\n[kbconform: {self.cut} bytes of the harness's log cut]\n".encode() if self.cut else b""
            if last is None:
                return bytes(self.head + cut + self.tail).decode("utf-8", errors="replace")
            room = 4 * last + 4  # a character is at most four bytes in UTF-8; one more may be cut
            data = bytes(self.tail[-room:])
            if len(data) < room:
                data = (bytes(self.head) + cut)[len(data) - room :] + data
        return data.decode("utf-8", errors="replace")[-last:]


class StdioTransport:
    """A harness started as a child process, in a process group of its own: requests on its
    stdin, responses on its stdout; its stderr (its log) kept within ``LOG_LIMIT`` bytes and
    written to ``log`` when it stops."""

    overlaps = False  #: one request at a time, by the protocol (requests never overlap)

    def __init__(
        self,
        command: Sequence[str] | str,
        log: Path | None = None,
        cwd: str | None = None,
        kept: _BoundedLog | None = None,
    ) -> None:
        self.command = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.command:
            raise ValueError("a harness command is needed")
        self.description = shlex.join(self.command)
        self.log, self.cwd = log, cwd
        self._kept = kept or _BoundedLog(LOG_LIMIT)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self._broken: HarnessBroken | None = None
        try:
            self.process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                start_new_session=True,
            )
        except OSError as error:
            raise HarnessBroken(
                "starting the harness", f"{self.description!r} cannot start: {error}"
            ) from None
        listed = os.environ.get(GROUPS_FILE)
        if listed:
            with contextlib.suppress(OSError), Path(listed).open("a", encoding="utf-8") as groups:
                groups.write(f"{self.process.pid}\n")
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        with stream:
            for line in stream:
                self._lines.put(line)
        self._lines.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
                self._kept.write(chunk)

    def log_tail(self) -> str:
        return self._kept.text(LOG_TAIL)

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def restarted(self) -> StdioTransport:
        """The same harness started afresh, its log continued (after this one broke)."""
        self._kept.write(b"\n[kbconform: the harness broke and was started again]\n")
        return StdioTransport(self.command, self.log, self.cwd, self._kept)

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        if not self._lock.acquire(blocking=False):
            self._break(call, "was sent while an earlier request was still unanswered")
        try:
            if self._broken is not None:
                raise HarnessBroken(call, f"the harness is stopped ({self._broken.what})")
            stdin = self.process.stdin
            assert stdin is not None
            try:
                stdin.write(dumps(message) if line is None else line)
                stdin.flush()
            except OSError as error:
                self._break(call, f"could not be sent: the harness closed its stdin ({error})")
            try:
                raw = self._lines.get(timeout=timeout)
            except queue.Empty:
                self._break(call, f"got no answer within its deadline of {timeout:g} s", timeout)
            if raw is None:
                code = self.process.wait(timeout=_STOP_GRACE)
                self._break(call, f"got no answer: the harness exited with code {code}")
            try:
                return read_response(call, raw, message["id"], self.log_tail())
            except HarnessBroken as error:
                self._stop(error)
                raise
        finally:
            self._lock.release()

    def _break(self, call: str, what: str, deadline: float | None = None) -> NoReturn:
        error = HarnessBroken(call, what, "", deadline=deadline)
        self._stop(error)
        error.log = self.log_tail()
        raise error

    def _stop(self, error: HarnessBroken | None) -> None:
        self._broken = self._broken or error
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_STOP_GRACE)
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        self._readers[1].join(_STOP_GRACE)
        if self.log is not None:
            with contextlib.suppress(OSError):
                self.log.write_text(self._kept.text(), encoding="utf-8")

    def abandon(self) -> None:
        """Stop a harness that broke the protocol at once (every later call fails)."""
        self._stop(HarnessBroken("a call", "the harness broke the protocol"))

    def stop(self) -> None:
        """After ``shutdown``: wait for the harness to exit, then end whatever it left behind."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_STOP_GRACE)
        self._stop(HarnessBroken("shutdown", "the harness was shut down"))


class HarnessAdapter:
    """An adapter behind harness-v1. ``timeout`` is each request's deadline in seconds."""

    def __init__(self, transport: Transport, timeout: float, start_timeout: float = START_TIMEOUT) -> None:
        self.transport = transport
        self.timeout = timeout
        #: The deadline of ``hello``: starting a harness (a server, a runtime) is not a call.
        self.start_timeout = max(timeout, start_timeout)
        self._ids = 0
        self._ids_lock = threading.Lock()
        #: Every exchange of the current test (the plugin begins it per test).
        self.transcript = Transcript()
        #: How many times the harness was started afresh after it broke; a backend opened
        #: before a restart is gone.
        self.generation = 0
        result = self.request("hello", {"protocol": PROTOCOL})
        self._manifest: dict[str, Any] = dict(result["manifest"])

    def _restart(self) -> None:
        """A stdio harness that broke (crashed, hung, broke the protocol) is started afresh
        before the next backend is opened, and must declare the same manifest again."""
        restarted = getattr(self.transport, "restarted", None)
        if not self.transport.broken or restarted is None:
            return
        self.transport = restarted()
        self.generation += 1
        manifest = self.request("hello", {"protocol": PROTOCOL})["manifest"]
        if manifest != self._manifest:
            self.transport.abandon()
            raise HarnessBroken("harness hello", "the harness, started again, declares another manifest")

    @property
    def manifest(self) -> Mapping[str, Any]:
        return self._manifest

    def request(self, op: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send ``op``; its result, or the error it raises (a kbconform error by its code)."""
        return self._send(op, params, self.start_timeout if op == "hello" else self.timeout)

    @property
    def overlaps(self) -> bool:  # whether requests from several threads may be sent at once
        return bool(getattr(self.transport, "overlaps", False))

    def _next_id(self) -> int:
        with self._ids_lock:
            self._ids += 1
            return self._ids

    def _send(self, op: str, params: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        request_id = self._next_id()
        call = f"harness {op} (request {request_id})"
        try:
            message = {"id": request_id, "op": op, "params": dict(params)}
            line = dumps(message)  # encoded once: sent and recorded as it is
        except (TypeError, ValueError) as error:
            raise HarnessBroken(call, f"its arguments have no harness-v1 form: {error}") from None
        response = self.exchange(call, message, timeout, line)
        if "error" in response:
            named = {} if op in COMMON_OPERATIONS else self._table().named
            raise error_from_wire(op, params, response["error"], named)
        result: Mapping[str, Any] = response["result"]
        found = (
            problems(f"{op}Result", result) if op in OPERATIONS else self._table().result_problems(op, result)
        )
        if found:
            self.transport.abandon()
            raise HarnessBroken(
                call, f"answered with something that is not a {op} result: " + "; ".join(found)
            )
        return result

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        """One request and the harness's whole response (a result or an error), recorded in
        :attr:`transcript`; ``line``: the request as encoded already (:func:`dumps`)."""
        try:
            response = self.transport.exchange(call, message, timeout, line)
        except HarnessBroken as error:
            self.transcript.record(message, None, str(error), line)
            raise
        self.transcript.record(message, response, sent=line)
        return response

    def send_raw(self, op: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Send ``op`` as given and return the whole response, an error one too (a replay's
        request, checked by nothing of the kit's)."""
        request_id = self._next_id()
        message = {"id": request_id, "op": op, "params": dict(params)}
        return self.exchange(f"harness {op} (request {request_id})", message, self.timeout)

    def _table(self) -> WireTable:
        """The wire table of the profile the harness's manifest declares."""
        return profile(profile_of(self.manifest)).wire

    def open(self, options: BackendOptions, /) -> Any:  # its profile's backend (Profile.wire)
        resolver = options.resolver
        if resolver is not None and not isinstance(resolver, RevisionMap):
            raise TypeError(
                "behind harness-v1 a revision resolver travels as a kbconform.adapter.RevisionMap"
            )
        switch = options.store_fails
        if switch is not None and not isinstance(switch, FaultSwitch):
            raise TypeError("behind harness-v1 a store_fails switch is a kbconform.adapter.FaultSwitch")
        revision_map = None
        if resolver is not None:
            revision_map = [
                {"repoSlug": repo, "baseRevision": base, "headRevision": head, "deletedPaths": list(paths)}
                for (repo, base, head), paths in resolver.deleted.items()
            ]
        self._restart()
        handle = self.request(
            "open",
            {"spoofMode": options.spoof_mode, "revisionMap": revision_map, "faults": switch is not None},
        )["backend"]
        backend = self._table().backend(self, handle, resolver)
        if switch is not None:
            switch.forward(backend.set_fault)
        return backend

    def close(self, backend: Any, /) -> None:
        assert isinstance(backend, HarnessBackend)
        backend.closed = True
        if backend.generation == self.generation and not self.transport.broken:
            self.request("close", {"backend": backend.handle})

    def shutdown(self) -> None:
        try:
            if not self.transport.broken:
                self.request("shutdown", {})
        finally:
            self.transport.stop()


class HarnessBackend:
    """One backend the harness opened: the requests every profile's backend makes (each
    profile's facades are requests too, in a class of its own, named by its wire table)."""

    def __init__(self, adapter: HarnessAdapter, handle: str, resolver: RevisionMap | None) -> None:
        self.adapter, self.handle, self.resolver = adapter, handle, resolver
        self.closed = False
        self.generation = adapter.generation

    def _request(self, op: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        if self.generation != self.adapter.generation:
            what = "the harness broke and was started again since this backend was opened: it is gone"
            raise HarnessBroken(f"harness {op} (backend {self.handle})", what)
        return self.adapter.request(op, params)

    def set_fault(self, plan: FaultPlan | None) -> int:
        if self.closed:  # nothing consults the switch of a closed backend
            return 0
        wire: dict[str, Any] | None = None
        if plan is not None:  # stores and hang only when set: a harness of another profile may ignore them
            wire = {"pass": plan.passing, "fail": plan.failing}
            if plan.stores is not None:
                wire["stores"] = sorted(plan.stores)
            if plan.hang:
                wire["hang"] = plan.hang
        return int(self._request("fault", {"backend": self.handle, "plan": wire})["consulted"])


def connect(
    *, command: str | None = None, url: str | None = None, log: Path | None = None, call_timeout: float
) -> tuple[HarnessAdapter, Manifest]:
    """A harness-v1 harness started from ``command`` (stdio; its stderr goes to ``log``) or
    served at ``url``, and the manifest it declares. A command starts in the caller's directory
    (``KBCONFORM_ADAPTER_DIR``, which ``kbconform run`` sets; else the current one), so its
    relative arguments mean what they mean where it was typed. Raises ContractViolation
    (``KB_ADAPTER_INVALID``) for a URL not on 127.0.0.1 or an invalid manifest, HarnessBroken
    when the harness does not answer ``hello``."""
    if url is not None:
        try:
            transport: Transport = HttpTransport(url)
        except ValueError as error:
            raise ContractViolation(
                contract="harness-v1",
                problems=(Problem("", "url", "http://127.0.0.1:PORT", repr(url)),),
                code="KB_ADAPTER_INVALID",
            ) from error
    else:
        assert command is not None
        transport = StdioTransport(command, log, cwd=str(adapter_directory()))
    adapter = HarnessAdapter(transport, call_timeout)
    try:
        return adapter, Manifest.declared(adapter.manifest)
    except ContractViolation:
        adapter.transport.stop()
        raise
