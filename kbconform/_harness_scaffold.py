"""``kbconform new-harness``: a runnable skeleton of a harness-v1 harness, in Node or Python.

The skeleton is three files: the harness (standard library only: it answers ``hello`` with the
manifest, opens and closes backend handles, ends on ``shutdown`` or when stdin closes, and
answers every operation of its isolation profile ``KB_NOT_IMPLEMENTED``, naming it), its
manifest (the profile's skeleton: every optional feature declined with a reason) and a README
saying how to run it and what to fill in. ``kbconform run --harness "node NAME.mjs"`` (or
``"python3 NAME.py"``) gives a verdict at once: one line per operation still to implement.
Files are written as ``kbconform new-adapter`` writes its own: all or none, never over a file.

Standard library only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kbconform._scaffold import INVALID_NAME, ScaffoldError, Written, check_name, place, skeleton_manifest

#: A profile that is not registered, or gives no manifest skeleton.
PROFILE_INVALID = "KB_SCAFFOLD_PROFILE_INVALID"

#: The languages a harness skeleton is written in: the file it is, and the command that runs it.
LANGUAGES = {"node": ("{name}.mjs", "node {name}.mjs"), "python": ("{name}.py", "python3 {name}.py")}

_NODE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")

_WHAT = {
    ".mjs": "the harness: harness-v1 on stdio; fill in each operation",
    ".py": "the harness: harness-v1 on stdio; fill in each operation",
    ".manifest.json": "what the backend declares: every optional feature declined",
    ".md": "how to run it, and what each operation must do",
}


def files(name: str, language: str, profile_name: str, version: str) -> dict[str, str]:
    """The skeleton of the harness ``name``: relative path -> text."""
    from kbconform.profiles import profile

    try:
        manifest = skeleton_manifest(profile_name, name.replace("_", "-"), name.replace("_", "-"))
    except LookupError as error:
        raise ScaffoldError(PROFILE_INVALID, str(error)) from None
    operations = list(profile(profile_name).operations)
    harness, command = (part.format(name=name) for part in LANGUAGES[language])
    template = _NODE if language == "node" else _PYTHON
    fill = {
        "@name@": name,
        "@profile@": profile_name,
        "@operations@": json.dumps(operations),
        "@command@": command,
        "@file@": harness,
        "@version@": version,
    }
    text = template
    readme = _README
    for token, value in fill.items():
        text, readme = text.replace(token, value), readme.replace(token, value)
    table = "\n".join(f"| `{op}` | not implemented yet |" for op in operations)
    return {
        harness: text,
        f"{name}.manifest.json": json.dumps(manifest, indent=2) + "\n",
        f"{name}.md": readme.replace("@table@", table),
    }


def write(name: str, language: str, profile_name: str, directory: str | Path, version: str) -> list[Written]:
    """Write the skeleton into ``directory`` (made if missing); return what was written. Raises
    :class:`ScaffoldError` for an unusable name or profile, a file that exists already (nothing
    is written), or a directory that cannot be written."""
    if language == "python":
        check_name(name)  # a script beside a module of its name would shadow it
    elif not _NODE_NAME.fullmatch(name):
        raise ScaffoldError(
            INVALID_NAME,
            "expected a file name for the harness: lower-case ASCII letters, digits, '-' and '_', "
            f"starting with a letter, at most 64 characters (e.g. my-harness); got {name!r}",
        )
    return place(files(name, language, profile_name, version), Path(directory), _WHAT)


_PYTHON = '''\
#!/usr/bin/env python3
"""@name@: a harness-v1 harness (@profile@ profile), written by `kbconform new-harness`.

It speaks harness-v1 (schemas/harness-v1.md in kbconform) on stdio: one JSON request per line
on stdin, one JSON response per line on stdout. Anything else you print goes to stderr, which
kbconform keeps as the harness log. Run the suites against it from this directory:

    kbconform run --harness "@command@"

Each operation below answers KB_NOT_IMPLEMENTED until you fill it in: the verdict gives one
line per operation still to do. Translate each to your system's own call, and add no check your
system lacks: the verdict is about your system, not this file.
"""

import json
import sys
from pathlib import Path

MANIFEST = json.loads(Path(__file__).with_name("@name@.manifest.json").read_text(encoding="utf-8"))
#: The operations of the @profile@ profile (those the manifest does not offer are never sent).
OPERATIONS = @operations@


class HarnessError(Exception):
    """An error response: a kbconform error code (KB_NOT_FOUND, KB_UNAUTHENTICATED, ...) and
    your system's message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


backends = {}  # handle -> your backend's state (a client, a collection, a tenant map, ...)


def backend_of(params):
    key = params.get("backend")
    if key not in backends:
        raise HarnessError("KB_HARNESS_REQUEST_INVALID", f"no open backend {key!r}")
    return backends[key]


def handle(op, params):
    if op == "hello":
        return {"protocol": "harness-v1", "manifest": MANIFEST}
    if op == "open":
        opened = f"b{len(backends) + 1}"
        while opened in backends:
            opened += "+"
        backends[opened] = {}  # open a fresh, empty backend of your system here
        return {"backend": opened}
    if op == "close":
        backend_of(params)
        del backends[params["backend"]]  # and release what open took
        return {}
    if op == "shutdown":
        return {}
    if op in OPERATIONS:
        backend_of(params)
        raise HarnessError("KB_NOT_IMPLEMENTED", f"no call of your system yet: fill in {op} in @file@")
    raise HarnessError("KB_HARNESS_REQUEST_INVALID", f"{op!r} is not an operation of the @profile@ profile")


def main():
    for line in sys.stdin:
        request_id, op = None, None
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                raise HarnessError("KB_HARNESS_REQUEST_INVALID", "expected {id, op, params}")
            request_id, op = request.get("id"), request["op"]
            if not isinstance(request_id, int) or request_id < 0:
                request_id = None
                raise HarnessError("KB_HARNESS_REQUEST_INVALID", "expected an integer id >= 0")
            response = {"id": request_id, "result": handle(op, request.get("params") or {})}
        except HarnessError as error:
            response = {"id": request_id, "error": {"code": error.code, "message": error.message}}
        except ValueError as error:  # not JSON
            response = {"id": None, "error": {"code": "KB_HARNESS_REQUEST_INVALID", "message": str(error)}}
        except Exception as error:  # any other failure is the harness's own
            response = {"id": request_id, "error": {"code": "KB_HARNESS_INTERNAL", "message": repr(error)}}
        print(json.dumps(response), flush=True)
        if op == "shutdown" and "result" in response:
            return


if __name__ == "__main__":
    main()
'''

_NODE = """\
#!/usr/bin/env node
// @name@: a harness-v1 harness (@profile@ profile), written by `kbconform new-harness`.
//
// It speaks harness-v1 (schemas/harness-v1.md in kbconform) on stdio: one JSON request per line
// on stdin, one JSON response per line on stdout. Log with console.error: stderr is kept as the
// harness log. Run the suites against it from this directory:
//
//     kbconform run --harness "@command@"
//
// Each operation below answers KB_NOT_IMPLEMENTED until you fill it in: the verdict gives one
// line per operation still to do. Translate each to your system's own call, and add no check
// your system lacks: the verdict is about your system, not this file.

import fs from 'node:fs';
import readline from 'node:readline';

const MANIFEST = JSON.parse(fs.readFileSync(new URL('./@name@.manifest.json', import.meta.url), 'utf8'));
// The operations of the @profile@ profile (those the manifest does not offer are never sent).
const OPERATIONS = new Set(@operations@);

class HarnessError extends Error {
  // An error response: a kbconform error code (KB_NOT_FOUND, KB_UNAUTHENTICATED, ...) and your
  // system's message.
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

const backends = new Map(); // handle -> your backend's state (a client, a collection, ...)

function backendOf(params) {
  if (!backends.has(params.backend)) {
    throw new HarnessError('KB_HARNESS_REQUEST_INVALID', `no open backend ${JSON.stringify(params.backend)}`);
  }
  return backends.get(params.backend);
}

async function handle(op, params) {
  if (op === 'hello') return { protocol: 'harness-v1', manifest: MANIFEST };
  if (op === 'open') {
    let opened = `b${backends.size + 1}`;
    while (backends.has(opened)) opened += '+';
    backends.set(opened, {}); // open a fresh, empty backend of your system here
    return { backend: opened };
  }
  if (op === 'close') {
    backendOf(params);
    backends.delete(params.backend); // and release what open took
    return {};
  }
  if (op === 'shutdown') return {};
  if (OPERATIONS.has(op)) {
    backendOf(params);
    throw new HarnessError('KB_NOT_IMPLEMENTED', `no call of your system yet: fill in ${op} in @file@`);
  }
  const unknown = `${JSON.stringify(op)} is not an operation of the @profile@ profile`;
  throw new HarnessError('KB_HARNESS_REQUEST_INVALID', unknown);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  let id = null;
  let response;
  let op = null;
  try {
    const request = JSON.parse(line);
    id = request !== null && typeof request === 'object' && Number.isInteger(request.id) && request.id >= 0
      ? request.id : null;
    if (id === null || typeof request.op !== 'string') {
      throw new HarnessError('KB_HARNESS_REQUEST_INVALID', 'expected {id (an integer >= 0), op, params}');
    }
    op = request.op;
    response = { id, result: await handle(op, request.params ?? {}) };
  } catch (error) {
    const code = error instanceof HarnessError ? error.code
      : error instanceof SyntaxError ? 'KB_HARNESS_REQUEST_INVALID' : 'KB_HARNESS_INTERNAL';
    response = { id, error: { code, message: String(error.message ?? error) } };
  }
  process.stdout.write(JSON.stringify(response) + '\\n');
  if (op === 'shutdown' && 'result' in response) break;
}
process.exit(0);
"""

_README = """\
# @name@: a kbconform harness (@profile@ profile)

Written by `kbconform new-harness` (kbconform @version@). The harness speaks harness-v1
(`schemas/harness-v1.md` in kbconform) on its stdin and stdout; the suites drive your system
through it. Run them from this directory:

    kbconform run --harness "@command@"

The first run answers every operation `KB_NOT_IMPLEMENTED`: the verdict names each operation
that a test reached, once, with how many tests ended there. Fill them in one at a time.

- **`@name@.manifest.json`** is what your system declares: its isolation profile (@profile@),
  its read facades and optional features, each declined with a reason. Offer a feature once it
  works; a declined optional feature is shown beside the level and never caps it.
- **Each operation** takes the parameters and returns the result `schemas/harness-v1.md` gives
  in its table; an error is `{"code": "KB_...", "message": ...}` with the code the protocol
  names (the suites judge codes, and check that no message names another tenant's data).
- **Translate, never add.** Each operation calls your system as a client would. A check your
  system lacks must not be added here: the verdict is about your system.
- **stdout is the protocol.** Write logs to stderr; kbconform keeps them beside the report
  (`--report`), as the harness log.

| operation | state |
|---|---|
@table@
"""
