"""Deadlines for Chroma in server mode: a stalled server fails calls, never hangs them.

Every call under test runs under :func:`guarded`, a deadline far above the timeouts under test
(one second): it only stops a hang from blocking the run, it does not measure speed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from kbconform.errors import BackendUnavailable
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.stores.chroma import (
    DEFAULT_HTTP_TIMEOUT,
    TIMEOUT_VARIABLE,
    ChromaStore,
    http_timeout,
)
from kbconform_reference.namespace.stores.server import ChromaServer
from tests.reference.conftest import ACME, chunk

T = TypeVar("T")

GUARD = 90.0  # seconds; stops a hang, far above every bound under test
TIMEOUT = 1.0  # the request timeout the stores under test use

posix_signals = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs POSIX job-control signals")


def guarded(call: Callable[[], T]) -> T:
    """``call()`` in a daemon thread: its result, or the exception it raised; a hang fails the test."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as error:  # handed to the test's thread
            outcome.append((False, error))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD)
    if thread.is_alive():
        pytest.fail(f"the call still ran after {GUARD} s: it hung")
    returned, value = outcome[0]
    if not returned:
        raise value
    result: T = value
    return result


@pytest.fixture
def own_server() -> Iterator[ChromaServer]:
    """A Chroma server for this test alone (it is stopped, or stopped with SIGSTOP)."""
    server = ChromaServer().start()
    process = server.process
    yield server
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGCONT)
    server.stop()


class SilentServer:
    """A TCP port on 127.0.0.1 that accepts every connection and never answers."""

    host = "127.0.0.1"

    def __init__(self) -> None:
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind((self.host, 0))
        self._listener.listen()
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._done.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.accepted.append(connection)

    def close(self) -> None:
        self._done.set()
        self._thread.join(GUARD)
        for connection in self.accepted:
            connection.close()
        self._listener.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


def _stop(pid: int) -> None:
    """SIGSTOP ``pid``, then wait (within :data:`GUARD`) until each of its threads is stopped:
    the signal is queued, and a thread running on another core stops at its next kernel entry,
    so a request sent at once could still be answered on a loaded machine. Without ``/proc``
    the signal alone."""
    os.kill(pid, signal.SIGSTOP)
    tasks = Path(f"/proc/{pid}/task")
    deadline = time.monotonic() + GUARD
    while tasks.is_dir() and time.monotonic() < deadline:
        if all(_state(task) in "tTX" for task in tasks.iterdir()):
            return
        time.sleep(0.01)


def _state(task: Path) -> str:
    """A thread's state letter from ``/proc``; ``X`` (dead) for one that ended meanwhile."""
    try:
        return (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


@posix_signals
def test_a_stopped_chroma_server_fails_reads_and_writes_with_backend_unavailable_until_continued(
    own_server: ChromaServer,
) -> None:
    """While ``chroma run`` is SIGSTOPped, get, query and ingest raise BackendUnavailable naming
    the request timeout instead of hanging; after SIGCONT the same calls answer (control)."""
    assert own_server.process is not None
    pid = own_server.process.pid
    store = ChromaStore.http(own_server.host, own_server.port, timeout=TIMEOUT)
    try:
        kb = KnowledgeBase(store)
        chunk_id = kb.ingest(ACME, [chunk("a.md", "alpha")]).ids[0]
        calls: dict[str, Callable[[], object]] = {
            "get": lambda: kb.get(ACME, chunk_id),
            "query": lambda: kb.query(ACME, "alpha"),
            "ingest": lambda: kb.ingest(ACME, [chunk("b.md", "beta")]),
        }
        _stop(pid)
        try:
            for name, call in calls.items():
                with pytest.raises(BackendUnavailable) as caught:
                    guarded(call)
                assert caught.value.operation == name
                assert f"did not answer within {TIMEOUT:g} s" in caught.value.reason, name
        finally:
            os.kill(pid, signal.SIGCONT)
        assert guarded(lambda: kb.get(ACME, chunk_id)).id == chunk_id
        assert [hit.id for hit in guarded(lambda: kb.query(ACME, "alpha"))] == [chunk_id]
        assert len(guarded(lambda: kb.ingest(ACME, [chunk("b.md", "beta")])).ids) == 1
    finally:
        store.drop()


def test_a_server_that_accepts_and_never_answers_is_backend_unavailable_when_opened(
    silent_server: SilentServer, chroma_server: ChromaServer
) -> None:
    """Opening a store on a port that accepts TCP and never replies raises BackendUnavailable
    (operation ``connect``) after the request timeout; the same on a real server opens (control)."""
    with pytest.raises(BackendUnavailable) as caught:
        guarded(lambda: ChromaStore.http(silent_server.host, silent_server.port, timeout=TIMEOUT))
    assert caught.value.operation == "connect"
    assert f"no answer within {TIMEOUT:g} s" in caught.value.reason
    assert silent_server.accepted, "the client never connected: the failure was not a silent server"

    store = guarded(lambda: ChromaStore.http(chroma_server.host, chroma_server.port, timeout=TIMEOUT))
    try:
        assert store.get().ids == ()
    finally:
        store.drop()


def test_a_server_nothing_listens_on_is_backend_unavailable_when_opened(chroma_server: ChromaServer) -> None:
    """Opening a store on a closed port raises BackendUnavailable (connect); a live port opens (control)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = int(probe.getsockname()[1])  # bound, never listening: connections are refused
        with pytest.raises(BackendUnavailable) as caught:
            guarded(lambda: ChromaStore.http("127.0.0.1", closed_port, timeout=TIMEOUT))
    assert caught.value.operation == "connect"
    guarded(lambda: ChromaStore.http(chroma_server.host, chroma_server.port, timeout=TIMEOUT)).drop()


def test_the_request_timeout_comes_from_the_argument_else_the_environment_else_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """http_timeout: an argument wins, then KBCONFORM_CHROMA_TIMEOUT, then the default; a value
    that is not a positive, finite number of seconds is refused."""
    monkeypatch.delenv(TIMEOUT_VARIABLE, raising=False)
    assert http_timeout() == DEFAULT_HTTP_TIMEOUT
    assert http_timeout(2.5) == 2.5
    monkeypatch.setenv(TIMEOUT_VARIABLE, "3")
    assert http_timeout() == 3.0
    assert http_timeout(2.5) == 2.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv(TIMEOUT_VARIABLE, bad)
        with pytest.raises(ValueError, match=TIMEOUT_VARIABLE):
            http_timeout()
    monkeypatch.delenv(TIMEOUT_VARIABLE)
    with pytest.raises(ValueError, match="timeout"):
        http_timeout(0)


@posix_signals
def test_stop_ends_a_stopped_server_and_removes_its_data(own_server: ChromaServer) -> None:
    """stop() on a SIGSTOPped server returns (SIGTERM, continued; SIGKILL if need be), the process
    has ended and its data directory is gone; the server ran before (control)."""
    process = own_server.process
    assert process is not None
    assert process.poll() is None
    data = own_server.data_dir
    assert data.is_dir()
    os.kill(process.pid, signal.SIGSTOP)
    guarded(own_server.stop)
    assert process.returncode is not None
    assert own_server.process is None
    assert not data.exists()


_CHILD = """
import sys, time
from kbconform_reference.namespace.stores.server import ChromaServer
server = ChromaServer().start()
print(server.process.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting for a parent that never reaps it, does not)."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        return state not in {"Z", "X"}
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@posix_signals
def test_killing_the_callers_process_group_kills_the_server(tmp_path: Path) -> None:
    """A process that started a ChromaServer is killed with its whole process group (SIGKILL):
    the server, in the same group, dies too; it ran before (control)."""
    log = tmp_path / "caller.log"
    with log.open("wb") as errors:
        caller = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdout=subprocess.PIPE,
            stderr=errors,
            start_new_session=True,  # the caller leads its own group, which the test kills
            env={**os.environ, "TMPDIR": str(tmp_path)},
        )
    server_pid = 0
    try:
        assert caller.stdout is not None
        line = guarded(caller.stdout.readline)
        assert line.strip().isdigit(), (line, log.read_text(errors="replace"))
        server_pid = int(line)
        assert os.getpgid(server_pid) == caller.pid
        assert _alive(server_pid)
        os.killpg(caller.pid, signal.SIGKILL)
        caller.wait(GUARD)
        deadline = time.monotonic() + GUARD
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(server_pid), f"chroma run (pid {server_pid}) outlived its process group"
    finally:
        if caller.poll() is None:
            caller.kill()
            caller.wait(GUARD)
        if caller.stdout is not None:
            caller.stdout.close()
        if server_pid and _alive(server_pid):
            os.kill(server_pid, signal.SIGKILL)
