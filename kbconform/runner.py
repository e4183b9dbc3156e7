"""Running the suites as a command: one pytest process per adapter, judged by its own report.

Each run is a separate ``python -m pytest`` in an empty working directory with an empty
configuration, installed plugins not loaded (only the kbconform plugin, and pytest-xdist when
workers are asked for), and ``PYTEST_ADDOPTS`` / ``PYTEST_PLUGINS`` removed from its
environment: the caller's pytest setup cannot leak into the verdict. The verdict comes from the
report the run writes, checked by :func:`kbconform.report.verify` and against the seed, profile
and level asked for; pytest's exit code is never trusted (an adapter can exit the process with
any code it likes).

The child runs in a process group of its own, with a deadline for the whole run; when the run
ends, is interrupted (SIGINT, SIGTERM) or overruns, the whole group is killed, so processes an
adapter started do not outlive it, and the temporary directory is removed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import queue
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kbconform.errors import ContractViolation
from kbconform.harness import GROUPS_FILE
from kbconform.report import FAILED

DEFAULT_ADAPTER = "kbconform_reference.adapter:chroma_embedded"
#: The default deadline of a whole run, in seconds.
DEFAULT_RUN_TIMEOUT = 1800.0
#: How much of a run's own output (pytest's) is kept when it is not streamed, in bytes.
OUTPUT_TAIL = 64 * 1024
#: How much of a harness's log is kept with the run's evidence, in bytes.
HARNESS_LOG_LIMIT = 4 * 1024 * 1024
_SANITIZED = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


class RunError(Exception):
    """A run that cannot start: bad options, or a missing optional dependency."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """One suite run: the verdict its report gives, the report, and what pytest printed.

    ``problems`` is empty when the report is sound (valid, complete, of the run asked for);
    otherwise the verdict is ``error``, whatever the report says.
    """

    returncode: int
    report: dict[str, Any]
    output: str
    problems: tuple[str, ...] = ()
    #: What the harness wrote on its stderr (its last HARNESS_LOG_LIMIT bytes); empty in process.
    harness_log: str = ""

    @property
    def failed(self) -> list[str]:
        return sorted(t["id"] for t in self.report.get("tests", ()) if t["status"] in FAILED)

    @property
    def verdict(self) -> str:
        """``pass`` (every test passed or was declined), ``fail``, or ``error`` (no sound report)."""
        if self.problems or not self.report:
            return "error"
        return "fail" if self.failed else "pass"


Transport = str  # "stdio" (the default), "http" or "in-process"
TRANSPORTS = ("stdio", "http", "in-process")
#: How long ``kbconform serve --http`` may take to say where it listens, in seconds.
SERVE_START_TIMEOUT = 120.0


def serve_command(adapter: str, *, http: bool = False) -> list[str]:
    """The command serving the Python adapter ``adapter`` over harness-v1 (stdio, or HTTP on a
    free port of 127.0.0.1, announced on its first line of output)."""
    return [sys.executable, "-m", "kbconform", "serve", adapter, *(["--http", "127.0.0.1:0"] if http else [])]


def run_suites(
    adapter: str | None = None,
    *,
    transport: Transport = "stdio",
    harness: str | None = None,
    harness_url: str | None = None,
    level: str | None = None,
    seed: int | None = None,
    profile: str | None = None,
    call_timeout: float | None = None,
    run_timeout: float = DEFAULT_RUN_TIMEOUT,
    workers: int = 0,
    select: Sequence[str] | None = None,
    shrink: bool = True,
    shrink_budget: float | None = None,
    extra: Sequence[str] = (),
    stream: bool = False,
    warm: Warm | None = None,
) -> Outcome:
    """Run the suites in a fresh pytest process; judge it by its report.

    The backend is the Python adapter ``adapter`` (``module:factory``), served by a child of
    that process over harness-v1 (``transport`` "stdio", or "http" on 127.0.0.1), so no adapter
    code runs where the report is written; "in-process" loads it into the pytest process, as a
    developer's own pytest run does. Or it is a harness in any language: started from the
    command ``harness``, or served at ``harness_url``. The harness's log (its stderr) is in
    ``Outcome.harness_log``.

    ``select`` (stable test ids) makes a partial run of those tests only: its report says so and
    earns no level. ``kbconform run`` never selects. ``shrink=False`` reports Hypothesis's first
    failing example unshrunk (a mutant's run, where only the verdict matters); ``shrink_budget``
    bounds the seconds one test's shrinking may take (None: the plugin's default). ``warm`` forks
    the pytest process from a warm one (:class:`Warm`) instead of starting it cold; the run is
    otherwise the same."""
    if workers and importlib.util.find_spec("xdist") is None:
        raise RunError("--workers needs pytest-xdist: pip install 'kbconform[xdist]'")
    if select is not None and not select:
        raise RunError("a partial run needs at least one test id to select")
    if not run_timeout > 0:
        raise RunError(f"the run deadline must be a positive number of seconds; got {run_timeout!r}")
    given = [value for value in (adapter, harness, harness_url) if value]
    if len(given) != 1:
        raise RunError("give exactly one of an adapter, a harness command and a harness URL")
    if transport not in TRANSPORTS:
        raise RunError(f"the transport must be one of {', '.join(TRANSPORTS)}; got {transport!r}")
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    with tempfile.TemporaryDirectory(prefix="kbconform-run-") as where, contextlib.ExitStack() as stack:
        report = Path(where) / "report.json"
        ini = Path(where) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        harness_log = Path(where) / "harness.log"
        if harness:
            harness = _from_here(harness)
        if adapter and transport == "stdio":
            harness = shlex.join(serve_command(adapter))
        elif adapter and transport == "http":
            harness_url = stack.enter_context(_served(adapter, where, harness_log))
        target = (
            f"--kbconform-adapter={adapter}"
            if adapter and transport == "in-process"
            else f"--kbconform-harness={harness}"
            if harness
            else f"--kbconform-harness-url={harness_url}"
        )
        asked = target.partition("=")[2]
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(ini),
            "--rootdir",
            where,
            "-p",
            "kbconform.pytest_plugin",
            "-p",
            "no:cacheprovider",
            target,
            *([f"--kbconform-harness-log={harness_log}"] if harness else []),
            f"--kbconform-report={report}",
            f"--kbconform-seed={seed}",
            *(["--kbconform-level", level] if level else []),
            *(["--kbconform-profile", profile] if profile else []),
            *([f"--kbconform-call-timeout={call_timeout}"] if call_timeout is not None else []),
            *(f"--kbconform-only={stable}" for stable in select or ()),
            *([] if shrink else ["--kbconform-no-shrink"]),
            *([f"--kbconform-shrink-budget={shrink_budget}"] if shrink_budget is not None else []),
            *(["-p", "xdist", "-n", str(workers)] if workers else []),
            *extra,
        ]
        env = _environment()
        groups = Path(where) / "harness-groups"
        env[GROUPS_FILE] = str(groups)
        log = Path(where) / "output.log"
        with log.open("wb") as sink:
            with _CHILDREN.lock:
                _CHILDREN.listed.add(groups)
            try:
                forked = None if warm is None or stream else warm.run(command, where, env, log, run_timeout)
                returncode, overran = forked or _supervise(
                    command, cwd=where, env=env, output=None if stream else sink, deadline=run_timeout
                )
            finally:  # the harnesses the run started end with it, however it ended
                _kill_listed(groups)
                with _CHILDREN.lock:
                    _CHILDREN.listed.discard(groups)
        output = "" if stream else _tail(log)
        data, problems = _read_report(report)
        stack.close()  # the HTTP server's log is complete once it is stopped
        kept = _tail(harness_log, HARNESS_LOG_LIMIT) if harness_log.exists() else ""
    if overran:
        problems.append(f"the run did not finish within its deadline of {run_timeout:g} s and was stopped")
    if data:
        problems += _soundness(data, adapter=asked, seed=seed, level=level, profile=profile, select=select)
    return Outcome(returncode, data, output, tuple(problems), kept)


#: How long listing one profile's suite tests may take, in seconds.
CATALOGUE_TIMEOUT = 300.0


def declared_catalogue() -> dict[str, Any]:
    """The catalogue the suites declare, as ``catalogue.json`` holds it: each built-in profile's
    suite tests collected, not run, against its maximal manifest (the plugin's
    ``--kbconform-catalogue``; every read facade and spoof mode of its manifest branch), each
    entry what its test's mark and parameters say. No backend is involved: the shipped
    catalogue is the specification a run is held to, never a run's outcome."""
    from kbconform.profiles import built_in
    from kbconform.report import catalogue_from

    with tempfile.TemporaryDirectory(prefix="kbconform-catalogue-") as where:
        ini = Path(where) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        listed = []
        for name in built_in():
            written = Path(where) / f"{name}.json"
            log = Path(where) / f"{name}.log"
            command = [
                sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", where,
                "-p", "kbconform.pytest_plugin", "-p", "no:cacheprovider", "-q",
                f"--kbconform-catalogue={written}", f"--kbconform-catalogue-profile={name}",
            ]  # fmt: skip
            with log.open("wb") as sink:
                _supervise(command, cwd=where, env=_environment(), output=sink, deadline=CATALOGUE_TIMEOUT)
            if not written.exists():
                raise RunError(f"listing the {name} suite tests failed:\n{_tail(log, 4000)}")
            listed.append({"tests": json.loads(written.read_text(encoding="utf-8"))})
    return catalogue_from(*listed)


@contextlib.contextmanager
def _served(adapter: str, where: str, log: Path) -> Iterator[str]:
    """``adapter`` served over HTTP by ``kbconform serve`` in a process group of its own; yields
    its URL, and ends the group afterwards."""
    with log.open("ab") as sink:
        process = subprocess.Popen(
            serve_command(adapter, http=True),
            cwd=where,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
            start_new_session=True,
        )
    with _CHILDREN.lock:
        _CHILDREN.groups.add(process.pid)
    try:
        lines: list[bytes] = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(SERVE_START_TIMEOUT)
        url = lines[0].decode("utf-8", errors="replace").strip() if lines else ""
        if not url.startswith("http://"):
            tail = _tail(log, 2000) if log.exists() else ""
            raise RunError(f"kbconform serve {adapter} --http did not start: {url or 'no answer'}\n{tail}")
        yield url
    finally:
        _kill_group(process.pid, grace=0.0)
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        with _CHILDREN.lock:
            _CHILDREN.groups.discard(process.pid)


def _environment() -> dict[str, str]:
    """The environment of a run's processes: the caller's directory importable (as with
    ``python -m pytest`` there, so an adapter module beside the caller is found although the
    run happens elsewhere) and named as the place :func:`kbconform.adapter.load_adapter` looks
    first, the caller's pytest settings removed."""
    from kbconform.adapter import ADAPTER_DIR

    here = str(Path.cwd())
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k not in _SANITIZED}
    env.update({"PYTHONPATH": path, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", ADAPTER_DIR: here})
    return env


def _from_here(command: str) -> str:
    """``command`` with a relative program path (``harnesses/neo/harness``) made absolute from
    the caller's directory, as a shell there would find it; the run happens elsewhere."""
    argv = shlex.split(command)
    if argv and os.sep in argv[0] and not Path(argv[0]).is_absolute():
        argv[0] = str(Path.cwd() / argv[0])
    return shlex.join(argv)


def _tail(log: Path, limit: int = OUTPUT_TAIL) -> str:
    with log.open("rb") as stream:
        stream.seek(max(0, log.stat().st_size - limit))
        return stream.read().decode("utf-8", errors="replace")


def _read_report(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The report the run wrote ({} when there is none), and why it cannot be read."""
    from kbconform.report import read

    if not path.exists():
        return {}, []
    try:
        data = read(path)
    except ContractViolation as error:
        return {}, [f"the report is not strict JSON: {problem}" for problem in error.problems]
    if not isinstance(data, dict):
        return {}, ["the report is not a JSON object"]
    return data, []


def _soundness(
    report: Mapping[str, Any],
    *,
    adapter: str,
    seed: int,
    level: str | None,
    profile: str | None,
    select: Sequence[str] | None,
) -> list[str]:
    """Why ``report`` is not the sound report of the run asked for (empty when it is)."""
    from kbconform.report import expected, redact, verify

    try:
        verify(report)
    except ContractViolation as error:
        return [f"the report is not valid evidence: {problem}" for problem in error.problems]
    # A selection is made against the whole catalogue; the run reports the ids its manifest and
    # level select of it.
    applicable = (
        None
        if select is None
        else sorted({e["id"] for e in expected(report["manifest"], level or "L4", set(select))})
    )
    asked = {
        "adapter": (report["config"]["adapter"], redact(adapter)),  # a URL's password is never shown
        "seed": (report["seed"], seed),
        "level": (report["level"], level or "L4"),
        "profile": (report["profile"], profile or report["profile"]),
        "selection": (report["execution"]["selection"], None if select is None else applicable),
    }
    return [
        f"the report's {name} is {got!r}, not {want!r}" for name, (got, want) in asked.items() if got != want
    ]


# -- supervision ------------------------------------------------------------------------------

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
            _kill_group(group)
        for path in listed:
            _kill_listed(path)


def _kill_listed(path: Path) -> None:
    """End every process group listed in ``path`` (one id per line)."""
    with contextlib.suppress(OSError):
        for line in path.read_text(encoding="utf-8").split():
            if line.isdigit():
                _kill_group(int(line))


_CHILDREN = _Children()


def _kill_group(group: int, grace: float = 0.0) -> None:
    """End every process of ``group``: SIGTERM, then SIGKILL after ``grace`` seconds."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGTERM if grace else signal.SIGKILL)
        if grace:
            threading.Event().wait(grace)
            os.killpg(group, signal.SIGKILL)


def _supervise(
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
    with _CHILDREN.lock:
        _CHILDREN.groups.add(process.pid)
    overran = False
    try:
        try:
            process.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            overran = True
            _kill_group(process.pid, grace=_GRACE)
            process.wait()
    except BaseException:
        _kill_group(process.pid, grace=0.5)
        process.wait()
        raise
    finally:
        _kill_group(process.pid)  # whatever the adapter started and left behind
        with _CHILDREN.lock:
            _CHILDREN.groups.discard(process.pid)
    return process.returncode, overran


#: Whether runs can be forked from a warm process here: fork is the platform's own way to start
#: a process only on Linux (macOS's system frameworks are not fork-safe).
WARM = sys.platform == "linux" and hasattr(os, "fork")


class Warm:
    """A warm process (``python -m kbconform._warm``) that has imported pytest and the kit once
    and forks each run from there: a run without the 2 s of starting cold. One run at a time;
    :func:`run_mutants` keeps one per job. ``preload`` names more modules to import once (the
    adapters' modules). With ``start=False`` (or where fork is unsafe) there is no warm
    process, and every run starts cold."""

    def __init__(self, preload: Sequence[str] = (), *, start: bool = True) -> None:
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        #: How many runs were forked from it.
        self.runs = 0
        if not (WARM and start):
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", "kbconform._warm", *preload],
            cwd=tempfile.gettempdir(),
            env=_environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        with _CHILDREN.lock:
            _CHILDREN.groups.add(self._process.pid)
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
        """Run the pytest ``command`` in a forked child writing to ``log``, as :func:`_supervise`
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
        with _CHILDREN.lock:
            _CHILDREN.groups.add(child)
        try:
            ended = self._answer(deadline)
            overran = ended is None and process.poll() is None
            if overran:
                _kill_group(child, grace=_GRACE)
                ended = self._answer(SERVE_START_TIMEOUT)
        except BaseException:
            _kill_group(child, grace=0.5)
            raise
        finally:
            _kill_group(child)  # whatever the adapter started and left behind
            with _CHILDREN.lock:
                _CHILDREN.groups.discard(child)
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
            _kill_group(process.pid)
            process.wait()
        with _CHILDREN.lock:
            _CHILDREN.groups.discard(process.pid)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM end every run under way (its whole process group) and then this
    process, with exit code 130 or 143, after the ``with`` blocks inside have cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        _CHILDREN.kill_all()
        raise SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# -- mutants ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MutantResult:
    """One mutant's run. ``killed_by`` lists the tests that failed (of a killer-only run: the
    named killers that failed); ``unmet`` says, for each named killer that did not fail, why."""

    name: str
    breaks: str
    killed: bool
    killed_by: list[str]
    expected: list[str]
    error: str | None = None  # the suites did not run, or gave no sound report: why
    source: str = ""
    mode: str = "killers"  # "killers": only the named killers ran; "full": every test did
    unmet: list[str] = field(default_factory=list)
    #: Why the mutant was not run (its bug cannot be reached through the transport asked for).
    not_applicable: str | None = None
    #: How long deciding it took, in seconds.
    seconds: float = 0.0


def run_mutants(
    seed: int = 0,
    workers: int = 2,
    sets: Sequence[str] = (),
    *,
    full: bool = False,
    names: Sequence[str] = (),
    transport: Transport = "stdio",
    warm: bool = True,
    variants: Sequence[Any] | None = None,
) -> list[MutantResult]:
    """Run every registered mutant (of ``sets``, and named ``names``, when given) and decide
    whether it is killed: when every test named for it fails (a smoke: when the run fails).

    By default each mutant's run selects only its named killers (a partial run); a smoke, which
    names none, runs every test. ``full`` runs every test against every mutant and reports each
    failure. A killer the catalogue lacks, or that passes, is skipped, or does not run, leaves
    the mutant alive, and ``unmet`` says which and why.

    Each job forks its runs from a warm process (:class:`Warm`) where the platform allows;
    ``warm=False`` starts every run cold (the benchmark's baseline). ``variants`` (mutants
    from :func:`kbconform.mutants.from_file`) are run instead of the installed sets."""
    from kbconform.mutants import discover
    from kbconform.report import unknown_ids

    mutants = tuple(variants) if variants is not None else discover(sets)
    if names:
        unknown = sorted(set(names) - {mutant.name for mutant in mutants})
        if unknown:
            raise RunError(f"no mutant named {', '.join(unknown)} in the sets installed")
        mutants = tuple(mutant for mutant in mutants if mutant.name in names)

    def one(mutant: Any, warm: Warm) -> MutantResult:
        named = (mutant.name, mutant.breaks)
        killers = list(mutant.killers)
        mode = "full" if full or mutant.smoke else "killers"
        if mutant.in_process_only is not None and transport != "in-process":
            why = f"in process only: {mutant.in_process_only}"
            return MutantResult(*named, False, [], killers, None, mutant.source, mode, not_applicable=why)
        strangers = unknown_ids(killers)
        if strangers:
            why = "names killers the suites' catalogue lacks: " + ", ".join(strangers)
            return MutantResult(*named, False, [], killers, why, mutant.source, mode, [why])
        outcome = run_suites(
            mutant.adapter,
            transport=transport,
            seed=seed,
            select=None if mode == "full" else killers,
            shrink=False,
            warm=warm,
        )
        if outcome.verdict == "error":
            why = "\n".join(outcome.problems) or "\n".join(outcome.output.strip().splitlines()[-5:])
            return MutantResult(*named, False, [], killers, why or "no output", mutant.source, mode)
        failed = outcome.failed
        if mutant.smoke:
            unmet = [] if outcome.verdict == "fail" else ["every test passed: a smoke must fail the run"]
        else:
            tests = {test["id"]: test for test in outcome.report["tests"]}
            unmet = [_unmet(stable, tests.get(stable)) for stable in killers if stable not in failed]
        return MutantResult(*named, not unmet, failed, killers, None, mutant.source, mode, unmet)

    modules = sorted({mutant.adapter.partition(":")[0] for mutant in mutants})
    idle: queue.Queue[Warm] = queue.Queue()

    def timed(mutant: Any) -> MutantResult:
        try:
            process = idle.get_nowait()
        except queue.Empty:
            process = Warm(modules, start=warm)
        started = time.perf_counter()
        try:
            return replace(one(mutant, process), seconds=round(time.perf_counter() - started, 2))
        finally:
            idle.put(process)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(timed, mutants))
    finally:
        while not idle.empty():
            idle.get_nowait().close()


def _unmet(stable: str, test: Mapping[str, Any] | None) -> str:
    """Why the killer ``stable`` did not kill its mutant, given its entry in the report."""
    if test is None:
        return f"{stable} did not run (the manifest or the level does not select it)"
    if test["status"] == "skip":
        return f"{stable} was skipped ({test.get('reason', 'declined')})"
    return f"{stable} {'passed' if test['status'] == 'pass' else 'did not run'}"
