"""L2/L3 sync: a repository's sync replaces only its own tenant's corpus of that repository
(schemas/maintenance.md, "Sync").

A sync replaces one repository's corpus of the principal's tenant; it must never delete a chunk
of another tenant, of the shared namespace or of another repository (a prefix, a parent or a
child path of the slug is another repository).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, SpoofMode
from kbconform.conformance import Stored, Unrefused, changes, charged, refusal, stored, stored_in_full
from kbconform.errors import ContractViolation, Forbidden, KbconformError, SpoofRejected, Unauthenticated
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import (
    ENVELOPE_CLAIMS,
    SYNC_REPO,
    Principals,
    record,
    sync_world,
)
from kbconform.profiles.tenant_namespace.model import ENVELOPE_REFUSALS
from kbconform.profiles.tenant_namespace.world import not_principals

#: The isolation profile these tests are written for (schemas/maintenance.md).
PROFILES = ("tenant-namespace",)

NOT_PRINCIPALS = not_principals()
#: The repository every sync here replaces (``sync_world`` writes its twins beside it).
REPO = SYNC_REPO


def _rows(backend: Any, operator: Principal) -> dict[str, Stored]:
    return stored(backend.export(operator))


def _synced(before: Mapping[str, Stored], tenant: str, result: Any, paths: list[str]) -> dict[str, Stored]:
    """The stored rows after ``tenant`` synced ``app`` to records at ``paths`` (in the batch's
    order): its other rows of ``app`` deleted, the records' rows written, the rest as it was."""
    after = {
        i: row
        for i, row in before.items()
        if not (row[0] == tenant and row[1] == REPO and row[2] not in paths)
    }
    for chunk, path in zip(result.ids, paths, strict=True):
        after[str(chunk)] = (tenant, REPO, path, "team")
    return after


def _refused(
    call: str, backend: Any, operator: Principal, error: type[KbconformError], method: Any, *args: Any
) -> Unrefused | None:
    """None when ``method(*args)`` raises ``error`` and changes nothing, else what it did."""
    return refusal(call, partial(backend.export, operator), error, method, *args)


@pytest.mark.kbconform(
    id="sync-01",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires="sync",
)
def test_a_sync_deletes_only_its_own_tenants_stale_chunks_of_that_repository(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """acme syncs ``app`` to docs/a.md (new text) and docs/c.md (unchanged): its docs/b.md of
    ``app`` is deleted, and nothing else: not beta's or the shared namespace's docs/b.md of
    ``app``, not acme's docs/b.md of ``ap``, ``app-old``, ``app/docs`` or ``docs/app``. The ids
    it returns are the rows it wrote and deleted (control: the sync deletes one row)."""
    principals, backend = kbconform_principals, kbconform_backend
    operator = principals.operator
    sync_world(backend, principals)
    before = _rows(backend, operator)
    records = [
        record("docs/a.md", "acme a, new", tenant="acme"),
        record("docs/c.md", "acme c", tenant="acme"),
    ]
    result = backend.sync(principals.acme, REPO, records)
    after = _rows(backend, operator)
    expected = _synced(before, "acme", result, ["docs/a.md", "docs/c.md"])
    wrong = changes(expected, after)
    assert not wrong, f"acme's sync of {REPO} (docs/a.md, docs/c.md), beyond what it may: " + "; ".join(wrong)
    stale = {i for i, row in before.items() if row[:3] == ("acme", REPO, "docs/b.md")}
    assert set(result.deleted_ids) == stale, (
        f"the sync says it deleted {sorted(result.deleted_ids)}; it deleted {sorted(stale)}"
    )
    assert stale, "control: acme's docs/b.md of app was there to delete"


@pytest.mark.kbconform(
    id="sync-02",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires="sync",
)
def test_a_sync_whose_records_claim_another_tenant_replaces_only_the_principals_own(
    kbconform_spoof_mode: SpoofMode, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """acme syncs ``app`` with records claiming tenant beta. Overwrite mode: the records land as
    acme's, with a tenantId warning each, and only acme's stale docs/b.md is deleted (beta's
    rows of ``app`` stay, though the records named beta). Reject mode: KB_TENANT_SPOOF_REJECTED
    and nothing changes."""
    principals = kbconform_principals
    operator = principals.operator
    backend = kbconform_open(BackendOptions(spoof_mode=kbconform_spoof_mode))
    sync_world(backend, principals)
    records = [record("docs/a.md", "claimed for beta", tenant="beta")]
    if kbconform_spoof_mode == "reject":
        problem = _refused(
            "acme's sync claiming beta",
            backend,
            operator,
            SpoofRejected,
            backend.sync,
            principals.acme,
            REPO,
            records,
        )
        assert problem is None, problem
        return
    before = _rows(backend, operator)
    result = backend.sync(principals.acme, REPO, records)
    wrong = changes(_synced(before, "acme", result, ["docs/a.md"]), _rows(backend, operator))
    assert not wrong, "acme's sync with records claiming beta, beyond what it may: " + "; ".join(wrong)
    warned = sorted((w.field, w.chunk_id) for w in result.warnings)
    assert warned == [("tenantId", result.ids[0])], f"warnings {warned}: one tenantId warning per record"


@pytest.mark.kbconform(
    id="sync-03",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires="sync",
)
@pytest.mark.parametrize(
    ("repo", "records"),
    [
        pytest.param(
            REPO,
            [record("docs/a.md", "of another repo", tenant="acme", repo="app-old")],
            id="a record of another repository",
        ),
        pytest.param("", [], id="an empty repository"),
        pytest.param("../app", [], id="a repository outside the slug syntax"),
        pytest.param(None, [], id="no repository"),
    ],
)
def test_a_sync_of_an_invalid_repository_or_of_records_of_another_is_refused(
    repo: Any, records: list[Any], kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A sync whose repository is no repoSlug, or whose records name another repository, raises
    KB_CONTRACT_VIOLATION and changes nothing (it would otherwise delete a whole repository's
    rows, or write rows the sync never replaces)."""
    principals, backend = kbconform_principals, kbconform_backend
    sync_world(backend, principals)
    problem = _refused(
        f"acme's sync of {repo!r}",
        backend,
        principals.operator,
        ContractViolation,
        backend.sync,
        principals.acme,
        repo,
        records,
    )
    with charged(direction=problem.direction if problem else None):
        assert problem is None, problem


@pytest.mark.kbconform(
    id="sync-04",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires=("sync", "shared-namespace"),
)
def test_a_member_of_the_shared_namespace_cannot_sync_it(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A member of the shared namespace syncing ``app`` raises KB_FORBIDDEN and deletes none of
    its rows; the shared namespace's operator may (control: its docs/b.md is deleted)."""
    principals, backend = kbconform_principals, kbconform_backend
    member, writer = principals.shared_member, principals.shared_writer
    assert member is not None
    assert writer is not None
    sync_world(backend, principals)
    operator = principals.operator
    problem = _refused(
        "a shared-namespace member's sync", backend, operator, Forbidden, backend.sync, member, REPO, []
    )
    assert problem is None, problem
    before = _rows(backend, principals.operator)
    result = backend.sync(writer, REPO, [])
    wrong = changes(_synced(before, writer.tenant_id, result, []), _rows(backend, principals.operator))
    assert not wrong, "the shared namespace operator's sync, beyond what it may: " + "; ".join(wrong)


@pytest.mark.kbconform(
    id="sync-05",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L2",
    requires="sync",
)
@pytest.mark.parametrize("identity", sorted(NOT_PRINCIPALS))
def test_a_sync_without_an_authenticated_principal_is_unauthenticated(
    identity: str, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Without an authenticated principal, a sync of ``app`` with no records raises
    KB_UNAUTHENTICATED and deletes nothing (a backend that falls back to a default tenant would
    empty that tenant's repository); acme's sync deletes its rows (control)."""
    principals, backend = kbconform_principals, kbconform_backend
    sync_world(backend, principals)
    anyone = NOT_PRINCIPALS[identity]
    problem = _refused(
        f"sync by {identity}", backend, principals.operator, Unauthenticated, backend.sync, anyone, REPO, []
    )
    assert problem is None, problem
    assert backend.sync(principals.acme, REPO, []).deleted_ids, "control: acme's sync deleted nothing"


@pytest.mark.kbconform(
    id="sync-06",
    rule="maintenance.md#sync",
    guide="syncprincipal-repo_slug-records-envelope",
    level="L3",
    requires=("sync", "envelope"),
)
@pytest.mark.parametrize("field", sorted(ENVELOPE_CLAIMS))
def test_a_sync_whose_request_envelope_claims_another_identity_replaces_only_the_principals_own(
    field: str, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """acme syncs ``app`` to docs/a.md with a request envelope claiming tenant beta, another
    repository, visibility or origin agent (schemas/stamping.md). The sync is refused whole
    (nothing changes), or it changes exactly what the same sync without the envelope changes
    on a backend holding the same rows (control): beta's docs/b.md of ``app`` stays though the
    envelope names beta, and acme's own stale docs/b.md goes."""
    principals = kbconform_principals
    operator = principals.operator
    backend, control = kbconform_open(), kbconform_open()
    for each in (backend, control):
        sync_world(each, principals)
    before = stored_in_full(backend.export(operator))
    records = [record("docs/a.md", "acme a, synced", tenant="acme")]
    control.sync(principals.acme, REPO, records)
    envelope = {field: ENVELOPE_CLAIMS[field]}
    try:
        backend.sync(principals.acme, REPO, records, envelope)
    except ENVELOPE_REFUSALS:
        after = stored_in_full(backend.export(operator))
        assert after == before, f"the refused sync with the envelope {envelope} changed the stored rows"
        return
    after, expected = stored_in_full(backend.export(operator)), stored_in_full(control.export(operator))
    differing = [(i, after.get(i), expected.get(i)) for i in sorted(set(after) | set(expected))]
    shown = [
        f"{i}: {got} where the same sync without it stores {want}"
        for i, got, want in differing
        if got != want
    ]
    assert not shown, f"the envelope {envelope} changed what the sync did: " + "; ".join(shown[:3])
