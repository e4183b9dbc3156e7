"""``kbconform serve``: a Python adapter served over harness-v1, on stdio or HTTP."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kbconform.cli._io import (
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    _error,
    _print_problems,
)
from kbconform.errors import ContractViolation


def add(commands: Any) -> None:
    """``serve``."""
    serve = commands.add_parser(
        "serve",
        help="serve a Python adapter over harness-v1 (stdio, or HTTP with --http)",
        description="Loads the adapter MODULE:FACTORY and answers harness-v1 requests "
        "(schemas/harness-v1.md): one JSON request per line on stdin, one response per line on "
        "stdout (what the adapter prints goes to stderr), or with --http, POST /v1/{op} on "
        "HOST:PORT (port 0: a free one; the URL is printed on the first line of output). It ends "
        "on 'shutdown' or, on stdio, when stdin closes. kbconform run serves every adapter this "
        "way, so that no adapter code runs in the process that judges it.",
    )
    serve.add_argument("adapter", metavar="MODULE:FACTORY", help="the adapter to serve")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve over HTTP here (a loopback address)")
    serve.set_defaults(handler=_serve)


def _serve(arguments: argparse.Namespace) -> int:
    from kbconform.adapter import load_adapter
    from kbconform.harness import Dispatcher, protocol_stdout, serve_http, serve_stdio

    host, port = "", 0
    if arguments.http:
        host, _, port_text = arguments.http.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "::1") or not port_text.isdigit():
            raise UsageError(
                f"--http: expected a loopback HOST:PORT such as 127.0.0.1:0; got {arguments.http!r}"
            )
        port = int(port_text)
    protocol = protocol_stdout()  # before the adapter loads: what it prints goes to stderr
    try:
        adapter, manifest = load_adapter(arguments.adapter)
    except ContractViolation as error:
        _error(f"{error.code}: {arguments.adapter}")
        _print_problems(error.problems)
        return EXIT_USAGE
    dispatcher = Dispatcher(adapter, manifest)
    if arguments.http:

        def announce(url: str) -> None:
            protocol.write(f"{url}\n".encode())

        serve_http(dispatcher, host, port, announce)
    else:
        serve_stdio(dispatcher, sys.stdin.buffer, protocol)
    return EXIT_OK
