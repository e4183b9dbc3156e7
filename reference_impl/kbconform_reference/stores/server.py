"""Start and stop a real Chroma server (``chroma run``) on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def chroma_command() -> list[str]:
    """The ``chroma`` executable installed beside this Python (else on PATH)."""
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise FileNotFoundError("the 'chroma' command is not installed; install kbconform[chroma]")
    return [found]


class ChromaServer:
    """``chroma run --host 127.0.0.1 --port P --path DIR`` as a child process.

    Use as a context manager; :meth:`start` waits for the heartbeat (bounded), :meth:`stop`
    terminates the process by its id and removes the data directory.
    """

    host = "127.0.0.1"

    def __init__(self, timeout: float = 60.0) -> None:
        self.port = free_port()
        self.timeout = timeout
        self._data = Path(tempfile.mkdtemp(prefix="kbconform-chroma-"))
        self._log = self._data.parent / f"{self._data.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> ChromaServer:
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        command = [
            *chroma_command(),
            "run",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--path",
            str(self._data),
        ]
        with self._log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.timeout
        url = f"http://{self.host}:{self.port}/api/v2/heartbeat"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"chroma run did not answer {url} within {self.timeout} s: {self.log_tail()}")

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self._log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        shutil.rmtree(self._data, ignore_errors=True)
        self._log.unlink(missing_ok=True)

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
