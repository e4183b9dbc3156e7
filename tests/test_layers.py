"""ARCHITECTURE.md's import rules, held: which layer may import which, and who may reach the
kit's private modules."""

from __future__ import annotations

import ast
import functools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "kbconform"


def _type_checking(tree: ast.AST) -> set[int]:
    """The ids of the nodes inside ``if TYPE_CHECKING:`` blocks (imports the type checker reads
    and the program never runs)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found |= {id(inner) for statement in node.body for inner in ast.walk(statement)}
    return found


def imports(source: str, package: str = "") -> Iterator[str]:
    """Every module ``source`` imports when it runs, anywhere in it (inside functions too), as a
    dotted name (not those under ``if TYPE_CHECKING:``); a relative import is resolved against
    ``package``."""
    tree = ast.parse(source)
    typing_only = _type_checking(tree)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base]) if base else ".".join(parts)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _is_private(part: str) -> bool:
    """A private name: a leading underscore, a dunder (``__version__``) aside."""
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _private(name: str) -> bool:
    """A private module or name of the kit: ``kbconform._x`` or ``kbconform.layer._x``."""
    parts = name.split(".")
    return parts[0] == "kbconform" and any(_is_private(part) for part in parts[1:])


#: The packages of the built-in profiles, each a plug-in.
PROFILES = sorted(path for path in (KIT / "profiles").iterdir() if (path / "__init__.py").is_file())


def _profile_package(name: str) -> bool:
    """A built-in profile's package or a module in it: ``kbconform.profiles.<name>`` or below."""
    parts = name.split(".")
    return (
        parts[:2] == ["kbconform", "profiles"] and len(parts) > 2 and parts[2] in {p.name for p in PROFILES}
    )


def _shared() -> tuple[str, ...]:
    """The kit's modules outside the profiles' packages."""
    return tuple(
        str(path.relative_to(ROOT))
        for path in sorted(KIT.rglob("*.py"))
        if not any(path.is_relative_to(package) for package in PROFILES)
    )


def _files(*where: str) -> list[Path]:
    """The project's modules in ``where``, but ``__main__.py`` (an entry point runs the command
    line) and what a harness installs (its library's virtualenv, its npm packages: not ours)."""
    found: list[Path] = []
    for place in where:
        path = ROOT / place
        if path.is_file():
            found.append(path)
            continue
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = [name for name in subfolders if name not in (".venv", "node_modules")]
            found += [Path(folder, name) for name in names if name.endswith(".py")]
    return sorted(path for path in found if path.name != "__main__.py")


@functools.cache
def _imports_of(path: Path) -> frozenset[str]:
    """What the module at ``path`` imports (:func:`imports`), parsed once for every rule."""
    return frozenset(imports(path.read_text(encoding="utf-8")))


def _violations(files: list[Path], forbidden: object) -> dict[str, list[str]]:
    checks = forbidden if callable(forbidden) else None
    found = {}
    for path in files:
        bad = sorted({name for name in _imports_of(path) if checks and checks(name)})
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
    "no shared module imports a profile": (_shared(), _profile_package),
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
        "from kbconform.profiles.kb_grant import model\n"
    )
    names = set(imports(source))
    assert {"kbconform.harness", "kbconform_reference", "kbconform.contract._json", "kbconform.cli"} <= names
    for rule, (_, forbidden) in RULES.items():
        assert any(forbidden(name) for name in names), rule  # type: ignore[operator]
    assert "kbconform.profiles._registry" in set(imports("from ._registry import x", "kbconform.profiles"))
    typed = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kbconform.adapter._manifest import M\n"
    )
    assert "kbconform.adapter._manifest" not in set(imports(typed))
    assert _profile_package("kbconform.profiles.kb_grant.protocol")
    assert not _profile_package("kbconform.profiles._registry")


@pytest.mark.parametrize("package", PROFILES, ids=lambda path: path.name)
def test_a_profile_reaches_the_kit_by_its_public_names_only(package: Path) -> None:
    """A built-in profile imports no private name of the kit but its own package's, as a plug-in
    does (``kbconform.profiles.kb_grant._wire`` is its own; ``kbconform.harness._wire`` is not)."""
    own = f"kbconform.profiles.{package.name}."
    assert (
        _violations(_files(str(package.relative_to(ROOT))), lambda n: _private(n) and not n.startswith(own))
        == {}
    )


#: The kit's shared core: its private modules at the top, which every layer may import. A new
#: one is added here deliberately.
SHARED_CORE = ("kbconform._capabilities", "kbconform._levels", "kbconform._resources")

#: A module at the top of the kit that is a package's: the plugin's hooks, where the pytest11
#: entry point names them.
HOMES = {"kbconform.pytest_plugin": ("kbconform", "plugin")}


def _owner(parts: tuple[str, ...]) -> tuple[str, ...]:
    """The package a module of the kit (its dotted name, split) belongs to: a built-in profile's
    package, a subpackage of the kit, or the kit itself for a module at its top."""
    if ".".join(parts) in HOMES:
        return HOMES[".".join(parts)]
    if _profile_package(".".join(parts)):
        return parts[:3]
    return parts[:2] if len(parts) > 2 else parts[:1]


def _foreign_private(name: str, owner: tuple[str, ...]) -> str:
    """The private module or name of another package ``name`` reaches from a module of
    ``owner`` (``kbconform.other._x``, or ``kbconform._x`` outside the shared core), or ``""``."""
    pieces = tuple(name.split("."))
    private = [i for i, piece in enumerate(pieces) if i and _is_private(piece)]
    if pieces[0] != "kbconform" or not private:
        return ""
    reached = pieces[: private[0] + 1]
    if ".".join(reached) in SHARED_CORE or _owner(reached) == owner:
        return ""
    return ".".join(reached)


def _foreign_privates(path: Path) -> set[tuple[str, str]]:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return {
        (str(path.relative_to(ROOT)), reached)
        for name in imports(path.read_text(encoding="utf-8"), ".".join(parts[:-1]))
        if (reached := _foreign_private(name, _owner(parts)))
    }


def test_no_module_imports_another_packages_private_names() -> None:
    """A module of the kit imports the private modules and names of its own package and the
    shared core only: never ``kbconform.other._x`` (each profile's package is its own)."""
    assert sorted(set().union(*map(_foreign_privates, sorted(KIT.rglob("*.py"))))) == []


def test_the_shared_core_is_the_kits_private_modules_at_its_top() -> None:
    """Every private module at the top of the kit is listed in the shared core, and only those."""
    modules = [*KIT.glob("*.py"), *(path.parent for path in KIT.glob("*/__init__.py"))]
    found = {f"kbconform.{path.stem}" for path in modules if _is_private(path.stem)}
    assert sorted(found) == sorted(SHARED_CORE)


def test_the_private_names_rule_finds_another_packages_private_name() -> None:
    """Control: another package's private module or name is found, from a layer, a profile or
    the top of the kit; the shared core, a dunder and a package's own are not."""
    cli, grant, top = ("kbconform", "cli"), ("kbconform", "profiles", "kb_grant"), ("kbconform",)
    assert _foreign_private("kbconform.contract._json.plain", cli) == "kbconform.contract._json"
    assert _foreign_private("kbconform.profiles._registry", grant) == "kbconform.profiles._registry"
    assert _foreign_private("kbconform.profiles.kb_grant._wire", ("kbconform", "profiles")) != ""
    assert _foreign_private("kbconform.harness._wire", top) == "kbconform.harness._wire"
    assert _foreign_private("kbconform._new", cli) == "kbconform._new"
    assert _foreign_private("kbconform._levels.LEVELS", cli) == ""
    assert _foreign_private("kbconform.__version__", cli) == ""
    assert _foreign_private("kbconform.cli.writers._json", cli) == ""
    assert _foreign_private("kbconform.profiles.kb_grant._wire", grant) == ""
    assert _owner(("kbconform", "pytest_plugin")) == ("kbconform", "plugin")


#: The most lines a module of the kit holds: past it, a module is split by job.
MODULE_LINES = 500


def _too_long_at(files: list[Path], root: Path) -> dict[str, int]:
    """The modules among ``files`` over :data:`MODULE_LINES` lines, by path under ``root``."""
    lengths = {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines()) for path in files
    }
    return {name: count for name, count in lengths.items() if count > MODULE_LINES}


def test_no_module_of_the_kit_is_over_five_hundred_lines(tmp_path: Path) -> None:
    """Every module of the kit holds at most 500 lines; the count finds one that holds more (the
    control, a module of 501 lines beside one of 500)."""
    assert _too_long_at(sorted(KIT.rglob("*.py")), ROOT) == {}
    long, short = tmp_path / "long.py", tmp_path / "short.py"
    long.write_text("x = 1\n" * (MODULE_LINES + 1), encoding="utf-8")
    short.write_text("x = 1\n" * MODULE_LINES, encoding="utf-8")
    found = {Path(name).name: count for name, count in _too_long_at([long, short], tmp_path).items()}
    assert found == {"long.py": MODULE_LINES + 1}
