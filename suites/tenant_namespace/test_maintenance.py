"""L2/L3 maintenance: whole-corpus maintenance is an operator's and touches nothing anyone reads
(schemas/maintenance.md, "Maintenance").

Maintenance (re-embedding, index rebuilds) spans every tenant, so it is an operator's, and
changes no chunk anyone reads.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from kbconform.conformance import Unrefused, changes, charged, refusal, stored
from kbconform.errors import ContractViolation, Forbidden, KbconformError, Unauthenticated
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import Principals, sync_world
from kbconform.profiles.tenant_namespace.world import not_principals

#: The isolation profile these tests are written for (schemas/maintenance.md).
PROFILES = ("tenant-namespace",)

NOT_PRINCIPALS = not_principals()


def _refused(
    call: str, backend: Any, operator: Principal, error: type[KbconformError], method: Any, *args: Any
) -> Unrefused | None:
    """None when ``method(*args)`` raises ``error`` and changes nothing, else what it did."""
    return refusal(call, partial(backend.export, operator), error, method, *args)


def _operations(run: Any) -> tuple[str, ...]:
    """The maintenance operations the manifest names."""
    return tuple(run.manifest.feature("maintenance"))


def _private_world(backend: Any, principals: Principals) -> None:
    """The sync world, with acme's docs/c.md of ``app`` made private to acme's agent (a restore
    is how a chunk becomes private)."""
    sync_world(backend, principals)
    operator = principals.operator
    row = next(r for r in backend.export(operator) if r["metadata"].get("sourcePath") == "docs/c.md")
    private = {"visibility": "private", "originAgentIdentity": principals.acme.agent_identity}
    backend.restore(operator, [{**row, "metadata": {**row["metadata"], **private}}])


@pytest.mark.kbconform(
    id="maint-01",
    rule="maintenance.md#maintenance",
    guide="maintainprincipal-operation",
    level="L3",
    requires="maintenance",
)
def test_an_operators_maintenance_changes_no_chunk_anyone_reads(
    kbconform_run: Any, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Each maintenance operation the manifest names, run by an operator, keeps every chunk of
    every tenant with its id, text and metadata (a private one included), and every member
    lists what it listed before (control: acme lists its chunks)."""
    principals, backend = kbconform_principals, kbconform_backend
    operator = principals.operator
    _private_world(backend, principals)
    readers = [p for p in (*principals.members, principals.shared_member) if p is not None]
    scopes = {p.tenant_id: sorted(h.id for h in backend.list(p, 1000, 0)) for p in readers}
    assert scopes["acme"], "control: acme lists its chunks"
    for operation in _operations(kbconform_run):
        before = backend.export(operator)
        backend.maintain(operator, operation)
        after = backend.export(operator)
        wrong = changes(stored(before), stored(after))
        kept = {r["id"]: (r["document"], r["metadata"]) for r in after}
        changed = [
            r["id"] for r in before if r["id"] in kept and kept[r["id"]] != (r["document"], r["metadata"])
        ]
        said = [*wrong, *(f"changed the text or metadata of {i}" for i in changed[:5])]
        assert not said, f"the operator's maintenance {operation!r} " + "; ".join(said)
        for reader in readers:
            now = sorted(h.id for h in backend.list(reader, 1000, 0))
            assert now == scopes[reader.tenant_id], (
                f"after the maintenance {operation!r}, {reader.tenant_id} lists {len(now)} chunks, "
                f"{len(scopes[reader.tenant_id])} before"
            )


@pytest.mark.kbconform(
    id="maint-02",
    rule="maintenance.md#maintenance",
    guide="maintainprincipal-operation",
    level="L3",
    requires="maintenance",
)
def test_a_members_maintenance_is_forbidden_and_changes_nothing(
    kbconform_run: Any, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Maintenance spans every tenant: each operation the manifest names, run by a member (acme,
    loner, a member of the shared namespace), raises KB_FORBIDDEN and changes nothing; the
    operator's lands (control: it raises nothing)."""
    principals, backend = kbconform_principals, kbconform_backend
    _private_world(backend, principals)
    members = [p for p in (principals.acme, principals.loner, principals.shared_member) if p is not None]
    for operation in _operations(kbconform_run):
        for member in members:
            label = f"{member.tenant_id}'s maintenance {operation!r}"
            problem = _refused(
                label, backend, principals.operator, Forbidden, backend.maintain, member, operation
            )
            assert problem is None, problem
        backend.maintain(principals.operator, operation)


@pytest.mark.kbconform(
    id="maint-03",
    rule="maintenance.md#maintenance",
    guide="maintainprincipal-operation",
    level="L2",
    requires="maintenance",
)
@pytest.mark.parametrize("identity", sorted(NOT_PRINCIPALS))
def test_maintenance_without_an_authenticated_principal_is_unauthenticated(
    identity: str, kbconform_run: Any, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Without an authenticated principal, each maintenance operation raises KB_UNAUTHENTICATED
    and changes nothing; the operator's lands (control)."""
    principals, backend = kbconform_principals, kbconform_backend
    _private_world(backend, principals)
    for operation in _operations(kbconform_run):
        label, anyone = f"maintenance {operation!r} by {identity}", NOT_PRINCIPALS[identity]
        problem = _refused(
            label, backend, principals.operator, Unauthenticated, backend.maintain, anyone, operation
        )
        assert problem is None, problem
        backend.maintain(principals.operator, operation)


@pytest.mark.kbconform(
    id="maint-04",
    rule="maintenance.md#maintenance",
    guide="maintainprincipal-operation",
    level="L3",
    requires="maintenance",
)
def test_a_maintenance_operation_the_manifest_does_not_name_is_a_contract_violation(
    kbconform_run: Any, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """An operator's maintenance operation the manifest does not name (a made-up name, a named
    one in upper case, the empty string) raises KB_CONTRACT_VIOLATION and changes nothing: a
    backend that runs an unknown name as some default operation does what no one asked for.
    Each named operation runs (control)."""
    principals, backend = kbconform_principals, kbconform_backend
    operator = principals.operator
    _private_world(backend, principals)
    named = _operations(kbconform_run)
    unknown = [name for name in ("drop-everything", named[0].upper(), "") if name not in named]
    for operation in unknown:
        label = f"the operator's maintenance {operation!r} (not one of {list(named)})"
        problem = _refused(label, backend, operator, ContractViolation, backend.maintain, operator, operation)
        with charged(direction=problem.direction if problem else None):
            assert problem is None, problem
    for operation in named:
        backend.maintain(operator, operation)
