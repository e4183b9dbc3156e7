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
fails in the child, where the run reports it).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
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


def _child(request: dict[str, Any]) -> None:
    """Run one pytest session as asked, in this forked child; never returns."""
    code = 3
    try:
        os.setsid()
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
        os._exit(code)


def main(preload: list[str]) -> None:
    for name in (*_PRELOAD, *preload):
        try:
            importlib.import_module(name)
        except Exception:  # the child imports it again, and its run reports the failure
            continue
    with contextlib.suppress(Exception):  # Hypothesis's Unicode table, derived once for every run
        from hypothesis.internal.charmap import charmap

        charmap()
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        answers.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        answers.write(json.dumps({"pid": pid}) + "\n")
        answers.flush()
        _, status = os.waitpid(pid, 0)
        answers.write(json.dumps({"exit": os.waitstatus_to_exitcode(status)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
