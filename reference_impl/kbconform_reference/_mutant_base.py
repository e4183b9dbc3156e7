"""What the reference's mutant sets share: a mutant's record, its adapter, ``by_name``, and the
base of the stores a mutant wraps.

Each profile's ``mutants`` package (``kbconform_reference.namespace.mutants``, ``.pool.mutants``,
``.grant.mutants``, ``.memory.mutants``) subclasses :class:`Mutant`, keeps its records in modules
by family, serves each mutant with an adapter whose bases are :class:`ServesMutant` and then the
reference adapter it changes, and names that adapter's factories ``by_name`` (built by
:func:`factories`) in the package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, ClassVar, Generic, TypeVar

K = TypeVar("K")
M = TypeVar("M", bound="Mutant[Any]")
S = TypeVar("S")


def _attribute(name: str) -> str:
    """The attribute of ``by_name`` that serves the mutant ``name``."""
    return name.replace("-", "_")


@dataclass(frozen=True, slots=True)
class Mutant(Generic[K]):
    """One broken backend: what it breaks, and the suite tests that must fail against it.

    ``kind`` is the backend's class. A set subclasses this and names the module that holds its
    ``by_name`` as :attr:`served_by` (by default, the module that subclasses it).
    """

    #: The module whose ``by_name`` serves the set's mutants (None: the subclass's own module).
    served_by: ClassVar[str | None] = None

    name: str
    kind: type[K]
    breaks: str
    killers: tuple[str, ...]
    smoke: bool = False
    #: Why the broken invariant cannot be reached behind harness-v1 (None: it can).
    in_process_only: str | None = None

    @property
    def adapter(self) -> str:
        """The factory of the adapter that serves this mutant."""
        return f"{self.served_by or type(self).__module__}:by_name.{_attribute(self.name)}"


class ServesMutant(Generic[M]):
    """An adapter that serves one mutant, put before the reference adapter it changes.

    ``ServesMutant(mutant, *args)`` makes that reference adapter with ``args``. Its manifest is
    that adapter's, with the adapter named ``kbconform mutant NAME`` (its version kept).
    """

    def __init__(self, mutant: M, *args: Any) -> None:
        super().__init__(*args)
        self.mutant = mutant

    @property
    def manifest(self) -> dict[str, Any]:
        declared: dict[str, Any] = super().manifest  # type: ignore[misc]  # the reference adapter's
        declared["adapter"] = {
            "name": f"kbconform mutant {self.mutant.name}",
            "version": declared["adapter"]["version"],
        }
        return declared


def factories(mutants: Iterable[M], adapter: Callable[[M], object]) -> SimpleNamespace:
    """``by_name``: for each of ``mutants``, a factory of ``adapter(mutant)``, as the attribute
    named after the mutant with each ``-`` made ``_``."""
    return SimpleNamespace(**{_attribute(m.name): functools.partial(adapter, m) for m in mutants})


class Delegating(Generic[S]):
    """A store a mutant wraps around the reference's own: every attribute it does not define is
    the wrapped store's (:attr:`inner`), so a wrapper holds only what it changes."""

    def __init__(self, inner: S) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet: never look for it on itself
            raise AttributeError(name)
        return getattr(self.inner, name)
