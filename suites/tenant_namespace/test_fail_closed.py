"""L2 fail closed: without identity, or with a failing store, the answer is an error, never data."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch
from kbconform.conformance import Stored, changes, described, refusal, refuses, stored
from kbconform.errors import BackendUnavailable, ContractViolation, Unauthenticated
from kbconform.profiles.tenant_namespace.data import Canaries, Principals, record
from kbconform.profiles.tenant_namespace.world import not_principals

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)

_SIGNAL = {"deleted": [{"sourcePath": "docs/acme-0.md", "repoSlug": "app"}]}


def _operations(
    some_id: str, text: str, facades: tuple[str, ...], backup: list[Any]
) -> dict[str, Callable[[Any, Any], object]]:
    """Every operation, as a call taking (backend, principal)."""
    calls: dict[str, Callable[[Any, Any], object]] = {
        "query": lambda b, p: b.query(p, text, 5, None),
        "get": lambda b, p: b.get(p, some_id),
        "list": lambda b, p: b.list(p, 10, 0),
        "count": lambda b, p: b.count(p),
        "ask": lambda b, p: b.ask(p, text, 5),
        "ingest": lambda b, p: b.ingest(p, [record("docs/new.md", "new", tenant="acme")]),
        "apply_deletion_signal": lambda b, p: b.apply_deletion_signal(p, _SIGNAL),
        "export": lambda b, p: b.export(p),
        "restore": lambda b, p: b.restore(p, backup),
    }
    return {name: call for name, call in calls.items() if name not in ("count", "ask") or name in facades}


NOT_PRINCIPALS = not_principals()
#: The operations that write or return every tenant's rows; the read facades are iso-02's.
WRITES = ("ingest", "apply_deletion_signal", "export", "restore")


def _rows(backend: Any, operator: Any) -> dict[str, Stored]:
    return stored(backend.export(operator))


@pytest.mark.kbconform(id="closed-01", rule="read-filter.md#fail-closed", guide="every-facade", level="L2")
@pytest.mark.parametrize(
    ("operation", "identity"),
    [pytest.param(o, i, id=f"{o} by {i}") for o in WRITES for i in sorted(NOT_PRINCIPALS)],
)
def test_every_write_export_and_restore_without_an_authenticated_principal_is_unauthenticated(
    operation: str,
    identity: str,
    kbconform_backend: Any,
    kbconform_open: Any,
    kbconform_principals: Principals,
) -> None:
    """Without an authenticated principal (None, a look-alike, a Principal subclass or one
    changed in place), ingest, a deletion signal, export and restore each raise
    KB_UNAUTHENTICATED and change nothing: acme, beta and the shared namespace (where one is
    declared) hold a chunk at the path the signal names, and the operator's export before and
    after is the same. A call that is accepted fails with what it returned and what it changed,
    by tenant. The same call by an authenticated principal lands (control: the read-back sees
    a change)."""
    principals = kbconform_principals
    operator, backend = principals.operator, kbconform_backend
    writers = [principals.acme, principals.beta, principals.shared_writer]
    for writer in (w for w in writers if w is not None):
        backend.ingest(
            writer, [record("docs/acme-0.md", f"notes of {writer.tenant_id}", tenant=writer.tenant_id)]
        )
    elsewhere = kbconform_open()  # a row this backend does not hold, for restore
    elsewhere.ingest(principals.beta, [record("docs/restored.md", "a row restored", tenant="beta")])
    backup = [dict(r) for r in elsewhere.export(operator)]
    call = _operations("", "", (), backup)[operation]
    owner = operator if operation in ("export", "restore") else principals.acme
    before = _rows(backend, operator)
    exported = partial(backend.export, operator)
    problem = refusal(
        f"{operation} by {identity}", exported, Unauthenticated, call, backend, NOT_PRINCIPALS[identity]
    )
    assert problem is None, problem
    landed = call(backend, owner)
    if operation == "export":
        assert described(landed) == described(list(backend.export(operator))), (
            "export by the operator differs"
        )
    else:
        assert changes(before, _rows(backend, operator)), (
            f"{operation} by {owner.tenant_id} changed nothing: the read-back could not see a change"
        )


@pytest.mark.kbconform(
    id="closed-02",
    rule="read-filter.md#fail-closed",
    guide="every-facade",
    level="L2",
    requires="fault-injection",
)
def test_a_failing_store_gives_backend_unavailable_on_every_operation(
    kbconform_run: Any, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """While the store fails, every operation raises KB_BACKEND_UNAVAILABLE (no partial data,
    no fallback); once it recovers, everything written before is there (control)."""
    switch = FaultSwitch()
    backend = kbconform_open(
        BackendOptions(spoof_mode=kbconform_run.manifest.spoof_modes[0], store_fails=switch)
    )
    principals = kbconform_principals
    written = [record(f"docs/acme-{n}.md", f"note {n}", tenant="acme") for n in range(3)]
    ids = list(backend.ingest(principals.acme, written).ids)
    backup = list(backend.export(principals.operator))
    operations = _operations(ids[0], "note 0", kbconform_run.manifest.read_facades, backup[:1])
    switch.set(FaultPlan(0))
    for name, call in operations.items():
        principal = principals.operator if name in ("export", "restore") else principals.acme
        with refuses(BackendUnavailable, f"{name} with the store failing"):
            call(backend, principal)
    switch.set(None)
    assert {h.id for h in backend.list(principals.acme, 10, 0)} == set(ids)


@pytest.mark.kbconform(
    id="closed-03", rule="read-filter.md#fail-closed", guide="listprincipal-limit-offset", level="L2"
)
def test_an_empty_or_malformed_paging_request_is_an_error_not_everything(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """list with limit 0 or a negative offset raises KB_CONTRACT_VIOLATION instead of reading
    without bounds; a valid page reads only the principal's scope (control)."""
    acme = kbconform_canaries.principals.acme
    for limit, offset in ((0, 0), (-1, 0), (5, -1)):
        with refuses(ContractViolation, f"list with limit {limit} and offset {offset}"):
            kbconform_backend.list(acme, limit, offset)
    page = {h.id for h in kbconform_backend.list(acme, 100, 0)}
    assert page == kbconform_canaries.readable_by(acme)
