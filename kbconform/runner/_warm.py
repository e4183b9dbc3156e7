"""A warm process that runs pytest sessions in forked children: ``python -m kbconform.runner._warm``.

Deciding a mutant set means one short pytest run per mutant, and a cold run spends most of its
time starting an interpreter and importing pytest, Hypothesis and the kit (about 2 s of a 2.5 s
in-process run on 2 cores). This process imports them once, then forks one child per run: the
child is a fresh copy of a process that has run nothing, so each run still starts from a clean
state, only without the imports.

The protocol is JSON lines on stdin and stdout. A request is ``{"args": [pytest arguments],
"cwd": path, "env": {...}, "output": path}``; the answer is ``{"pid": N}`` once the child is
forked (its own session, so its process group is ``N``), then ``{"exit": code}`` when it ends.
One run at a time; the process ends when stdin closes. Only on Linux
(``kbconform.runner.WARM``): elsewhere the runner starts each run cold.

Modules named on the command line are imported too (best effort: a module that fails to import
fails in the child, where the run reports it). After each run, the installed libraries it
imported (modules from site-packages, such as a store's client an adapter imports when it opens
one) are imported here as well, so the next run finds them imported: a mutant set whose
backends open Chroma and Qdrant imports their clients once, not once a run. The kit's modules
and pytest's plugins are never among them (pytest rewrites a plugin's assertions as it loads
it), and an import that starts a thread ends this process (a fork of it would not be safe):
the runs after it start cold. Before each fork, what every run would derive again is derived
here (which file each loaded module is, for rendering a failure) and this process's objects
are frozen out of the children's garbage collections; where bytecode is not written, what a
run compiles (the suites, rewritten by pytest) is cached in a directory of this process's own
for the next run.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import inspect
import itertools
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: What every run imports; the kit's pytest plugin itself is left to pytest, which rewrites its
#: assertions when it loads it.
_PRELOAD = (
    "pytest",
    "hypothesis",
    "hypothesis.stateful",
    "kbconform.adapter",
    "kbconform.conformance",
    "kbconform.harness",
    "kbconform.report",
)


#: Never imported here from what a run imported: the kit (its plugin is rewritten by pytest) and
#: pytest's own packages.
_NOT_LEARNED = frozenset({"kbconform", "pytest", "_pytest", "pluggy", "xdist", "execnet"})


def _plugins(args: Iterable[str]) -> set[str]:
    """The top-level packages of the plugins ``-p NAME`` loads (pytest rewrites them)."""
    args = list(args)
    named = {value for flag, value in itertools.pairwise(args) if flag == "-p"}
    named |= {arg[2:] for arg in args if arg.startswith("-p") and len(arg) > 2}
    return {name.partition(".")[0] for name in named}


def _learned(before: set[str], args: Iterable[str]) -> list[str]:
    """The modules of installed libraries (site-packages) this run imported, in the order it
    imported them, but not the kit's, pytest's or a plugin's."""
    roots = tuple(f"{Path(sysconfig.get_paths()[key])}{os.sep}" for key in ("purelib", "platlib"))
    skipped = _NOT_LEARNED | _plugins(args)
    found = []
    for name, module in list(sys.modules.items()):
        if name in before or name.partition(".")[0] in skipped:
            continue
        where = getattr(module, "__file__", None)
        if isinstance(where, str) and where.startswith(roots):
            found.append(name)
    return found


def _child(request: dict[str, Any], learned: str, compiled: str) -> None:
    """Run one pytest session as asked, in this forked child, and write the modules of
    installed libraries it imported to ``learned``; never returns.

    Where bytecode is not written (``PYTHONDONTWRITEBYTECODE``), what the run compiles (the
    suites, their assertions rewritten by pytest, and what they import) is cached in
    ``compiled``, this warm process's own directory and no other, so that the next run reads
    it instead of compiling it again."""
    code = 3
    before = set(sys.modules)
    try:
        os.setsid()
        if sys.dont_write_bytecode:
            sys.pycache_prefix, sys.dont_write_bytecode = compiled, False
        sink = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.close(sink)
        quiet = os.open(os.devnull, os.O_RDONLY)
        os.dup2(quiet, 0)
        os.close(quiet)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = request["cwd"]  # as `python -m pytest` started there
        sys.argv = ["pytest", *request["args"]]
        import pytest

        code = int(pytest.main(list(request["args"])))
    except BaseException:  # the run's own report says what went wrong; this is the last resort
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(Exception):
            Path(learned).write_text(json.dumps(_learned(before, request["args"])), encoding="utf-8")
        os._exit(code)


def _threads() -> int:
    """This process's threads, the native ones included (a library's pool)."""
    try:
        return sum(1 for _ in Path("/proc/self/task").iterdir())
    except OSError:
        return threading.active_count()


def _import(names: Iterable[str]) -> bool:
    """Import ``names`` here (best effort); False when that started a thread."""
    threads = _threads()
    for name in names:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # a run imports it again, and its run reports the failure
            continue
    return _threads() <= threads and threading.active_count() == 1


def _settle() -> None:
    """Derive here what every run would derive again from the modules imported so far, then
    leave this process's objects out of every child's garbage collections.

    A killed mutant's run renders each failure, and pytest finds a failing line's source through
    ``inspect.getmodule``, which maps every loaded module's file the first time it is asked (a
    few hundred milliseconds with a store's client loaded): mapped here, a fork inherits the
    map. ``gc.freeze`` keeps the imported modules' objects out of a child's collections (pytest
    collects at the end of a session), which would walk all of them for nothing: they outlive
    the child, whose pages stay shared with this process."""
    with contextlib.suppress(Exception):
        inspect.getmodule(_settle.__code__, "<kbconform-warm>")  # a code object: mapped by file
    gc.freeze()


def main(preload: list[str]) -> None:
    _import((*_PRELOAD, *preload))
    with contextlib.suppress(Exception):  # Hypothesis's Unicode table, derived once for every run
        from hypothesis.internal.charmap import charmap

        charmap()
    _settle()
    answers = sys.stdout
    handle, learned = tempfile.mkstemp(prefix="kbconform-warm-", suffix=".json")
    os.close(handle)
    compiled = tempfile.mkdtemp(prefix="kbconform-warm-compiled-")
    try:
        for line in sys.stdin:
            request = json.loads(line)
            answers.flush()
            Path(learned).write_text("[]", encoding="utf-8")
            pid = os.fork()
            if pid == 0:
                _child(request, learned, compiled)
            answers.write(json.dumps({"pid": pid}) + "\n")
            answers.flush()
            _, status = os.waitpid(pid, 0)
            answers.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
            answers.flush()
            with contextlib.suppress(OSError, ValueError):
                if not _import(json.loads(Path(learned).read_text(encoding="utf-8"))):
                    break
            _settle()
    finally:
        Path(learned).unlink(missing_ok=True)
        shutil.rmtree(compiled, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
