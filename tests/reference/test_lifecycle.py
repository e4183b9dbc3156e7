"""Deletion signals and backup/restore, scoped to the tenant, in every store mode."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rfc8785

from kbconform.errors import ContractViolation, Forbidden, RevisionBoundaryUnavailable
from kbconform_reference import GitResolver, KnowledgeBase
from kbconform_reference.namespace.stores import MemoryStore, VectorStore
from tests.reference.conftest import ACME, BETA, OPERATOR, chunk


def paths(kb: KnowledgeBase, principal: Any) -> set[str]:
    return {h.metadata["sourcePath"] for h in kb.list(principal)}


@pytest.fixture
def twins(kb: KnowledgeBase) -> KnowledgeBase:
    """acme and beta both hold app: a.md, b.md, c.md."""
    for principal in (ACME, BETA):
        kb.ingest(
            principal,
            [
                chunk(p, f"{principal.tenant_id} {p}", tenant=principal.tenant_id)
                for p in ("a.md", "b.md", "c.md")
            ],
        )
    assert paths(kb, ACME) == paths(kb, BETA) == {"a.md", "b.md", "c.md"}
    return kb


def test_tombstones_delete_only_in_the_requesters_tenant(twins: KnowledgeBase) -> None:
    """acme's tombstone removes acme's a.md; beta's a.md stays; deleting nothing is not an error."""
    result = twins.apply_deletion_signal(ACME, {"repoSlug": "app", "deleted": [{"sourcePath": "a.md"}]})
    assert len(result.deleted_ids) == 1
    assert paths(twins, ACME) == {"b.md", "c.md"}
    assert paths(twins, BETA) == {"a.md", "b.md", "c.md"}
    assert (
        twins.apply_deletion_signal(
            ACME, {"repoSlug": "app", "deleted": [{"sourcePath": "a.md"}]}
        ).deleted_ids
        == ()
    )
    assert (
        twins.apply_deletion_signal(
            ACME, {"deleted": [{"sourcePath": "b.md", "repoSlug": "other"}]}
        ).deleted_ids
        == ()
    )


def test_a_manifest_deletes_what_it_does_not_list_within_the_tenant(twins: KnowledgeBase) -> None:
    """Only acme's unlisted paths go; files written by the same push are kept."""
    signal = {
        "manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["a.md"]},
        "files": [{"sourcePath": "c.md", "repoSlug": "app"}],
    }
    twins.apply_deletion_signal(ACME, signal)
    assert paths(twins, ACME) == {"a.md", "c.md"}
    assert paths(twins, BETA) == {"a.md", "b.md", "c.md"}


def test_a_member_of_the_shared_namespace_cannot_delete_in_it(kb: KnowledgeBase) -> None:
    """Deletion is a write: the shared namespace needs an operator."""
    with pytest.raises(Forbidden):
        kb.apply_deletion_signal(
            ACME.with_tenant("neo-shared"), {"repoSlug": "neo", "deleted": [{"sourcePath": "a.md"}]}
        )


@pytest.mark.parametrize(
    ("signal", "code"),
    [
        ({}, "KB_DELETE_SIGNAL_INVALID"),
        ({"deleted": [{"sourcePath": "/abs"}], "repoSlug": "app"}, "KB_TOMBSTONE_INVALID"),
        ({"deleted": [{"sourcePath": "a.md"}]}, "KB_TOMBSTONE_INVALID"),
        ({"manifestSnapshot": {"repoSlug": "app"}}, "KB_MANIFEST_INVALID"),
        ({"baseRevision": "abcdef1"}, "KB_REVISION_BOUNDARY_INVALID"),
        (
            {"baseRevision": "xyz", "headRevision": "abcdef1", "repoSlug": "app"},
            "KB_REVISION_BOUNDARY_INVALID",
        ),
        (
            {"repoSlug": "app", "deleted": [{"sourcePath": "a.md"}], "files": [{"sourcePath": "a.md"}]},
            "KB_DELETE_SIGNAL_INVALID",
        ),
    ],
)
def test_a_malformed_signal_has_its_code_and_deletes_nothing(
    twins: KnowledgeBase, signal: dict, code: str
) -> None:
    """Each mechanism's errors carry that mechanism's code."""
    with pytest.raises(ContractViolation) as caught:
        twins.apply_deletion_signal(ACME, signal)
    assert caught.value.code == code
    assert paths(twins, ACME) == {"a.md", "b.md", "c.md"}


def test_a_revision_boundary_without_a_resolver_is_unavailable(twins: KnowledgeBase) -> None:
    """No resolver configured: KB_REVISION_BOUNDARY_UNAVAILABLE, nothing deleted."""
    with pytest.raises(RevisionBoundaryUnavailable) as caught:
        twins.apply_deletion_signal(
            ACME, {"repoSlug": "app", "baseRevision": "abcdef1", "headRevision": "1234567"}
        )
    assert caught.value.code == "KB_REVISION_BOUNDARY_UNAVAILABLE"
    assert paths(twins, ACME) == {"a.md", "b.md", "c.md"}


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(repo),
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_git_revision_boundary_deletes_the_paths_removed_between_commits(
    store: VectorStore, tmp_path: Path
) -> None:
    """The resolver lists b.md (deleted) but not c.md (kept) or a renamed file's new path."""
    repo = tmp_path / "app"
    repo.mkdir()
    _git(repo, "init", "-q")
    for name in ("a.md", "b.md", "c.md"):
        (repo / name).write_text(name, encoding="utf-8")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "rm", "-q", "b.md")
    _git(repo, "mv", "a.md", "renamed.md")
    _git(repo, "commit", "-qm", "head")
    head = _git(repo, "rev-parse", "HEAD")
    kb = KnowledgeBase(store, resolver=GitResolver({"app": repo}))
    for principal in (ACME, BETA):
        kb.ingest(principal, [chunk(p, p, tenant=principal.tenant_id) for p in ("a.md", "b.md", "c.md")])
    result = kb.apply_deletion_signal(ACME, {"repoSlug": "app", "baseRevision": base, "headRevision": head})
    assert sorted(p for _, p in result.paths) == ["a.md", "b.md"]
    assert paths(kb, ACME) == {"c.md"}
    assert paths(kb, BETA) == {"a.md", "b.md", "c.md"}
    with pytest.raises(RevisionBoundaryUnavailable):
        kb.apply_deletion_signal(ACME, {"repoSlug": "app", "baseRevision": "abcdef1", "headRevision": head})


def _jsonl(kb: KnowledgeBase) -> bytes:
    out = io.BytesIO()
    kb.export_jsonl(OPERATOR, out)
    return out.getvalue()


def test_export_restore_export_is_byte_identical_and_restored_rows_stay_filtered(
    twins: KnowledgeBase,
) -> None:
    """Embeddings round-trip exactly as float32; stamps are kept; tenants still see only their own."""
    first = _jsonl(twins)
    assert first.count(b"\n") == 6
    restored = KnowledgeBase(MemoryStore())
    assert restored.restore(OPERATOR, twins.export(OPERATOR)) == 6
    assert _jsonl(restored) == first
    assert paths(restored, ACME) == {"a.md", "b.md", "c.md"}
    assert {h.metadata["tenantId"] for h in restored.list(BETA)} == {"beta"}
    original = twins.store.get(embeddings=True)
    again = restored.store.get(ids=original.ids, embeddings=True)
    assert original.embeddings is not None
    assert again.embeddings is not None
    assert original.embeddings.tobytes() == again.embeddings.tobytes()


def test_restore_into_the_same_mode_round_trips_null_documents(store: VectorStore) -> None:
    """A backup record may have document null; it comes back null."""
    kb = KnowledgeBase(store)
    record = {
        "id": "x" * 64,
        "embedding": [0.0] * 255 + [1.0],
        "document": None,
        "metadata": {"tenantId": "acme", "repoSlug": "app", "sourcePath": "n.md", "visibility": "team"},
    }
    kb.restore(OPERATOR, [record])
    [exported] = kb.export(OPERATOR)
    assert exported == record
    assert kb.get(ACME, record["id"]).document is None
    assert kb.list(BETA) == []


def test_restore_validates_every_record_before_writing_any(kb: KnowledgeBase) -> None:
    """One bad record refuses all; an unstamped row (which no filter could scope) is refused."""
    good = {
        "id": "g" * 64,
        "embedding": [1.0] + [0.0] * 255,
        "document": "d",
        "metadata": {"tenantId": "acme", "repoSlug": "app", "sourcePath": "g.md", "visibility": "team"},
    }
    for bad in (
        {**good, "id": "b" * 64, "embedding": []},
        {**good, "id": "b" * 64, "metadata": {"repoSlug": "app", "sourcePath": "b.md", "visibility": "team"}},
        {**good, "id": "b" * 64, "embedding": [1.0, 0.0]},
        {**good, "id": "b" * 64, "metadata": {**good["metadata"], "nested": {"x": 1}}},
    ):
        with pytest.raises(ContractViolation) as caught:
            kb.restore(OPERATOR, [good, bad])
        assert all(p.pointer.startswith("/1") for p in caught.value.problems)
        assert kb.store.get().ids == ()
    assert kb.restore(OPERATOR, [good]) == 1


def test_one_id_twice_in_a_restore_is_one_row_the_last_landing(kb: KnowledgeBase) -> None:
    """Chroma refuses duplicate ids in one call; the reference writes the last record of an id
    (as ingest does), in every store mode. A batch of distinct ids lands as given (control)."""
    [chunk_id] = kb.ingest(ACME, [chunk()]).ids
    [record] = kb.export(OPERATOR)
    first = {**record, "document": "first"}
    last = {**record, "document": "last", "metadata": {**record["metadata"], "visibility": "private"}}
    assert kb.restore(OPERATOR, [first, last]) == 2
    [restored] = kb.export(OPERATOR)
    assert (restored["id"], restored["document"], restored["metadata"]["visibility"]) == (
        chunk_id,
        "last",
        "private",
    )
    assert kb.restore(OPERATOR, [record]) == 1
    assert kb.export(OPERATOR)[0]["document"] == record["document"]


def test_only_an_operator_exports_and_restores(kb: KnowledgeBase) -> None:
    """Members are refused with KB_FORBIDDEN."""
    for call in (lambda: kb.export(ACME), lambda: kb.restore(ACME, [])):
        with pytest.raises(Forbidden):
            call()
    assert kb.export(OPERATOR) == []


def test_export_lines_are_canonical_json() -> None:
    """Each exported line is its own RFC 8785 encoding."""
    kb = KnowledgeBase(MemoryStore())
    kb.ingest(ACME, [chunk()])
    for line in _jsonl(kb).splitlines():
        assert rfc8785.dumps(json.loads(line)) == line


@pytest.mark.slow
@pytest.mark.bulk
def test_exports_and_reads_larger_than_one_store_page_are_complete(store: VectorStore) -> None:
    """12,000 rows (over Chroma's per-call page and SQLite's variable limit) export and delete whole."""
    count = 12_000
    ids = [f"{i:064x}" for i in range(count)]
    metadata = {"tenantId": "acme", "repoSlug": "app", "sourcePath": "a.md", "visibility": "team"}
    vectors = np.zeros((count, 256), dtype=np.float32)
    vectors[:, 0] = 1.0
    store.upsert(ids, vectors, [None] * count, [metadata] * count)
    kb = KnowledgeBase(store)
    assert [r["id"] for r in kb.export(OPERATOR)] == ids
    assert kb.count(ACME) == count
    assert (
        len(
            kb.apply_deletion_signal(
                ACME, {"repoSlug": "app", "deleted": [{"sourcePath": "a.md"}]}
            ).deleted_ids
        )
        == count
    )
    assert store.get().ids == ()


def test_the_chroma_embedded_adapter_closes_its_client_at_shutdown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend of a run is a collection of one Chroma client, closed at shutdown: Chroma
    keeps what its dropped collections held until then (a process that runs the suites again
    would carry every earlier run's)."""
    from kbconform.adapter import BackendOptions
    from kbconform_reference.namespace.adapter import chroma_embedded
    from kbconform_reference.namespace.stores import chroma

    closed: list[bool] = []

    class Recorded:
        def __init__(self) -> None:
            self.client = embedded()
            closed.append(False)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.client, name)

        def close(self) -> None:
            closed[-1] = True
            self.client.close()

    embedded = chroma.embedded_client
    monkeypatch.setattr(chroma, "embedded_client", Recorded)
    adapter = chroma_embedded()
    for _ in range(2):
        backend = adapter.open(BackendOptions())
        backend.ingest(ACME, [chunk()])
        adapter.close(backend)
    assert closed == [False], "one client for every backend, open until shutdown"
    adapter.shutdown()
    assert closed == [True]
