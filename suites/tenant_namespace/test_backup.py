"""L3 backup and restore: byte for byte, validated before any write, filtered after, operators only."""

from __future__ import annotations

import struct
from typing import Any

import pytest
import rfc8785

from kbconform.conformance import changes, described, refuses, stored, unrefused
from kbconform.contract import is_valid
from kbconform.errors import ContractViolation, Forbidden, NotFound
from kbconform.profiles.tenant_namespace.data import Canaries, Principals, record

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)


def _canonical(records: Any) -> list[bytes]:
    return sorted(rfc8785.dumps(dict(r)) for r in records)


def _same(got: Any, want: Any, what: str) -> None:
    """Fails with ``what`` and the first difference when ``got`` and ``want`` (backup records)
    are not the same canonical bytes. Compared before asserting, so no diff of hundreds of
    records is built for the message."""
    if _canonical(got) == _canonical(want):
        return
    mine = {str(r["id"]): r for r in got}
    theirs = {str(r["id"]): r for r in want}
    if sorted(mine) != sorted(theirs) or len(mine) != len(list(got)):
        missing, extra = sorted(set(theirs) - set(mine)), sorted(set(mine) - set(theirs))
        came = f"{len(list(got))} records came back for {len(list(want))}"
        pytest.fail(f"{what}: {came} (missing {missing[:3]}, new {extra[:3]})")
    stable = next(i for i in sorted(theirs) if rfc8785.dumps(dict(mine[i])) != rfc8785.dumps(dict(theirs[i])))
    where, was, now = _difference(dict(theirs[stable]), dict(mine[stable]), "")
    pytest.fail(f"{what}: {stable}{where} was {was!r:.80} and came back as {now!r:.80}")


def _difference(want: Any, got: Any, where: str) -> tuple[str, Any, Any]:
    """The path of the first place ``got`` differs from ``want`` in canonical JSON, and both values there."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if rfc8785.dumps(want.get(key)) != rfc8785.dumps(got.get(key)):
                return _difference(want.get(key), got.get(key), f"{where}.{key}")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for index, (one, other) in enumerate(zip(want, got, strict=True)):
            if rfc8785.dumps(one) != rfc8785.dumps(other):
                return _difference(one, other, f"{where}[{index}]")
    return where, want, got


def _float32_bits(records: Any) -> dict[str, bytes]:
    return {r["id"]: struct.pack(f"<{len(r['embedding'])}f", *r["embedding"]) for r in records}


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


@pytest.mark.kbconform(id="backup-01", rule="backup.md#export", guide="ingestprincipal-records", level="L3")
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
    _same(again, exported, "export, restore, export changed a record")
    same_bits = _float32_bits(again) == _float32_bits(exported)
    assert same_bits, "export, restore, export changed an embedding's float32 bits"
    made_up = [{**r, "embedding": [_float32(rng.uniform(-1, 1)) for _ in r["embedding"]]} for r in exported]
    other = kbconform_open()
    other.restore(operator, made_up)
    _same(list(other.export(operator)), made_up, "restore or export changed embeddings")


@pytest.mark.kbconform(id="backup-02", rule="backup.md#export", guide="exportprincipal", level="L3")
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


@pytest.mark.kbconform(id="backup-03", rule="backup.md#restore", guide="restoreprincipal-records", level="L3")
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_restore_validates_every_record_before_writing_any(
    broken: str, kbconform_open: Any, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """One invalid record last in the batch: KB_CONTRACT_VIOLATION and an empty backend; the
    valid records alone restore (control)."""
    operator = kbconform_canaries.principals.operator
    exported = [dict(r) for r in kbconform_backend.export(operator)]
    fresh = kbconform_open()
    with refuses(ContractViolation, f"restore of a batch ending in {broken}"):
        fresh.restore(operator, [*exported, BROKEN[broken](exported[0])])
    assert list(fresh.export(operator)) == []
    assert fresh.restore(operator, exported) == len(exported)


@pytest.mark.kbconform(
    id="backup-04", rule="backup.md#restore", guide="queryprincipal-text-n_results-where", level="L3"
)
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
        for foreign in sorted(kbconform_canaries.foreign_to(member)):
            with pytest.raises(NotFound):
                fresh.get(member, foreign)


@pytest.mark.kbconform(id="backup-05", rule="backup.md#export", guide="exportprincipal", level="L3")
@pytest.mark.parametrize("operation", ["export", "restore"])
def test_export_and_restore_are_for_operators_only(
    operation: str,
    kbconform_open: Any,
    kbconform_backend: Any,
    kbconform_principals: Principals,
    kbconform_canaries: Canaries,
) -> None:
    """Each member's export raises KB_FORBIDDEN; each member's restore of the operator's export
    (rows stamped for every tenant, its own and others') into an empty backend raises
    KB_FORBIDDEN and writes nothing. An export that is allowed fails with what it gave (rows by
    tenant), a restore with what it wrote. The operator's export and restore work (control)."""
    principals, operator = kbconform_principals, kbconform_principals.operator
    exported = list(kbconform_backend.export(operator))
    assert {r["metadata"]["tenantId"] for r in exported} >= {p.tenant_id for p in principals.members}
    fresh = kbconform_open()
    for member in principals.members:
        try:
            if operation == "export":
                shown = described(kbconform_backend.export(member))
            else:
                shown = described(fresh.restore(member, exported))
        except Forbidden:
            shown = None
        written = changes({}, stored(fresh.export(operator)))
        problem = unrefused(
            f"{operation} by the member {member.tenant_id}",
            None if shown is None else f"was accepted: it returned {shown}",
            written,
            "Forbidden",
        )
        assert problem is None, problem
    if operation == "export":
        assert stored(kbconform_backend.export(operator)) == stored(exported)
    else:
        assert fresh.restore(operator, exported) == len(exported) > 0
        assert stored(fresh.export(operator)) == stored(exported)


@pytest.mark.kbconform(id="backup-06", rule="backup.md#restore", guide="getprincipal-chunk_id", level="L3")
def test_a_restored_visibility_change_is_read_on_the_next_call(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A team chunk that another agent of acme has read is restored private: from the next call
    that agent gets NotFound and lists only the other chunk, while its origin agent still reads it
    as private; restored team again, the other agent reads it again (control)."""
    principals = kbconform_principals
    acme, operator = principals.acme, principals.operator
    other = acme.with_agent("agent-other")
    backend = kbconform_backend
    notes, guide = backend.ingest(
        acme,
        [
            record("docs/notes.md", "the agent's notes", tenant="acme"),
            record("docs/guide.md", "a guide", tenant="acme"),
        ],
    ).ids

    def listed(principal: Any) -> set[str]:
        return {h.id for h in backend.list(principal, 100, 0)}

    assert backend.get(other, notes).document == "the agent's notes"
    assert listed(other) == {notes, guide}
    [team] = [dict(r) for r in backend.export(operator) if r["id"] == notes]
    private = {**team, "metadata": {**team["metadata"], "visibility": "private"}}
    assert backend.restore(operator, [private]) == 1
    with pytest.raises(NotFound):
        backend.get(other, notes)
    assert listed(other) == {guide}
    assert backend.get(acme, notes).metadata.get("visibility") == "private"
    assert listed(acme) == {notes, guide}
    assert backend.restore(operator, [team]) == 1
    assert backend.get(other, notes).metadata.get("visibility") == team["metadata"]["visibility"]
    assert listed(other) == {notes, guide}


def _pages(backend: Any, principal: Any) -> list[Any]:
    """Every chunk ``principal`` lists, page by page."""
    hits: list[Any] = []
    while page := list(backend.list(principal, 100, len(hits))):
        hits += page
    return hits


def _text_in(metadata: Any, text: str) -> str | None:
    """The stored text of an exported row whose ``document`` is null: ``text`` when one of its
    metadata's values is exactly it (backup-record-v1: null when the text lives in metadata),
    else None (the row exports no text, or another)."""
    values = metadata.values() if isinstance(metadata, dict) else ()
    return text if text in values else None


@pytest.mark.kbconform(id="backup-07", rule="backup.md#export", guide="exportprincipal", level="L3")
def test_export_holds_exactly_every_stored_row(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Three tenants write more than a hundred chunks; acme deletes some, beta rewrites some:
    the operator's export holds each stored row once, with the text and identity the model says
    (its document, or, where the document is null, a metadata value: the text lives there) and
    the metadata its owner reads, no deleted row and no row missing."""
    principals = kbconform_principals
    backend = kbconform_backend
    model: dict[str, tuple[Any, str, str]] = {}  # id -> (owner, path, text)
    stable = ["sourcePath", "kind", "name"]
    for principal, count in ((principals.acme, 50), (principals.beta, 40), (principals.loner, 30)):
        tenant = principal.tenant_id
        records = [
            record(f"docs/{n}.md", f"{tenant} page {n}", tenant=tenant, hashInputs=stable)
            for n in range(count)
        ]
        for chunk, rec in zip(backend.ingest(principal, records).ids, records, strict=True):
            model[chunk] = (principal, rec["sourcePath"], rec["content"])
    gone = [f"docs/{n}.md" for n in range(0, 50, 7)]
    deleted = backend.apply_deletion_signal(
        principals.acme, {"repoSlug": "app", "deleted": [{"sourcePath": p} for p in gone]}
    ).deleted_ids
    assert sorted(deleted) == sorted(
        i for i, (o, p, _) in model.items() if o is principals.acme and p in gone
    )
    for chunk in deleted:
        del model[chunk]
    rewritten = [
        record(f"docs/{n}.md", f"beta page {n}, rewritten", tenant="beta", hashInputs=stable)
        for n in range(5)
    ]
    for chunk, rec in zip(backend.ingest(principals.beta, rewritten).ids, rewritten, strict=True):
        model[chunk] = (principals.beta, rec["sourcePath"], rec["content"])
    assert len(model) > 100
    exported = list(backend.export(principals.operator))
    assert sorted(r["id"] for r in exported) == sorted(model), "export is not every stored row, once each"
    read = {
        h.id: dict(h.metadata)
        for p in (principals.acme, principals.beta, principals.loner)
        for h in _pages(backend, p)
    }
    for row in exported:
        owner, path, text = model[row["id"]]
        meta = row["metadata"]
        # backup-record-v1: document is the stored text, or null when the text lives in metadata
        shown = row["document"] if row["document"] is not None else _text_in(meta, text)
        assert shown == text, f"{row['id']} exports stale text"
        assert (meta.get("tenantId"), meta.get("repoSlug"), meta.get("sourcePath")) == (
            owner.tenant_id,
            "app",
            path,
        )
        assert meta == read[row["id"]], f"{row['id']} exports other metadata than its owner reads"
