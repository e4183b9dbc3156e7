"""Mutants of the kb-grant reference: each one rule of ``schemas/kb-grant.md`` broken.

Each mutant is a :class:`Mutant` record of a :class:`KbGrantService` subclass that breaks the
way such a service really breaks (most are readings of the system the profile models: a scope
that falls back to the first knowledge base, scores normalized only when engines are mixed, a
group error dropped, a grant looked up once). ``MUTANTS`` is registered as the mutant set
``reference-grant`` (entry-point group ``kbconform.mutants``); ``kbconform mutants --set
reference-grant`` runs it. The records are kept by family, one module each. Importing this
package needs neither Chroma nor Qdrant: a mutant's stores are opened with it.
"""

from __future__ import annotations

from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.grant.adapter import GrantAdapter
from kbconform_reference.grant.mutants import (
    concurrency,
    contract,
    copies,
    fanout,
    grants,
    merge,
    search,
    storage,
)
from kbconform_reference.grant.mutants._base import Mutant
from kbconform_reference.grant.service import KbGrantService

__all__ = ["MUTANTS", "Mutant", "MutantAdapter", "by_name"]

MUTANTS: tuple[Mutant, ...] = (
    *search.MUTANTS,
    *merge.MUTANTS,
    *fanout.MUTANTS,
    *grants.MUTANTS,
    *copies.MUTANTS,
    *contract.MUTANTS,
    *concurrency.MUTANTS,
    *storage.MUTANTS,
)


class MutantAdapter(ServesMutant[Mutant], GrantAdapter):
    """The kb-grant reference adapter, opening the mutant instead of the reference."""

    @property
    def kind(self) -> type[KbGrantService]:  # type: ignore[override]
        return self.mutant.kind


#: ``kbconform_reference.grant.mutants:by_name.<name with underscores>`` is each mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
