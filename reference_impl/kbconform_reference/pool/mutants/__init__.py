"""Mutants of the project-pool reference: each one invariant of ``schemas/project-pool.md`` broken.

Each mutant is a :class:`Mutant` record of a :class:`ProjectPool` subclass that breaks the way
such designs really break (most of them are readings of the system the profile models): a
``should`` built from an empty list, a cached membership, a soft-deleted row still counted, an
id truthiness test. ``MUTANTS`` is registered as the mutant set ``reference-pool`` (entry-point
group ``kbconform.mutants``); ``kbconform mutants --set reference-pool`` runs it. The records
are kept by family, one module each. Importing this package needs no Qdrant: a mutant's backend
imports ``qdrant_client`` when it is opened.
"""

from __future__ import annotations

from kbconform.adapter import BackendOptions
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.pool.adapter import PoolAdapter
from kbconform_reference.pool.mutants import (
    concurrency,
    contract,
    filters,
    identity,
    membership,
    storage,
    writes,
)
from kbconform_reference.pool.mutants._base import Mutant
from kbconform_reference.pool.service import ProjectPool

__all__ = ["MUTANTS", "Mutant", "MutantAdapter", "by_name"]

MUTANTS: tuple[Mutant, ...] = (
    *filters.MUTANTS,
    *membership.MUTANTS,
    *identity.MUTANTS,
    *contract.MUTANTS,
    *writes.MUTANTS,
    *storage.MUTANTS,
    *concurrency.MUTANTS,
)


class MutantAdapter(ServesMutant[Mutant], PoolAdapter):
    """The project-pool reference adapter, opening the mutant instead of the reference."""

    def _pool(self, options: BackendOptions) -> ProjectPool:
        return self.mutant.kind(store_fails=options.store_fails)


#: ``kbconform_reference.pool.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
