"""L0 contract: the backend holds its inputs to the schemas, case by case from the shipped vectors.

Every invalid vector must be refused with ContractViolation and change nothing; the valid
vectors (the control) must be accepted by the same backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kbconform.conformance import charged, refuses
from kbconform.contract import vectors
from kbconform.errors import ContractViolation
from kbconform.profiles.tenant_namespace.data import Principals, record

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)


def _vectors(schema: str, valid: bool) -> list[tuple[str, Any]]:
    groups = vectors(schema)
    cases = [
        (f"{group['description']}: {test['description']}", test["data"])
        for group in groups
        for test in group["tests"]
        if test["valid"] is valid
    ]
    assert cases, f"no {'valid' if valid else 'invalid'} {schema} vectors"
    return cases


def _accepted(cases: list[tuple[str, Any]], call: Callable[[Any], object]) -> list[str]:
    """The cases ``call`` did not refuse with ContractViolation."""
    accepted = []
    for description, data in cases:
        try:
            call(data)
        except ContractViolation:
            continue
        accepted.append(description)
    return accepted


@pytest.mark.kbconform(
    id="contract-01",
    rule="parsed-chunk.md#the-parsed-chunk-parsed-chunk-v1",
    guide="ingestprincipal-records",
    level="L0",
)
def test_ingest_refuses_every_invalid_parsed_chunk_and_writes_nothing(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Each invalid parsed-chunk-v1 vector, alone and as the last of a clean batch, is refused;
    nothing lands. The valid vectors, claiming the principal's own tenant, all land (control)."""
    acme = kbconform_principals.acme
    backend = kbconform_backend
    clean = record("docs/clean.md", "a clean record", tenant="acme")
    invalid = _vectors("parsed-chunk-v1", valid=False)
    alone = _accepted(invalid, lambda data: backend.ingest(acme, [data]))
    batched = _accepted(invalid, lambda data: backend.ingest(acme, [clean, data]))
    with charged(direction="accepted"):
        assert not alone, f"ingest accepted invalid records: {alone}"
        assert not batched, f"ingest accepted a batch ending in an invalid record: {batched}"
    assert list(backend.list(acme, 100, 0)) == [], "a refused batch left chunks behind"
    valid = [{**data, "tenantId": "acme"} for _, data in _vectors("parsed-chunk-v1", valid=True)]
    ids = backend.ingest(acme, valid).ids
    assert len(ids) == len(valid)
    assert {hit.id for hit in backend.list(acme, 100, 0)} == set(ids)


@pytest.mark.kbconform(
    id="contract-02", rule="backup.md#restore", guide="restoreprincipal-records", level="L0"
)
def test_restore_refuses_every_invalid_backup_record_and_writes_nothing(
    kbconform_backend: Any, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Each invalid backup-record-v1 vector, and the backend's own exported record broken one
    field at a time, alone and after a good record, is refused; the backend stays empty. The
    exported record itself restores (control)."""
    operator = kbconform_principals.operator
    source = kbconform_open()
    source.ingest(kbconform_principals.acme, [record("docs/a.md", "exported words", tenant="acme")])
    [good] = [dict(r) for r in source.export(operator)]
    backend = kbconform_backend
    broken = {
        "an unknown field": {**good, "restoredBy": "someone"},
        "no embedding": {k: v for k, v in good.items() if k != "embedding"},
        "a string in the embedding": {**good, "embedding": ["0.5", *good["embedding"][1:]]},
        "an empty id": {**good, "id": ""},
        "metadata as an array": {**good, "metadata": []},
        "an upper-case tenant": {**good, "metadata": {**good["metadata"], "tenantId": "ACME"}},
    }
    invalid = _vectors("backup-record-v1", valid=False) + [(f"exported, {k}", v) for k, v in broken.items()]
    alone = _accepted(invalid, lambda data: backend.restore(operator, [data]))
    batched = _accepted(invalid, lambda data: backend.restore(operator, [good, data]))
    with charged(direction="accepted"):
        assert not alone, f"restore accepted invalid records: {alone}"
        assert not batched, f"restore accepted a batch ending in an invalid record: {batched}"
    assert list(backend.export(operator)) == [], "a refused restore left records behind"
    assert backend.restore(operator, [good]) == 1
    assert [r["id"] for r in backend.export(operator)] == [good["id"]]


@pytest.mark.kbconform(
    id="contract-03",
    rule="deletion-signaling.md#payload",
    guide="apply_deletion_signalprincipal-signal",
    level="L0",
)
def test_every_invalid_deletion_signal_is_refused_and_deletes_nothing(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Each invalid deletion-signal-v1 vector, and a working tombstone broken one field at a
    time, is refused and every chunk stays; the working tombstone deletes its path (control)."""
    acme = kbconform_principals.acme
    backend = kbconform_backend
    written = backend.ingest(
        acme, [record(f"docs/{name}.md", f"{name} words", tenant="acme") for name in ("a", "b")]
    ).ids
    tombstone = {"repoSlug": "app", "deleted": [{"sourcePath": "docs/a.md"}]}
    broken = {
        "a tenantId at the top level": {**tombstone, "tenantId": "beta"},
        "a tenantId in the tombstone": {
            **tombstone,
            "deleted": [{"sourcePath": "docs/a.md", "tenantId": "acme"}],
        },
        "an unknown field": {**tombstone, "force": True},
        "an absolute path": {**tombstone, "deleted": [{"sourcePath": "/docs/a.md"}]},
    }
    invalid = _vectors("deletion-signal-v1", valid=False) + [
        (f"a tombstone with {k}", v) for k, v in broken.items()
    ]
    accepted = _accepted(invalid, lambda data: backend.apply_deletion_signal(acme, data))
    with charged(direction="accepted"):
        assert not accepted, f"invalid deletion signals were applied: {accepted}"
    assert {hit.id for hit in backend.list(acme, 100, 0)} == set(written)
    assert len(backend.apply_deletion_signal(acme, tombstone).deleted_ids) == 1
    assert len(list(backend.list(acme, 100, 0))) == 1


@pytest.mark.kbconform(
    id="contract-04", rule="backup.md#restore", guide="restoreprincipal-records", level="L0"
)
def test_restore_refuses_a_record_without_a_scope_stamp_and_writes_nothing(
    kbconform_backend: Any, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """The backend's own exported record without one of tenantId, repoSlug, sourcePath or
    visibility (schema-valid, but a row nothing could scope), alone and after a good record, is
    refused: nothing is stored and no member reads anything. The record itself restores and only
    its tenant reads it (control)."""
    principals = kbconform_principals
    operator = principals.operator
    source = kbconform_open()
    source.ingest(principals.acme, [record("docs/a.md", "exported words", tenant="acme")])
    [good] = [dict(r) for r in source.export(operator)]
    backend = kbconform_backend
    for stamp in ("tenantId", "repoSlug", "sourcePath", "visibility"):
        unscoped = {
            **good,
            "id": f"unscoped-{stamp}",
            "metadata": {k: v for k, v in good["metadata"].items() if k != stamp},
        }
        for batch in ([unscoped], [good, unscoped]):
            with refuses(ContractViolation, f"restore of a record without {stamp}"):
                backend.restore(operator, batch)
        assert list(backend.export(operator)) == [], f"a restore without {stamp} left records behind"
        for member in principals.members:
            assert list(backend.list(member, 100, 0)) == [], f"{member.tenant_id} reads a row without {stamp}"
    assert backend.restore(operator, [good]) == 1
    assert [r["id"] for r in backend.export(operator)] == [good["id"]]
    assert [h.id for h in backend.list(principals.acme, 100, 0)] == [good["id"]]
    assert list(backend.list(principals.beta, 100, 0)) == []
