"""The ``kbconform`` argument parser: each command group adds its own commands."""

from __future__ import annotations

import argparse

from kbconform import __version__
from kbconform.cli import _contract, _mutants, _new, _run, _serve, _verify


def parser() -> argparse.ArgumentParser:
    """The parser of every command, in the order ``kbconform --help`` lists them."""
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
    _run.add(commands)
    _new.add_adapter(commands)
    _new.add_harness(commands)
    _contract.add(commands)
    _verify.add(commands)
    _mutants.add(commands)
    _serve.add(commands)
    _contract.add_schemas(commands)
    return parser
