"""``kbconform new-adapter`` and ``kbconform new-harness``: skeletons to fill in."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbconform import __version__
from kbconform.cli._io import (
    EXIT_OK,
    UsageError,
)


def add_adapter(commands: Any) -> None:
    """``new-adapter``."""
    from kbconform.profiles import DEFAULT, names

    new = commands.add_parser(
        "new-adapter",
        help="write a working skeleton of an adapter for your backend, to fill in",
        description="Writes, into --dir, the skeleton of an adapter for the isolation profile "
        "(--isolation-profile, default tenant-namespace): NAME.py (an adapter and a backend "
        "class, every facade with its docstring, each raising a not-implemented error that names "
        "it), NAME.manifest.json (every optional capability declined with a placeholder reason "
        "to replace), pytest.ini (kbconform_adapter = NAME:factory) and "
        ".github/workflows/kbconform.yml (kbconform run as a CI gate). Then 'kbconform run "
        "--adapter NAME:factory' from that directory names the facades still to implement. "
        "Existing files are never overwritten: if one of them exists nothing is written (exit 2).",
    )
    new.add_argument("name", metavar="NAME", help="the adapter's Python module name, e.g. qdrant_adapter")
    new.add_argument(
        "--dir", default=".", metavar="PATH", help="where to write it (made if missing; default: here)"
    )
    new.add_argument(
        "--isolation-profile",
        "--profile",
        dest="isolation_profile",
        choices=names(),
        default=DEFAULT,
        metavar="PROFILE",
        help=f"the isolation profile the backend keeps ({', '.join(names())}; default: {DEFAULT}); "
        "the backend class has that profile's methods",
    )
    new.set_defaults(handler=_new_adapter)


def add_harness(commands: Any) -> None:
    """``new-harness``."""
    from kbconform.cli._harness_scaffold import LANGUAGES
    from kbconform.profiles import names

    new = commands.add_parser(
        "new-harness",
        help="write a runnable skeleton of a harness-v1 harness (Node or Python), to fill in",
        description="Writes, into --dir, a harness-v1 harness for a system in any language: NAME.mjs "
        "(--lang node) or NAME.py (--lang python), holding one method per operation of the "
        "isolation profile, each KB_NOT_IMPLEMENTED until filled in, on the kit's harness runtime "
        "copied beside it (kbharness.mjs or kbharness.py, standard library only, and "
        "harness-v1.schema.json); NAME.manifest.json (the isolation profile's manifest, every "
        "optional feature declined with a reason); and NAME.md, how to run it and what to fill in. "
        'Then \'kbconform run --harness "node NAME.mjs"\' (or "python3 NAME.py") from that '
        "directory names the operations still to implement. Existing files are never overwritten: "
        "if one of them exists nothing is written (exit 2).",
    )
    new.add_argument("name", metavar="NAME", help="the harness's file name, e.g. my_harness")
    new.add_argument("--lang", choices=sorted(LANGUAGES), required=True, help="the harness's language")
    new.add_argument(
        "--isolation-profile",
        "--profile",
        dest="isolation_profile",
        choices=names(),
        default=names()[0],
        metavar="PROFILE",
        help=f"the isolation profile the system keeps: {', '.join(names())} (default {names()[0]}); "
        "--profile is its older spelling",
    )
    new.add_argument(
        "--dir", default=".", metavar="PATH", help="where to write it (made if missing; default: here)"
    )
    new.add_argument(
        "--python",
        metavar="PATH",
        help="the interpreter that runs a Python harness, e.g. its virtualenv's .venv/bin/python "
        "(default: python3 on PATH)",
    )
    new.set_defaults(handler=_new_harness)


def _new_adapter(arguments: argparse.Namespace) -> int:
    from kbconform.cli import _scaffold

    try:
        written = _scaffold.write(arguments.name, arguments.dir, __version__, arguments.isolation_profile)
    except _scaffold.ScaffoldError as error:
        raise UsageError(str(error)) from None
    width = max(len(w.path) for w in written)
    print(f"kbconform new-adapter: wrote {len(written)} files in {arguments.dir}")
    for item in written:
        print(f"  {item.path:<{width}}  {item.what}")
    go = "" if Path(arguments.dir).resolve() == Path.cwd() else f"cd {arguments.dir} && "
    print(
        f"next: {go}kbconform run --adapter {arguments.name}:factory   (each failing test names the "
        "facade it needs; implement the first one first)\n"
        f"      mypy --strict {arguments.name}.py checks it against the protocol; the guide: "
        "docs/adapter-guide.md"
    )
    return EXIT_OK


def _new_harness(arguments: argparse.Namespace) -> int:
    from kbconform.cli import _harness_scaffold
    from kbconform.cli._scaffold import ScaffoldError

    try:
        written = _harness_scaffold.write(
            arguments.name,
            arguments.lang,
            arguments.isolation_profile,
            arguments.dir,
            __version__,
            arguments.python,
        )
    except ScaffoldError as error:
        raise UsageError(str(error)) from None
    width = max(len(w.path) for w in written)
    print(f"kbconform new-harness: wrote {len(written)} files in {arguments.dir}")
    for item in written:
        print(f"  {item.path:<{width}}  {item.what}")
    go = "" if Path(arguments.dir).resolve() == Path.cwd() else f"cd {arguments.dir} && "
    command = _harness_scaffold.command(arguments.name, arguments.lang, arguments.python)
    print(
        f'next: {go}kbconform run --harness "{command}"   (the verdict names each operation still '
        f"to implement)\n      what each operation takes and returns: schemas/harness-v1.md; "
        f"{arguments.name}.md says the rest"
    )
    return EXIT_OK
