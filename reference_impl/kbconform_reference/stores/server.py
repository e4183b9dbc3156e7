"""Start and stop a real Chroma server (``chroma run``) on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import os
import shutil
import signal
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

    Use as a context manager; :meth:`start` waits for the heartbeat (at most ``timeout``
    seconds), :meth:`stop` terminates the process by its id and removes the data directory (at
    most ``stop_timeout`` seconds for SIGTERM, then SIGKILL and as long again).

    The server is started in the caller's process group (and session), so whatever kills the
    caller's group (Ctrl-C in a terminal, a CI job's time limit, ``kill -- -PGID``) kills the
    server with it. A caller killed alone, by its process id, leaves the server running (as any
    child); the server runs in one process, with no children of its own.
    """

    host = "127.0.0.1"

    def __init__(self, timeout: float = 60.0, stop_timeout: float = 10.0) -> None:
        self.port = free_port()
        self.timeout = timeout
        self.stop_timeout = stop_timeout
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
            # No start_new_session: the server stays in the caller's process group (class docstring).
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            return self._wait_for_heartbeat(self.process)
        except BaseException:
            self.stop()
            raise

    def _wait_for_heartbeat(self, process: subprocess.Popen[bytes]) -> ChromaServer:
        deadline = time.monotonic() + self.timeout
        url = f"http://{self.host}:{self.port}/api/v2/heartbeat"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {process.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(url, timeout=1) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"chroma run did not answer {url} within {self.timeout} s: {self.log_tail()}")

    @property
    def data_dir(self) -> Path:
        """The server's data directory (``--path``), removed by :meth:`stop`."""
        return self._data

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self._log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (bounded: SIGTERM, then SIGKILL) and remove its data directory.

        A stopped server (SIGSTOP) is continued after SIGTERM so that it can act on it. Raises
        :class:`TimeoutError` only when the process outlives SIGKILL by ``stop_timeout`` seconds.
        """
        process, self.process = self.process, None
        try:
            if process is not None and process.poll() is None:
                process.terminate()
                if hasattr(signal, "SIGCONT"):  # POSIX
                    process.send_signal(signal.SIGCONT)
                try:
                    process.wait(timeout=self.stop_timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    try:
                        process.wait(timeout=self.stop_timeout)
                    except subprocess.TimeoutExpired as error:
                        raise TimeoutError(
                            f"chroma run (pid {process.pid}) still runs {self.stop_timeout} s after SIGKILL"
                        ) from error
        finally:
            shutil.rmtree(self._data, ignore_errors=True)
            self._log.unlink(missing_ok=True)

    def __enter__(self) -> ChromaServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
