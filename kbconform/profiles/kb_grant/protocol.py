"""The ``kb-grant`` isolation profile's backend: knowledge bases on several stores, shared by grant.

A backend whose manifest declares ``"isolationProfile": "kb-grant"`` is opened by the same
:class:`~kbconform.adapter.Adapter` (``open(options)``, ``close``, ``shutdown``) and offers these
facades instead of the tenant-namespace ones. The caller is a tenant, named by its id; the
operator's ``create_tenant`` takes no caller. The rules are in ``schemas/kb-grant.md``; the
docstrings here are their Python form.

Every parameter is positional-only. Errors are :mod:`kbconform.errors` errors; anything else
that escapes is a failure. ``KB_GRANT_INVALID`` and ``KB_MODEL_MISMATCH`` are
:class:`~kbconform.errors.ContractViolation` errors with ``contract="kb-grant"``
(:func:`grant_invalid` and :func:`model_mismatch` build them).

With feature ``fault-injection``, ``BackendOptions.store_fails`` is called with the store's id,
``store_fails(store)``, before every call to a vector store (never for the backend's catalogue
of tenants, KBs and grants), from the thread that makes the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kbconform.errors import ContractViolation, Problem

#: The code of a malformed kb-grant call (a :class:`ContractViolation`).
GRANT_INVALID = "KB_GRANT_INVALID"
#: The code of a search over knowledge bases of different embedding models.
MODEL_MISMATCH = "KB_MODEL_MISMATCH"
#: The read facades of the profile, as the manifest's ``readFacades`` names them.
GRANT_READ_FACADES = ("search", "get", "list")


def grant_invalid(what: str, expected: str, got: str) -> ContractViolation:
    """The error for a malformed call: ``what`` is the argument, ``expected`` what it must be."""
    return ContractViolation(
        contract="kb-grant", problems=(Problem("", what, expected, got),), code=GRANT_INVALID
    )


def model_mismatch(models: Sequence[str]) -> ContractViolation:
    """The error for a search over knowledge bases bound to the different ``models``."""
    listed = ", ".join(sorted(set(models)))
    return ContractViolation(
        contract="kb-grant",
        problems=(Problem("", "kbs", "knowledge bases of one embedding model", listed),),
        code=MODEL_MISMATCH,
    )


@dataclass(frozen=True, slots=True)
class GrantHit:
    """A document as a search returns it (a :class:`GrantHitView` a backend may return)."""

    id: str
    kb: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class KbInfo:
    """A knowledge base as ``get_kb`` and ``list_kbs`` show it (a :class:`KbView` a backend may
    return)."""

    id: str
    owner: str
    store: str
    model: str
    documents: int


class GrantHitView(Protocol):
    """A document as a search returns it."""

    @property
    def id(self) -> str:
        """The id ``ingest`` (or ``copy_kb``) gave the document."""
        ...

    @property
    def kb(self) -> str:
        """The knowledge base holding it."""
        ...

    @property
    def text(self) -> str:
        """The document's text, exactly as given."""
        ...

    @property
    def score(self) -> float:
        """``(1 + cos) / 2`` of the search vector and the document's, in [0, 1]."""
        ...


class KbView(Protocol):
    """A knowledge base as ``get_kb`` and ``list_kbs`` show it."""

    @property
    def id(self) -> str: ...

    @property
    def owner(self) -> str:
        """The tenant that owns it."""
        ...

    @property
    def store(self) -> str:
        """The id of the store it is bound to (one of the manifest's ``stores``)."""
        ...

    @property
    def model(self) -> str:
        """The name of its embedding model (one of the manifest's ``models``)."""
        ...

    @property
    def documents(self) -> int:
        """How many documents it holds."""
        ...


@runtime_checkable
class KbGrantBackend(Protocol):
    """Knowledge bases owned by tenants, bound to stores, shared by grant (``schemas/kb-grant.md``).

    A tenant reads its own knowledge bases and those granted to it; only the owner administers
    one (a grantee gets :class:`~kbconform.errors.Forbidden`); a knowledge base the caller may
    not read raises :class:`~kbconform.errors.NotFound`, exactly as an id that never existed. A
    caller that is ``None``, not a ``str``, empty, or a tenant never created raises
    :class:`~kbconform.errors.Unauthenticated` first. A store that fails (or misses its group's
    deadline) raises :class:`~kbconform.errors.BackendUnavailable`, never a partial result; a
    call that raises changes nothing.
    """

    def create_tenant(self, tenant: str, /) -> None:
        """A new tenant; an existing or empty name raises ``KB_GRANT_INVALID``."""
        ...

    def create_kb(self, caller: str, store: str, model: str, /) -> str:
        """A new, empty knowledge base owned by ``caller``, bound to ``store`` and ``model``; its id.
        An unknown store or model raises ``KB_GRANT_INVALID``."""
        ...

    def share_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        """The owner grants ``grantee`` read access to ``kb``. An unknown grantee, or the owner
        itself, raises ``KB_GRANT_INVALID``."""
        ...

    def revoke_kb(self, caller: str, kb: str, grantee: str, /) -> None:
        """The owner withdraws ``grantee``'s grant, at once; no grant: no change."""
        ...

    def ingest(self, caller: str, kb: str, documents: Sequence[Mapping[str, Any]], /) -> Sequence[str]:
        """Store ``documents`` (each ``{text, embedding}``) in ``kb``, all or nothing; their ids, in
        order. An empty batch, empty text or a vector that is not of the model raises
        ``KB_GRANT_INVALID`` and nothing is stored."""
        ...

    def search(
        self, caller: str, kbs: Sequence[str], embedding: Sequence[float], limit: int, /
    ) -> Sequence[GrantHitView]:
        """The ``limit`` (1 to 1000) documents of ``kbs`` nearest to ``embedding``, highest score
        first. Every knowledge base is checked readable before any store is asked (else
        NotFound); different models raise ``KB_MODEL_MISMATCH``; a store group that fails or
        misses its deadline raises BackendUnavailable."""
        ...

    def get_kb(self, caller: str, kb: str, /) -> KbView:
        """``kb``, if the caller may read it."""
        ...

    def list_kbs(self, caller: str, /) -> Sequence[KbView]:
        """Every knowledge base the caller may read: its own and those granted to it."""
        ...

    def delete_kb(self, caller: str, kb: str, /) -> None:
        """The owner deletes ``kb``, its documents and its grants."""
        ...

    def copy_kb(self, caller: str, source: str, store: str, /) -> str:
        """A new knowledge base of ``caller`` on ``store``, with the model of ``source`` (which the
        caller must be able to read) and a copy of every document; its id."""
        ...

    def move_kb(self, caller: str, kb: str, store: str, /) -> None:
        """The owner rebinds ``kb`` to ``store`` with every document; a failure keeps it whole."""
        ...
