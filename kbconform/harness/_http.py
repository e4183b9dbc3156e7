"""harness-v1 over HTTP, the kit's side: each request ``POST {url}/v1/{op}`` to a harness on
127.0.0.1, on a connection kept open for the next (``schemas/harness-v1.md``, Transports)."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any, NoReturn

from kbconform.harness._wire import HarnessBroken, dumps, read_response


class HttpTransport:
    """A harness serving harness-v1 over HTTP on 127.0.0.1: ``POST {url}/v1/{op}``."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if (
            parts.scheme != "http"
            or parts.hostname not in ("127.0.0.1", "localhost", "::1")
            or not parts.port
        ):
            raise ValueError(f"expected http://127.0.0.1:PORT; got {url!r}")
        self.host, self.port = parts.hostname, parts.port
        self.prefix = parts.path.rstrip("/")
        self.description = url
        self._broken: HarnessBroken | None = None
        #: Open connections no request is using, kept for the next (HTTP/1.1 persistent
        #: connections): a connection per request would leave thousands in TIME_WAIT on the
        #: harness's side, and a new one meeting its own old four-tuple there waits seconds.
        self._idle: list[http.client.HTTPConnection] = []
        self._idle_lock = threading.Lock()

    overlaps = True  #: requests from several threads overlap, each on a connection of its own

    def log_tail(self) -> str:
        return ""

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        if self._broken is not None:
            raise HarnessBroken(call, f"the harness is unusable ({self._broken.what})")
        request = dumps(message) if line is None else line
        kept = self._checkout(timeout)
        answered = self._send(call, kept, request, message["op"], timeout) if kept is not None else None
        if answered is None:  # no kept connection, or the harness had closed it before reading
            fresh = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            answered = self._send(call, fresh, request, message["op"], timeout) or self._fail(
                call, "got no answer: the harness closed the connection"
            )
        status, body = answered
        if status not in (200, 400):
            self._fail(call, f"was answered with HTTP {status}: {body[:200]!r}")
        try:
            return read_response(call, body, message["id"], "")
        except HarnessBroken as error:
            self._broken = error
            raise

    def _send(
        self, call: str, connection: http.client.HTTPConnection, request: bytes, op: str, timeout: float
    ) -> tuple[int, bytes] | None:
        """The status and body of the answer to ``request`` on ``connection`` (kept for the next
        request). None when a kept connection turns out closed by the harness before it read the
        request: the only case in which a request is sent again, on a fresh connection. Any
        other missing answer fails the call."""
        reused = connection.sock is not None
        answer: http.client.HTTPResponse | None = None
        try:
            connection.request(
                "POST", f"{self.prefix}/v1/{op}", body=request, headers={"Content-Type": "application/json"}
            )
            answer = connection.getresponse()
            body = answer.read()
        except TimeoutError:
            connection.close()
            self._fail(call, f"got no answer within its deadline of {timeout:g} s", timeout)
        except _STALE:
            connection.close()
            if reused and answer is None:  # closed before any of the answer came
                return None
            self._fail(call, "got no answer: the harness closed the connection")
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self._fail(call, f"got no answer: {error}")
        self._checkin(connection)
        return answer.status, body

    def _checkout(self, timeout: float) -> http.client.HTTPConnection | None:
        """A kept connection still open (its deadline now ``timeout``), or None."""
        with self._idle_lock:
            while self._idle:
                connection = self._idle.pop()
                if connection.sock is not None and not _readable(connection.sock):
                    connection.sock.settimeout(timeout)
                    return connection
                connection.close()  # closed by the harness (or it sent what no request asked)
        return None

    def _checkin(self, connection: http.client.HTTPConnection) -> None:
        """Keep ``connection`` for a later request, unless the answer closed it."""
        if connection.sock is None:
            return
        with self._idle_lock:
            if self._broken is None:
                self._idle.append(connection)
                return
        connection.close()

    def _close_idle(self) -> None:
        with self._idle_lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _fail(self, call: str, what: str, deadline: float | None = None) -> NoReturn:
        self._broken = HarnessBroken(call, what, deadline=deadline)
        self._close_idle()
        raise self._broken

    def stop(self) -> None:
        self._broken = self._broken or HarnessBroken("shutdown", "the harness was shut down")
        self._close_idle()

    def abandon(self) -> None:
        self._broken = self._broken or HarnessBroken("a call", "the harness broke the protocol")
        self._close_idle()


#: A kept connection the harness closed while idle: the request never reached it.
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


def _readable(sock: socket.socket) -> bool:
    """Whether an idle connection's socket has something to read: the harness closed it."""
    return bool(select.select([sock], [], [], 0)[0])
