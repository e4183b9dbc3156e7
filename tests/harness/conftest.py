"""Adapters behind harness-v1 for the harness tests: served in a child process (the ``served``
fixture) or looped back to a Dispatcher in this process (``loopback``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kbconform import runner
from kbconform.adapter import load_adapter
from kbconform.harness import Dispatcher, HarnessAdapter, HttpTransport, StdioTransport
from kbconform.harness._wire import dumps

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HarnessAdapter]:
    """The adapter the test's module names in ``SERVED`` (``module:factory``) behind harness-v1,
    served from the repository root on stdio and on HTTP (each test runs on both); shutdown must
    end it with exit code 0."""
    spec: str = request.module.SERVED
    if request.param == "stdio":
        transport = StdioTransport(runner.serve_command(spec), tmp_path / "log", cwd=str(ROOT))
        adapter = HarnessAdapter(transport, 60)
        yield adapter
        adapter.shutdown()
        assert transport.process.wait(timeout=10) == 0
        return
    server = subprocess.Popen(runner.serve_command(spec, http=True), stdout=subprocess.PIPE, cwd=ROOT)
    try:
        assert server.stdout is not None
        adapter = HarnessAdapter(HttpTransport(server.stdout.readline().decode().strip()), 60)
        yield adapter
        adapter.shutdown()
        assert server.wait(timeout=10) == 0, "shutdown did not end the HTTP server"
    finally:
        server.kill()
        server.wait()
        server.stdout.close()  # type: ignore[union-attr]


class Loopback:
    """A transport that hands each message, as JSON, to a Dispatcher in this process, and keeps
    every request it carried."""

    description = "loopback"
    broken = False

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.sent: list[dict[str, Any]] = []

    def exchange(
        self, call: str, message: Mapping[str, Any], timeout: float, line: bytes | None = None
    ) -> Mapping[str, Any]:
        self.sent.append(json.loads(dumps(message) if line is None else line))
        answer: Mapping[str, Any] = json.loads(dumps(self.dispatcher.answer(self.sent[-1])))
        return answer

    def log_tail(self) -> str:
        return ""

    def stop(self) -> None:
        """Nothing runs."""

    def abandon(self) -> None:
        self.broken = True


def loopback(spec: str) -> tuple[HarnessAdapter, Loopback]:
    """The adapter ``spec`` names behind harness-v1 in this process, and the transport to it."""
    adapter, manifest = load_adapter(spec)
    transport = Loopback(Dispatcher(adapter, manifest))
    return HarnessAdapter(transport, 60), transport
