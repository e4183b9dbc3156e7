"""What every facade of the tenant-namespace knowledge base stands on: its parts, the guards on
who calls, and writes all or nothing (the undo log)."""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from kbconform.adapter import RevisionResolver
from kbconform.errors import BackendUnavailable, ContractViolation, Forbidden, Unauthenticated
from kbconform.identity import Principal
from kbconform_reference._store_calls import store_call
from kbconform_reference.embedding import HashingEmbedding
from kbconform_reference.namespace import read_filter
from kbconform_reference.namespace.records import Settings, Stats
from kbconform_reference.namespace.stamping import SpoofMonitor
from kbconform_reference.namespace.stores import Rows, VectorStore
from kbconform_reference.namespace.stores._protocol import (
    ACTING,
    Acting,
    Metadata,
    Reach,
    Where,
    acting,
    scopes_reads,
    stored_keys,
)

LOG = logging.getLogger("kbconform_reference")


@dataclass(frozen=True, slots=True)
class _Undo:
    """What puts back every row one write touched: ``added`` (ids that were absent) are deleted
    and ``prior`` (the touched rows as they were, embeddings included) written back. Replaying
    it is idempotent, so a rollback cut short can start again from the beginning."""

    operation: str
    added: tuple[str, ...]
    prior: Rows
    acts: Acting | None = None  # whom the write was made for: its rollback is made for them too


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Core:
    """The knowledge base's parts, guards and undo log; :class:`~.service.KnowledgeBase` adds
    the facades."""

    def __init__(
        self,
        store: VectorStore,
        *,
        settings: Settings | None = None,
        embedder: Callable[[Sequence[str]], np.ndarray] | None = None,
        resolver: RevisionResolver | None = None,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], str] = _utc_now,
    ) -> None:
        self.store = store
        self.settings = settings or Settings()
        self.embedder = embedder or HashingEmbedding()
        self.resolver = resolver
        self.now = now
        self.stats = Stats()
        self.monitor = SpoofMonitor(
            self.settings.escalation_threshold, self.settings.escalation_window, clock
        )
        self._writing = threading.RLock()  # one write (or rollback) at a time on this instance
        self._pending: builtins.list[_Undo] = []  # undo logs whose rollback failed, oldest first
        #: The rows a deletion signal's or a sync's lookup read (with embeddings), under
        #: ``_writing``: the undo log of its deletes, not read again.
        self._looked_up: tuple[Rows, ...] = ()

    # -- guards ---------------------------------------------------------------------------------

    @staticmethod
    def _authenticated(principal: object, operation: str) -> Principal:
        """Exactly a :class:`Principal` (a subclass may override what it reads), its fields
        checked again by the Principal's own rules (a frozen one can still be changed in place);
        the service goes on with that checked copy. Anything else is :class:`Unauthenticated`."""
        if type(principal) is not Principal:
            raise Unauthenticated(operation)
        try:
            return Principal(
                principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
            )
        except ContractViolation:
            raise Unauthenticated(operation) from None

    def _reader(self, principal: Principal) -> Principal:
        """The principal a read is filtered for: as granted, or with every shared namespace when
        the configuration makes them readable by every tenant."""
        if self.settings.shared_readers == "granted":
            return principal
        return principal.with_namespaces(principal.readable_namespaces | self.settings.shared_namespaces)

    def _may_write(self, principal: Principal, operation: str) -> None:
        if principal.tenant_id in self.settings.shared_namespaces and not principal.is_operator:
            raise Forbidden(
                operation, f"only an operator may write into the shared namespace {principal.tenant_id!r}"
            )

    @staticmethod
    def _operator(principal: Principal, operation: str) -> None:
        if not principal.is_operator:
            raise Forbidden(operation, "only an operator may do this")

    @staticmethod
    def _as(operation: str, principal: Principal, reach: Reach) -> AbstractContextManager[None]:
        """The store calls inside the block are made for ``principal`` (:data:`ACTING`)."""
        return acting(Acting(operation, principal, reach))

    def _read_where(self, principal: Principal, client: Mapping[str, Any] | None = None) -> Where | None:
        """The clause a read sends the store: the read filter AND the client's clause, or only
        the client's clause (checked) to a store that applies the read filter itself."""
        if not scopes_reads(self.store):
            return read_filter.build_where(principal, client)
        return None if client is None else {"$and": read_filter.check_where(client)}

    def _store_call(self, operation: str) -> AbstractContextManager[None]:
        """One store call: any error of the store is BackendUnavailable (the store consults the
        fault switch itself; :func:`~kbconform_reference._store_calls.store_call`)."""
        return store_call(None, operation)

    # -- all or nothing -------------------------------------------------------------------------

    def _settle(self, operation: str) -> None:
        """Replay the undo logs of earlier writes whose rollback failed, newest first; raise
        BackendUnavailable while the store cannot take them. Every facade calls this before its
        first store call, so no call reads, or writes over, a half-written batch."""
        if not self._pending:
            return
        with self._writing:
            while self._pending:
                undo = self._pending[-1]
                try:
                    with acting(undo.acts):
                        self._undo(undo)
                except Exception as error:
                    raise BackendUnavailable(
                        operation,
                        f"an earlier {undo.operation} failed part-way and is not rolled back yet "
                        f"({type(error).__name__}: {error})",
                    ) from error
                self._pending.pop()

    def _pages(self, total: int) -> Iterator[slice]:
        size = max(1, int(self.store.max_batch))
        return (slice(start, start + size) for start in range(0, total, size))

    def _upsert(self, rows: Rows) -> None:
        """Write ``rows`` (with embeddings), one store call per page of ``max_batch`` rows."""
        if not rows.ids:
            return
        assert rows.embeddings is not None
        for page in self._pages(len(rows.ids)):
            self.store.upsert(
                rows.ids[page], rows.embeddings[page], rows.documents[page], rows.metadatas[page]
            )

    def _delete(self, ids: Sequence[str]) -> None:
        """Delete ``ids``, one store call per page of ``max_batch`` ids."""
        for page in self._pages(len(ids)):
            self.store.delete(ids[page])

    def _undo(self, undo: _Undo) -> None:
        self._delete(undo.added)
        self._upsert(undo.prior)

    def _apply(
        self, operation: str, prior: Rows, write: Rows | None = None, delete: Sequence[str] = ()
    ) -> None:
        """Write ``write``, then delete ``delete``, page by page: all or nothing.

        ``prior`` is every row the call touches as it was before the first write (one ``get``
        with embeddings). A store failure part-way rolls back and raises BackendUnavailable; when
        the rollback fails too, the undo log stays pending (:meth:`_settle`). The caller holds
        ``self._writing``.
        """
        known = set(prior.ids)
        added = tuple(dict.fromkeys(i for i in (write.ids if write is not None else ()) if i not in known))
        undo = _Undo(operation, added, prior, ACTING.get())
        try:
            if write is not None:
                with stored_keys(prior):  # the store's own keys, read once (``STORED_KEYS``)
                    self._upsert(write)
            self._delete(delete)
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            try:
                self._undo(undo)
            except Exception:
                self._pending.append(undo)
                raise BackendUnavailable(
                    operation,
                    f"{reason}; the rollback failed too: every later call replays it first, and "
                    "raises BackendUnavailable until the store answers",
                ) from error
            except BaseException:
                self._pending.append(undo)
                raise
            raise BackendUnavailable(operation, f"{reason}; rolled back, nothing was written") from error
        except BaseException:  # interrupted between pages: roll back before the next call
            self._pending.append(undo)
            raise


def only(ids: Iterable[str], *parts: Rows) -> Rows:
    """The rows of ``parts`` whose id is in ``ids``, each id once, in the parts' order; with their
    embeddings when every part that holds one of them was read with embeddings."""
    wanted, taken = set(ids), set()
    if len(parts) == 1 and wanted >= set(parts[0].ids) and len(set(parts[0].ids)) == len(parts[0].ids):
        return parts[0]
    kept: list[tuple[Rows, int]] = []
    for rows in parts:
        for n, row_id in enumerate(rows.ids):
            if row_id in wanted and row_id not in taken:
                taken.add(row_id)
                kept.append((rows, n))
    embeddings = None
    if all(rows.embeddings is not None for rows, _ in kept):
        vectors = [rows.embeddings[n] for rows, n in kept]  # type: ignore[index]
        embeddings = np.stack(vectors) if vectors else np.zeros((0, 0), np.float32)
    metadatas: tuple[Metadata, ...] = tuple(rows.metadatas[n] for rows, n in kept)
    return Rows(
        tuple(rows.ids[n] for rows, n in kept),
        tuple(rows.documents[n] for rows, n in kept),
        metadatas,
        embeddings,
    )
