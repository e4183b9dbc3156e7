"""harness-v1 over HTTP keeps its connections (``schemas/harness-v1.md``, Transports): the kit
sends request after request on one open connection, one per caller at once, and opens another
when the harness closed it, by saying so or while it was idle; ``kbconform serve`` keeps a
connection open for the next request. A connection per request left thousands in TIME_WAIT on
the server's side during a concurrency test, where a new connection on the same ports waited a
second or more for its SYN to be answered."""

from __future__ import annotations

import http.client
import http.server
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from kbconform.harness import HttpTransport

ROOT = Path(__file__).resolve().parents[2]


class _Recorder(http.server.ThreadingHTTPServer):
    """Answers every ``POST`` with its request's id, and keeps the client port of each request;
    ``closing`` says ``Connection: close``, ``dropping`` closes without saying so."""

    daemon_threads = True

    def __init__(self, closing: bool = False, dropping: bool = False) -> None:
        self.ports: list[int] = []
        self.lock = threading.Lock()
        self.closing, self.dropping = closing, dropping
        super().__init__(("127.0.0.1", 0), _Answer)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Answer(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Recorder

    def do_POST(self) -> None:  # the name http.server calls
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.ports.append(self.client_address[1])
        body = json.dumps({"id": message["id"], "result": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.server.closing:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = self.server.closing or self.server.dropping

    def log_message(self, format: str, *args: Any) -> None:  # http.server's name
        """Quiet."""


@pytest.fixture
def recorder(request: pytest.FixtureRequest) -> Iterator[_Recorder]:
    server = _Recorder(**getattr(request, "param", {}))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _hello(transport: HttpTransport, number: int) -> None:
    message = {"id": number, "op": "hello", "params": {"protocol": "harness-v1"}}
    assert transport.exchange("hello", message, 10)["id"] == number


def test_requests_one_after_another_share_one_connection(recorder: _Recorder) -> None:
    transport = HttpTransport(recorder.url)
    for number in range(20):
        _hello(transport, number)
    transport.stop()
    assert len(recorder.ports) == 20
    assert len(set(recorder.ports)) == 1


def test_callers_at_once_use_a_connection_each_and_keep_it(recorder: _Recorder) -> None:
    transport = HttpTransport(recorder.url)
    start = threading.Barrier(6)

    def caller(offset: int) -> None:
        for number in range(15):
            start.wait(10)
            _hello(transport, offset + number)

    threads = [threading.Thread(target=caller, args=(100 * i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    transport.stop()
    assert len(recorder.ports) == 90
    assert 1 < len(set(recorder.ports)) <= 6, "each caller at once needs a connection, and keeps one"


@pytest.mark.parametrize(
    "recorder",
    [{"closing": True}, {"dropping": True}],
    ids=["the harness says Connection: close", "the harness closes without saying so"],
    indirect=True,
)
def test_a_connection_the_harness_closed_is_replaced(recorder: _Recorder) -> None:
    """Control of the two above: a harness that closes every connection is answered on a new
    one each time, never a failure."""
    transport = HttpTransport(recorder.url)
    for number in range(10):
        _hello(transport, number)
    transport.stop()
    assert len(set(recorder.ports)) == 10


def test_kbconform_serve_keeps_a_connection_open_until_shutdown() -> None:
    command = runner.serve_command("kbconform_reference.adapter:memory", http=True)
    server = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip()
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        for number, op in enumerate(["hello", "hello", "shutdown"]):
            params = {"protocol": "harness-v1"} if op == "hello" else {}
            message = {"id": number, "op": op, "params": params}
            connection.request("POST", f"/v1/{op}", body=json.dumps(message))
            answer = connection.getresponse()
            assert json.loads(answer.read())["id"] == number
            assert answer.will_close == (op == "shutdown"), f"{op}: {answer.getheader('Connection')}"
        connection.close()
        assert server.wait(timeout=10) == 0
    finally:
        server.kill()
        server.wait()
        server.stdout.close()  # type: ignore[union-attr]
