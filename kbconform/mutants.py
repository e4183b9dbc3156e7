"""Mutant sets: broken backends that prove the suites can fail, from any installed package.

A package registers a mutant set under the entry-point group ``kbconform.mutants``; the entry
point names a sequence of mutants, each an object with these attributes:

``name``
    a unique name (lower-case words joined by ``-``);
``breaks``
    one line: what it breaks;
``killers``
    the stable suite test ids that must fail against it (empty only for a smoke);
``smoke``
    true for a backend that breaks everything: the run must fail at all;
``adapter``
    the ``module:factory`` of an adapter that serves it;
``in_process_only`` (optional)
    why its broken invariant cannot be reached behind harness-v1 (such as accepting a Python
    object as the principal); it is then run in process only, and reported as not applicable
    through a harness.

``kbconform mutants`` runs every set. The reference knowledge base registers its own
(``kbconform_reference.mutants:MUTANTS``); an adapter author registers mutants of their own
backend the same way::

    [project.entry-points."kbconform.mutants"]
    my-backend = "my_backend.mutants:MUTANTS"

or, without packaging, list them in a Python file and run ``kbconform mutants --variants
FILE`` (:func:`from_file`): each a mapping or an object with those fields, its ``adapter`` a
factory of the file (``leaky``) or any ``module:factory``.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbconform.errors import ContractViolation, Problem

GROUP = "kbconform.mutants"
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_FACTORY = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass(frozen=True, slots=True)
class MutantSpec:
    """One mutant as the kit runs it, and the set (entry point) it came from."""

    name: str
    breaks: str
    killers: tuple[str, ...]
    smoke: bool
    adapter: str
    source: str
    in_process_only: str | None = None


def _refuse(source: str, pointer: str, expected: str, got: object) -> ContractViolation:
    return ContractViolation(
        contract="mutant-set",
        problems=(Problem(pointer, "mutant", f"{expected} (mutant set {source!r})", repr(got)[:120]),),
        code="KB_MUTANTS_INVALID",
    )


def _field(mutant: object, name: str, default: object = None) -> object:
    """A mutant's field: an attribute, or a key of a mapping (a variants file may list dicts)."""
    if isinstance(mutant, Mapping):
        return mutant.get(name, default)
    return getattr(mutant, name, default)


def _spec(source: str, index: int, mutant: object, module: str | None = None) -> MutantSpec:
    """One mutant checked; with ``module``, an adapter named without one (``factory``) is
    ``module:factory``."""
    where = f"/{index}"
    name = _field(mutant, "name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _refuse(source, f"{where}/name", "a name of lower-case words joined by '-'", name)
    breaks = _field(mutant, "breaks")
    if not isinstance(breaks, str) or not breaks.strip():
        raise _refuse(source, f"{where}/breaks", "one line saying what it breaks", breaks)
    smoke = _field(mutant, "smoke", False)
    if not isinstance(smoke, bool):
        raise _refuse(source, f"{where}/smoke", "true or false", smoke)
    killers = _field(mutant, "killers")
    if (
        not isinstance(killers, (tuple, list))
        or not all(isinstance(k, str) and k for k in killers)
        or (not killers and not smoke)
    ):
        raise _refuse(
            source, f"{where}/killers", "the suite test ids that must fail (empty only for a smoke)", killers
        )
    adapter = _field(mutant, "adapter")
    if module is not None and isinstance(adapter, str) and ":" not in adapter:
        adapter = f"{module}:{adapter}"
    if not isinstance(adapter, str) or not _FACTORY.fullmatch(adapter):
        raise _refuse(source, f"{where}/adapter", "the module:factory of its adapter", adapter)
    only = _field(mutant, "in_process_only")
    if only is not None and (not isinstance(only, str) or not only.strip()):
        raise _refuse(source, f"{where}/in_process_only", "None, or why it cannot cross harness-v1", only)
    return MutantSpec(name, breaks, tuple(killers), smoke, adapter, source, only)


def from_set(source: str, mutants: Iterable[object], module: str | None = None) -> tuple[MutantSpec, ...]:
    """The mutants of one set, checked (``module``: where an adapter named alone is)."""
    return tuple(_spec(source, index, mutant, module) for index, mutant in enumerate(mutants))


def from_file(path: str | Path) -> tuple[MutantSpec, ...]:
    """The variants an adapter author lists in a Python file, no packaging needed: its
    ``MUTANTS``, each a mapping or an object with the fields above, whose ``adapter`` may name a
    factory of the file alone (``leaky``) or any ``module:factory``. The file's directory is put
    on ``sys.path`` and ``PYTHONPATH`` (so the runs, in other processes, import it too) and the
    file imported under its stem. Raises ContractViolation (``KB_MUTANTS_INVALID``) for a file
    that is missing, does not import, or lists no valid mutants."""
    file = Path(path).resolve()
    source = f"variants {path}"
    if file.suffix != ".py" or not file.is_file():
        raise _refuse(source, "", "a Python file (.py) listing MUTANTS", str(path))
    module = file.stem
    if not module.isidentifier():
        raise _refuse(source, "", "a file whose name is a Python module name", file.name)
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if folder not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (folder, *paths) if p)
    spec = importlib.util.spec_from_file_location(module, file)
    if spec is None or spec.loader is None:
        raise _refuse(source, "", "a Python file that imports", str(path))
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    try:
        spec.loader.exec_module(loaded)
    except Exception as error:  # the author's own code
        del sys.modules[module]
        raise _refuse(source, "", "a file that imports", f"{type(error).__name__}: {error}") from None
    listed = getattr(loaded, "MUTANTS", None)
    if not isinstance(listed, (list, tuple)) or not listed:
        raise _refuse(source, "/MUTANTS", "a non-empty list of mutants named MUTANTS", listed)
    found = from_set(source, listed, module)
    names = [mutant.name for mutant in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise _refuse(source, "", "each mutant name once", twice)
    return found


def discover(sets: Sequence[str] = ()) -> tuple[MutantSpec, ...]:
    """Every mutant of every installed set, or of the named ``sets``. Raises ContractViolation
    (``KB_MUTANTS_INVALID``) when no set is installed, a named set is not, a set cannot load, or
    two mutants share a name."""
    points = sorted(importlib.metadata.entry_points(group=GROUP), key=lambda point: point.name)
    unknown = sorted(set(sets) - {point.name for point in points})
    if unknown:
        installed = ", ".join(point.name for point in points) or "none"
        raise _refuse(", ".join(unknown), "", f"an installed mutant set (installed: {installed})", unknown)
    points = [point for point in points if not sets or point.name in sets]
    if not points:
        raise ContractViolation(
            contract="mutant-set",
            problems=(
                Problem(
                    "",
                    "mutant",
                    f"at least one mutant set registered under the entry-point group {GROUP!r} "
                    "(the reference's comes with: pip install 'kbconform[reference]')",
                    "none installed",
                ),
            ),
            code="KB_MUTANTS_INVALID",
        )
    found: list[MutantSpec] = []
    for point in points:
        try:
            loaded = point.load()
            found += from_set(point.name, loaded)
        except ContractViolation:
            raise
        except Exception as error:  # an import error in somebody else's package
            hint = (
                " (pip install 'kbconform[reference]')"
                if point.value.startswith("kbconform_reference")
                else ""
            )
            raise _refuse(
                point.name, "", f"a set that loads{hint}", f"{type(error).__name__}: {error}"
            ) from None
    names = [mutant.name for mutant in found]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise _refuse(",".join(p.name for p in points), "", "each mutant name once", twice)
    return tuple(found)
