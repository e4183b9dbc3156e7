"""``kbconform new-harness``: a runnable skeleton of a harness-v1 harness, in Node or Python.

The skeleton is the shape every harness of the repository has: the harness holds only its
operations, one method per operation of its isolation profile (each answering
``KB_NOT_IMPLEMENTED`` and naming itself until it is filled in) beside ``open`` and ``close``;
the protocol is the kit's harness runtime, copied beside it (``kbharness.py`` or
``kbharness.mjs``, standard library only, with ``harness-v1.schema.json``, whence it reads the
operations). Then its manifest (the profile's skeleton: every optional feature declined with a
reason) and a README saying how to run it and what to fill in. ``kbconform run --harness "node
NAME.mjs"`` (or ``"python3 NAME.py"``, or the Python ``--python`` names, a virtualenv's own)
gives a verdict at once: one line per operation still to implement. Files are written as
``kbconform new-adapter`` writes its own: all or none, never over a file.

Standard library only.
"""

from __future__ import annotations

import json
import re
import shlex
from importlib import resources
from pathlib import Path

from kbconform.cli._scaffold import INVALID_NAME, ScaffoldError, Written, check_name, place, skeleton_manifest

#: A profile that is not registered, or gives no manifest skeleton.
PROFILE_INVALID = "KB_SCAFFOLD_PROFILE_INVALID"

#: The languages a harness skeleton is written in: the file it is, and the command that runs it.
LANGUAGES = {"node": ("{name}.mjs", "node {name}.mjs"), "python": ("{name}.py", "python3 {name}.py")}

_NODE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")

#: The runtime each language's harness runs on, copied from the kit beside it.
RUNTIME = {"node": "kbharness.mjs", "python": "kbharness.py"}
SCHEMA = "harness-v1.schema.json"

_WHAT = {
    "kbharness.mjs": "the harness runtime: harness-v1 on stdio (framing, ids, handles, errors)",
    "kbharness.py": "the harness runtime: harness-v1 on stdio (framing, ids, handles, errors)",
    SCHEMA: "harness-v1's schema, whence the runtime reads the operations",
    ".mjs": "the harness: one method per operation; fill in each",
    ".py": "the harness: one method per operation; fill in each",
    ".manifest.json": "what the backend declares: every optional feature declined",
    ".md": "how to run it, and what each operation must do",
}


def command(name: str, language: str, python: str | None = None) -> str:
    """The command that runs the harness ``name`` from its directory: ``python`` (a virtualenv's
    own interpreter, say) in place of ``python3`` for a Python harness."""
    text = LANGUAGES[language][1].format(name=name)
    if python and language == "python":
        text = f"{shlex.quote(python)} {text.split(' ', 1)[1]}"
    return text


def _kit_file(*parts: str) -> str:
    """A data file the kit ships: the runtime (``_harness_runtime``) or a schema."""
    if parts[0] == "schemas":
        from kbconform._resources import data_dir

        return (data_dir("schemas") / parts[1]).read_text(encoding="utf-8")
    found = resources.files("kbconform")
    for part in parts:  # one name at a time: a Traversable's joinpath takes one on Python 3.10
        found = found.joinpath(part)
    return found.read_text(encoding="utf-8")


def _methods(language: str, operations: list[str], harness: str) -> str:
    """One method per operation, each answering KB_NOT_IMPLEMENTED and naming itself."""
    if language == "python":
        return "\n".join(
            f"    def {op}(self, backend, params):\n"
            f"        raise kbharness.not_implemented(\n"
            f'            "no call of your system yet: fill in {op} in {harness}"\n'
            f"        )\n"
            for op in operations
        )
    return "\n\n".join(
        f"    async {op}(backend, params) {{\n"
        f"        throw notImplemented('no call of your system yet: fill in {op} in {harness}');\n"
        "    },"
        for op in operations
    )


def _extra(language: str, extra: list[str]) -> str:
    """The declaration of a plug-in profile's operations the bundled schema does not name."""
    if not extra:
        return ""
    said = "Operations of the profile that harness-v1.schema.json does not name (its package adds them)."
    if language == "python":
        return f"    #: {said}\n    operations = {json.dumps(extra)}\n"
    return f"    // {said}\n    operations: {json.dumps(extra)},\n"


def files(
    name: str, language: str, profile_name: str, version: str, python: str | None = None
) -> dict[str, str]:
    """The skeleton of the harness ``name``: relative path -> text."""
    from kbconform.profiles import profile

    try:
        manifest = skeleton_manifest(profile_name, name.replace("_", "-"), name.replace("_", "-"))
    except LookupError as error:
        raise ScaffoldError(PROFILE_INVALID, str(error)) from None
    operations = list(profile(profile_name).operations)
    harness = LANGUAGES[language][0].format(name=name)
    schema = _kit_file("schemas", SCHEMA)
    named = set(json.loads(schema)["$defs"]["request"]["properties"]["op"]["enum"])
    # A plug-in profile's operations that the bundled schema does not name: served as declared.
    extra = [op for op in operations if op not in named]
    template = _NODE if language == "node" else _PYTHON
    fill = {
        "@name@": name,
        "@profile@": profile_name,
        "@methods@": _methods(language, operations, harness),
        "@extra@": _extra(language, extra),
        "@command@": command(name, language, python),
        "@file@": harness,
        "@runtime@": RUNTIME[language],
        "@version@": version,
        "@notes@": _NOTES.get(profile_name, ""),
        "@faults@": _FAULTS[language],
    }
    text = template
    readme = _README
    for token, value in fill.items():
        text, readme = text.replace(token, value), readme.replace(token, value)
    table = "\n".join(f"| `{op}` | not implemented yet |" for op in operations)
    return {
        harness: text,
        RUNTIME[language]: _kit_file("_harness_runtime", RUNTIME[language]),
        SCHEMA: schema,
        f"{name}.manifest.json": json.dumps(manifest, indent=2) + "\n",
        f"{name}.md": readme.replace("@table@", table),
    }


def write(
    name: str,
    language: str,
    profile_name: str,
    directory: str | Path,
    version: str,
    python: str | None = None,
) -> list[Written]:
    """Write the skeleton into ``directory`` (made if missing); return what was written. Raises
    :class:`ScaffoldError` for an unusable name or profile, a file that exists already (nothing
    is written), or a directory that cannot be written."""
    if name == "kbharness":
        raise ScaffoldError(INVALID_NAME, "expected a harness name other than the runtime's, kbharness")
    if language == "python":
        check_name(name)  # a script beside a module of its name would shadow it
    elif not _NODE_NAME.fullmatch(name):
        raise ScaffoldError(
            INVALID_NAME,
            "expected a file name for the harness: lower-case ASCII letters, digits, '-' and '_', "
            f"starting with a letter, at most 64 characters (e.g. my-harness); got {name!r}",
        )
    return place(files(name, language, profile_name, version, python), Path(directory), _WHAT)


_PYTHON = '''\
#!/usr/bin/env python3
"""@name@: a harness-v1 harness (@profile@ profile), written by `kbconform new-harness`.

It holds your system's operations only: the protocol (harness-v1 on stdio, schemas/harness-v1.md
in kbconform: one JSON request per line on stdin, one JSON response per line on stdout, ids,
backend handles, errors as data) is @runtime@ beside it, which reads the operations from
harness-v1.schema.json. Anything you print goes to stderr, which kbconform keeps as the harness
log. Run the suites against it from this directory:

    kbconform run --harness "@command@"

Each operation below answers KB_NOT_IMPLEMENTED until you fill it in: the verdict gives one
line per operation still to do. Translate each to your system's own call, and add no check your
system lacks: the verdict is about your system, not this file. An error is
kbharness.HarnessError(code, message), with the code the protocol names (KB_NOT_FOUND,
KB_UNAUTHENTICATED, ...); any other exception is answered KB_HARNESS_INTERNAL (or map your
system's own in error_for).
"""

import json
import sys
from pathlib import Path

import kbharness

kbharness.claim_stdout()  # import your system's library after this line: stdout is the protocol's

MANIFEST = json.loads(Path(__file__).with_name("@name@.manifest.json").read_text(encoding="utf-8"))


class Harness:
    """The @profile@ profile's operations, each called as op(backend, params) with the params
    schemas/harness-v1.md gives, returning the result object it gives."""

    manifest = MANIFEST
@extra@
    def open(self, params, handle):
        return {}  # open a fresh, empty backend of your system here (a client, a collection, ...)

    def close(self, backend):
        pass  # and release what open took

    # Store faults (feature fault-injection, declined in the manifest until offered): keep a
    # kbharness.FaultSwitch in each backend opened with params["faults"], answer
    # fault(self, backend, plan) with its set(plan), and put a kbharness.SwitchedStore in front of
    # your system's store object (@name@.md, "Store faults").

@methods@

if __name__ == "__main__":
    sys.exit(kbharness.serve(Harness(), name="@name@"))
'''

_NODE = """\
#!/usr/bin/env node
// @name@: a harness-v1 harness (@profile@ profile), written by `kbconform new-harness`.
//
// It holds your system's operations only: the protocol (harness-v1 on stdio,
// schemas/harness-v1.md in kbconform: one JSON request per line on stdin, one JSON response per
// line on stdout, ids, backend handles, errors as data) is @runtime@ beside it, which reads the
// operations from harness-v1.schema.json. Log with console.error: stderr is kept as the harness
// log. Run the suites against it from this directory:
//
//     kbconform run --harness "@command@"
//
// Each operation below answers KB_NOT_IMPLEMENTED until you fill it in: the verdict gives one
// line per operation still to do. Translate each to your system's own call, and add no check
// your system lacks: the verdict is about your system, not this file. An error is
// new HarnessError(code, message), with the code the protocol names (KB_NOT_FOUND,
// KB_UNAUTHENTICATED, ...); any other error is answered KB_HARNESS_INTERNAL (or map your
// system's own in errorFor).

import fs from 'node:fs';

import {HarnessError, claimStdout, notImplemented, serve} from './@runtime@';

claimStdout(); // load your system's library after this line: stdout is the protocol's

const MANIFEST = JSON.parse(fs.readFileSync(new URL('./@name@.manifest.json', import.meta.url), 'utf8'));

// The @profile@ profile's operations, each called as op(backend, params) with the params
// schemas/harness-v1.md gives, returning the result object it gives.
const harness = {
    manifest: MANIFEST,
@extra@
    async open(params, handle) {
        return {}; // open a fresh, empty backend of your system here (a client, a collection, ...)
    },

    async close(backend) {
        // and release what open took
    },

    // Store faults (feature fault-injection, declined in the manifest until offered): keep a
    // FaultSwitch (from @runtime@) in each backend opened with params.faults, answer
    // fault(backend, plan) with its set(plan), and put a switchedStore in front of your system's
    // store object (@name@.md, "Store faults").

@methods@
};

await serve(harness, {name: '@name@'});
"""

#: Where each language's harness finds a store-fault switch to offer fault-injection with.
_FAULTS = {
    "python": "The runtime has that switch: `kbharness.FaultSwitch` (`set(plan)` answers `fault`;\n"
    "  `consult(call)`, made before a store call, raises `kbharness.StoreFault` when the plan fails\n"
    "  it: map that to `KB_BACKEND_UNAVAILABLE` in `error_for`), and `kbharness.SwitchedStore(store,\n"
    "  switch, label)` stands in for a store object, consulting the switch before each of its\n"
    "  method calls (`harnesses/mem0/harness.py` in kbconform uses both).",
    "node": "The runtime has that switch: `FaultSwitch` from `kbharness.mjs` (`set(plan)` answers\n"
    "  `fault`; `await consult(call)`, made before a store call, throws `StoreFault` when the plan\n"
    "  fails it: map that to `KB_BACKEND_UNAVAILABLE` in `errorFor`), and `switchedStore(store,\n"
    "  fault, label)` stands in for a store object, consulting the switch before each of its\n"
    "  method calls (`harnesses/neo/calls.mjs` in kbconform consults it before each request its\n"
    "  store client sends).",
}

#: What a profile's harness author is told beside the common notes.
_NOTES = {
    "memory-scope": "- **A search that returns only what it finds relevant** (a keyword search such as\n"
    "  BM25, which leaves out the memories sharing no word with the query, or a score threshold):\n"
    '  declare `"searchReturns": "relevant"` in the manifest (`schemas/memory-scope.md`, *The\n'
    "  manifest*), or the suites count its hits against `min(limit, n)` and fail each short search.\n",
}

_README = """\
# @name@: a kbconform harness (@profile@ profile)

Written by `kbconform new-harness` (kbconform @version@). The harness speaks harness-v1
(`schemas/harness-v1.md` in kbconform) on its stdin and stdout; the suites drive your system
through it. Run them from this directory:

    kbconform run --harness "@command@"

The first run answers every operation `KB_NOT_IMPLEMENTED`: the verdict names each operation
that a test reached, once, with how many tests ended there. Fill them in one at a time.

- **`@file@`** holds your system's operations, one method each, and nothing of the protocol:
  that is **`@runtime@`**, the kit's harness runtime (standard library only), which reads the
  operations and their params from **`harness-v1.schema.json`**. Leave both as they are.
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
- **Store faults** (feature `fault-injection`, without which L2 and above are not earned): `open`
  gets `faults: true`; give the harness a `fault(backend, plan)` that sets the plan and returns
  how often the switch was consulted under the plan before, and consult it before each store
  call your system makes (wrap its database object): `{"pass": k, "fail": n}` lets k calls
  through and fails the n after them (`fail` null: every later one), as your system's store
  would fail. @faults@
@notes@
| operation | state |
|---|---|
@table@
"""
