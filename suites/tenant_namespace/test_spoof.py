"""L1 spoof rejection: the server stamps identity; a record's claims never land on it."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from kbconform.adapter import BackendOptions, SpoofMode
from kbconform.conformance import Refused, Run, refusal, stored_in_full
from kbconform.errors import Forbidden, SpoofRejected, Unauthenticated
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import ENVELOPE_CLAIMS, Principals, record
from kbconform.profiles.tenant_namespace.model import ENVELOPE_REFUSALS, Policy, differences

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)

#: Every guarded field a record can claim, with a value no server would stamp for acme.
GUARDED: dict[str, tuple[str, Any]] = {
    "tenantId": ("tenantId", "beta"),
    "customMeta.tenantId": ("tenantId", "beta"),
    "customMeta.repoSlug": ("repoSlug", "beta-secrets"),
    "customMeta.visibility": ("visibility", "public"),
    "customMeta.originAgentIdentity": ("originAgentIdentity", "agent-beta"),
    "customMeta.tenantConfigVersion": ("tenantConfigVersion", "spoofed-config-9"),
    "customMeta.ingestedAt": ("ingestedAt", "2001-01-01T00:00:00.000Z"),
}


def _spoofed(field: str, path: str = "docs/spoof.md") -> dict[str, Any]:
    key, value = GUARDED[field]
    if field == "tenantId":
        return record(path, "a spoofed chunk", tenant=value)
    return record(path, "a spoofed chunk", tenant="acme", customMeta={key: value, "topic": "x"})


def _listed(backend: Any, principal: Any) -> list[Any]:
    return list(backend.list(principal, 100, 0))


@pytest.mark.kbconform(
    id="spoof-01",
    rule="stamping.md#spoof-policy-spoofrejectionmode",
    guide="ingestprincipal-records",
    level="L1",
)
@pytest.mark.parametrize("field", sorted(GUARDED))
def test_a_spoofed_guarded_field_never_lands_and_is_either_warned_or_refused(
    field: str, kbconform_spoof_mode: SpoofMode, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Overwrite mode: the server's value is stored and one warning names the field; reject mode:
    the batch is refused and nothing is written. A clean record beside it is never warned about."""
    acme, beta = kbconform_principals.acme, kbconform_principals.beta
    backend = kbconform_open(BackendOptions(spoof_mode=kbconform_spoof_mode))
    clean = record("docs/clean.md", "a clean chunk", tenant="acme")
    if kbconform_spoof_mode == "reject":
        with pytest.raises(SpoofRejected):
            backend.ingest(acme, [clean, _spoofed(field)])
        assert _listed(backend, acme) == [], "a refused batch wrote something"
        accepted = backend.ingest(acme, [clean])  # positive control: the clean record alone lands
        assert [h.id for h in _listed(backend, acme)] == list(accepted.ids)
        return
    result = backend.ingest(acme, [clean, _spoofed(field)])
    clean_id, spoofed_id = result.ids
    warned = [(w.field, w.chunk_id) for w in result.warnings]
    assert (field, spoofed_id) in warned, f"no warning for the spoofed {field}; got {warned}"
    assert all(chunk != clean_id for _, chunk in warned), "the clean record was warned about"
    stored = backend.get(acme, spoofed_id)
    key, claimed = GUARDED[field]
    assert stored.metadata.get(key) != claimed, f"the client's {key}={claimed!r} landed in the stored chunk"
    assert stored.metadata.get("tenantId") == acme.tenant_id
    assert {h.id for h in _listed(backend, acme)} == {clean_id, spoofed_id}
    assert [h.id for h in _listed(backend, beta)] == [], "the claimed tenant can read the chunk"


@pytest.mark.kbconform(
    id="spoof-02",
    rule="stamping.md#guarded-fields",
    guide="ingestprincipal-records",
    level="L1",
    requires="shared-namespace",
)
def test_a_claim_to_the_shared_namespace_lands_in_the_principals_own_tenant(
    kbconform_spoof_mode: SpoofMode, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """A member claiming the shared namespace never writes into it (overwritten or refused)."""
    principals = kbconform_principals
    assert principals.shared is not None
    backend = kbconform_open(BackendOptions(spoof_mode=kbconform_spoof_mode))
    claim = record("docs/curated.md", "not really curated", tenant=principals.shared)
    if kbconform_spoof_mode == "reject":
        with pytest.raises(SpoofRejected):
            backend.ingest(principals.acme, [claim])
        [written] = backend.ingest(principals.acme, [{**claim, "tenantId": "acme"}]).ids  # control
    else:
        [written] = backend.ingest(principals.acme, [claim]).ids
    assert backend.get(principals.acme, written).metadata.get("tenantId") == principals.acme.tenant_id
    assert [h.id for h in _listed(backend, principals.beta)] == [], "beta reads the claimed chunk"
    assert [h.id for h in _listed(backend, principals.acme)] == [written]


@pytest.mark.kbconform(
    id="spoof-03",
    rule="stamping.md#spoof-policy-spoofrejectionmode",
    guide="ingestprincipal-records",
    level="L1",
    requires="spoof-reject",
)
def test_a_reject_mode_batch_with_one_spoof_is_refused_whole(
    kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Three clean records and one spoof: nothing lands; the three alone do (control)."""
    acme = kbconform_principals.acme
    backend = kbconform_open(BackendOptions(spoof_mode="reject"))
    clean = [record(f"docs/clean-{n}.md", f"clean chunk {n}", tenant="acme") for n in range(3)]
    with pytest.raises(SpoofRejected):
        backend.ingest(acme, [*clean, _spoofed("tenantId")])
    assert _listed(backend, acme) == []
    assert _listed(backend, kbconform_principals.beta) == []
    ids = backend.ingest(acme, clean).ids
    assert sorted(h.id for h in _listed(backend, acme)) == sorted(ids)


@pytest.mark.kbconform(
    id="spoof-04",
    rule="stamping.md#spoof-policy-spoofrejectionmode",
    guide="ingestprincipal-records",
    level="L1",
    requires=("escalation", "spoof-overwrite"),
)
def test_repeated_spoofs_escalate_the_principal_to_reject(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """After ``threshold`` spoofed records in the window, the next spoof is refused; another
    principal is still only warned (control), and the escalated one may still write clean records.
    The spoofs come two to a batch (the last alone when the threshold is odd): the threshold
    counts records, not requests (schemas/stamping.md)."""
    threshold = int(kbconform_run.manifest.feature("escalation")["threshold"])
    acme, beta = kbconform_principals.acme, kbconform_principals.beta
    backend = kbconform_open(BackendOptions(spoof_mode="overwrite"))
    pair = min(2, kbconform_run.manifest.max_write_batch or 2)
    for start in range(0, threshold, pair):
        batch = [
            _spoofed("tenantId", f"docs/spoof-{n}.md") for n in range(start, min(start + pair, threshold))
        ]
        result = backend.ingest(acme, batch)
        assert len(result.warnings) == len(batch), (
            f"spoofs {start + 1} to {start + len(batch)} of {threshold} got {len(result.warnings)} warnings"
        )
    with pytest.raises(SpoofRejected):
        backend.ingest(acme, [_spoofed("tenantId", "docs/one-too-many.md")])
    assert len(backend.ingest(beta, [_spoofed("customMeta.tenantId")]).warnings) == 1
    assert len(backend.ingest(acme, [record("docs/clean.md", "clean", tenant="acme")]).ids) == 1
    assert len(_listed(backend, acme)) == threshold + 1


@pytest.mark.kbconform(
    id="spoof-05",
    rule="stamping.md#other-write-rules",
    guide="ingestprincipal-records",
    level="L1",
    requires="shared-namespace",
)
def test_a_member_of_the_shared_namespace_cannot_write_into_it(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Only an operator writes shared content: a member is refused and nothing lands; the
    operator's write lands and every reader of the namespace sees it (control)."""
    principals = kbconform_principals
    assert principals.shared is not None
    assert principals.shared_member is not None
    assert principals.shared_writer is not None
    curated = record("docs/curated.md", "curated shared guidance", tenant=principals.shared)
    with pytest.raises(Forbidden):
        kbconform_backend.ingest(principals.shared_member, [curated])
    assert _listed(kbconform_backend, principals.acme) == []
    [written] = kbconform_backend.ingest(principals.shared_writer, [curated]).ids
    assert [h.id for h in _listed(kbconform_backend, principals.acme)] == [written]
    assert [h.id for h in _listed(kbconform_backend, principals.loner)] == []


#: customMeta claims named like each identity and stamped field, with a valid value the server
#: would never store for acme's record docs/claim-<field>.md in repo app.
NAMED_LIKE_STAMPS: dict[str, Any] = {
    "tenantId": "beta",
    "repoSlug": "beta-secrets",
    "rootKind": "external-source",
    "sourcePath": "docs/clean.md",
    "visibility": "public",
    "originAgentIdentity": "agent-beta",
    "tenantConfigVersion": "spoofed-config-9",
    "ingestedAt": "2001-01-01T00:00:00.000Z",
}


@pytest.mark.kbconform(
    id="spoof-06",
    rule="stamping.md#custommeta-in-stored-metadata",
    guide="ingestprincipal-records",
    level="L1",
    requires="spoof-overwrite",
)
def test_custom_meta_named_like_a_stamp_never_changes_the_stored_stamps(
    kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """One record per identity or stamped field claims it in customMeta, written by an agent and
    by a principal without one: through get, each stores its own tenant, repo, path and root
    kind, the origin agent of the principal (none when the principal has none), and the
    visibility and config version of a clean record of the same batch (control)."""
    acme = kbconform_principals.acme
    for principal in (acme, acme.with_agent(None)):
        backend = kbconform_open(BackendOptions(spoof_mode="overwrite"))
        clean = record("docs/clean.md", "a clean chunk", tenant="acme")
        claims = {
            key: record(f"docs/claim-{key}.md", f"claims {key}", tenant="acme", customMeta={key: value})
            for key, value in NAMED_LIKE_STAMPS.items()
        }
        clean_id, *claim_ids = backend.ingest(principal, [clean, *claims.values()]).ids
        server = backend.get(principal, clean_id).metadata
        assert server.get("tenantId") == "acme"
        assert server.get("originAgentIdentity") == principal.agent_identity
        for (key, claim), chunk in zip(claims.items(), claim_ids, strict=True):
            stored = backend.get(principal, chunk).metadata
            expected = {
                "tenantId": "acme",
                "repoSlug": "app",
                "sourcePath": claim["sourcePath"],
                "rootKind": "bare-repo",
                "originAgentIdentity": principal.agent_identity,
                "visibility": server.get("visibility"),
                "tenantConfigVersion": server.get("tenantConfigVersion"),
            }
            assert {k: stored.get(k) for k in expected} == expected, f"customMeta.{key} changed the stamps"
            assert stored.get("ingestedAt") != NAMED_LIKE_STAMPS["ingestedAt"]
        assert {h.id for h in _listed(backend, principal)} == {clean_id, *claim_ids}
        assert _listed(backend, kbconform_principals.beta) == [], "the claimed tenant reads the chunks"


def _reads(backend: Any, facade: str, principal: Principal, size: int) -> list[Any]:
    """The hits ``principal`` reads through ``facade`` (query and ask at a top-k of ``size``)."""
    if facade == "query":
        return list(backend.query(principal, "chunk written by", size, None))
    if facade == "ask":
        return list(backend.ask(principal, "chunk written by", size).sources)
    if facade == "list":
        return _listed(backend, principal)
    return []  # get reads by id (below); count returns no chunks


@pytest.mark.kbconform(
    id="spoof-07", rule="stamping.md#guarded-fields", guide="ingestprincipal-records", level="L1"
)
def test_every_ingested_chunk_carries_the_servers_config_version_and_ingest_time(
    kbconform_run: Run, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Chunks of two tenants, written in three batches (one by a principal without an agent),
    read back through every read facade and in an export with the server's
    ``tenantConfigVersion``, one value for all of a tenant's chunks, and an ``ingestedAt``, the
    same through every facade; their text and other stamps equal the model's (control: the
    reads are of the chunks written, and each reader's scope is neither empty nor everything).
    A chunk restored without both stamps, then ingested again, carries them again (control: as
    restored, it reads without them)."""
    backend, principals = kbconform_backend, kbconform_principals
    acme, beta = principals.acme, principals.beta
    policy = Policy.for_manifest(kbconform_run.manifest)

    def ingest(principal: Principal, paths: list[str]) -> None:
        tenant = principal.tenant_id
        records = [record(path, f"chunk written by {tenant} at {path}", tenant=tenant) for path in paths]
        plan = policy.ingest(principal, records, "overwrite")
        assert not isinstance(plan, Refused), plan.why
        ids = [str(chunk) for chunk in backend.ingest(principal, records).ids]
        assert policy.check_ids(plan, ids) == []
        policy.commit_ingest(plan, ids)

    ingest(acme, ["docs/one.md", "docs/two.md"])
    ingest(acme.with_agent(None), ["docs/three.md"])
    ingest(beta, ["docs/one.md"])
    facades = kbconform_run.manifest.read_facades
    for principal in (acme, beta):
        scope = policy.scope(principal)
        assert 0 < len(scope) < len(policy.rows), "the check would be vacuous"
        read = {facade: _reads(backend, facade, principal, len(scope)) for facade in facades}
        read["get"] = [backend.get(principal, chunk) for chunk in scope]
        for facade, hits in read.items():
            if facade in ("query", "list", "get"):
                assert sorted(h.id for h in hits) == sorted(scope), f"{facade} does not read the scope"
            assert facade == "count" or hits, f"{facade} as {principal.tenant_id} read nothing"
            for hit in hits:
                problems = differences(scope[hit.id], hit.document, hit.metadata)
                problems += policy.stamp_problems(hit.id, hit.metadata)
                assert not problems, f"{facade} as {principal.tenant_id}, {hit.id}: {'; '.join(problems)}"
    exported = {r["id"]: r for r in backend.export(principals.operator)}
    assert set(exported) == set(policy.rows)
    for chunk, row in policy.rows.items():
        shown = exported[chunk]["document"]  # an export may leave the text out (backup.md): not this rule
        problems = differences(row, row.document if shown is None else shown, exported[chunk]["metadata"])
        problems += policy.stamp_problems(chunk, exported[chunk]["metadata"])
        assert not problems, f"the export of {chunk}: {'; '.join(problems)}"
    [chunk] = policy.scope(beta)
    kept = {
        k: v for k, v in exported[chunk]["metadata"].items() if k not in ("tenantConfigVersion", "ingestedAt")
    }
    stripped = {**exported[chunk], "metadata": kept}
    rows = policy.restore(principals.operator, [stripped])
    assert not isinstance(rows, Refused), rows.why
    assert backend.restore(principals.operator, [stripped]) == 1
    policy.commit_restore(rows)
    restored = backend.get(beta, chunk).metadata
    assert [name for name in ("tenantConfigVersion", "ingestedAt") if name in restored] == [], (
        "restore re-stamped"
    )
    ingest(beta, ["docs/one.md"])
    problems = policy.stamp_problems(chunk, backend.get(beta, chunk).metadata)
    assert not problems, f"{chunk} ingested over its restored row: {'; '.join(problems)}"


@pytest.mark.kbconform(
    id="spoof-08",
    rule="stamping.md#the-request-envelope",
    guide="ingestprincipal-records",
    level="L1",
    requires="envelope",
)
@pytest.mark.parametrize("field", sorted(ENVELOPE_CLAIMS))
def test_a_request_envelope_claiming_another_identity_changes_nothing_that_is_stored(
    field: str, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """acme's agent ingests two records with a request envelope claiming another tenant,
    repository, visibility or origin agent. The write is refused whole (KB_TENANT_SPOOF_REJECTED,
    KB_FORBIDDEN, or KB_CONTRACT_VIOLATION for a value the backend does not take), nothing
    written; or it lands exactly as the same ingest without an envelope lands on a fresh
    backend (control): same ids, texts and stamps."""
    principals = kbconform_principals
    acme, operator = principals.acme, principals.operator
    records = [record(f"docs/enveloped-{n}.md", f"an enveloped chunk {n}", tenant="acme") for n in range(2)]
    backend, control = kbconform_open(), kbconform_open()
    control.ingest(acme, records)
    expected = stored_in_full(control.export(operator))
    envelope = {field: ENVELOPE_CLAIMS[field]}
    try:
        backend.ingest(acme, records, envelope)
    except ENVELOPE_REFUSALS:
        written = stored_in_full(backend.export(operator))
        assert written == {}, (
            f"the refused write with the envelope {envelope} wrote {sorted(written.values())}"
        )
        return
    stored = stored_in_full(backend.export(operator))
    assert stored == expected, (
        f"the envelope {envelope} changed what was stored: {sorted(stored.values(), key=repr)} where "
        f"the same ingest without it stores {sorted(expected.values(), key=repr)}"
    )


@pytest.mark.kbconform(
    id="spoof-09",
    rule="stamping.md#the-request-envelope",
    guide="ingestprincipal-records",
    level="L1",
    requires="envelope",
)
def test_an_envelope_naming_a_tenant_is_no_identity_without_a_principal(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """An ingest without an authenticated principal whose envelope names tenant acme raises
    KB_UNAUTHENTICATED and writes nothing (a single-tenant fallback that takes the tenant from
    the request writes into acme); acme's own ingest with the same envelope lands (control)."""
    backend, principals = kbconform_backend, kbconform_principals
    operator = principals.operator
    records = [record("docs/claimed.md", "a chunk claimed for acme", tenant="acme")]
    envelope = {"tenantId": "acme"}
    label = "an ingest with no principal and the envelope {'tenantId': 'acme'}"
    exported = partial(backend.export, operator)
    problem = refusal(label, exported, Unauthenticated, backend.ingest, None, records, envelope)
    assert problem is None, problem
    backend.ingest(principals.acme, records, envelope)
    assert [h.document for h in backend.list(principals.acme, 10, 0)] == ["a chunk claimed for acme"]
