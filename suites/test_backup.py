"""L3 backup and restore: byte for byte, validated before any write, filtered after, operators only."""

from __future__ import annotations

import struct
from typing import Any

import pytest
import rfc8785

from kbconform.conformance import Canaries, Principals
from kbconform.contract import is_valid
from kbconform.errors import ContractViolation, Forbidden, NotFound


def _canonical(records: Any) -> list[bytes]:
    return sorted(rfc8785.dumps(dict(r)) for r in records)


def _float32_bits(records: Any) -> dict[str, bytes]:
    return {r["id"]: struct.pack(f"<{len(r['embedding'])}f", *r["embedding"]) for r in records}


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@pytest.mark.kbconform(id="backup-01", level="L3")
def test_export_restore_export_is_byte_identical(
    kbconform_run: Any, kbconform_open: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """Every chunk of every tenant exports as valid backup-record-v1; restoring into an empty
    backend and exporting again gives the same canonical bytes and the same float32 bits; and
    embeddings the suite makes up (float32 values with every digit used) come back exactly."""
    operator = kbconform_canaries.principals.operator
    rng = kbconform_run.rng("backup-01")
    exported = list(kbconform_backend.export(operator))
    assert {r["id"] for r in exported} == set(kbconform_canaries.chunks), "export is not every chunk"
    assert all(is_valid(dict(r), "backup-record-v1") for r in exported)
    fresh = kbconform_open()
    assert list(fresh.export(operator)) == [], "a fresh backend is not empty"
    assert fresh.restore(operator, exported) == len(exported)
    again = list(fresh.export(operator))
    assert _canonical(again) == _canonical(exported)
    assert _float32_bits(again) == _float32_bits(exported)
    made_up = [{**r, "embedding": [_float32(rng.uniform(-1, 1)) for _ in r["embedding"]]} for r in exported]
    other = kbconform_open()
    other.restore(operator, made_up)
    assert _canonical(other.export(operator)) == _canonical(made_up), "restore or export changed embeddings"


@pytest.mark.kbconform(id="backup-02", level="L3")
def test_a_null_document_survives_the_round_trip(
    kbconform_open: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """document may be null (text kept in metadata by some exporters): it restores and exports as null."""
    operator = kbconform_canaries.principals.operator
    [first, *rest] = kbconform_backend.export(operator)
    fresh = kbconform_open()
    fresh.restore(operator, [{**first, "document": None}, *rest])
    again = {r["id"]: r for r in fresh.export(operator)}
    assert again[first["id"]]["document"] is None
    assert all(again[r["id"]]["document"] == r["document"] for r in rest)


BROKEN = {
    "a record without an embedding": lambda r: {k: v for k, v in r.items() if k != "embedding"},
    "a record with an unknown field": lambda r: {**r, "tenantOverride": "beta"},
    "a record with a string embedding": lambda r: {**r, "embedding": "0.1,0.2"},
    "a record with an empty id": lambda r: {**r, "id": ""},
}


@pytest.mark.kbconform(id="backup-03", level="L3")
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_restore_validates_every_record_before_writing_any(
    broken: str, kbconform_open: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """One invalid record last in the batch: KB_CONTRACT_VIOLATION and an empty backend; the
    valid records alone restore (control)."""
    operator = kbconform_canaries.principals.operator
    exported = [dict(r) for r in kbconform_backend.export(operator)]
    fresh = kbconform_open()
    with pytest.raises(ContractViolation):
        fresh.restore(operator, [*exported, BROKEN[broken](exported[0])])
    assert list(fresh.export(operator)) == []
    assert fresh.restore(operator, exported) == len(exported)


@pytest.mark.kbconform(id="backup-04", level="L3")
def test_restored_chunks_are_read_through_the_same_filter(
    kbconform_open: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """After a restore each member reads exactly its scope of the restored chunks."""
    principals = kbconform_canaries.principals
    fresh = kbconform_open()
    fresh.restore(principals.operator, list(kbconform_backend.export(principals.operator)))
    for member in principals.members:
        expected = kbconform_canaries.readable_by(member)
        assert {h.id for h in fresh.list(member, 100, 0)} == expected
        for foreign in kbconform_canaries.foreign_to(member):
            with pytest.raises(NotFound):
                fresh.get(member, foreign)


@pytest.mark.kbconform(id="backup-05", level="L3")
def test_export_and_restore_are_for_operators_only(
    kbconform_open: Any,
    kbconform_backend: Any,
    kbconform_principals: Principals,
    kbconform_canaries: Canaries,
) -> None:
    """A member's export and restore raise KB_FORBIDDEN and write nothing; the operator's work (control)."""
    principals = kbconform_principals
    exported = list(kbconform_backend.export(principals.operator))
    fresh = kbconform_open()
    for member in principals.members:
        with pytest.raises(Forbidden):
            kbconform_backend.export(member)
        with pytest.raises(Forbidden):
            fresh.restore(member, exported)
    assert list(fresh.export(principals.operator)) == []
    assert fresh.restore(principals.operator, exported) == len(exported) > 0
