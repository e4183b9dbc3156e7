"""Supervising a run's processes: each in a process group of its own with a deadline, every
group listed so that a signal, an overrun or the run's end kills what is left of it (and the
harnesses it started), the environment they get, the tail of what they wrote; and a warm
process to fork runs from (:class:`Warm`)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: How much of a run's own output (pytest's) is kept when it is not streamed, in bytes.
OUTPUT_TAIL = 64 * 1024
#: How long ``kbconform serve --http`` may take to say where it listens, and a warm process to
#: answer a request, in seconds.
SERVE_START_TIMEOUT = 120.0
_SANITIZED = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


def environment() -> dict[str, str]:
    """The environment of a run's processes: the caller's directory importable (as with
    ``python -m pytest`` there, so an adapter module beside the caller is found although the
    run happens elsewhere) and named as the place :func:`kbconform.adapter.load_adapter` looks
    first, the caller's pytest settings removed; Hypothesis's storage in this machine's cache
    unless the caller names one (a run happens in a fresh directory: what Hypothesis derives
    once, its Unicode table, is kept between runs there; a run keeps no examples)."""
    from kbconform.adapter import ADAPTER_DIR

    here = str(Path.cwd())
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k not in _SANITIZED}
    env.update({"PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", ADAPTER_DIR: here})
    env.setdefault(_HYPOTHESIS_STORAGE, str(_cache() / "hypothesis"))
    return env


_HYPOTHESIS_STORAGE = "HYPOTHESIS_STORAGE_DIRECTORY"


def _cache() -> Path:
    """This machine's cache for the kit (as the harnesses' installs find it): ``$KBCONFORM_CACHE``,
    else ``$XDG_CACHE_HOME/kbconform``, else ``~/.cache/kbconform``."""
    named = os.environ.get("KBCONFORM_CACHE")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbconform"


def tail(log: Path, limit: int = OUTPUT_TAIL) -> str:
    """The last ``limit`` bytes of ``log``, as text."""
    with log.open("rb") as stream:
        stream.seek(max(0, log.stat().st_size - limit))
        return stream.read().decode("utf-8", errors="replace")


_GRACE = 5.0


@dataclass
class _Children:
    """The process groups of the runs under way, so a signal can end them all; and the files
    where each run lists the groups of the harnesses it started (harness ``GROUPS_FILE``)."""

    groups: set[int] = field(default_factory=set)
    listed: set[Path] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kill_all(self) -> None:
        with self.lock:
            groups = list(self.groups)
            listed = list(self.listed)
        for group in groups:
            kill_group(group)
        for path in listed:
            kill_listed(path)


def kill_listed(path: Path) -> None:
    """End every process group listed in ``path`` (one id per line)."""
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8").split():
            if line.isdigit():
                kill_group(int(line))


CHILDREN = _Children()


def kill_group(group: int, grace: float = 0.0, reap: Callable[[], object] | None = None) -> None:
    """End every process of ``group``: SIGTERM, then SIGKILL to what is left after ``grace``
    seconds; no wait once none is left. ``reap`` collects the exit of the member this process
    started (its leader), which stays in the group until it is collected."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if not grace:
            os.killpg(group, signal.SIGKILL)
            return
        os.killpg(group, signal.SIGTERM)
        ends = time.monotonic() + grace
        while time.monotonic() < ends:
            threading.Event().wait(0.05)
            if reap is not None:
                reap()
            os.killpg(group, 0)  # ProcessLookupError once every process of the group has ended
        os.killpg(group, signal.SIGKILL)


def supervise(
    command: list[str], *, cwd: str, env: dict[str, str], output: Any, deadline: float
) -> tuple[int, bool]:
    """Run ``command`` in a new process group until it ends or ``deadline`` passes; kill what
    is left of the group either way. Returns the exit code and whether the deadline passed."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        start_new_session=True,
    )
    with CHILDREN.lock:
        CHILDREN.groups.add(process.pid)
    overran = False
    try:
        try:
            process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            overran = True
            kill_group(process.pid, grace=_GRACE, reap=process.poll)
            process.wait()
    except BaseException:
        kill_group(process.pid, grace=0.5, reap=process.poll)
        process.wait()
        raise
    finally:
        kill_group(process.pid)  # whatever the adapter started and left behind
        with CHILDREN.lock:
            CHILDREN.groups.discard(process.pid)
    return process.returncode, overran


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM end every run under way (its whole process group) and then this
    process, with exit code 130 or 143, after the ``with`` blocks inside have cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        CHILDREN.kill_all()
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


#: Whether runs can be forked from a warm process here: fork is the platform's own way to start
#: a process only on Linux (macOS's system frameworks are not fork-safe).
WARM = sys.platform == "linux" and hasattr(os, "fork")


class Warm:
    """A warm process (``python -m kbconform.runner._warm``) that has imported pytest and the kit
    once and forks each run from there: a run without the 2 s of starting cold. The installed
    libraries a run imports (a store's client) are imported there after it, for the next. One
    run at a time; :func:`~kbconform.runner.run_mutants` keeps one per job. ``preload`` names more
    modules to import once (the adapters' modules). With ``start=False`` (or where fork is
    unsafe) there is no warm process, and every run starts cold."""

    def __init__(self, preload: Sequence[str] = (), *, start: bool = True) -> None:
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        #: How many runs were forked from it.
        self.runs = 0
        if not (WARM and start):
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kbconform.runner._warm", *preload],
            cwd=tempfile.gettempdir(),
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        with CHILDREN.lock:
            CHILDREN.groups.add(self._process.pid)
        threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True).start()

    def _read(self, answers: Any) -> None:
        with answers:
            for line in answers:
                self._answers.put(json.loads(line))
        self._answers.put(None)

    def _answer(self, timeout: float) -> dict[str, Any] | None:
        """The warm process's next answer; None when it ended or ``timeout`` passed."""
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            return None

    def run(
        self, command: list[str], cwd: str, env: dict[str, str], log: Path, deadline: float
    ) -> tuple[int, bool] | None:
        """Run the pytest ``command`` in a forked child writing to ``log``, as :func:`supervise`
        runs it cold: the exit code, and whether ``deadline`` passed (the child's group is then
        killed). None when there is no warm process (the caller starts the run cold)."""
        process = self._process
        if process is None or process.poll() is not None or command[:3] != [sys.executable, "-m", "pytest"]:
            return None
        request = {"args": command[3:], "cwd": cwd, "env": env, "output": str(log)}
        try:
            process.stdin.write(json.dumps(request) + "\n")  # type: ignore[union-attr]
            process.stdin.flush()  # type: ignore[union-attr]
        except OSError:
            return None
        started = self._answer(SERVE_START_TIMEOUT)
        if started is None:
            self.close()
            return None
        child = int(started["pid"])
        self.runs += 1
        with CHILDREN.lock:
            CHILDREN.groups.add(child)
        try:
            ended = self._answer(deadline)
            overran = ended is None and process.poll() is None
            if overran:
                kill_group(child, grace=_GRACE)
                ended = self._answer(SERVE_START_TIMEOUT)
        except BaseException:
            kill_group(child, grace=0.5)
            raise
        finally:
            kill_group(child)  # whatever the adapter started and left behind
            with CHILDREN.lock:
                CHILDREN.groups.discard(child)
        return (int(ended["exit"]) if ended else -signal.SIGKILL), overran

    def close(self) -> None:
        """End the warm process."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()  # type: ignore[union-attr]
        try:
            process.wait(timeout=_GRACE)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            process.wait()
        with CHILDREN.lock:
            CHILDREN.groups.discard(process.pid)
