"""Start and stop real servers on 127.0.0.1 for tests and benchmarks: a Chroma server
(``chroma run``) here, PostgreSQL in :mod:`kbconform_reference.namespace.stores.postgres_server`; both are
a :class:`ChildServer`."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

S = TypeVar("S", bound="ChildServer")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


#: The free space a memory file system must have to hold a server's directory (bytes).
SCRATCH_ROOM = 1 << 30


def scratch_dir(room: int = SCRATCH_ROOM) -> str | None:
    """A memory file system (``/dev/shm``) with ``room`` bytes free and writable, else None (the
    system's temporary directory): where a server whose data dies with it keeps its files, so
    that each write it makes durable (an fsync) costs no disk flush. None when ``$TMPDIR`` is
    set: the caller said where temporary files go."""
    if os.environ.get("TMPDIR"):
        return None
    try:
        stats = os.statvfs("/dev/shm")
    except OSError:
        return None
    if stats.f_bavail * stats.f_frsize < room or not os.access("/dev/shm", os.W_OK | os.X_OK):
        return None
    return "/dev/shm"


def chroma_command() -> list[str]:
    """The ``chroma`` executable installed beside this Python (else on PATH)."""
    beside = Path(sys.executable).with_name("chroma")
    found = str(beside) if beside.exists() else shutil.which("chroma")
    if not found:
        raise FileNotFoundError("the 'chroma' command is not installed; install kbconform[chroma]")
    return [found]


class ChildServer:
    """A server run as a child process on 127.0.0.1, from a temporary directory of its own.

    Use as a context manager: :meth:`start` (each kind's own) waits until the server answers
    (at most ``timeout`` seconds); :meth:`stop` sends each of :attr:`stop_signals` in turn, each
    waited for at most ``stop_timeout`` seconds, and removes the directory.

    The server is started in the caller's process group (and session), so whatever kills the
    caller's group (Ctrl-C in a terminal, a CI job's time limit, ``kill -- -PGID``) kills the
    server with it. A caller killed alone, by its process id, leaves the server running (as any
    child).
    """

    host = "127.0.0.1"
    #: What the server is called in errors.
    name = "server"
    #: The signals :meth:`stop` sends in turn, the last one SIGKILL.
    stop_signals: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGKILL)
    #: Whether the directory goes on a memory file system when there is one (:func:`scratch_dir`).
    in_memory = False

    def __init__(self, timeout: float = 60.0, stop_timeout: float = 10.0) -> None:
        self.port = free_port()
        self.timeout = timeout
        self.stop_timeout = stop_timeout
        where = scratch_dir() if self.in_memory else None
        self._root = Path(tempfile.mkdtemp(prefix=f"kbconform-{self.name.split()[0]}-", dir=where))
        self._log = self._root / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> Path:
        """The server's data directory, removed by :meth:`stop`."""
        return self._root / "data"

    def _spawn(self, command: list[str], **options: Any) -> subprocess.Popen[bytes]:
        """Start ``command`` with its output in the log (``options``: Popen's, a user's ids)."""
        with self._log.open("wb") as log:
            # No start_new_session: the server stays in the caller's process group (class docstring).
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **options)
        return self.process

    def _wait_until(self: S, answers: Callable[[], bool], what: str) -> S:
        """Return once ``answers()`` is True; raise when the process exits or ``timeout`` passes."""
        process = self.process
        assert process is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {process.returncode}: {self.log_tail()}")
            if answers():
                return self
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} did not answer {what} within {self.timeout} s: {self.log_tail()}")

    def log_tail(self, size: int = 2000) -> str:
        try:
            return self._log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server (bounded) and remove its directory.

        A stopped server (SIGSTOP) is continued after each signal so that it can act on it.
        Raises :class:`TimeoutError` only when the process outlives SIGKILL by ``stop_timeout``
        seconds.
        """
        process, self.process = self.process, None
        try:
            if process is not None and process.poll() is None:
                for sent in self.stop_signals:
                    process.send_signal(sent)
                    if hasattr(signal, "SIGCONT"):  # POSIX
                        process.send_signal(signal.SIGCONT)
                    try:
                        process.wait(timeout=self.stop_timeout)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                else:
                    raise TimeoutError(
                        f"{self.name} (pid {process.pid}) still runs {self.stop_timeout} s after SIGKILL"
                    )
        finally:
            shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    def start(self: S) -> S:
        raise NotImplementedError


#: What ``chroma run`` logs (its ``RUST_LOG``) unless the environment says: warnings and errors,
#: which :meth:`ChildServer.log_tail` shows when the server fails to start. At its own default,
#: every request's span was logged: 450 requests (gets by id and by clause, one-row upserts)
#: took 1.05 to 1.11 s of the server's CPU and wrote 1.25 MB, against 0.46 to 0.63 s and
#: nothing with warnings only (2 shared cores, load 13 to 15).
LOG_LEVEL = "warn"


#: How ``chroma run`` keeps the collections it has read (its collections-with-segments cache).
#: By default it keeps none: every request on a collection (a get, an upsert) first reads the
#: collection and its segments from its SQLite catalogue again. Kept (at most 1,000, each for a
#: minute), a one-id get cost the server 0.27 ms of CPU against 0.70 ms, a clause's get of 25
#: rows with embeddings 0.78 ms against 1.08 ms (2 shared cores, load 3 to 6). What it keeps
#: is what those reads return: the server forgets a collection when it is created, modified or
#: deleted through it, keeps none before its first write sets its dimension, and finds a
#: collection by its id alone, cached or not, so a collection dropped and made again under its
#: name (a new id) is read afresh (tests/reference/test_chroma_server.py).
COLLECTION_CACHE: dict[str, Any] = {
    "cache": {"lru": {"capacity": 1000}},
    "cache_ttl_secs": 60,
    "permitted_parallelism": 100,
}


class ChromaServer(ChildServer):
    """``chroma run CONFIG``, on 127.0.0.1 with a directory of its own (one process, no children).

    Its directory is on a memory file system when the machine has one with room: the server
    syncs every write to disk (about 30 ms a write on a disk, 5 to 6 times a write in memory:
    ``benchmarks/chroma_server.py``), durability that data removed at :meth:`stop` never needs.
    It logs warnings and errors only (``RUST_LOG=warn`` unless the environment sets
    ``RUST_LOG``): at its default level it writes about 2.8 kB of log for every request, which
    cost as much of its CPU as serving the request did (:data:`LOG_LEVEL`).

    It is started from a configuration file of its own (:meth:`config`): ``chroma run``'s
    defaults, and its cache of collections (:data:`COLLECTION_CACHE`).
    """

    name = "chroma run"
    in_memory = True

    def config(self) -> dict[str, Any]:
        """What ``chroma run CONFIG`` is given: the address and directory ``--host``, ``--port``
        and ``--path`` would give, its log as ``chroma run`` without a file writes it, and
        :data:`COLLECTION_CACHE`; every other setting is ``chroma run``'s default."""
        return {
            "listen_address": self.host,
            "port": self.port,
            "persist_path": str(self.data_dir),
            "stdout_tracing": True,
            "collections_with_segments_provider": COLLECTION_CACHE,
        }

    def start(self) -> ChromaServer:
        # A file's settings are merged with CHROMA_* variables of the environment; the server
        # reads none of them without a file, so none reaches it with one.
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHROMA_")}
        env = {"RUST_LOG": LOG_LEVEL, **env, "ANONYMIZED_TELEMETRY": "False"}
        config = self._root / "config.json"  # JSON is YAML, which chroma run reads
        config.write_text(json.dumps(self.config()), encoding="utf-8")
        self._spawn([*chroma_command(), "run", str(config)], env=env)
        url = f"http://{self.host}:{self.port}/api/v2/heartbeat"
        try:
            return self._wait_until(lambda: _heartbeat(url), url)
        except BaseException:
            self.stop()
            raise


def _heartbeat(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False
