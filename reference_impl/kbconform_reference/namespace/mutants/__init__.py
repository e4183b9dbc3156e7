"""Mutants: the tenant-namespace reference with exactly one invariant broken, to prove the suites
can fail.

Each mutant is a :class:`Mutant` record: a :class:`KnowledgeBase` subclass over the exact
in-memory store, what it breaks, the suite tests that must fail against it, and, for a broken
invariant harness-v1 cannot carry, why it runs in process only. The records are kept by family,
one module each; two smokes break everything. ``MUTANTS`` is registered as the mutant set
``reference`` (entry-point group ``kbconform.mutants``); run every set with ``kbconform
mutants``. The PostgreSQL deployment's mutants are the set ``reference-postgres``
(:mod:`kbconform_reference.namespace.mutants.postgres`).
"""

from __future__ import annotations

from typing import Any

from kbconform.adapter import BackendOptions
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.namespace.adapter import ReferenceAdapter
from kbconform_reference.namespace.mutants import (
    backup,
    caches,
    callers,
    concurrency,
    contract,
    deletion,
    envelope,
    faults,
    identifiers,
    leaks,
    machinery,
    maintenance,
    orders,
    pages,
    proof,
    reads,
    smokes,
    state,
    unchecked,
    writes,
)
from kbconform_reference.namespace.mutants._base import PRINCIPAL_AS_DATA, Mutant

__all__ = ["MUTANTS", "PRINCIPAL_AS_DATA", "Mutant", "MutantAdapter", "by_name"]

MUTANTS: tuple[Mutant, ...] = (
    *contract.MUTANTS,
    *reads.MUTANTS,
    *writes.MUTANTS,
    *deletion.MUTANTS,
    *backup.MUTANTS,
    *smokes.MUTANTS,
    *leaks.MUTANTS,
    *unchecked.MUTANTS,
    *caches.MUTANTS,
    *maintenance.MUTANTS,
    *envelope.MUTANTS,
    *faults.MUTANTS,
    *state.MUTANTS,
    *proof.MUTANTS,
    *pages.MUTANTS,
    *callers.MUTANTS,
    *orders.MUTANTS,
    *identifiers.MUTANTS,
    *concurrency.MUTANTS,
    *machinery.MUTANTS,
)


class MutantAdapter(ServesMutant[Mutant], ReferenceAdapter):
    """The reference adapter (memory mode), opening the mutant instead of the service."""

    def __init__(self, mutant: Mutant) -> None:
        super().__init__(mutant, "memory")

    def open(self, options: BackendOptions) -> Any:
        if self.mutant.smoke:
            return self.mutant.kind()
        base = super().open(options)
        return self.mutant.kind(base.store, settings=base.settings, resolver=base.resolver)


#: ``kbconform_reference.namespace.mutants:by_name.<name with underscores>`` is each mutant's
#: factory.
by_name = factories(MUTANTS, MutantAdapter)
