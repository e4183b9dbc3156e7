"""Write side: stamping, spoof policy and escalation, shared namespace, idempotence, atomicity."""

from __future__ import annotations

import json
import logging

import pytest

from kbconform.errors import ContractViolation, Forbidden, SpoofRejected
from kbconform.identity import Principal
from kbconform_reference import KnowledgeBase, Settings
from kbconform_reference.namespace.stores import VectorStore
from tests.reference.conftest import ACME, BETA, OPERATOR, READER, SHARED_WRITER, chunk


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def stored(kb: KnowledgeBase) -> dict[str, dict]:
    rows = kb.store.get()
    return dict(zip(rows.ids, rows.metadatas, strict=True))


def test_the_server_stamps_identity_from_the_principal(kb: KnowledgeBase) -> None:
    """tenantId, repoSlug, visibility, config version, ingestedAt and the agent come from the server."""
    agent = ACME.with_agent("agent-7")
    result = kb.ingest(agent, [chunk()])
    [metadata] = stored(kb).values()
    assert result.written == 1
    assert (metadata["tenantId"], metadata["repoSlug"], metadata["visibility"]) == ("acme", "app", "team")
    assert metadata["originAgentIdentity"] == "agent-7"
    assert metadata["tenantConfigVersion"] == "1"
    assert metadata["ingestedAt"].endswith("Z")
    kb.ingest(ACME, [chunk("b.md")])
    assert sum("originAgentIdentity" in m for m in stored(kb).values()) == 1


def test_overwrite_mode_keeps_the_server_value_and_warns_once_per_field(
    kb: KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    """A claimed tenant and stamped keys in customMeta are spoofs; nothing of them lands."""
    record = chunk(tenant="beta", customMeta={"tenantId": "beta", "visibility": "public", "note": "kept"})
    with caplog.at_level(logging.WARNING, logger="kbconform_reference"):
        result = kb.ingest(ACME, [record])
    assert sorted(w.field for w in result.warnings) == [
        "customMeta.tenantId",
        "customMeta.visibility",
        "tenantId",
    ]
    assert {(w.client_value, w.chunk_id) for w in result.warnings if w.field == "tenantId"} == {
        ("beta", result.ids[0])
    }
    assert sum("spoofed" in message for message in caplog.messages) == 3
    [metadata] = stored(kb).values()
    assert (metadata["tenantId"], metadata["visibility"]) == ("acme", "team")
    assert json.loads(metadata["customMeta"]) == {"note": "kept"}
    assert kb.count(ACME) == 1
    assert kb.count(BETA) == 0
    clean = kb.ingest(ACME, [chunk("clean.md")])
    assert clean.warnings == ()


def test_reject_mode_refuses_the_whole_batch_before_writing(store: VectorStore) -> None:
    """One spoofed record refuses the batch with KB_TENANT_SPOOF_REJECTED (control: a clean batch lands)."""
    kb = KnowledgeBase(store, settings=Settings(spoof_mode="reject"))
    batch = [chunk("a.md"), chunk("b.md", tenant="beta"), chunk("c.md")]
    with pytest.raises(SpoofRejected) as caught:
        kb.ingest(ACME, batch)
    assert caught.value.code == "KB_TENANT_SPOOF_REJECTED"
    assert [(i, f) for i, f, _, _ in caught.value.fields] == [(1, "tenantId")]
    assert store.get().ids == ()
    assert kb.ingest(ACME, [chunk("a.md"), chunk("c.md")]).written == 2


def test_repeated_spoofs_switch_the_principal_to_reject(
    store: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the threshold within the window a principal is rejected; others and slow spoofers are not."""
    clock = Clock()
    kb = KnowledgeBase(store, settings=Settings(escalation_threshold=3, escalation_window=60), clock=clock)
    slow = Principal("slow")
    for index in range(4):  # one spoof per minute never crosses the threshold
        assert kb.ingest(slow, [chunk(f"s{index}.md", tenant="x")]).warnings
        clock.now += 61
    with caplog.at_level(logging.WARNING, logger="kbconform_reference"):
        kb.ingest(ACME, [chunk("1.md", tenant="x"), chunk("2.md", tenant="x")])
        assert kb.stats.escalations == 0
        kb.ingest(ACME, [chunk("3.md", tenant="x")])
    assert kb.stats.escalations == 1
    assert any("escalation" in message for message in caplog.messages)
    with pytest.raises(SpoofRejected):
        kb.ingest(ACME, [chunk("4.md", tenant="x")])
    assert kb.ingest(ACME, [chunk("5.md")]).written == 1  # clean batches still land
    assert kb.ingest(BETA, [chunk("b.md", tenant="x")]).warnings  # another principal: still overwrite
    assert kb.ingest(slow, [chunk("s9.md", tenant="x")]).warnings


def test_invalid_records_refuse_the_batch_and_an_embedding_points_to_restore(kb: KnowledgeBase) -> None:
    """Every problem is reported with its record index; nothing is written."""
    batch = [
        chunk("a.md"),
        chunk("b.md", embedding=[0.1, 0.2]),
        {**chunk("c.md"), "sourcePath": "/etc/passwd"},
    ]
    with pytest.raises(ContractViolation) as caught:
        kb.ingest(ACME, batch)
    pointers = {p.pointer: p for p in caught.value.problems}
    assert set(pointers) == {"/1/embedding", "/2/sourcePath"}
    assert "restore" in pointers["/1/embedding"].expected
    assert kb.store.get().ids == ()


def test_hash_inputs_naming_identity_fields_are_refused(kb: KnowledgeBase) -> None:
    """An id a client could steer into another tenant's is never computed (control: content is fine)."""
    with pytest.raises(ContractViolation):
        kb.ingest(ACME, [chunk(hashInputs=["tenantId", "content"])])
    assert kb.store.get().ids == ()
    assert kb.ingest(ACME, [chunk(hashInputs=["content"])]).written == 1


def test_only_an_operator_writes_into_the_shared_namespace(kb: KnowledgeBase) -> None:
    """A member of the shared tenant is refused; an operator's content is readable by readers of it."""
    with pytest.raises(Forbidden) as caught:
        kb.ingest(Principal("neo-shared"), [chunk(tenant="neo-shared")])
    assert caught.value.code == "KB_FORBIDDEN"
    assert kb.store.get().ids == ()
    kb.ingest(SHARED_WRITER, [chunk("guide.md", "shared guide", tenant="neo-shared", repo="neo")])
    assert [h.document for h in kb.list(READER)] == ["shared guide"]
    assert kb.list(ACME) == []


def test_re_ingesting_identical_content_changes_nothing(store: VectorStore) -> None:
    """Same ids, nothing rewritten, the first ingestedAt kept; changed content is a new chunk."""
    times = iter(["2026-01-01T00:00:00.000Z", "2026-06-01T00:00:00.000Z", "2026-07-01T00:00:00.000Z"])
    kb = KnowledgeBase(store, now=lambda: next(times))
    first = kb.ingest(ACME, [chunk("a.md", line_start=1)])
    again = kb.ingest(ACME, [chunk("a.md", line_start=1)])
    assert (again.ids, again.written, again.unchanged) == (first.ids, 0, 1)
    moved = kb.ingest(ACME, [chunk("a.md", line_start=5)])  # not a hash input: same id, metadata updated
    assert moved.ids == first.ids
    [metadata] = stored(kb).values()
    assert (metadata["ingestedAt"], metadata["line_start"]) == ("2026-01-01T00:00:00.000Z", 5)
    assert kb.ingest(ACME, [chunk("a.md", "changed")]).ids != first.ids


def test_a_rewrite_replaces_the_whole_metadata(kb: KnowledgeBase) -> None:
    """A re-ingest without an agent drops the first writer's originAgentIdentity, and a restore
    without it drops it too: no stamp of an earlier write survives (Chroma merges metadata on
    upsert). The first write has it (control)."""
    [chunk_id] = kb.ingest(ACME.with_agent("agent-7"), [chunk()]).ids
    assert stored(kb)[chunk_id]["originAgentIdentity"] == "agent-7"
    kb.ingest(ACME.with_agent(None), [chunk()])
    assert "originAgentIdentity" not in stored(kb)[chunk_id]
    kb.ingest(ACME.with_agent("agent-7"), [chunk()])
    [record] = [r for r in kb.export(OPERATOR) if r["id"] == chunk_id]
    record["metadata"] = {k: v for k, v in record["metadata"].items() if k != "originAgentIdentity"}
    assert kb.restore(OPERATOR, [record]) == 1
    assert "originAgentIdentity" not in stored(kb)[chunk_id]


def test_the_same_content_in_two_tenants_is_two_chunks(kb: KnowledgeBase) -> None:
    """Tenant-aware ids: neither write shadows the other."""
    a = kb.ingest(ACME, [chunk()]).ids
    b = kb.ingest(BETA, [chunk(tenant="beta")]).ids
    assert a != b
    assert kb.get(ACME, a[0]).metadata["tenantId"] == "acme"
    assert kb.get(BETA, b[0]).metadata["tenantId"] == "beta"
    assert len(kb.store.get().ids) == 2


def test_private_chunks_are_read_only_by_their_origin_agent(kb: KnowledgeBase) -> None:
    """Visibility: the writing agent reads it; another agent or no agent of the same tenant does not."""
    writer = ACME.with_agent("agent-a")
    with pytest.raises(Forbidden):
        kb.ingest(ACME, [chunk()], visibility="private")
    [chunk_id] = kb.ingest(writer, [chunk("secret.md", "private note")], visibility="private").ids
    kb.ingest(ACME, [chunk("team.md", "team note")])
    assert {h.document for h in kb.list(writer)} == {"private note", "team note"}
    assert {h.document for h in kb.list(ACME.with_agent("agent-b"))} == {"team note"}
    assert {h.document for h in kb.list(ACME)} == {"team note"}
    assert kb.get(writer, chunk_id).document == "private note"


def test_the_spoofs_of_a_batch_a_store_fault_stopped_count_towards_escalation() -> None:
    """The reference counts a batch's spoofs before it writes, so a batch a store fault stops
    counts too; the policy model counts every spoofed record sent, so its budget (what the L4
    state machine spoofs within) is never more than the reference allows. Control: counting
    only the batches that landed, the model would allow a spoof the reference rejects."""
    from kbconform.adapter import BackendOptions, FaultPlan, FaultSwitch, Manifest
    from kbconform.errors import BackendUnavailable
    from kbconform.profiles.tenant_namespace.model import Policy
    from kbconform_reference.adapter import memory

    adapter, switch = memory(), FaultSwitch()
    backend = adapter.open(BackendOptions(store_fails=switch))
    try:
        manifest = Manifest.from_mapping(adapter.manifest)
        policy = Policy.for_manifest(manifest)
        threshold = policy.escalation_threshold
        assert threshold is not None
        batch = [chunk(f"{n}.md", tenant="beta") for n in range(threshold - 1)]
        switch.set(FaultPlan(0))
        with pytest.raises(BackendUnavailable):
            backend.ingest(ACME, batch)
        switch.set(None)
        policy.count_spoofs(ACME, batch, "overwrite")
        assert policy.spoof_budget(ACME) == 0  # the model spoofs no more
        assert backend.ingest(ACME, [chunk("last.md", tenant="beta")]).warnings  # the threshold's spoof
        with pytest.raises(SpoofRejected):  # the control: one spoof past the failed batch's count
            backend.ingest(ACME, [chunk("past.md", tenant="beta")])
        policy.count_spoofs(ACME, [chunk("clean.md")], "overwrite")
        policy.count_spoofs(ACME, batch, "reject")
        assert policy.spoof_budget(ACME) == 0
        assert Policy.for_manifest(manifest).spoof_budget(ACME) == threshold - 1
    finally:
        adapter.close(backend)
