"""The texts ``kbconform new-adapter`` fills in (``@module@``, ``@Camel@``, ``@spec@``,
``@install@``, ``@install_why@``): the adapter module, its pytest configuration and its CI
workflow."""

MODULE = '''\
"""@module@: a kbconform adapter (tenant-namespace profile), written by `kbconform new-adapter`.

Fill in the backend's facades one at a time, and after each run the suites from this directory:

    kbconform run --adapter @spec@

A facade not implemented yet raises NotImplementedError saying so: the tests that call it end
there at once, and the run prints one line for each such facade. Each docstring below says what
to take, what to return and which kbconform.errors error to raise; the full specification is
kbconform.adapter.Backend and the adapter guide (docs/adapter-guide.md). What the backend offers
is declared in @module@.manifest.json: widen it as you implement more (a declined capability
skips its tests, with your reason, and is named beside the level it never caps; but
fault-injection, which the suites need to see a store fail, costs L2 and above until you offer
it). Its spoofModes is ["reject"], the smallest honest start: a record claiming another
identity is refused whole (SpoofRejected), which needs no warnings; add "overwrite" (stamp the
server's values and return a warning per spoofed field, as the guide's example does) when the
backend does that too. Check the types against the protocol with

    mypy --strict @module@.py
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform.adapter import Adapter, Backend, BackendOptions, check_deletion_signal
from kbconform.contract import validate
from kbconform.errors import ContractViolation, Forbidden, Unauthenticated
from kbconform.identity import Principal

MANIFEST = Path(__file__).with_name("@module@.manifest.json")


def _not_implemented(facade: str, what: str) -> NotImplementedError:
    """The error of a facade not implemented yet: every test that calls it ends there, and the
    run counts them by facade."""
    return NotImplementedError(f"{facade} in @module@.py: {what}")


# -- what the facades return (any objects with these attributes will do) ----------------------


@dataclass(frozen=True)
class Hit:
    """A chunk as a read facade returns it: the stored id, text and metadata (stamps included)."""

    id: str
    document: str | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True)
class SpoofWarning:
    """A guarded field a record claimed otherwise, overwritten by the server (overwrite mode)."""

    field: str
    chunk_id: str


@dataclass(frozen=True)
class IngestResult:
    """One id per record, in batch order; one warning per spoofed field (overwrite mode)."""

    ids: Sequence[str]
    warnings: Sequence[SpoofWarning] = ()


@dataclass(frozen=True)
class DeletionResult:
    """The ids a deletion signal deleted."""

    deleted_ids: Sequence[str]


@dataclass(frozen=True)
class Answer:
    """What ask returns: text built only from the stored text of ``sources``."""

    text: str
    sources: Sequence[Hit] = ()


# -- the backend: your knowledge base's server-side API, opened empty for each test ------------


class @Camel@Backend:
    """One empty knowledge base. Every facade takes the authenticated principal first.

    Every facade given anything but a kbconform.identity.Principal (``type(principal) is
    Principal``; None included) raises kbconform.errors.Unauthenticated, never an unfiltered
    answer; a failing store raises kbconform.errors.BackendUnavailable, never an empty or
    partial answer. Map your backend's own errors onto kbconform.errors.
    """

    def __init__(self, options: BackendOptions) -> None:
        #: How the suites want it opened: options.spoof_mode (one of the manifest's spoofModes),
        #: options.resolver (feature revision-boundary), options.store_fails (fault-injection).
        self.options = options

    # -- the kit's guards (docs/adapter-guide.md, "A skeleton"): keep them; the store is yours --

    @staticmethod
    def _caller(principal: object, operation: str) -> Principal:
        """Exactly a Principal, its fields checked again; anything else is Unauthenticated."""
        if type(principal) is not Principal:
            raise Unauthenticated(operation)
        try:
            return Principal(
                principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
            )
        except ContractViolation:
            raise Unauthenticated(operation) from None

    @staticmethod
    def _operator(caller: Principal, operation: str) -> None:
        """Only an operator exports and restores."""
        if not caller.is_operator:
            raise Forbidden(operation, f"only an operator may {operation}")

    def ingest(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> IngestResult:
        """Validate, stamp and write a batch of parsed-chunk-v1 records, all or nothing.

        Arguments: the principal; the records (parsed-chunk-v1, as the client sent them).
        Returns: an IngestResult, one id per record in batch order (tenant-aware: the same
        record under two tenants gets two ids); warnings name each spoofed field (overwrite mode).
        Raises: ContractViolation for an invalid record (kbconform.validate checks one);
        SpoofRejected when a record claims another identity in reject mode; Forbidden for a
        member writing shared content, an id owned by another tenant, or an id holding another
        agent's private chunk; nothing is written on any error.
        """
        self._caller(principal, "ingest")  # the checked caller: its tenant stamps every record
        for record in records:
            validate(record, "parsed-chunk-v1")  # ContractViolation: nothing written
        raise _not_implemented("ingest", "validate, stamp (tenantId, repoSlug, ...) and write the batch")

    def query(
        self, principal: Principal, text: str, n_results: int, where: Mapping[str, Any] | None, /
    ) -> Sequence[Hit]:
        """The n_results chunks nearest to text in the principal's scope, nearest first.

        Arguments: the principal; the query text; how many hits; a client where clause (None
        unless the manifest offers client-where), AND-combined with the scope.
        Returns: the hits; the top-k is the top-k within scope.
        Raises: ContractViolation for a where that names a stamped key or could widen scope.
        """
        self._caller(principal, "query")  # the checked caller: search its readable_tenants only
        raise _not_implemented("query", "a similarity search filtered to the principal's scope")

    def get(self, principal: Principal, chunk_id: str, /) -> Hit:
        """The chunk with this id, if it is in the principal's scope.

        Arguments: the principal; a chunk id (as ingest returned it).
        Returns: the hit.
        Raises: NotFound, the same for a foreign id and a missing one (same type, code and
        message but for the id): no existence oracle.
        """
        self._caller(principal, "get")  # the checked caller: read within its readable_tenants only
        raise _not_implemented("get", "read one chunk by id within the principal's scope")

    def apply_deletion_signal(self, principal: Principal, signal: Mapping[str, Any], /) -> DeletionResult:
        """Apply a deletion-signal-v1 push within the principal's tenant only.

        Arguments: the principal; the signal (tombstones, a manifest snapshot, or a revision
        boundary resolved with options.resolver).
        Returns: a DeletionResult with the ids deleted (all of the principal's tenant).
        Raises: ContractViolation with the mechanism's code (KB_TOMBSTONE_INVALID,
        KB_MANIFEST_INVALID, KB_REVISION_BOUNDARY_INVALID, else KB_DELETE_SIGNAL_INVALID) and
        nothing deleted; RevisionBoundaryUnavailable for a revision boundary without a resolver.
        """
        self._caller(principal, "apply_deletion_signal")  # the checked caller: delete in its tenant only
        check_deletion_signal(signal)  # the error carries the mechanism's code
        raise _not_implemented("apply_deletion_signal", "delete the signalled paths within the tenant")

    def export(self, principal: Principal, /) -> Sequence[Mapping[str, Any]]:
        """Every stored chunk as a backup-record-v1 record, embeddings exactly as stored.

        Arguments: the principal (an operator).
        Returns: the records.
        Raises: Forbidden for a member.
        """
        self._operator(self._caller(principal, "export"), "export")
        raise _not_implemented("export", "every stored chunk as backup-record-v1, for operators")

    def restore(self, principal: Principal, records: Sequence[Mapping[str, Any]], /) -> int:
        """Write backup-record-v1 records as given, never re-embedding.

        Arguments: the principal (an operator); the records.
        Returns: how many were written.
        Raises: ContractViolation, and nothing written, if any record is invalid or lacks a
        scope stamp (tenantId, repoSlug, sourcePath, visibility); Forbidden for a member.
        """
        self._operator(self._caller(principal, "restore"), "restore")
        for record in records:
            validate(record, "backup-record-v1")  # ContractViolation: nothing written
        raise _not_implemented("restore", "validate every record, then write them all as given")

    def count(self, principal: Principal, /) -> int:
        """Optional facade: add "count" to readFacades in the manifest once it works.

        Arguments: the principal. Returns: how many chunks are in the principal's scope.
        """
        self._caller(principal, "count")
        raise _not_implemented("count", "count the chunks in the principal's scope")

    def ask(self, principal: Principal, question: str, n_results: int, /) -> Answer:
        """Optional facade: add "ask" to readFacades in the manifest once it works.

        Arguments: the principal; the question; how many hits to build the answer from.
        Returns: an Answer built only from the stored text of its sources, all in scope.
        """
        self._caller(principal, "ask")
        raise _not_implemented("ask", "search the principal's scope and answer from the hits only")

    def scan(
        self, root: Path, config: Path | None, tenant_id: str, repo_slug: str, root_kind: str, /
    ) -> Sequence[Mapping[str, Any]]:
        """Optional feature workspace-scan: set it to true in the manifest once it works.

        Arguments: a workspace directory; a kbconform.toml (None: the default registry); the
        tenant id, repository slug and root kind the records claim.
        Returns: the workspace's parsed-chunk-v1 records, in scan order, as the ingest client
        would send them.
        """
        raise _not_implemented("scan", "parse the workspace as the ingest client does")

    def list(self, principal: Principal, limit: int, offset: int, /) -> Sequence[Hit]:
        """A page of the chunks in the principal's scope, in a stable order.

        Arguments: the principal; the page size (at least 1); the offset (at least 0).
        Returns: the hits of the page.
        Raises: nothing of its own (Unauthenticated, BackendUnavailable as every facade).

        (Defined last: a method named list would otherwise shadow the builtin in this class body.)
        """
        self._caller(principal, "list")
        raise _not_implemented("list", "a stable page of the chunks in the principal's scope")


# -- the adapter: what the factory returns -----------------------------------------------------


class @Camel@Adapter:
    """Declares the manifest and opens fresh, empty backends."""

    def __init__(self) -> None:
        self.manifest: Mapping[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))

    def open(self, options: BackendOptions, /) -> @Camel@Backend:
        """A new backend holding no chunks, independent of every other one opened."""
        return @Camel@Backend(options)

    def close(self, backend: Backend, /) -> None:
        """Release what open took (once per backend): drop its collection, close its client."""
        assert isinstance(backend, @Camel@Backend)

    def shutdown(self) -> None:
        """Release what the adapter holds (servers, clients); called once, after the run."""


def factory() -> Adapter:
    """The factory: kbconform run --adapter @spec@ (the annotation lets mypy check the protocol)."""
    return @Camel@Adapter()
'''

PYTEST_INI = """\
# pytest runs the kbconform suites against the adapter (the plugin comes with kbconform):
#     pytest            or: kbconform run --adapter @spec@
[pytest]
kbconform_adapter = @spec@
"""

WORKFLOW = """\
# The kbconform conformance gate. If the adapter is not at the repository root, set
# working-directory on the run steps to its directory.
name: kbconform
on: [push, pull_request]
jobs:
  conformance:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      # kbconform pinned: the suites and their catalogue are part of the verdict. Install your
      # backend's client here too (e.g. pip install -e .). The repository variable
      # KBCONFORM_INSTALL (Settings, Secrets and variables, Actions), when set, replaces the
      # source below; with neither, this step stops and says so.
      - run: pip install "${KBCONFORM_INSTALL:?set the repository variable KBCONFORM_INSTALL}"
        env:
          # @install_why@
          KBCONFORM_INSTALL: ${{ vars.KBCONFORM_INSTALL || '@install@' }}
      - run: >
          kbconform run --adapter @spec@ --report kbconform.json
          --junitxml kbconform.xml --summary "$GITHUB_STEP_SUMMARY" --badge kbconform-badge.json
      - if: always()
        uses: actions/upload-artifact@v4
        with:
          name: kbconform
          path: kbconform*
"""
