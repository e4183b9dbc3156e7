"""L2 cross-tenant leak: canary chunks per tenant, read back through every declared facade."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from kbconform.conformance import Canaries, Principals, record
from kbconform.errors import ContractViolation, KbconformError, NotFound
from kbconform.identity import Principal


def _read_all(backend: Any, facade: str, principal: Principal, canaries: Canaries) -> dict[str, str | None]:
    """Everything ``principal`` can read through ``facade``, as {id: document} (count returns
    no ids: the test checks its number)."""
    expected = canaries.readable_by(principal)
    found: dict[str, str | None] = {}
    if facade == "query":
        for probe in canaries.chunks.values():  # own, shared and foreign canaries as query text
            for hit in backend.query(principal, probe.record["content"], len(expected), None):
                found[hit.id] = hit.document
    elif facade == "ask":
        for probe in canaries.chunks.values():
            answer = backend.ask(principal, probe.record["content"], len(expected))
            for hit in answer.sources:
                found[hit.id] = hit.document
            leaked = canaries.by_token(answer.text) - expected
            assert not leaked, f"ask's text for {principal.tenant_id} quotes foreign chunks {sorted(leaked)}"
    elif facade == "get":
        for chunk_id in canaries.chunks:
            with contextlib.suppress(NotFound):  # foreign ids must raise NotFound; checked below
                found[chunk_id] = backend.get(principal, chunk_id).document
    elif facade == "list":
        offset = 0
        while True:
            page = list(backend.list(principal, 5, offset))
            if not page:
                break
            for hit in page:
                assert hit.id not in found, f"list returned {hit.id} twice"
                found[hit.id] = hit.document
            offset += len(page)
            assert offset <= len(canaries.chunks), "list pages past everything that was written"
    else:  # pragma: no cover - the manifest schema allows no other facade
        raise AssertionError(facade)
    return found


@pytest.mark.kbconform(id="leak-01", level="L2")
def test_every_read_facade_returns_exactly_the_principals_scope(
    kbconform_facade: str, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """Each member reads its own and shared canaries (control) and no other tenant's, by id and
    by text, whatever it asks for; query's top-k is the top-k within scope."""
    canaries = kbconform_canaries
    for principal in canaries.principals.members:
        expected = canaries.readable_by(principal)
        if kbconform_facade == "count":
            count = kbconform_backend.count(principal)
            assert count == len(expected), (
                f"count for {principal.tenant_id}: {count}, expected {len(expected)}"
            )
            continue
        found = _read_all(kbconform_backend, kbconform_facade, principal, canaries)
        leaked_ids = set(found) - expected
        leaked_text = {i for text in found.values() for i in canaries.by_token(text)} - expected
        assert not leaked_ids, (
            f"{kbconform_facade} gave {principal.tenant_id} foreign chunks {sorted(leaked_ids)}"
        )
        assert not leaked_text, (
            f"{kbconform_facade} gave {principal.tenant_id} foreign text {sorted(leaked_text)}"
        )
        assert set(found) == expected, (
            f"{kbconform_facade} for {principal.tenant_id} missed {sorted(expected - set(found))}"
        )
        for chunk_id, text in found.items():
            assert text == canaries.chunks[chunk_id].record["content"], f"{chunk_id} reads back altered"


@pytest.mark.kbconform(id="leak-02", level="L2")
def test_a_small_tenants_query_gets_its_exact_top_k_beside_a_large_tenant(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """acme's nearest chunk to its own canary text is that canary, and its k results are all its
    scope, although beta has four times as many near-identical chunks."""
    canaries = kbconform_canaries
    acme = canaries.principals.acme
    expected = canaries.readable_by(acme)
    for chunk_id in canaries.owned_by(acme.tenant_id):
        hits = list(
            kbconform_backend.query(acme, canaries.chunks[chunk_id].record["content"], len(expected), None)
        )
        assert hits, "query returned nothing inside a scope that holds chunks"
        assert hits[0].id == chunk_id, f"the top hit for {chunk_id}'s own text is {hits[0].id}"
        assert {h.id for h in hits} == expected


WIDENING = {
    "a tenantId equality": {"tenantId": "beta"},
    "a tenantId negation": {"tenantId": {"$ne": "acme"}},
    "a tenantId list": {"tenantId": {"$in": ["acme", "beta"]}},
    "an $or around a tenantId": {"$or": [{"tenantId": "beta"}, {"kind": "doc-section"}]},
    "an empty $and": {"$and": []},
    "an empty $or": {"$or": []},
    "an empty clause": {},
    "a repoSlug negation": {"repoSlug": {"$nin": ["app"]}},
    "a visibility negation": {"visibility": {"$ne": "private"}},
    "an originAgentIdentity equality": {"originAgentIdentity": "agent-beta"},
    "a $not operator": {"$not": {"kind": "doc-section"}},
}


@pytest.mark.kbconform(id="leak-03", level="L2", requires="client-where")
@pytest.mark.parametrize("shape", sorted(WIDENING))
def test_a_client_where_clause_that_could_widen_scope_is_refused(
    shape: str, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """The clause raises KB_CONTRACT_VIOLATION; a benign clause on the same path narrows within
    scope (control)."""
    canaries = kbconform_canaries
    acme = canaries.principals.acme
    own = sorted(canaries.owned_by(acme.tenant_id))
    probe = canaries.chunks[own[0]]
    with pytest.raises(ContractViolation):
        kbconform_backend.query(acme, probe.record["content"], 50, WIDENING[shape])
    narrowed = kbconform_backend.query(
        acme, probe.record["content"], 50, {"sourcePath": {"$in": [probe.record["sourcePath"]]}}
    )
    assert [h.id for h in narrowed] == [probe.id]
    everything = kbconform_backend.query(acme, probe.record["content"], 50, {"kind": "doc-section"})
    assert {h.id for h in everything} == canaries.readable_by(acme)


def _shape(error: KbconformError, chunk_id: str) -> tuple[type, str, str]:
    return (type(error), error.code, str(error).replace(chunk_id, "<id>"))


@pytest.mark.kbconform(id="leak-04", level="L2")
def test_a_foreign_id_and_a_missing_id_fail_alike(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """No existence oracle: same error type, code and message; the owner reads the id (control)."""
    canaries = kbconform_canaries
    acme, beta = canaries.principals.acme, canaries.principals.beta
    foreign = sorted(canaries.owned_by(beta.tenant_id))[0]
    missing = "".join(reversed(foreign))  # the same shape, and not stored
    assert missing not in canaries.chunks
    with pytest.raises(KbconformError) as for_foreign:
        kbconform_backend.get(acme, foreign)
    with pytest.raises(KbconformError) as for_missing:
        kbconform_backend.get(acme, missing)
    assert isinstance(for_foreign.value, NotFound)
    assert _shape(for_foreign.value, foreign) == _shape(for_missing.value, missing)
    assert kbconform_backend.get(beta, foreign).id == foreign


@pytest.mark.kbconform(id="leak-05", level="L2", requires="shared-namespace")
def test_shared_namespace_content_is_visible_to_its_readers_only(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """acme and beta read the shared canaries by id and by query; loner, who may not read the
    namespace, gets NotFound and never sees them in results."""
    canaries = kbconform_canaries
    principals = canaries.principals
    assert principals.shared is not None
    shared = canaries.owned_by(principals.shared)
    assert shared, "the seed wrote no shared content"
    for reader in (principals.acme, principals.beta):
        for chunk_id in shared:
            assert kbconform_backend.get(reader, chunk_id).id == chunk_id
            hits = kbconform_backend.query(reader, canaries.chunks[chunk_id].record["content"], 1, None)
            assert [h.id for h in hits] == [chunk_id]
    for chunk_id in shared:
        with pytest.raises(NotFound):
            kbconform_backend.get(principals.loner, chunk_id)
        hits = kbconform_backend.query(principals.loner, canaries.chunks[chunk_id].record["content"], 3, None)
        assert hits, "loner's query returned nothing although loner has chunks"
        assert not ({h.id for h in hits} & shared)


@pytest.mark.kbconform(id="leak-06", level="L2")
def test_a_private_chunk_is_read_only_by_its_origin_agent(
    kbconform_backend: Any, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """A chunk restored as private to acme's agent reads back for that agent through get, list
    and query (control); acme's other agents, acme without an agent and beta never see it, while
    they still read acme's team chunk (control)."""
    principals = kbconform_principals
    acme, operator = principals.acme, principals.operator
    written = kbconform_backend.ingest(
        acme,
        [
            record("docs/private.md", "private notes of the origin agent", tenant="acme"),
            record("docs/team.md", "team notes for every acme agent", tenant="acme"),
        ],
    ).ids
    exported = {r["id"]: dict(r) for r in kbconform_backend.export(operator)}
    private_id, team_id = written
    private = exported[private_id]
    assert private["metadata"].get("originAgentIdentity") == acme.agent_identity
    private["metadata"] = {**private["metadata"], "visibility": "private"}
    backend = kbconform_open()
    assert backend.restore(operator, [private, exported[team_id]]) == 2

    def readable(principal: Principal) -> set[str]:
        found = {hit.id for hit in backend.list(principal, 100, 0)}
        found |= {hit.id for hit in backend.query(principal, "private notes of the origin agent", 2, None)}
        for chunk_id in (private_id, team_id):
            with contextlib.suppress(NotFound):
                found.add(backend.get(principal, chunk_id).id)
        return found

    assert readable(acme) == {private_id, team_id}
    for other in (acme.with_agent("agent-other"), acme.with_agent(None)):
        assert readable(other) == {team_id}, f"{other.agent_identity} reads acme's agent's private chunk"
    assert readable(principals.beta) == set()
