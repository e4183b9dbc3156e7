"""L1 shadow ids: ids are tenant-aware, and no write lands on another tenant's chunk."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import strategies as st

from kbconform.conformance import Principals, Run, record
from kbconform.errors import Forbidden, NotFound, SpoofRejected
from kbconform.identity import chunk_id

PATHS = st.from_regex(r"[a-z]{1,8}(/[a-z0-9_-]{1,8}){0,2}\.(md|py)", fullmatch=True)
CONTENT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=80)
BATCHES = st.lists(st.tuples(PATHS, CONTENT), min_size=1, max_size=4, unique_by=lambda pair: pair[0])


def _records(batch: list[tuple[str, str]], tenant: str) -> list[dict[str, Any]]:
    return [record(path, content, tenant=tenant) for path, content in batch]


def _listed(backend: Any, principal: Any) -> set[str]:
    return {hit.id for hit in backend.list(principal, 100, 0)}


def _unchanged(backend: Any, principal: Any, ids: list[str], records: list[dict[str, Any]]) -> None:
    for chunk, rec in zip(ids, records, strict=True):
        hit = backend.get(principal, chunk)
        assert hit.document == rec["content"], f"{principal.tenant_id}'s chunk {chunk} was overwritten"
        assert hit.metadata.get("tenantId") == principal.tenant_id


@pytest.mark.kbconform(id="shadow-01", level="L1")
def test_the_same_content_under_two_tenants_lands_as_two_chunks(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Whatever the records, acme's and beta's copies get distinct ids, each tenant reads its own
    copy (control) and the other's ids are NotFound."""
    acme, beta = kbconform_principals.acme, kbconform_principals.beta

    @kbconform_run.given(batch=BATCHES)
    def check(batch: list[tuple[str, str]]) -> None:
        backend = kbconform_open()
        try:
            for_acme, for_beta = _records(batch, "acme"), _records(batch, "beta")
            ids_a = list(backend.ingest(acme, for_acme).ids)
            ids_b = list(backend.ingest(beta, for_beta).ids)
            assert not set(ids_a) & set(ids_b), "the same content under two tenants got the same id"
            assert _listed(backend, acme) == set(ids_a)
            assert _listed(backend, beta) == set(ids_b)
            _unchanged(backend, acme, ids_a, for_acme)
            _unchanged(backend, beta, ids_b, for_beta)
            for foreign in ids_b:
                with pytest.raises(NotFound):
                    backend.get(acme, foreign)
        finally:
            kbconform_run.close(backend)

    check()


@pytest.mark.kbconform(id="shadow-02", level="L1")
def test_a_write_claiming_another_tenants_records_never_overwrites_them(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """beta sends acme's exact records, tenantId included: they land as beta's own chunks
    (overwrite mode) or are refused (reject mode); acme's chunks stay acme's, unchanged."""
    acme, beta = kbconform_principals.acme, kbconform_principals.beta

    @kbconform_run.given(batch=BATCHES)
    def check(batch: list[tuple[str, str]]) -> None:
        backend = kbconform_open()
        try:
            records = _records(batch, "acme")
            ids_a = list(backend.ingest(acme, records).ids)
            assert _listed(backend, acme) == set(ids_a)
            try:
                ids_b = list(backend.ingest(beta, records).ids)
            except SpoofRejected:
                ids_b = []
            assert not set(ids_a) & set(ids_b), "beta's write took acme's ids"
            assert _listed(backend, beta) == set(ids_b)
            assert _listed(backend, acme) == set(ids_a)
            _unchanged(backend, acme, ids_a, records)
        finally:
            kbconform_run.close(backend)

    check()


@pytest.mark.kbconform(id="shadow-03", level="L1", requires="id-profile")
def test_an_id_taken_by_another_tenant_is_never_overwritten(
    kbconform_run: Run, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A restored acme chunk sits on the id beta's record will get: beta's ingest is refused
    (Forbidden) and acme's chunk stays as it was; another beta record lands (control)."""
    profile = kbconform_run.manifest.id_profile
    assert profile is not None
    principals = kbconform_principals
    acme, beta = principals.acme, principals.beta
    backend = kbconform_backend
    [acme_id] = backend.ingest(acme, [record("docs/acme.md", "acme's own words", tenant="acme")]).ids
    [exported] = [r for r in backend.export(principals.operator) if r["id"] == acme_id]
    target = record("docs/target.md", "beta's words", tenant="beta")
    taken = chunk_id(target, beta.tenant_id, target["repoSlug"], profile)  # type: ignore[arg-type]
    planted = {**exported, "id": taken}
    assert backend.restore(principals.operator, [planted]) == 1
    with pytest.raises(Forbidden):
        backend.ingest(beta, [target])
    hit = backend.get(acme, taken)
    assert (hit.document, hit.metadata.get("tenantId")) == (exported["document"], "acme")
    assert _listed(backend, beta) == set()
    [other] = backend.ingest(beta, [record("docs/other.md", "beta's other words", tenant="beta")]).ids
    assert _listed(backend, beta) == {other}


@pytest.mark.kbconform(id="shadow-04", level="L1")
def test_another_agent_never_overwrites_a_private_chunk(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A chunk private to acme's agent, and a record of another acme agent that hashes to the same
    id (its hashInputs leave out the content): the other agent's ingest is refused (Forbidden)
    with nothing of its batch written, and the chunk keeps its text, its visibility and its
    reader. The same write onto a team chunk lands (control: the id does collide)."""
    principals = kbconform_principals
    acme, operator = principals.acme, principals.operator
    other = acme.with_agent("agent-other")
    backend = kbconform_backend

    def colliding(path: str, content: str) -> dict[str, Any]:
        return record(path, content, tenant="acme", hashInputs=["sourcePath", "kind", "name"])

    [private_id, team_id] = backend.ingest(
        acme, [colliding("docs/private.md", "the agent's own notes"), colliding("docs/team.md", "team notes")]
    ).ids
    exported = {r["id"]: dict(r) for r in backend.export(operator)}
    private = exported[private_id]
    private["metadata"] = {**private["metadata"], "visibility": "private"}
    assert backend.restore(operator, [private]) == 1

    bystander = colliding("docs/bystander.md", "written in the same batch")
    with pytest.raises(Forbidden):
        backend.ingest(other, [bystander, colliding("docs/private.md", "another agent's words")])
    hit = backend.get(acme, private_id)
    assert (hit.document, hit.metadata.get("visibility")) == ("the agent's own notes", "private")
    with pytest.raises(NotFound):
        backend.get(other, private_id)
    assert {h.id for h in backend.list(acme, 100, 0)} == {private_id, team_id}

    [landed] = backend.ingest(other, [colliding("docs/team.md", "team notes, revised")]).ids
    assert landed == team_id
    assert backend.get(acme, team_id).document == "team notes, revised"
