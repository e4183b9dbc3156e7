"""harness-v1: the adapter protocol as JSON messages, so a backend in any language and any
process can be judged (``schemas/harness-v1.md``).

The kit's side is :class:`HarnessAdapter` over a :class:`StdioTransport` (a child process) or an
:class:`HttpTransport` (a server on 127.0.0.1); the serving side, for Python adapters, is
:class:`Dispatcher` with :func:`serve_stdio` or :func:`serve_http` (``kbconform serve``). Every
isolation profile crosses: a harness serves the operations of the profile its manifest declares
(tenant-namespace, project-pool: ``schemas/project-pool.md``, or kb-grant: ``schemas/kb-grant.md``),
each profile's by its :class:`WireTable` (``Profile.wire``).
"""

from kbconform.harness._client import (
    GROUPS_FILE,
    HTTP_ADDRESS,
    START_TIMEOUT,
    HarnessAdapter,
    HarnessBackend,
    StdioTransport,
    Transport,
    connect,
)
from kbconform.harness._http import HttpTransport
from kbconform.harness._openapi import render as render_openapi
from kbconform.harness._operations import markdown as render_operations
from kbconform.harness._server import Dispatcher, protocol_stdout, serve_http, serve_stdio
from kbconform.harness._table import Handler, Served, WireTable, done
from kbconform.harness._transcript import CannotReplay, Step, Transcript, placeless, replay, to_jsonl
from kbconform.harness._wire import OPERATIONS, PROTOCOL, HarnessBroken, RemoteError, json_form

__all__ = [
    "OPERATIONS",
    "PROTOCOL",
    "START_TIMEOUT",
    "GROUPS_FILE",
    "HTTP_ADDRESS",
    "Dispatcher",
    "HarnessAdapter",
    "HarnessBackend",
    "HarnessBroken",
    "HttpTransport",
    "RemoteError",
    "StdioTransport",
    "Transport",
    "protocol_stdout",
    "serve_http",
    "serve_stdio",
    "connect",
    "Handler",
    "Served",
    "WireTable",
    "done",
    "CannotReplay",
    "Step",
    "placeless",
    "Transcript",
    "replay",
    "to_jsonl",
    "json_form",
    "render_openapi",
    "render_operations",
]
