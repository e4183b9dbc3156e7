"""The ``kbconform`` command line.

Exit codes: 0 all good, 1 something was invalid (or a check failed), 2 usage error (or an input
or output that cannot be read or written), 141 standard output closed early (a broken pipe,
as a shell reports a process killed by SIGPIPE), 130 interrupted (SIGINT), 143 terminated
(SIGTERM) while running the suites.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from kbconform import __version__
from kbconform._levels import LEVELS
from kbconform.contract import _schemas, iter_records
from kbconform.contract._jsonio import Item
from kbconform.errors import ContractViolation, Problem

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A command line that cannot be carried out; printed without a traceback, exit 2."""


def _bracketed(argv: list[str]) -> list[str]:
    """``argv`` with each ``--only`` id the shell split at its spaces joined again: a value with
    more ``[`` than ``]`` takes the words after it up to the one that closes it, so
    ``--only closed-01[ingest by None]`` unquoted is the id ``closed-01[ingest by None]``."""
    joined: list[str] = []
    words = iter(argv)
    for word in words:
        joined.append(word)
        if word == "--only" or word.startswith("--only="):
            if word == "--only":
                following = next(words, None)
                if following is None:
                    break
                joined.append(following)
            while joined[-1].count("[") > joined[-1].count("]"):
                more = next(words, None)
                if more is None:
                    break
                joined[-1] += " " + more
    return joined


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = _parser()
    arguments = parser.parse_args(_bracketed(list(sys.argv[1:] if argv is None else argv)))
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kbconform",
        description="Prove that a multi-tenant knowledge base keeps its tenants apart. The main job "
        "is 'kbconform run': the conformance suites against your adapter (--adapter MODULE:FACTORY) "
        "or harness (--harness COMMAND), a verdict per level; 'kbconform new-adapter NAME' writes "
        "an adapter to start from, 'kbconform new-harness NAME' a harness in Node or Python. The "
        "other commands validate records against the contract.",
    )
    parser.add_argument("--version", action="version", version=f"kbconform {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    _add_run(commands)
    _add_new_adapter(commands)
    _add_new_harness(commands)

    validate = commands.add_parser(
        "validate",
        help="validate JSONL or a JSON array against a schema",
        description="Validate records (JSON Lines, or one JSON array) against a kbconform schema. "
        "Prints one line per problem as LINE:POINTER: message, then a summary.",
    )
    validate.add_argument(
        "--schema", required=True, metavar="NAME", help="schema name (see 'kbconform schemas')"
    )
    validate.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="input file, or - for standard input"
    )
    validate.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    validate.set_defaults(handler=_validate)

    ids = commands.add_parser(
        "chunk-id",
        help="print the stored id of each parsed-chunk-v1 record",
        description="Read parsed-chunk-v1 records (JSONL or a JSON array) and print the id the server "
        "gives each one under (tenant, repo), one per line. Problems go to stderr as LINE:POINTER: message.",
    )
    ids.add_argument("--profile", choices=("kbconform-v1", "neo-compat"), default="kbconform-v1")
    ids.add_argument("--tenant", required=True, help="the server's tenant id (from the principal)")
    ids.add_argument("--repo", required=True, help="the server's repository slug")
    ids.add_argument(
        "file", nargs="?", default="-", metavar="FILE", help="input file, or - for standard input"
    )
    ids.set_defaults(handler=_chunk_ids)

    parse = commands.add_parser(
        "parse",
        help="turn a workspace into parsed-chunk-v1 records",
        description="Scan a workspace with the source/parser registry and print its parsed-chunk-v1 "
        "records as canonical JSON Lines (pipe them into 'kbconform chunk-id'). Problems go to "
        "stderr as POINTER: message, exit 1.",
    )
    parse.add_argument("workspace", metavar="WORKSPACE", help="the workspace directory")
    parse.add_argument("--tenant", required=True, help="the tenant id the records claim")
    parse.add_argument("--repo", required=True, help="the repository slug the records claim")
    parse.add_argument(
        "--root-kind", default="bare-repo", choices=("bare-repo", "neo-workspace", "external-source")
    )
    parse.add_argument(
        "--config", metavar="FILE", help="registry configuration (TOML); default: the default registry"
    )
    parse.set_defaults(handler=_parse)

    golden = commands.add_parser(
        "golden",
        help="check or update the golden workspace fixtures",
        description="'check' regenerates every golden file from its workspace and prints a diff of "
        "the first differing records (exit 1 on any difference); 'update' rewrites them.",
    )
    golden.add_argument("action", choices=("check", "update"))
    golden.add_argument(
        "--dir",
        metavar="DIR",
        help="the fixture directory (holding workspaces.json); default: the shipped one",
    )
    golden.set_defaults(handler=_golden)

    verify = commands.add_parser(
        "verify",
        help="check a report against the installed suites; --replay reruns it",
        description="Proves that REPORT is well-formed evidence from the installed suites: strict "
        "JSON within size and depth bounds, a valid report-v1 with a valid manifest, the installed "
        "suite version and test-list hash, exactly the tests its manifest and level select (none "
        "missing, none added, none repeated, none recorded as missing), each in its catalogued "
        "suite and level, and level verdicts that follow from the test statuses. It cannot prove "
        "that the tests ran or that the statuses are true: a report is a claim. --replay makes it "
        "evidence: it reruns the report's tests with its adapter, seed, profile and level, checks "
        "that the adapter declares the same manifest, and fails when any outcome differs. "
        "Exit 0 valid (and replayed alike), 1 rejected or replayed differently, 2 unreadable.",
    )
    verify.add_argument("report", metavar="REPORT", help="a JSON report from 'kbconform run --report'")
    verify.add_argument(
        "--replay",
        action="store_true",
        help="rerun the report's tests against its adapter and compare every outcome",
    )
    _add_limits(verify)
    verify.set_defaults(handler=_verify)

    replay = commands.add_parser(
        "replay",
        help="send a failing test's transcript to a backend again and compare every response",
        description="Reads a transcript: a failing test's harness-v1 exchanges from a report "
        "(--test ID chooses the test; a report with one failing test with a transcript needs none) "
        "or a JSON Lines file (--save writes one). Sends each request to the backend again, with "
        "the backend handles it gives now, and compares each response with the recorded one "
        "(server clock stamps aside), naming each that differs. Exit 0 when the failure "
        "reproduces: the last response, the one the failing test's check rests on, is as recorded "
        "(the recorded message says what the contract expected); 1 when it differs; 2 when the "
        "transcript or the command line is unusable.",
    )
    replay.add_argument(
        "transcript", metavar="TRANSCRIPT", help="a report (JSON) or a transcript (JSON Lines)"
    )
    replay.add_argument(
        "--test", metavar="ID", help="the failing test of the report whose transcript to replay"
    )
    replay.add_argument("--save", metavar="PATH", help="write the transcript as JSON Lines here")
    target = replay.add_mutually_exclusive_group()
    target.add_argument("--harness", metavar="CMD", help="the harness-v1 harness to start (stdio)")
    target.add_argument("--url", metavar="URL", help="a harness-v1 server on http://127.0.0.1:PORT")
    target.add_argument(
        "--adapter", metavar="MODULE:FACTORY", help="a Python adapter, served over harness-v1"
    )
    replay.add_argument(
        "--call-timeout",
        type=_positive,
        default=60.0,
        metavar="SECONDS",
        help="deadline of each request (default 60)",
    )
    replay.set_defaults(handler=_replay_transcript)

    mutants = commands.add_parser(
        "mutants",
        help="run every mutant against the tests named to kill it; exit 1 if one survives",
        description="Runs every installed mutant set (entry-point group kbconform.mutants; the "
        "reference registers 'reference'). Each mutant is a backend with one invariant broken; it "
        "is killed when every suite test named for it (its killers) fails. By default each "
        "mutant's run selects only its killers (a partial run, which earns no level); a smoke "
        "(accept everything, reject everything) names none, runs every test and is killed when "
        "the run fails. --full runs every test against every mutant and lists all it fails. A "
        "killer that passes, is skipped, does not run or is not in the suites' catalogue leaves "
        "its mutant alive, and the output says which. Exit 0 when every mutant is killed, 1 when "
        "one survives or gives no sound report, 2 when no set can be loaded.",
    )
    mutants.add_argument("--json", metavar="PATH", help="write {'mutants': [...]} here")
    mutants.add_argument("--seed", type=int, default=0, help="seed for every run (default 0)")
    mutants.add_argument(
        "--full",
        action="store_true",
        help="run every suite test against each mutant, not only its killers (slower)",
    )
    mutants.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME",
        dest="sets",
        help="run only this mutant set (repeatable; default: every installed set)",
    )
    mutants.add_argument(
        "--mutant",
        action="append",
        default=[],
        metavar="NAME",
        dest="names",
        help="run only the mutant of this name (repeatable; default: every mutant of the sets)",
    )
    mutants.add_argument(
        "--variants",
        metavar="FILE",
        help="run the mutants a Python file lists (MUTANTS: each with name, breaks, killers and "
        "adapter, a factory of the file or a module:factory) instead of the installed sets: "
        "broken variants of your own adapter, no packaging needed",
    )
    mutants.add_argument(
        "--jobs", type=_positive_int, default=2, metavar="N", help="mutants run at once (default 2)"
    )
    mutants.add_argument(
        "--transport",
        choices=("stdio", "http", "in-process"),
        default="stdio",
        help="how the suites reach each mutant: served over harness-v1 on stdio (default) or HTTP, "
        "or loaded into the suites' process",
    )
    mutants.set_defaults(handler=_mutants)

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

    schemas = commands.add_parser("schemas", help="list the schemas")
    schemas.set_defaults(handler=_list_schemas)

    schema = commands.add_parser("schema", help="print one schema")
    schema.add_argument("name", metavar="NAME")
    schema.add_argument("--bundled", action="store_true", help="inline every cross-schema $ref")
    schema.add_argument(
        "--openapi",
        action="store_true",
        help="harness-v1 only: its HTTP transport as an OpenAPI 3.1 document, generated from the schema",
    )
    schema.set_defaults(handler=_print_schema)
    return parser


def _add_run(commands: Any) -> None:
    run = commands.add_parser(
        "run",
        help="the main job: run the conformance suites against your adapter or harness, a verdict per level",
        description="Runs the suites through pytest in a fresh process (installed pytest plugins "
        "not loaded, the caller's pytest configuration not read) and prints a table per level and "
        "suite. The verdict comes from the run's own report, never from pytest's exit code: exit 0 "
        "when every test passed or was declined, 1 on a failing test or a run without a sound "
        "report (crashed, stopped, incomplete, overran its deadline), 2 on a usage error.",
    )
    run.add_argument(
        "--adapter",
        default=None,
        metavar="MODULE:FACTORY",
        help="the Python adapter to test, served to the suites over harness-v1 by a child process "
        "(default: the reference knowledge base on Chroma embedded)",
    )
    target = run.add_mutually_exclusive_group()
    target.add_argument(
        "--harness",
        metavar="COMMAND",
        help="test the backend behind this harness-v1 harness, started from COMMAND (split as a "
        "shell would) and spoken to on its stdio; its stderr is kept beside --report",
    )
    target.add_argument(
        "--harness-url",
        metavar="URL",
        help="test the backend behind the harness-v1 server at URL (http://127.0.0.1:PORT)",
    )
    run.add_argument("--level", choices=LEVELS, help="run up to this level (default: L4, all)")
    run.add_argument("--seed", type=int, help="seed for canary data and Hypothesis")
    run.add_argument("--profile", choices=("quick", "thorough"), help="Hypothesis profile")
    run.add_argument("--report", metavar="PATH", help="write the JSON report here")
    run.add_argument("--junitxml", metavar="PATH", help="write JUnit XML here")
    run.add_argument(
        "--summary", metavar="PATH", help="write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)"
    )
    run.add_argument("--badge", metavar="PATH", help="write a shields.io endpoint badge (JSON) here")
    run.add_argument("--html", metavar="PATH", help="write a self-contained HTML report here")
    run.add_argument(
        "--sarif",
        metavar="PATH",
        help="write a SARIF 2.1.0 log here: one result per failing test, with its rule (for code "
        "scanning, e.g. github/codeql-action/upload-sarif)",
    )
    run.add_argument(
        "--only",
        action="append",
        metavar="ID",
        help="run only the tests with this stable id or glob pattern (repeatable; quote ids with "
        "spaces: --only 'leak-03[an empty $or]', --only 'leak-*'); the report says the run is "
        "partial, and it earns no level",
    )
    run.add_argument(
        "--fail-fast",
        action="store_true",
        help="stop at the first failing test (pytest's -x): the tests not reached are reported as "
        "not run, and the run earns no level",
    )
    run.add_argument(
        "--no-shrink",
        action="store_true",
        help="report the first failing example Hypothesis finds, without shrinking it (faster)",
    )
    run.add_argument(
        "--shrink-budget",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="how long Hypothesis may shrink one test's failing example (default 60); past it, the "
        "example found so far is reported, and the report says it may not be the shortest",
    )
    _add_limits(run)
    run.set_defaults(handler=_run)


def _add_new_adapter(commands: Any) -> None:
    new = commands.add_parser(
        "new-adapter",
        help="write a working skeleton of an adapter for your backend, to fill in",
        description="Writes, into --dir, the skeleton of a tenant-namespace adapter: NAME.py (an "
        "adapter and a backend class, every facade with its docstring, each raising a "
        "not-implemented error that names it), NAME.manifest.json (every optional capability "
        "declined with a reason), pytest.ini (kbconform_adapter = NAME:factory) and "
        ".github/workflows/kbconform.yml (kbconform run as a CI gate). Then 'kbconform run "
        "--adapter NAME:factory' from that directory names the facades still to implement. "
        "Existing files are never overwritten: if one of them exists nothing is written (exit 2).",
    )
    new.add_argument("name", metavar="NAME", help="the adapter's Python module name, e.g. qdrant_adapter")
    new.add_argument(
        "--dir", default=".", metavar="PATH", help="where to write it (made if missing; default: here)"
    )
    new.set_defaults(handler=_new_adapter)


def _add_new_harness(commands: Any) -> None:
    from kbconform._harness_scaffold import LANGUAGES
    from kbconform.profiles import names

    new = commands.add_parser(
        "new-harness",
        help="write a runnable skeleton of a harness-v1 harness (Node or Python), to fill in",
        description="Writes, into --dir, a harness-v1 harness for a system in any language: NAME.mjs "
        "(--lang node) or NAME.py (--lang python), holding one method per operation of the "
        "profile, each KB_NOT_IMPLEMENTED until filled in, on the kit's harness runtime copied "
        "beside it (kbharness.mjs or kbharness.py, standard library only, and "
        "harness-v1.schema.json); NAME.manifest.json (the profile's manifest, every optional "
        "feature declined with a reason); and NAME.md, how to run it and what to fill in. Then "
        '\'kbconform run --harness "node NAME.mjs"\' (or "python3 NAME.py") from that directory '
        "names the operations still to implement. Existing files are never overwritten: if one "
        "of them exists nothing is written (exit 2).",
    )
    new.add_argument("name", metavar="NAME", help="the harness's file name, e.g. my_harness")
    new.add_argument("--lang", choices=sorted(LANGUAGES), required=True, help="the harness's language")
    new.add_argument(
        "--profile",
        choices=names(),
        default=names()[0],
        help=f"the isolation profile the system keeps (default {names()[0]})",
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


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds; got {text!r}")
    return value


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1; got {text!r}")
    return int(text)


def _add_limits(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--call-timeout",
        type=_positive,
        metavar="SECONDS",
        help="deadline of each call into the adapter; a call that overruns fails its test (default 60)",
    )
    command.add_argument(
        "--run-timeout",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="deadline of the whole run; a run that overruns is stopped and fails (default 1800)",
    )
    command.add_argument(
        "--workers",
        type=_positive_int,
        default=None,
        metavar="N",
        help="run the suites on N pytest-xdist processes (needs kbconform[xdist])",
    )


def _schema_name(name: str) -> str:
    try:
        return _schemas.check_name(name)
    except LookupError as error:
        raise UsageError(error.args[0]) from None


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


def _validate(arguments: argparse.Namespace) -> int:
    from kbconform.contract import explain, is_valid

    name = _schema_name(arguments.schema)
    records = invalid = 0
    progress = _Progress()
    with open_input(arguments.file) as stream:
        for item in read_items(stream, _input_name(arguments.file)):
            records += 1
            progress.tick(records)
            if item.error is not None:
                problems = item.error.problems
            elif is_valid(item.value, name):
                continue
            else:
                problems = explain(item.value, name)
            invalid += 1
            _report(arguments.format, item.line, problems)
    progress.done()
    if arguments.format == "json":
        print(json.dumps({"schema": name, "records": records, "invalid": invalid}))
    else:
        print(f"{records} records, {invalid} invalid")
    return EXIT_INVALID if invalid else EXIT_OK


def _chunk_ids(arguments: argparse.Namespace) -> int:
    from kbconform.contract import explain, is_valid
    from kbconform.identity import Principal, chunk_id

    try:
        Principal(arguments.tenant)
    except ContractViolation as error:
        raise UsageError(f"--tenant: {error.problems[0].expected}; got {arguments.tenant!r}") from None
    probe = {
        "tenantId": arguments.tenant,
        "repoSlug": arguments.repo,
        "rootKind": "bare-repo",
        "sourcePath": "a",
    }
    if not is_valid(probe, "identity-tuple-v1"):
        raise UsageError(f"--repo: not a valid repository slug: {arguments.repo!r}")
    records = invalid = 0
    with open_input(arguments.file) as stream:
        for item in read_items(stream, _input_name(arguments.file)):
            records += 1
            problems: Sequence[Problem] = ()
            if item.error is not None:
                problems = item.error.problems
            elif not is_valid(item.value, "parsed-chunk-v1"):
                problems = explain(item.value, "parsed-chunk-v1")
            else:
                try:
                    print(chunk_id(item.value, arguments.tenant, arguments.repo, arguments.profile))
                except ContractViolation as error:
                    problems = error.problems
            if problems:
                invalid += 1
                for problem in problems:
                    print(
                        f"{item.line}:{problem.pointer}: expected {problem.expected}; got {problem.got} "
                        f"[{problem.keyword}]",
                        file=sys.stderr,
                    )
    if invalid:
        print(f"{records} records, {invalid} invalid", file=sys.stderr)
    return EXIT_INVALID if invalid else EXIT_OK


def _print_problems(problems: Sequence[Problem]) -> None:
    for problem in problems:
        where = problem.pointer or "(root)"
        print(f"{where}: expected {problem.expected}; got {problem.got} [{problem.keyword}]", file=sys.stderr)


def _parse(arguments: argparse.Namespace) -> int:
    import rfc8785

    from kbconform.workspace import Config, read_config, scan

    if not Path(arguments.workspace).is_dir():
        raise UsageError(f"workspace {arguments.workspace!r} is not a directory")
    try:
        if arguments.config and not Path(arguments.config).is_file():
            raise UsageError(f"cannot read config {arguments.config!r}: no such file")
        config = read_config(arguments.config) if arguments.config else Config.default()
        records = scan(
            arguments.workspace,
            config,
            tenant_id=arguments.tenant,
            repo_slug=arguments.repo,
            root_kind=arguments.root_kind,
        )
    except ContractViolation as error:
        print(f"kbconform: {error.code}: not a valid {error.contract}", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_INVALID
    out = sys.stdout.buffer
    for record in records:
        out.write(rfc8785.dumps(record) + b"\n")
    out.flush()
    return EXIT_OK


def _golden(arguments: argparse.Namespace) -> int:
    from kbconform.workspace import golden

    try:
        fixtures = golden.fixtures(Path(arguments.dir) if arguments.dir else None)
    except FileNotFoundError as error:
        raise UsageError(f"no workspaces.json fixture list: {error}") from None
    failed = 0
    for fixture in fixtures:
        try:
            if arguments.action == "update":
                state = "updated" if golden.update(fixture) else "unchanged"
                print(f"{fixture.golden.name}: {state}")
                continue
            difference = golden.check(fixture)
        except ContractViolation as error:
            print(f"{fixture.name}: {error.code}: not a valid {error.contract}", file=sys.stderr)
            _print_problems(error.problems)
            failed += 1
            continue
        if difference:
            failed += 1
            print(difference)
        else:
            print(f"{fixture.golden.name}: ok")
    return EXIT_INVALID if failed else EXIT_OK


def _report(format: str, line: int, problems: Sequence[Problem]) -> None:
    if format == "json":
        shown = [
            {"pointer": p.pointer, "keyword": p.keyword, "expected": p.expected, "got": p.got}
            for p in problems
        ]
        print(json.dumps({"line": line, "problems": shown}, ensure_ascii=False))
        return
    for problem in problems:
        print(f"{line}:{problem.pointer}: expected {problem.expected}; got {problem.got} [{problem.keyword}]")


def _list_schemas(arguments: argparse.Namespace) -> int:
    for name in _schemas.schema_names():
        print(f"{name}\t{_schemas.load(name).get('title', '')}")
    return EXIT_OK


def _print_schema(arguments: argparse.Namespace) -> int:
    name = _schema_name(arguments.name)
    if arguments.openapi:
        if name != "harness-v1" or arguments.bundled:
            raise UsageError("--openapi prints harness-v1's HTTP transport: 'schema harness-v1 --openapi'")
        from kbconform.harness._openapi import render

        sys.stdout.write(render())
    elif arguments.bundled:
        print(json.dumps(_schemas.bundled(name), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(_schemas.text(name))
    return EXIT_OK


def _run(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports
    from kbconform import runner

    outputs = [
        arguments.report,
        arguments.junitxml,
        arguments.summary,
        arguments.badge,
        arguments.html,
        arguments.sarif,
    ]
    for path in filter(None, outputs):
        check_output_path(path)
    if arguments.adapter and (arguments.harness or arguments.harness_url):
        raise UsageError("give --adapter, --harness or --harness-url, not two of them")
    target: dict[str, Any] = (
        {"harness": arguments.harness}
        if arguments.harness
        else {"harness_url": arguments.harness_url}
        if arguments.harness_url
        else {"adapter": arguments.adapter or runner.DEFAULT_ADAPTER}
    )
    extra = [
        "-q",
        "--tb=short",
        *(["--exitfirst"] if arguments.fail_fast else []),
        *(["--junitxml", str(Path(arguments.junitxml).resolve())] if arguments.junitxml else []),
    ]
    try:
        select = reports.matching(arguments.only) if arguments.only else None
    except ContractViolation as error:
        raise UsageError(f"--only: {error}") from None
    print(f"kbconform run: {' '.join(target).replace('_', ' ')} {' '.join(target.values())}", flush=True)
    started = time.perf_counter()
    outcome = _suites(
        arguments,
        **target,
        level=arguments.level,
        seed=arguments.seed,
        profile=arguments.profile,
        select=select,
        shrink=not arguments.no_shrink,
        shrink_budget=arguments.shrink_budget,
        extra=extra,
        stream=True,
    )
    report = outcome.report
    if not report:
        print(
            f"kbconform: error: the run gave no report (pytest exited {outcome.returncode}; "
            "see its output above); no verdict",
            file=sys.stderr,
        )
        for problem in outcome.problems:
            print(f"kbconform: error: {problem}", file=sys.stderr)
        return EXIT_USAGE if outcome.returncode == 4 else EXIT_INVALID
    if arguments.report:
        reports.write(
            arguments.report, json.dumps(report, indent=2) + "\n"
        )  # keys in order: a transcript's requests as sent
        if outcome.harness_log or report["config"].get("harness"):  # an empty log says the harness was quiet
            reports.write(f"{arguments.report}.harness.log", outcome.harness_log)
    if arguments.summary:
        reports.write(arguments.summary, reports.summary(report))
    if arguments.badge:
        reports.write(arguments.badge, json.dumps(reports.badge(report)) + "\n")
    if arguments.html:
        from kbconform._html import render

        reports.write(arguments.html, render(report))
    if arguments.sarif:
        from kbconform._sarif import sarif

        reports.write(arguments.sarif, json.dumps(sarif(report), indent=2) + "\n")
    for problem in outcome.problems:
        print(f"kbconform: error: {problem}", file=sys.stderr)
    failed, unknown = outcome.failed, report["completeness"]["unknown"]
    verdict = f"{len(failed)} failing" if failed else "every test passed or was declined"
    if outcome.problems:
        verdict = f"no sound verdict ({len(outcome.problems)} problems with the run, above); " + verdict
    if unknown:
        verdict += f"; {len(unknown)} tests not in the suite's catalogue (see above)"
    print(
        f"\n{verdict}; highest level earned: {reports.earned(report) or 'none'}"
        + (f", {reports.design_line(report)}" if reports.design(report) else "")
        + f"; seed {report['seed']}; {time.perf_counter() - started:.1f} s"
    )
    print(reports.level_line(report))
    halted = reports.halted(report)
    failing = reports.failing(report)
    for call, tests in reports.not_implemented(failing):
        print(f"  NOT IMPLEMENTED {call}: {len(tests)} tests ended there ({reports.first_line(tests[0])})")
    for line in reports.failure_lines([t for t in failing if "notImplemented" not in t]):
        print(line)
    if failing and reports.unshrunk(report):
        print(f"  {reports.UNSHRUNK}")
    if halted:
        unreached = len(report["completeness"]["missing"])
        print(f"  stopped at the first failure (--fail-fast): {unreached} tests not reached")
    if target == {"adapter": runner.DEFAULT_ADAPTER}:  # a first run, against the reference
        print(
            "your own backend: 'kbconform new-adapter NAME' writes an adapter to fill in, then "
            "'kbconform run --adapter module:factory'; in another language, a harness-v1 harness: "
            "'kbconform run --harness CMD'. The guide: docs/adapter-guide.md"
        )
    return EXIT_OK if outcome.verdict == "pass" else EXIT_INVALID


def _suites(arguments: argparse.Namespace, **options: Any) -> Any:
    """Run the suites with the command's limits; an interrupted run leaves nothing behind."""
    from kbconform import runner

    try:
        with runner.interruptible():
            return runner.run_suites(
                call_timeout=arguments.call_timeout,
                run_timeout=arguments.run_timeout or runner.DEFAULT_RUN_TIMEOUT,
                workers=arguments.workers or 0,
                **options,
            )
    except runner.RunError as error:
        raise UsageError(str(error)) from None


def _verify(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports

    data = read_report(arguments.report)
    if data is None:
        return EXIT_INVALID
    try:
        reports.verify(data)
    except ContractViolation as error:
        print(f"{arguments.report}: {error.code}: rejected", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_INVALID
    manifest = data["manifest"]
    chosen = reports.selection(data)
    print(
        f"{arguments.report}: valid: suites {data['suiteVersion']} ({data['testListHash'][:19]}...), "
        f"{manifest['adapter']['name']} {manifest['adapter']['version']} on {manifest['backend']['name']} "
        f"{manifest['backend']['version']}, {len(data['tests'])} tests, highest level earned: "
        f"{reports.earned(data) or 'none'}"
        + (f", {reports.design_line(data)}" if reports.design(data) else "")
        + ("" if chosen is None else f"; partial: a run of {len(chosen)} selected tests earns no level")
    )
    return _replay(arguments, data) if arguments.replay else EXIT_OK


def _replay_transcript(arguments: argparse.Namespace) -> int:
    from kbconform import _replay as replaying
    from kbconform.harness import HarnessBroken, to_jsonl

    try:
        recorded = replaying.load(arguments.transcript, arguments.test)
    except ContractViolation as error:
        print(f"{arguments.transcript}: {error.code}: not a transcript", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_USAGE
    if arguments.save:
        from kbconform import report as reports

        reports.write(arguments.save, to_jsonl(recorded.lines))
        print(f"{arguments.save}: {len(recorded.lines)} exchanges")
    command = replaying.harness_command(arguments.harness, arguments.adapter)
    if command is None and arguments.url is None:
        if arguments.save:
            return EXIT_OK
        raise UsageError(
            "give the backend to replay against: --harness CMD, --url URL or --adapter MODULE:FACTORY"
        )
    try:
        steps, backend = replaying.replay(
            recorded, command=command, url=arguments.url, call_timeout=arguments.call_timeout
        )
    except (HarnessBroken, ContractViolation) as error:
        print(f"kbconform replay: the backend broke: {error}", file=sys.stderr)
        return EXIT_INVALID
    text, reproduced = replaying.render(recorded, steps, backend)
    print(text)
    return EXIT_OK if reproduced else EXIT_INVALID


def _replay(arguments: argparse.Namespace, claimed: dict[str, Any]) -> int:
    """Rerun the report's tests as it records them (a partial run's selection only); exit 1
    when any outcome differs."""
    from kbconform import report as reports

    adapter = claimed["config"]["adapter"]
    harness = claimed["config"].get("harness")
    target = (
        {"adapter": adapter, "transport": "in-process"}
        if harness is None
        else {"harness": harness["command"]}
        if harness["transport"] == "stdio"
        else {"harness_url": harness["url"]}
    )
    if arguments.call_timeout is None:  # the report's deadline, unless the command says otherwise
        arguments.call_timeout = claimed["execution"]["callTimeout"]
    print(
        f"replaying with adapter {adapter}, seed {claimed['seed']}, {claimed['profile']}, {claimed['level']}"
    )
    outcome = _suites(
        arguments,
        **target,
        level=claimed["level"],
        seed=claimed["seed"],
        profile=claimed["profile"],
        select=reports.selection(claimed),
        extra=["-q"],
    )
    differences = _differences(claimed, outcome.report) if outcome.report else []
    problems = [*outcome.problems, *differences]
    if not outcome.report:
        problems.insert(0, f"the replay gave no report (pytest exited {outcome.returncode})")
    if problems:
        print(
            f"{arguments.report}: KB_REPLAY_DIFFERS: the replay does not reproduce the report",
            file=sys.stderr,
        )
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    print(f"{arguments.report}: replayed: all {len(claimed['tests'])} outcomes reproduced")
    return EXIT_OK


def _differences(claimed: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    from kbconform.report import status_changes

    found: list[str] = []
    if claimed["manifest"] != replayed["manifest"]:
        changed = sorted(
            key
            for key in set(claimed["manifest"]) | set(replayed["manifest"])
            if claimed["manifest"].get(key) != replayed["manifest"].get(key)
        )
        found.append(f"the adapter now declares another manifest (differs in: {', '.join(changed)})")
    before = {test["id"]: test["status"] for test in claimed["tests"]}
    after = {test["id"]: test["status"] for test in replayed["tests"]}
    changed = status_changes(before, after)
    return found + [f"{stable}: {old} in the report, {new} now" for stable, old, new in changed]


def _mutants(arguments: argparse.Namespace) -> int:
    from kbconform import report as reports
    from kbconform import runner
    from kbconform.mutants import from_file

    if arguments.json:
        check_output_path(arguments.json)
    started = time.perf_counter()
    if arguments.variants and arguments.sets:
        raise UsageError("give --variants or --set, not both")
    try:
        variants = from_file(arguments.variants) if arguments.variants else None
        with runner.interruptible():
            results = runner.run_mutants(
                seed=arguments.seed,
                workers=arguments.jobs,
                sets=arguments.sets,
                full=arguments.full,
                names=arguments.names,
                transport=arguments.transport,
                variants=variants,
            )
    except runner.RunError as error:
        raise UsageError(str(error)) from None
    except ContractViolation as error:
        print(f"kbconform: error: {error.code}: no mutants to run", file=sys.stderr)
        _print_problems(error.problems)
        return EXIT_USAGE
    width = max(len(r.name) for r in results)
    for result in results:
        if result.error is not None:
            print(f"{result.name:<{width}}  ERROR     the suites did not run:\n{result.error}")
            continue
        if result.not_applicable is not None:
            print(f"{result.name:<{width}}  n/a       {result.not_applicable}")
            continue
        state = "killed" if result.killed else "SURVIVED"
        shown = ", ".join(result.killed_by[:4]) + (" ..." if len(result.killed_by) > 4 else "")
        print(f"{result.name:<{width}}  {state:<8}  {shown or '-'}")
        for why in result.unmet:
            print(f"{'':<{width}}  not killed: {why}")
    if arguments.json:
        data = {
            "mutants": [
                {
                    "name": r.name,
                    "set": r.source,
                    "breaks": r.breaks,
                    "mode": r.mode,
                    "killers": r.expected,
                    "killed": r.killed,
                    "killed_by": r.killed_by,
                    "unmet": r.unmet,
                    "seconds": r.seconds,
                    **({"error": r.error} if r.error is not None else {}),
                    **({"notApplicable": r.not_applicable} if r.not_applicable is not None else {}),
                }
                for r in results
            ]
        }
        reports.write(arguments.json, json.dumps(data, indent=2) + "\n")
    survivors = [r.name for r in results if not r.killed and r.not_applicable is None]
    skipped = len(results) - len(survivors) - sum(r.killed for r in results)
    how = (
        "every test against each" if arguments.full else "each against its killers; smokes against every test"
    )
    alone = f", {skipped} in process only (not applicable through {arguments.transport})" if skipped else ""
    print(
        f"\n{sum(r.killed for r in results)} of {len(results) - skipped} mutants killed{alone} ({how}); "
        f"{time.perf_counter() - started:.1f} s"
    )
    return EXIT_OK if not survivors else EXIT_INVALID


def _new_adapter(arguments: argparse.Namespace) -> int:
    from kbconform import _scaffold

    try:
        written = _scaffold.write(arguments.name, arguments.dir, __version__)
    except _scaffold.ScaffoldError as error:
        raise UsageError(str(error)) from None
    width = max(len(w.path) for w in written)
    print(f"kbconform new-adapter: wrote {len(written)} files in {arguments.dir}")
    for item in written:
        print(f"  {item.path:<{width}}  {item.what}")
    go = "" if Path(arguments.dir).resolve() == Path.cwd() else f"cd {arguments.dir} && "
    print(
        f"next: {go}kbconform run --adapter {arguments.name}:factory   (each failing test names the "
        "facade it needs; implement ingest first)\n"
        f"      mypy --strict {arguments.name}.py checks it against the protocol; the guide: "
        "docs/adapter-guide.md"
    )
    return EXIT_OK


def _new_harness(arguments: argparse.Namespace) -> int:
    from kbconform import _harness_scaffold
    from kbconform._scaffold import ScaffoldError

    try:
        written = _harness_scaffold.write(
            arguments.name, arguments.lang, arguments.profile, arguments.dir, __version__, arguments.python
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


# -- inputs and outputs -------------------------------------------------------------------------

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a process a closed pipe ended
#: The largest report ``kbconform verify`` reads; a larger file is refused before it is read.


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


if __name__ == "__main__":
    sys.exit(main())
