"""ARCHITECTURE.md's import rules, held: which layer may import which, and who may reach the
kit's private modules."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "kbconform"


def imports(source: str, package: str = "") -> Iterator[str]:
    """Every module ``source`` imports, anywhere in it (inside functions too), as a dotted name;
    a relative import is resolved against ``package``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base]) if base else ".".join(parts)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _private(name: str) -> bool:
    """A private module of the kit: ``kbconform._x`` or ``kbconform.layer._x``."""
    parts = name.split(".")
    return parts[0] == "kbconform" and any(part.startswith("_") for part in parts[1:])


def _files(*where: str) -> list[Path]:
    """The modules in ``where``, but ``__main__.py`` (an entry point runs the command line)."""
    found: list[Path] = []
    for place in where:
        path = ROOT / place
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [path for path in found if path.name != "__main__.py"]


def _violations(files: list[Path], forbidden: object) -> dict[str, list[str]]:
    checks = forbidden if callable(forbidden) else None
    found = {}
    for path in files:
        bad = sorted({name for name in imports(path.read_text(encoding="utf-8")) if checks and checks(name)})
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    return found


def _starts(*prefixes: str) -> object:
    return lambda name: any(name == p or name.startswith(p + ".") for p in prefixes)


def _kit_but(*skipped: str) -> tuple[str, ...]:
    """The kit's top-level modules and packages, but ``skipped`` (paths from the root)."""
    return tuple(
        place
        for path in sorted(KIT.iterdir())
        if (path.suffix == ".py" or (path.is_dir() and path.name != "__pycache__"))
        and (place := str(path.relative_to(ROOT))) not in skipped
    )


RULES = {
    "the engine never chooses the transport": (("kbconform/conformance",), _starts("kbconform.harness")),
    "the kit never imports the reference": (("kbconform",), _starts("kbconform_reference")),
    "nothing imports the command line": (
        (*_kit_but("kbconform/cli"), "suites", "reference_impl", "harnesses"),
        lambda name: name in ("kbconform.cli",) or name.startswith("kbconform.cli."),
    ),
    "suites, the reference, the runner and harnesses use the kit's public names": (
        ("suites", "reference_impl", "harnesses", "kbconform/runner"),
        lambda name: _private(name) and not name.startswith("kbconform.runner."),  # the runner's own
    ),
    "the profile registry is standard library only": (
        ("kbconform/profiles/__init__.py", "kbconform/profiles/_registry.py"),
        lambda name: (
            name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("kbconform.profiles")
        ),
    ),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_every_module_keeps_the_import_rule(rule: str) -> None:
    """No module in the rule's places imports what the rule forbids."""
    places, forbidden = RULES[rule]
    assert _violations(_files(*places), forbidden) == {}


def test_the_import_rules_find_a_forbidden_import(tmp_path: Path) -> None:
    """Control: each rule finds an import it forbids, at module level or inside a function, and
    a relative import is resolved."""
    source = (
        "import kbconform.harness\n"
        "def f():\n    from kbconform_reference import adapter\n"
        "from kbconform.contract._json import plain\n"
        "from kbconform import cli\n"
        "import numpy\n"
    )
    names = set(imports(source))
    assert {"kbconform.harness", "kbconform_reference", "kbconform.contract._json", "kbconform.cli"} <= names
    for rule, (_, forbidden) in RULES.items():
        assert any(forbidden(name) for name in names), rule  # type: ignore[operator]
    assert "kbconform.profiles._registry" in set(imports("from ._registry import x", "kbconform.profiles"))
