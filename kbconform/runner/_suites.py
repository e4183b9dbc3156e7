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
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kbconform.harness import GROUPS_FILE, HTTP_ADDRESS
from kbconform.runner._outcome import HARNESS_LOG_LIMIT, Outcome, read_report, soundness
from kbconform.runner._request import RunError, RunRequest
from kbconform.runner._supervision import (
    CHILDREN,
    SERVE_START_TIMEOUT,
    Warm,
    environment,
    kill_group,
    kill_listed,
    supervise,
    tail,
)


def serve_command(adapter: str, *, http: bool = False) -> list[str]:
    """The command serving the Python adapter ``adapter`` over harness-v1 (stdio, or HTTP on a
    free port of 127.0.0.1, announced on its first line of output)."""
    return [sys.executable, "-m", "kbconform", "serve", adapter, *(["--http", "127.0.0.1:0"] if http else [])]


def run_suites(
    adapter: str | RunRequest | None = None, *, warm: Warm | None = None, **options: Any
) -> Outcome:
    """Run the suites in a fresh pytest process, as ``adapter`` asks (a :class:`RunRequest`, or
    the adapter and the request's other fields by name: ``run_suites("m:f", seed=3)`` is
    ``run_suites(RunRequest("m:f", seed=3))``); judge it by its report.

    The harness's log (its stderr) is in ``Outcome.harness_log``. ``warm`` forks the pytest
    process from a warm one (:class:`Warm`) instead of starting it cold; the run is otherwise
    the same."""
    if not isinstance(adapter, RunRequest):
        adapter = RunRequest(adapter, **options)
    elif options:
        raise RunError(f"give a run request or its fields, not both; got {', '.join(sorted(options))}")
    seed = random.SystemRandom().randrange(2**32) if adapter.seed is None else adapter.seed
    request = adapter.with_seed(seed)
    with tempfile.TemporaryDirectory(prefix="kbconform-run-") as where, contextlib.ExitStack() as stack:
        report = Path(where) / "report.json"
        harness_log = Path(where) / "harness.log"
        harness, harness_url = request.harness, request.harness_url
        if harness:
            harness = _from_here(harness)
        if request.adapter and request.transport == "stdio":
            harness = shlex.join(serve_command(request.adapter))
        elif request.adapter and request.transport == "http":
            served = serve_command(request.adapter, http=True)
            harness_url = stack.enter_context(_served(served, {}, where, harness_log))
        elif harness and request.transport == "http":  # the harness serves HTTP where it is told
            listen = {HTTP_ADDRESS: "127.0.0.1:0"}
            harness_url = stack.enter_context(_served(shlex.split(harness), listen, where, harness_log))
            harness = None
        target = (
            f"--kbconform-adapter={request.adapter}"
            if request.adapter and request.transport == "in-process"
            else f"--kbconform-harness={harness}"
            if harness
            else f"--kbconform-harness-url={harness_url}"
        )
        asked = target.partition("=")[2]
        command = [
            *_pytest(where),
            target,
            *([f"--kbconform-harness-log={harness_log}"] if harness else []),
            f"--kbconform-report={report}",
            *_options(request),
        ]
        deadline = request.run_timeout
        env = environment()
        groups = Path(where) / "harness-groups"
        env[GROUPS_FILE] = str(groups)
        log = Path(where) / "output.log"
        with log.open("wb") as sink:
            with CHILDREN.lock:
                CHILDREN.listed.add(groups)
            try:
                forked = None
                if warm is not None and not request.stream:
                    forked = warm.run(command, where, env, log, deadline)
                returncode, overran = forked or supervise(
                    command, cwd=where, env=env, output=None if request.stream else sink, deadline=deadline
                )
            finally:  # the harnesses the run started end with it, however it ended
                kill_listed(groups)
                with CHILDREN.lock:
                    CHILDREN.listed.discard(groups)
        output = "" if request.stream else tail(log)
        data, problems = read_report(report)
        stack.close()  # the HTTP server's log is complete once it is stopped
        kept = tail(harness_log, HARNESS_LOG_LIMIT) if harness_log.exists() else ""
    if overran:
        problems.append(f"the run did not finish within its deadline of {deadline:g} s and was stopped")
    elif not data and not problems:
        problems.append(f"the run wrote no report (pytest exited {returncode})")
    if data:
        problems += soundness(
            data,
            adapter=asked,
            seed=seed,
            level=request.level,
            profile=request.profile,
            select=request.select,
        )
    return Outcome(returncode, data, output, tuple(problems), kept)


def _pytest(where: str) -> list[str]:
    """A pytest run in the empty directory ``where``, with an empty configuration, the kbconform
    plugin and no cache."""
    ini = Path(where) / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", where,
        "-p", "kbconform.pytest_plugin", "-p", "no:cacheprovider",
    ]  # fmt: skip


def _options(request: RunRequest) -> list[str]:
    """The plugin's options (and pytest's) for ``request``, its seed chosen."""
    return [
        f"--kbconform-seed={request.seed}",
        *(["--kbconform-level", request.level] if request.level else []),
        *(["--kbconform-profile", request.profile] if request.profile else []),
        *([f"--kbconform-call-timeout={request.call_timeout}"] if request.call_timeout is not None else []),
        *(f"--kbconform-only={stable}" for stable in request.select or ()),
        *([] if request.shrink else ["--kbconform-no-shrink"]),
        *([] if request.shrink_budget is None else [f"--kbconform-shrink-budget={request.shrink_budget}"]),
        *(["-p", "xdist", "-n", str(request.workers)] if request.workers else []),
        *request.extra,
    ]


#: How long listing one profile's suite tests may take, in seconds.
CATALOGUE_TIMEOUT = 300.0


def declared_catalogue(profiles: Iterable[str] | None = None) -> dict[str, Any]:
    """The catalogue the suites of ``profiles`` (default: the built-in ones) declare, as
    ``catalogue.json`` holds it: each profile's suite tests collected, not run, against its
    maximal manifest (the plugin's ``--kbconform-catalogue``; every read facade and spoof mode
    of its manifest branch), each entry what its test's mark and parameters say. No backend is
    involved: the shipped catalogue (and a plug-in's own) is the specification a run is held
    to, never a run's outcome."""
    from kbconform.profiles import built_in
    from kbconform.report import catalogue_from

    with tempfile.TemporaryDirectory(prefix="kbconform-catalogue-") as where:
        listed = []
        for name in built_in() if profiles is None else profiles:
            written = Path(where) / f"{name}.json"
            log = Path(where) / f"{name}.log"
            command = [
                *_pytest(where), "-q",
                f"--kbconform-catalogue={written}", f"--kbconform-catalogue-profile={name}",
            ]  # fmt: skip
            with log.open("wb") as sink:
                supervise(command, cwd=where, env=environment(), output=sink, deadline=CATALOGUE_TIMEOUT)
            if not written.exists():
                raise RunError(f"listing the {name} suite tests failed:\n{tail(log, 4000)}")
            listed.append({"tests": json.loads(written.read_text(encoding="utf-8"))})
    return catalogue_from(*listed)


@contextlib.contextmanager
def _served(command: list[str], env: Mapping[str, str], where: str, log: Path) -> Iterator[str]:
    """A harness serving HTTP, started from ``command`` (with ``env`` added to its environment)
    in a process group of its own: ``kbconform serve --http``, or a harness told where by
    :data:`HTTP_ADDRESS`. Yields the URL it prints first, and ends the group afterwards."""
    with log.open("ab") as sink:
        process = subprocess.Popen(
            command,
            cwd=where,
            env={**environment(), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
            start_new_session=True,
        )
    with CHILDREN.lock:
        CHILDREN.groups.add(process.pid)
    try:
        lines: list[bytes] = []
        reader = threading.Thread(target=lambda: lines.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(SERVE_START_TIMEOUT)
        url = lines[0].decode("utf-8", errors="replace").strip() if lines else ""
        if not url.startswith("http://"):
            said = tail(log, 2000) if log.exists() else ""
            raise RunError(f"{shlex.join(command)} did not start serving HTTP: {url or 'no answer'}\n{said}")
        yield url
    finally:
        kill_group(process.pid, grace=0.0)
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        with CHILDREN.lock:
            CHILDREN.groups.discard(process.pid)


def _from_here(command: str) -> str:
    """``command`` with a relative program path (``harnesses/neo/harness``) made absolute from
    the caller's directory, as a shell there would find it; the run happens elsewhere."""
    argv = shlex.split(command)
    if argv and os.sep in argv[0] and not Path(argv[0]).is_absolute():
        argv[0] = str(Path.cwd() / argv[0])
    return shlex.join(argv)
