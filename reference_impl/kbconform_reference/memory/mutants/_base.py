"""What the memory-scope mutants share: their record, and helpers."""

from __future__ import annotations

import builtins
from typing import Any

from kbconform.profiles.memory_scope.protocol import MemoryHit
from kbconform_reference import _mutant_base
from kbconform_reference.memory.service import ScopedMemory


def as_hits(points: Any) -> builtins.list[MemoryHit]:
    """Qdrant points as hits: each its id and text."""
    return [MemoryHit(str(p.id), str((p.payload or {})["text"])) for p in points]


class Mutant(_mutant_base.Mutant[ScopedMemory]):
    """A broken memory-scope backend, served by the package's ``by_name``."""

    __slots__ = ()
    served_by = "kbconform_reference.memory.mutants"


def both(test: str) -> tuple[str, str]:
    """``test``'s ids for both reads, a search and a list."""
    return (f"{test}[search-memories]", f"{test}[list-memories]")


def kinds(*labels: str) -> tuple[str, ...]:
    """mem-02's ids for these kinds of callers that name no scope."""
    return tuple(f"mem-02[{kind}]" for kind in labels)
