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
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


def _spec(source: str, index: int, mutant: object) -> MutantSpec:
    where = f"/{index}"
    name = getattr(mutant, "name", None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _refuse(source, f"{where}/name", "a name of lower-case words joined by '-'", name)
    breaks = getattr(mutant, "breaks", None)
    if not isinstance(breaks, str) or not breaks.strip():
        raise _refuse(source, f"{where}/breaks", "one line saying what it breaks", breaks)
    smoke = getattr(mutant, "smoke", False)
    if not isinstance(smoke, bool):
        raise _refuse(source, f"{where}/smoke", "true or false", smoke)
    killers = getattr(mutant, "killers", None)
    if (
        not isinstance(killers, (tuple, list))
        or not all(isinstance(k, str) and k for k in killers)
        or (not killers and not smoke)
    ):
        raise _refuse(
            source, f"{where}/killers", "the suite test ids that must fail (empty only for a smoke)", killers
        )
    adapter = getattr(mutant, "adapter", None)
    if not isinstance(adapter, str) or not _FACTORY.fullmatch(adapter):
        raise _refuse(source, f"{where}/adapter", "the module:factory of its adapter", adapter)
    only = getattr(mutant, "in_process_only", None)
    if only is not None and (not isinstance(only, str) or not only.strip()):
        raise _refuse(source, f"{where}/in_process_only", "None, or why it cannot cross harness-v1", only)
    return MutantSpec(name, breaks, tuple(killers), smoke, adapter, source, only)


def from_set(source: str, mutants: Iterable[object]) -> tuple[MutantSpec, ...]:
    """The mutants of one set, checked."""
    return tuple(_spec(source, index, mutant) for index, mutant in enumerate(mutants))


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
