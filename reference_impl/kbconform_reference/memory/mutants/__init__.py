"""Mutants of the memory-scope reference: each one invariant of ``schemas/memory-scope.md`` broken.

Each mutant is a :class:`Mutant` record of a :class:`ScopedMemory` subclass that breaks the way
agent-memory libraries are reported to break (the spec's "Where the rules come from" names the
reports): a read filtered on one key of the scope, a scope stamped on write and dropped on
read, a missing scope that falls back to everything, metadata merged over the scope, by-id
calls that never look at the scope. ``MUTANTS`` is registered as the mutant set ``reference-
memory`` (entry-point group ``kbconform.mutants``); ``kbconform mutants --set reference-
memory`` runs it. The records are kept by family, one module each. Importing this package needs
no Qdrant: a mutant's backend imports ``qdrant_client`` when it is opened.
"""

from __future__ import annotations

from kbconform.adapter import BackendOptions
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.memory.adapter import MemoryAdapter
from kbconform_reference.memory.mutants import by_id, claims, concurrency, contract, reads, storage
from kbconform_reference.memory.mutants._base import Mutant
from kbconform_reference.memory.service import ScopedMemory

__all__ = ["MUTANTS", "Mutant", "MutantAdapter", "by_name"]

MUTANTS: tuple[Mutant, ...] = (
    *reads.MUTANTS,
    *claims.MUTANTS,
    *by_id.MUTANTS,
    *contract.MUTANTS,
    *concurrency.MUTANTS,
    *storage.MUTANTS,
)


class MutantAdapter(ServesMutant[Mutant], MemoryAdapter):
    """The memory-scope reference adapter, opening the mutant instead of the reference."""

    def _memory(self, options: BackendOptions) -> ScopedMemory:
        return self.mutant.kind(store_fails=options.store_fails)


#: ``kbconform_reference.memory.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
