"""The adapter protocol every isolation profile shares: what ``module:factory`` returns
(:class:`Adapter`), and how the suites open a backend (:class:`BackendOptions`).

An adapter module exposes a factory (``module:factory``) that returns an :class:`Adapter`. The
adapter declares a manifest (adapter-manifest-v1, naming its isolation profile) and opens
fresh, empty backends of that profile; each profile's facades are its own protocol, in its
package under ``kbconform.profiles`` (the default, ``tenant-namespace``:
:class:`~kbconform.adapter.Backend`).

Every parameter is positional-only, so a backend may name its own; the suites pass them all.
The docstrings are the specification. ``docs/adapter-guide.md`` lists every rule with the suite
tests that check it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # the default profile's backend, as the type checker reads Adapter.open
    from kbconform.adapter import Backend

SpoofMode = Literal["overwrite", "reject"]
#: The largest ``limit`` a search takes.
MAX_LIMIT = 1000


@runtime_checkable
class RevisionResolver(Protocol):
    """Lists the paths deleted between two commits of a repository."""

    def deleted_paths(self, repo_slug: str, base: str, head: str, /) -> Iterable[str]:
        """Paths (relative, '/'-separated) present at ``base`` and gone at ``head``.

        Raise :class:`~kbconform.errors.RevisionBoundaryUnavailable` when the commits cannot be
        resolved.
        """
        ...


@dataclass(frozen=True, slots=True)
class BackendOptions:
    """How the suites want a backend opened. Each option maps onto a manifest declaration.

    ``spoof_mode`` is one of the manifest's ``spoofModes``. ``resolver`` is what the backend
    must resolve revision boundaries with (feature ``revision-boundary``; None: no resolver is
    configured). ``store_fails``, when given, is a switch (feature ``fault-injection``): the
    backend consults it once before every call it makes to its store, and that call fails
    while the switch returns True. Each page of a paged write or delete is one store call,
    consulted on its own, and so is every call of a rollback or a retry; so a switch that turns
    on at its Nth consultation starts a fault in the middle of a facade call, between two pages
    (the atomicity suite opens it at each call in turn). A backend of the ``kb-grant`` profile,
    which has several stores, passes the store's id: ``store_fails(store)``.

    The suites pass a :class:`~kbconform.adapter.RevisionMap` as ``resolver`` and a
    :class:`~kbconform.adapter.FaultSwitch` as ``store_fails``: data that harness-v1 carries to
    a backend in another process (``schemas/harness-v1.md``).
    """

    spoof_mode: SpoofMode = "overwrite"
    resolver: RevisionResolver | None = None
    store_fails: Callable[..., bool] | None = None


@runtime_checkable
class Adapter(Protocol):
    """What ``module:factory`` returns: a manifest, and fresh backends on demand."""

    @property
    def manifest(self) -> Mapping[str, Any]:
        """The adapter-manifest-v1 declaration; it is validated when the adapter is loaded."""
        ...

    def open(self, options: BackendOptions, /) -> Backend:
        """A new backend of the manifest's profile, holding nothing, independent of every other
        one opened (typed as the default profile's, :class:`~kbconform.adapter.Backend`; another
        profile's adapter returns its own)."""
        ...

    def close(self, backend: Backend, /) -> None:
        """Release what :meth:`open` took (the suites call it once per backend)."""
        ...

    def shutdown(self) -> None:
        """Release what the adapter holds (servers, clients); called once, after the run."""
        ...
