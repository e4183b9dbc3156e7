"""The ``tenant-namespace`` isolation profile's backend (the default profile).

An adapter (:class:`~kbconform.adapter.Adapter`) whose manifest declares this profile (or
none) opens fresh, empty :class:`Backend` instances; the suites call
the backend's facades with an explicit :class:`~kbconform.identity.Principal` each time and
compare what comes back with a model of what was written.

Every parameter is positional-only, so a backend may name its own; the suites pass them all.
The docstrings are the specification: what to return, and which :mod:`kbconform.errors` error
to raise. Backends map their own errors onto those; anything else that escapes is a failure.

Required: every member of :class:`Backend`. Optional (declared in the
manifest): the ``count`` and ``ask`` facades (:class:`SupportsCount`, :class:`SupportsAsk`),
workspace parsing (:class:`SupportsScan`), request envelopes on ingest
(:class:`SupportsEnvelope`), a repository's sync (:class:`SupportsSync`) and
whole-corpus maintenance (:class:`SupportsMaintain`). Security behaviour is never optional.

The spec: ``schemas/read-filter.md``, ``stamping.md``, ``deletion-signaling.md``,
``backup.md``, ``client-where.md``; each other profile has its own protocol and spec doc
(``project-pool``: :mod:`kbconform.profiles.project_pool.protocol`,
``schemas/project-pool.md``). ``docs/adapter-guide.md`` lists every rule with the suite tests
that check it; :mod:`kbconform.adapter` holds rules a Python backend can reuse.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kbconform.identity import Principal


class HitView(Protocol):
    """A chunk as a read facade returns it."""

    @property
    def id(self) -> str:
        """The stored chunk id (the one ingest returned)."""
        ...

    @property
    def document(self) -> str | None:
        """The stored text, exactly as ingested (``content``)."""
        ...

    @property
    def metadata(self) -> Mapping[str, Any]:
        """The stored metadata, server stamps included (``tenantId``, ``repoSlug``, ...)."""
        ...


class SpoofWarningView(Protocol):
    """One guarded field a record claimed otherwise, overwritten by the server's value."""

    @property
    def field(self) -> str:
        """The field: ``tenantId``, or ``customMeta.<name>`` for a guarded name in customMeta."""
        ...

    @property
    def chunk_id(self) -> str:
        """The id the record was stored under."""
        ...


class IngestResultView(Protocol):
    """What ingest returns."""

    @property
    def ids(self) -> Sequence[str]:
        """One id per record, in the order of the batch (equal records get equal ids)."""
        ...

    @property
    def warnings(self) -> Sequence[SpoofWarningView]:
        """One warning per spoofed field per record, in overwrite mode; empty otherwise."""
        ...


class DeletionResultView(Protocol):
    """What apply_deletion_signal returns."""

    @property
    def deleted_ids(self) -> Sequence[str]:
        """The ids of the chunks it deleted (all of them the principal's tenant's)."""
        ...


class SyncResultView(Protocol):
    """What sync returns."""

    @property
    def ids(self) -> Sequence[str]:
        """One id per record, as ingest returns them."""
        ...

    @property
    def warnings(self) -> Sequence[SpoofWarningView]:
        """As ingest's: one warning per spoofed field per record, in overwrite mode."""
        ...

    @property
    def deleted_ids(self) -> Sequence[str]:
        """The ids of the stale chunks it deleted (all of them the principal's tenant's)."""
        ...


class AnswerView(Protocol):
    """What ask returns."""

    @property
    def text(self) -> str:
        """The answer, built only from the stored text of ``sources``."""
        ...

    @property
    def sources(self) -> Sequence[HitView]:
        """The chunks the answer was built from, all within the principal's scope."""
        ...


@runtime_checkable
class Backend(Protocol):
    """A multi-tenant knowledge base, as the suites drive it. Every facade is required.

    Every facade takes the authenticated principal first. A backend accepts exactly a
    :class:`~kbconform.identity.Principal` (``type(principal) is Principal``: not a subclass,
    which could override what it reads, and not a look-alike) and checks its fields again on
    every call by the Principal's own rules (a frozen principal can still be changed in place).
    Anything else, ``None`` included, raises :class:`~kbconform.errors.Unauthenticated`: never an
    unfiltered read. A store that fails raises :class:`~kbconform.errors.BackendUnavailable`:
    never a fallback, never partial data.
    """

    def ingest(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> IngestResultView:
        """Validate, stamp and write a batch of parsed-chunk-v1 records, all or nothing.

        The server stamps ``tenantId`` (the principal's), ``repoSlug``, ``visibility`` and the
        other guarded fields (:func:`~kbconform.adapter.server_stamps`); ids are tenant-aware
        (the same record under two tenants gets two ids). ``visibility`` is ``team``: ingest
        takes none, and a chunk becomes ``private`` only through :meth:`restore`. Stored
        metadata stays flat (strings, numbers, booleans) and no ``customMeta`` key lands on a
        top-level key (the reference stores ``customMeta`` as one canonical JSON string).

        An invalid record (an ``embedding`` included) raises
        :class:`~kbconform.errors.ContractViolation` and nothing is written. A record that claims
        another identity is overwritten with a warning (overwrite mode) or refused with
        :class:`~kbconform.errors.SpoofRejected`, the whole batch, before anything is read or
        written (reject mode). A member writing into the shared namespace, a write whose id
        belongs to another tenant's chunk, and a write onto a chunk private to another agent of
        the tenant raise :class:`~kbconform.errors.Forbidden`, and nothing of the batch is written.

        A store that fails, at any point of the call (after some pages landed included), raises
        :class:`~kbconform.errors.BackendUnavailable`: a call that raises BackendUnavailable has
        written and deleted nothing, as every later call sees it (read and write facades alike;
        a backend that cannot undo yet raises BackendUnavailable on those calls until it can).
        """
        ...

    def query(
        self, principal: Principal, text: str, n_results: int, where: Mapping[str, Any] | None, /
    ) -> Sequence[HitView]:
        """The ``n_results`` chunks nearest to ``text`` in the principal's scope, nearest first.

        Scope: the principal's tenant and the shared namespaces it may read. ``where`` (feature
        ``client-where``; None when unused) is AND-combined with the scope. A clause outside the
        grammar of ``schemas/client-where.md`` (a reserved key of
        :data:`~kbconform.identity.RESERVED_FIELDS` at any depth, an empty clause or ``$and``/
        ``$or``, ``$not`` or any unlisted operator) raises
        :class:`~kbconform.errors.ContractViolation` (``contract="where"``) and reads nothing;
        :func:`~kbconform.adapter.check_where` is that check. The top-k is the top-k within scope.
        """
        ...

    def get(self, principal: Principal, chunk_id: str, /) -> HitView:
        """The chunk with this id; a foreign id and a missing id both raise the same
        :class:`~kbconform.errors.NotFound` (same type, code and message but for the id).
        """
        ...

    def list(self, principal: Principal, limit: int, offset: int, /) -> Sequence[HitView]:
        """A page of the chunks in scope, in a stable order; ``limit`` >= 1, ``offset`` >= 0.

        Pages are cut after the filter: read page after page, they hold the scope once. A
        ``limit`` below 1 or a negative ``offset`` raises
        :class:`~kbconform.errors.ContractViolation`, never an unbounded read.
        """
        ...

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any], /) -> DeletionResultView:
        """Apply a deletion-signal-v1 push within the principal's tenant only.

        Tombstones delete their paths (an entry's repoSlug defaults to the signal's); a manifest
        snapshot deletes every path of its repo not listed; a revision boundary deletes what the
        resolver reports for the signal's repoSlug (else the manifest's). A principal has no
        repository: a tombstone or boundary whose repository the signal does not name is
        invalid. Paths in ``files`` are never deleted by the same push. A member whose tenant is
        the shared namespace raises :class:`~kbconform.errors.Forbidden` (only an operator
        deletes shared content). An invalid signal raises
        :class:`~kbconform.errors.ContractViolation` (``contract="deletion-signal-v1"``) with
        the code of the mechanism (``KB_TOMBSTONE_INVALID``, ``KB_MANIFEST_INVALID``,
        ``KB_REVISION_BOUNDARY_INVALID``, else ``KB_DELETE_SIGNAL_INVALID``; which wins when
        problems are mixed: ``schemas/deletion-signaling.md``,
        :func:`~kbconform.adapter.deletion_code`) and deletes nothing; a revision boundary
        without a resolver, or that it cannot resolve, raises
        :class:`~kbconform.errors.RevisionBoundaryUnavailable` and deletes nothing, tombstones
        of the same push included.

        A store that fails, at any point of the call (after some pages of deletes landed
        included), raises :class:`~kbconform.errors.BackendUnavailable`: a call that raises
        BackendUnavailable has written and deleted nothing, as every later call sees it.
        """
        ...

    def export(self, principal: Principal, /) -> Sequence[Mapping[str, Any]]:
        """Every stored chunk as a backup-record-v1 record, embeddings exactly as stored.

        Every chunk of every tenant, private ones included: export is no read facade and
        applies no read filter. Operators only: a member raises
        :class:`~kbconform.errors.Forbidden`.
        """
        ...

    def restore(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> int:
        """Write backup-record-v1 records as given (never re-embedding); returns how many.

        Every record is validated before any write: one invalid record raises
        :class:`~kbconform.errors.ContractViolation` and nothing is written; so does a record
        whose metadata lacks a scope stamp (``tenantId``, ``repoSlug``, ``sourcePath``,
        ``visibility``), has a visibility other than ``team``/``private``/``public`` or a value
        that is not a string, number or boolean, or whose embedding has another length than the
        backend's. Any embedding of the right length is written as given. Operators only (a
        member raises :class:`~kbconform.errors.Forbidden`). The metadata is written as given,
        ``visibility`` included: restore is how a chunk becomes ``private``. Restored rows are
        read through the same filter as ingested ones. A store that fails, at any point of the call, raises
        :class:`~kbconform.errors.BackendUnavailable`: a call that raises BackendUnavailable has
        written and deleted nothing, as every later call sees it.
        """
        ...


@runtime_checkable
class SupportsCount(Protocol):
    """Optional read facade ``count`` (declared in ``readFacades``)."""

    def count(self, principal: Principal, /) -> int:
        """How many chunks are in the principal's scope."""
        ...


@runtime_checkable
class SupportsAsk(Protocol):
    """Optional read facade ``ask`` (declared in ``readFacades``)."""

    def ask(self, principal: Principal, question: str, n_results: int, /) -> AnswerView:
        """Search the principal's scope and answer only from the stored text of the hits."""
        ...


@runtime_checkable
class SupportsEnvelope(Protocol):
    """Optional feature ``envelope``: ingest takes the request-level fields of a write (and
    so does :meth:`SupportsSync.sync`, as its fourth argument, when ``sync`` is offered too)."""

    def ingest(
        self,
        principal: Principal,
        records: Sequence[Mapping[str, Any]],
        envelope: Mapping[str, Any],
        /,
    ) -> IngestResultView:
        """:meth:`Backend.ingest` with ``envelope``, the fields a client sends beside its records
        (``tenantId``, ``repoSlug``, ``visibility``, ``originAgentIdentity``, as it claims them;
        :data:`~kbconform.adapter.ENVELOPE_FIELDS`), as a backend's write API takes them.

        Identity comes from the principal only: a field that claims other than the server
        stamps (:func:`~kbconform.adapter.envelope_claims`) is ignored (what is stored is what
        the same ingest without an envelope stores) or refuses the whole write
        (:class:`~kbconform.errors.SpoofRejected` or :class:`~kbconform.errors.Forbidden`),
        never used (a value the backend does not accept may refuse it as
        :class:`~kbconform.errors.ContractViolation`, nothing written). Without an authenticated
        principal an envelope naming a tenant is still no identity:
        :class:`~kbconform.errors.Unauthenticated`.
        """
        ...


@runtime_checkable
class SupportsSync(Protocol):
    """Optional feature ``sync``: replace a repository's corpus in one call (schemas/maintenance.md)."""

    def sync(
        self, principal: Principal, repo_slug: str, records: Sequence[Mapping[str, Any]], /
    ) -> SyncResultView:
        """Write ``records`` as :meth:`Backend.ingest` does and delete every chunk of the
        principal's tenant in repository ``repo_slug`` whose ``sourcePath`` no record carries:
        all or nothing, and never a chunk of another tenant, of the shared namespace (for a
        member) or of another repository (repositories compare exactly: case, Unicode form and
        prefixes make other repositories).

        Every record's ``repoSlug`` is ``repo_slug``: a record of another repository, or a
        ``repo_slug`` that is no valid repoSlug, raises :class:`~kbconform.errors.ContractViolation`
        (``contract="sync"``) and changes nothing. Everything else is as ingest: invalid records,
        spoofed fields (overwrite or reject), a member writing into the shared namespace, ids of
        other tenants' or agents' chunks, and a failing store. A backend that also offers
        ``envelope`` takes the request-level fields as a fourth argument, with ingest's rules
        (:class:`SupportsEnvelope`).
        """
        ...


@runtime_checkable
class SupportsMaintain(Protocol):
    """Optional feature ``maintenance``: whole-corpus operations (re-embedding, index rebuilds)."""

    def maintain(self, principal: Principal, operation: str, /) -> None:
        """Run the maintenance ``operation`` (one the manifest names in ``features.maintenance``).

        Maintenance spans every tenant, so it is an operator's: a member raises
        :class:`~kbconform.errors.Forbidden` and changes nothing. It changes no chunk's id, text
        or metadata and deletes none (embeddings may be recomputed): every principal reads what
        it read before. An operation the manifest does not name raises
        :class:`~kbconform.errors.ContractViolation` (``contract="maintain"``).
        """
        ...


@runtime_checkable
class SupportsScan(Protocol):
    """Optional feature ``workspace-scan``: parse a workspace as the backend's ingest client does."""

    def scan(
        self, root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str, /
    ) -> Sequence[Mapping[str, Any]]:
        """The parsed-chunk-v1 records of the workspace at ``root``, in scan order, claiming
        ``(tenant_id, repo_slug, root_kind)``; ``config`` is a kbconform.toml, or None for the
        default registry.
        """
        ...
