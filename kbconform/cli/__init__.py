"""The ``kbconform`` command line.

Exit codes: 0 all good, 1 something was invalid (or a check failed), 2 usage error (or an input
or output that cannot be read or written), 141 standard output closed early (a broken pipe,
as a shell reports a process killed by SIGPIPE), 130 interrupted (SIGINT), 143 terminated
(SIGTERM) while running the suites.

One module per command group: ``_run`` (run, its outputs written by :mod:`.writers`),
``_verify`` (verify, replay), ``_mutants``, ``_new`` (new-adapter, new-harness), ``_serve``,
``_contract`` (validate, chunk-id, parse, golden, schemas, schema); ``_parser`` puts them
together, ``_options`` holds the options they share and ``_io`` the inputs, outputs and exit
codes.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from kbconform.cli._io import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _error,
    _os_error,
    _silence_stdout,
    check_output_path,
    open_input,
    read_items,
    read_report,
)
from kbconform.cli._options import _bracketed
from kbconform.cli._parser import parser

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "UsageError",
    "check_output_path",
    "main",
    "open_input",
    "read_items",
    "read_report",
]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    arguments = parser().parse_args(_bracketed(list(sys.argv[1:] if argv is None else argv)))
    try:
        if sys.stdout is None:
            raise UsageError("standard output is closed")
        code = int(arguments.handler(arguments))
        sys.stdout.flush()  # a failing output fails here, not at exit
        return code
    except UsageError as error:
        _error(str(error))
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into head: the output was cut short, which is no success
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:  # an output failing mid-way: a full disk, a bad descriptor
        # Inputs and files name themselves (read_items, report.write); a nameless error is the output.
        _silence_stdout()
        _error(_os_error(error, None if error.filename else "standard output"))
        return EXIT_USAGE
    except KeyboardInterrupt:  # Ctrl-C outside a run (a run ends its own children first)
        _error("interrupted")
        return EXIT_INTERRUPTED
