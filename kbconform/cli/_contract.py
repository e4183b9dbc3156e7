"""The contract commands: ``validate``, ``chunk-id``, ``parse``, ``golden``, ``schemas`` and
``schema``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbconform import contract
from kbconform.cli._io import (
    EXIT_INVALID,
    EXIT_OK,
    UsageError,
    _input_name,
    _print_problems,
    _Progress,
    open_input,
    read_items,
)
from kbconform.errors import ContractViolation, Problem


def add(commands: Any) -> None:
    """The commands that check records against the contract: validate, chunk-id, parse, golden."""
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
    ids.add_argument(
        "--id-scheme",
        "--profile",
        dest="id_scheme",
        choices=("kbconform-v1", "neo-compat"),
        default="kbconform-v1",
        metavar="SCHEME",
        help="how the id is derived: kbconform-v1 (default) or neo-compat, as a manifest's "
        "idProfile says; --profile is its older spelling",
    )
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


def add_schemas(commands: Any) -> None:
    """The commands that print the schemas: schemas, schema."""
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
    schema.add_argument(
        "--operations",
        action="store_true",
        help="harness-v1 only: every profile's operations, params and results as Markdown tables",
    )
    schema.set_defaults(handler=_print_schema)


def _schema_name(name: str) -> str:
    try:
        return contract.check_name(name)
    except LookupError as error:
        raise UsageError(error.args[0]) from None


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
                    print(chunk_id(item.value, arguments.tenant, arguments.repo, arguments.id_scheme))
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
    for name in contract.schema_names():
        print(f"{name}\t{contract.load(name).get('title', '')}")
    return EXIT_OK


def _print_schema(arguments: argparse.Namespace) -> int:
    name = _schema_name(arguments.name)
    if arguments.operations:
        if name != "harness-v1" or arguments.bundled or arguments.openapi:
            raise UsageError("--operations prints harness-v1's operations: 'schema harness-v1 --operations'")
        from kbconform.harness import render_operations

        sys.stdout.write(render_operations())
    elif arguments.openapi:
        if name != "harness-v1" or arguments.bundled:
            raise UsageError("--openapi prints harness-v1's HTTP transport: 'schema harness-v1 --openapi'")
        from kbconform.harness import render_openapi

        sys.stdout.write(render_openapi())
    elif arguments.bundled:
        print(json.dumps(contract.bundled(name), indent=2, ensure_ascii=False))
    else:
        sys.stdout.write(contract.text(name))
    return EXIT_OK
