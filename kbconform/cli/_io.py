"""What every command shares: exit codes, usage errors, reading inputs and reports, refusing
an output path, and printing problems."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from kbconform.contract import Item, iter_records
from kbconform.errors import ContractViolation, Problem

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a process a closed pipe ended


class UsageError(Exception):
    """A command line that cannot be carried out; printed without a traceback, exit 2."""


def _error(message: str) -> None:
    with suppress(OSError, ValueError, AttributeError):  # no standard error to complain to
        print(f"kbconform: error: {message}", file=sys.stderr, flush=True)


def _os_error(error: OSError, what: str | None = None, verb: str = "cannot write") -> str:
    """One line for an input or output that failed: what, and the system's reason."""
    reason = error.strerror or str(error)
    if what is None and error.filename is not None:
        what = repr(str(error.filename))
    return f"{verb} {what}: {reason}" if what else reason


def _silence_stdout() -> bool:
    """Point standard output at the null device if writing to it fails; True if it did.

    Python flushes standard output once more at exit; without this, a broken pipe or a full
    disk would end the process with "Exception ignored" and a traceback after the real error.
    """
    try:
        sys.stdout.flush()
        return False
    except (OSError, ValueError):
        pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError):
        pass
    return True


def _input_name(path: str) -> str:
    return "standard input" if path == "-" else repr(path)


@contextmanager
def open_input(path: str) -> Iterator[IO[bytes]]:
    """Standard input for ``-``, else the file, as bytes (decoded line by line by the reader).

    A missing, unreadable or closed input is a usage error.
    """
    if path == "-":
        if sys.stdin is None or sys.stdin.closed:
            raise UsageError("cannot read standard input: it is closed")
        yield sys.stdin.buffer
        return
    try:
        stream = Path(path).open("rb")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        raise UsageError(_os_error(error, repr(path), "cannot read")) from None
    with stream:
        yield stream


def read_items(stream: IO[bytes], name: str = "the input") -> Iterator[Item]:
    """The records of ``stream``; a line that is not UTF-8 is an error item at its own line.

    An input that fails while read (a directory, a closed descriptor) is a usage error.
    """
    try:
        yield from iter_records(stream)
    except OSError as error:
        raise UsageError(_os_error(error, name, "cannot read")) from None


def check_output_path(path: str | Path) -> None:
    """Refuse, before any work, an output path that cannot be written; raise :class:`UsageError`."""
    from kbconform.report import unwritable

    problem = unwritable(path)
    if problem is not None:
        raise UsageError(problem)


def read_report(path: str) -> Any:
    """The report at ``path`` (or standard input) read strictly by :func:`kbconform.report.read`,
    or None after printing why it is not one."""
    from kbconform.report import read

    with open_input(path) as stream:
        try:
            return read(stream)
        except OSError as error:
            raise UsageError(_os_error(error, _input_name(path), "cannot read")) from None
        except ContractViolation as error:
            print(f"{path}: {error.code}: not JSON, read strictly", file=sys.stderr)
            _print_problems(error.problems)
    return None


def _print_problems(problems: Sequence[Problem]) -> None:
    for problem in problems:
        where = problem.pointer or "(root)"
        print(f"{where}: expected {problem.expected}; got {problem.got} [{problem.keyword}]", file=sys.stderr)


class _Progress:
    """A record counter on standard error, shown only when it is a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.last = time.monotonic()

    def tick(self, count: int) -> None:
        if self.enabled and count % 1024 == 0 and time.monotonic() - self.last > 0.5:
            self.last = time.monotonic()
            print(f"\r{count:,} records...", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
