"""The ``project-pool`` isolation profile's backend: project-scoped conversation memory.

A backend whose manifest declares ``"isolationProfile": "project-pool"`` is opened by the same
:class:`~kbconform.adapter.Adapter` (``open(options)``, ``close``, ``shutdown``) and offers these
facades instead of the tenant-namespace ones. The caller of a read or write facade is a
session, named by its external id; membership operations take no caller. The rules are in
``schemas/project-pool.md``; the docstrings here are their Python form.

Every parameter is positional-only. Errors are :mod:`kbconform.errors` errors; anything else
that escapes is a failure. ``KB_POOL_INVALID`` is a :class:`~kbconform.errors.ContractViolation`
with ``contract="project-pool"`` (:func:`pool_invalid` builds one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from kbconform.errors import ContractViolation, Problem

#: The code of a malformed project-pool call (a :class:`ContractViolation`).
POOL_INVALID = "KB_POOL_INVALID"
#: The read facades of the profile, as the manifest's ``readFacades`` names them.
POOL_READ_FACADES = ("search-episodes", "search-entities")


def pool_invalid(what: str, expected: str, got: str) -> ContractViolation:
    """The error for a malformed call: ``what`` is the argument, ``expected`` what it must be."""
    return ContractViolation(
        contract="project-pool", problems=(Problem("", what, expected, got),), code=POOL_INVALID
    )


class PoolHitView(Protocol):
    """An episode or an entity as a search returns it."""

    @property
    def id(self) -> str:
        """The id ``write_episode`` or ``extract_entities`` returned."""
        ...

    @property
    def text(self) -> str:
        """The episode's text, or the entity's ``name``, exactly as given."""
        ...


@runtime_checkable
class ProjectPoolBackend(Protocol):
    """Conversation memory scoped by project (``schemas/project-pool.md``).

    A session in no project searches the episodes of every session in no project (the shared
    pool) and gets no entity context; a session in project P searches the episodes of every
    session now in P and the entities tagged P. Filters are built from the backend's internal
    ids. A caller that is ``None``, not a ``str``, empty, or a session never started raises
    :class:`~kbconform.errors.Unauthenticated`: never a new session, never an unfiltered search.
    A store that fails raises :class:`~kbconform.errors.BackendUnavailable`, never an empty or
    partial result; a call that raises changes nothing.
    """

    def create_project(self, project: str, /) -> None:
        """A new, empty project named ``project``; an existing name raises ``KB_POOL_INVALID``."""
        ...

    def start_session(self, session: str, project: str | None, /) -> None:
        """A new session, in no project (None) or in ``project`` from its very first call on.

        An existing session raises ``KB_POOL_INVALID``; an unknown project
        :class:`~kbconform.errors.NotFound`.
        """
        ...

    def assign_session(self, session: str, project: str, /) -> None:
        """Move ``session`` into ``project`` (out of any other), from its next call on: its
        existing episodes join the project's pool. Unknown session or project:
        :class:`~kbconform.errors.NotFound`."""
        ...

    def remove_session(self, session: str, /) -> None:
        """Take ``session`` out of its project at once: it and its episodes return to the shared
        pool. A session in no project stays so. Unknown session: :class:`~kbconform.errors.NotFound`."""
        ...

    def write_episode(self, session: str, text: str, /) -> str:
        """Store an episode of ``session``; return its id (non-empty, unique in the backend).
        Empty ``text`` raises ``KB_POOL_INVALID``."""
        ...

    def extract_entities(self, session: str, entities: Sequence[Mapping[str, str]], /) -> Sequence[str]:
        """Store ``entities`` (each ``{name, type, notes}``, non-empty strings), tagged with the
        session's project now (none when it is in no project); their ids, in order. A tag never
        changes afterwards, whatever moves the session makes. A malformed entity raises
        ``KB_POOL_INVALID`` and nothing is stored."""
        ...

    def search_episodes(self, session: str, text: str, limit: int, /) -> Sequence[PoolHitView]:
        """The ``limit`` (1 to 1000) episodes nearest to ``text`` in the session's episode scope,
        nearest first."""
        ...

    def search_entities(self, session: str, text: str, limit: int, /) -> Sequence[PoolHitView]:
        """The ``limit`` (1 to 1000) entities nearest to ``text`` tagged with the session's
        project; nothing for a session in no project."""
        ...
