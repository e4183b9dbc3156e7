"""The ``memory-scope`` isolation profile's backend: agent memory written and read under a scope.

A backend whose manifest declares ``"isolationProfile": "memory-scope"`` is opened by the same
:class:`~kbconform.adapter.Adapter` (``open(options)``, ``close``, ``shutdown``) and offers these
facades. The caller of every facade is a **scope**: a mapping of some of the manifest's
``scopeKeys`` to non-empty strings (``{"user_id": "alice"}``, ``{"user_id": "alice", "agent_id":
"planner"}``). The rules are in ``schemas/memory-scope.md``; the docstrings here are their
Python form.

Every parameter is positional-only. Errors are :mod:`kbconform.errors` errors; anything else
that escapes is a failure. ``KB_MEMORY_INVALID`` is a :class:`~kbconform.errors.ContractViolation`
with ``contract="memory-scope"`` (:func:`memory_invalid` builds one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kbconform.errors import ContractViolation, Problem

__all__ = [
    "MAX_LIMIT",
    "MEMORY_INVALID",
    "READ_FACADES",
    "MemoryHit",
    "MemoryScopeBackend",
    "facades",
    "memory_invalid",
]

#: The code of a malformed memory-scope call (a :class:`ContractViolation`).
MEMORY_INVALID = "KB_MEMORY_INVALID"
#: The read facades a manifest may list (``search`` is required).
READ_FACADES = ("search", "list")
#: The largest ``limit`` a search takes.
MAX_LIMIT = 1000


def memory_invalid(what: str, expected: str, got: str) -> ContractViolation:
    """The error for a malformed call: ``what`` is the argument, ``expected`` what it must be."""
    return ContractViolation(
        contract="memory-scope", problems=(Problem("", what, expected, got),), code=MEMORY_INVALID
    )


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A memory as a read returns it: its id and its text, exactly as written (or updated)."""

    id: str
    text: str


@runtime_checkable
class MemoryScopeBackend(Protocol):
    """An agent memory whose every call names a scope.

    ``scope`` is the caller: a mapping of declared scope keys to non-empty strings. Anything
    else (None, not a mapping, empty, a key the manifest does not declare, a value that is not
    a non-empty string or holds a reserved character, and under ``scopeMatch: prefix`` keys
    that are not a leading run of ``scopeKeys``) is no identity: ``Unauthenticated``, and the
    call changes nothing. A memory matches a scope S when, for every key S names, the scope it
    was written under has that key with exactly S's value.
    """

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        """Store a memory under exactly ``scope``; its new id. ``metadata`` is the client's own
        data (a flat object), never a scope: keys named like scope keys change nothing.
        Empty text or metadata that is not an object: ``KB_MEMORY_INVALID``."""
        ...

    def search(self, scope: object, text: object, limit: object, where: object, /) -> Sequence[Any]:
        """Up to ``limit`` (1 to 1000) memories matching ``scope``, nearest first, each
        :class:`MemoryHit`-like (``id``, ``text``). ``where`` (None, or a client where clause
        over metadata, feature ``filter``) narrows them and never widens."""
        ...

    def list(self, scope: object, /) -> Sequence[Any]:
        """Every memory matching ``scope`` (read facade ``list``)."""
        ...

    def get(self, scope: object, memory: object, /) -> Any:
        """The memory ``memory`` (feature ``get``); NotFound when there is none, and, when the
        manifest's ``byIdScope`` is ``checked``, when it does not match ``scope``."""
        ...

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        """Replace the memory's text (feature ``update``); its scope never changes. NotFound as
        for :meth:`get`. ``metadata`` (feature ``update-metadata``; None: none given) sets those
        keys of the memory's metadata, client data as on :meth:`add`: keys named like scope keys
        change nothing."""
        ...

    def delete(self, scope: object, memory: object, /) -> None:
        """Delete the memory (feature ``delete``). NotFound as for :meth:`get`."""
        ...

    def delete_all(self, scope: object, /) -> None:
        """Delete every memory matching ``scope``, and nothing else (feature ``delete-all``)."""
        ...


def facades(manifest: Any) -> list[tuple[str, Any]]:
    """:class:`MemoryScopeBackend`: a backend has every method (one it does not offer, by the
    manifest's features, raises NotImplementedError and is never called)."""
    return [("MemoryScopeBackend", MemoryScopeBackend)]


def scope_text(scope: Mapping[str, str]) -> str:
    """A scope as it is shown: ``{user_id=alice, agent_id=planner}``."""
    return "{" + ", ".join(f"{key}={value!r}" for key, value in scope.items()) + "}"
