"""L2 fail closed: without identity, or with a failing store, the answer is an error, never data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch
from kbconform.conformance import Canaries, Principals, not_principals, record
from kbconform.errors import BackendUnavailable, ContractViolation, Unauthenticated

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


@pytest.mark.kbconform(id="closed-01", level="L2")
@pytest.mark.parametrize("identity", sorted(NOT_PRINCIPALS))
def test_every_operation_without_an_authenticated_principal_is_unauthenticated(
    identity: str, kbconform_run: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """No principal, a look-alike, a Principal subclass or a Principal changed in place raises
    KB_UNAUTHENTICATED on every operation; nothing is read or written. The same calls with the
    operator succeed (control)."""
    operator = kbconform_canaries.principals.operator
    backup = list(kbconform_backend.export(operator))
    before = sorted(r["id"] for r in backup)
    some = kbconform_canaries.chunks[before[0]]
    operations = _operations(some.id, some.record["content"], kbconform_run.manifest.read_facades, backup[:1])
    for name, call in operations.items():
        with pytest.raises(Unauthenticated):
            call(kbconform_backend, NOT_PRINCIPALS[identity])
        assert sorted(r["id"] for r in kbconform_backend.export(operator)) == before, f"{name} wrote data"
    owner = kbconform_canaries.principals.acme
    for name in ("query", "list"):
        assert operations[name](kbconform_backend, owner), f"{name} with a principal returned nothing"


@pytest.mark.kbconform(id="closed-02", level="L2", requires="fault-injection")
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
        with pytest.raises(BackendUnavailable):
            call(backend, principal)
    switch.set(None)
    assert {h.id for h in backend.list(principals.acme, 10, 0)} == set(ids)


@pytest.mark.kbconform(id="closed-03", level="L2")
def test_an_empty_or_malformed_paging_request_is_an_error_not_everything(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """list with limit 0 or a negative offset raises KB_CONTRACT_VIOLATION instead of reading
    without bounds; a valid page reads only the principal's scope (control)."""
    acme = kbconform_canaries.principals.acme
    for limit, offset in ((0, 0), (-1, 0), (5, -1)):
        with pytest.raises(ContractViolation):
            kbconform_backend.list(acme, limit, offset)
    page = {h.id for h in kbconform_backend.list(acme, 100, 0)}
    assert page == kbconform_canaries.readable_by(acme)
