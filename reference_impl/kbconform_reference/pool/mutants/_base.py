"""What the project-pool mutants share: their record, and helpers."""

from __future__ import annotations

from kbconform_reference import _mutant_base
from kbconform_reference.pool.service import ProjectPool


def external_id(session: object) -> str | None:
    """``session`` when it is a usable external id (a non-empty str), else None."""
    return session if type(session) is str and session else None


class Mutant(_mutant_base.Mutant[ProjectPool]):
    """A broken project-pool backend, served by the package's ``by_name``."""

    __slots__ = ()
    served_by = "kbconform_reference.pool.mutants"


def both(test: str) -> tuple[str, str]:
    """``test``'s ids for both searches, of episodes and of entities."""
    return (f"{test}[search-episodes]", f"{test}[search-entities]")
