"""L3 deletion signals: tombstones, manifest, revision boundary and precedence, in one tenant."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kbconform.adapter import BackendOptions
from kbconform.conformance import Principals, Run, record
from kbconform.errors import ContractViolation, Forbidden, RevisionBoundaryUnavailable

BASE, HEAD = "a1b2c3d4e5f6", "0f9e8d7c6b5a"
APP = ("docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md")


class Resolver:
    """Revision resolution the suite controls: (repo, base, head) -> deleted paths."""

    def __init__(self, deleted: dict[tuple[str, str, str], list[str]]) -> None:
        self.deleted = deleted
        self.calls: list[tuple[str, str, str]] = []

    def deleted_paths(self, repo_slug: str, base: str, head: str) -> Iterable[str]:
        self.calls.append((repo_slug, base, head))
        try:
            return list(self.deleted[(repo_slug, base, head)])
        except KeyError:
            raise RevisionBoundaryUnavailable(
                "apply_deletion_signal", f"unknown revisions {base}..{head}"
            ) from None


class Layout:
    """acme and beta both hold docs/a-d.md in repo app; acme also holds lib/x.md in repo lib."""

    def __init__(self, backend: Any, principals: Principals) -> None:
        self.backend, self.principals = backend, principals
        self.paths: dict[str, tuple[str, str, str]] = {}  # id -> (tenant, repo, path)
        for principal in (principals.acme, principals.beta):
            tenant = principal.tenant_id
            records = [record(path, f"{tenant} {path}", tenant=tenant) for path in APP]
            records.append(record("lib/x.md", f"{tenant} lib x", tenant=tenant, repo="lib"))
            ids = backend.ingest(principal, records).ids
            for chunk, rec in zip(ids, records, strict=True):
                self.paths[chunk] = (tenant, rec["repoSlug"], rec["sourcePath"])
        assert len(self.paths) == 2 * (len(APP) + 1), "the layout did not land"

    def stored(self, principal: Any) -> set[tuple[str, str]]:
        """(repo, path) of every chunk ``principal`` still reads."""
        hits = self.backend.list(principal, 100, 0)
        return {(hit.metadata["repoSlug"], hit.metadata["sourcePath"]) for hit in hits}

    def everything(self, tenant: str) -> set[tuple[str, str]]:
        return {(repo, path) for t, repo, path in self.paths.values() if t == tenant}

    def ids(self, tenant: str, wanted: set[tuple[str, str]]) -> set[str]:
        return {i for i, (t, repo, path) in self.paths.items() if t == tenant and (repo, path) in wanted}

    def apply(self, signal: dict[str, Any], expect_deleted: set[tuple[str, str]]) -> None:
        """Apply as acme: exactly ``expect_deleted`` goes, from acme only; beta keeps everything."""
        acme, beta = self.principals.acme, self.principals.beta
        assert expect_deleted, "a deletion check that expects nothing cannot fail"
        result = self.backend.apply_deletion_signal(acme, signal)
        assert set(result.deleted_ids) == self.ids("acme", expect_deleted)
        assert self.stored(acme) == self.everything("acme") - expect_deleted
        assert self.stored(beta) == self.everything("beta"), "acme's signal deleted beta's chunks"


@pytest.fixture
def layout(kbconform_backend: Any, kbconform_principals: Principals) -> Layout:
    return Layout(kbconform_backend, kbconform_principals)


@pytest.mark.kbconform(id="delete-01", level="L3")
def test_tombstones_delete_exactly_their_paths_in_the_principals_tenant(layout: Layout) -> None:
    """A tombstone per repo: those paths go from acme; beta's same paths stay."""
    layout.apply(
        {
            "deleted": [
                {"sourcePath": "docs/a.md", "repoSlug": "app"},
                {"sourcePath": "lib/x.md", "repoSlug": "lib"},
            ],
        },
        {("app", "docs/a.md"), ("lib", "lib/x.md")},
    )


@pytest.mark.kbconform(id="delete-02", level="L3")
def test_a_tombstone_without_a_repo_slug_takes_the_signals(layout: Layout) -> None:
    """``repoSlug`` on the signal is the default for its tombstones."""
    layout.apply({"repoSlug": "app", "deleted": [{"sourcePath": "docs/b.md"}]}, {("app", "docs/b.md")})


@pytest.mark.kbconform(id="delete-03", level="L3")
def test_a_manifest_snapshot_deletes_the_rest_of_its_repo_only(layout: Layout) -> None:
    """Paths of repo app not listed go; repo lib and beta's app stay."""
    layout.apply(
        {"manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/a.md", "docs/c.md"]}},
        {("app", "docs/b.md"), ("app", "docs/d.md")},
    )


@pytest.mark.kbconform(id="delete-04", level="L3", requires="revision-boundary")
def test_a_revision_boundary_deletes_what_the_resolver_reports(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """The resolver's paths go; the resolver is asked for exactly that repo and revisions."""
    resolver = Resolver({("app", BASE, HEAD): ["docs/c.md", "docs/gone-long-ago.md"]})
    backend = kbconform_open(
        BackendOptions(spoof_mode=kbconform_run.manifest.spoof_modes[0], resolver=resolver)
    )
    layout = Layout(backend, kbconform_principals)
    layout.apply({"repoSlug": "app", "baseRevision": BASE, "headRevision": HEAD}, {("app", "docs/c.md")})
    assert resolver.calls == [("app", BASE, HEAD)]


@pytest.mark.kbconform(id="delete-05", level="L3", requires="revision-boundary")
def test_a_revision_boundary_that_cannot_be_resolved_deletes_nothing(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """No resolver, or unknown revisions: KB_REVISION_BOUNDARY_UNAVAILABLE and nothing deleted,
    even with a valid tombstone in the same push; the tombstone alone works (control)."""
    mode = kbconform_run.manifest.spoof_modes[0]
    for resolver in (None, Resolver({})):
        backend = kbconform_open(BackendOptions(spoof_mode=mode, resolver=resolver))
        layout = Layout(backend, kbconform_principals)
        acme = kbconform_principals.acme
        signal = {
            "repoSlug": "app",
            "baseRevision": BASE,
            "headRevision": HEAD,
            "deleted": [{"sourcePath": "docs/a.md"}],
        }
        with pytest.raises(RevisionBoundaryUnavailable):
            backend.apply_deletion_signal(acme, signal)
        assert layout.stored(acme) == layout.everything("acme")
        layout.apply({"repoSlug": "app", "deleted": [{"sourcePath": "docs/a.md"}]}, {("app", "docs/a.md")})


@pytest.mark.kbconform(id="delete-06", level="L3")
def test_paths_written_by_the_same_push_are_never_deleted_by_it(layout: Layout) -> None:
    """Tombstones and manifest together, minus the push's files: a manifest listing only a.md
    with b.md tombstoned and c.md in files deletes b.md and d.md."""
    layout.apply(
        {
            "repoSlug": "app",
            "deleted": [{"sourcePath": "docs/b.md"}],
            "manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/a.md"]},
            "files": [{"sourcePath": "docs/c.md", "repoSlug": "app"}],
        },
        {("app", "docs/b.md"), ("app", "docs/d.md")},
    )


@pytest.mark.kbconform(id="delete-07", level="L3", requires="revision-boundary")
def test_precedence_boundary_then_tombstones_then_manifest_minus_files(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """All three mechanisms in one push: the union of what each deletes, minus ``files``."""
    resolver = Resolver({("app", BASE, HEAD): ["docs/a.md"]})
    backend = kbconform_open(
        BackendOptions(spoof_mode=kbconform_run.manifest.spoof_modes[0], resolver=resolver)
    )
    layout = Layout(backend, kbconform_principals)
    layout.apply(
        {
            "repoSlug": "app",
            "baseRevision": BASE,
            "headRevision": HEAD,
            "deleted": [{"sourcePath": "docs/b.md"}],
            "manifestSnapshot": {
                "repoSlug": "app",
                "pathsAfterPush": ["docs/a.md", "docs/b.md", "docs/c.md"],
            },
            "files": [{"sourcePath": "docs/c.md", "repoSlug": "app"}],
        },
        {("app", "docs/a.md"), ("app", "docs/b.md"), ("app", "docs/d.md")},
    )


INVALID = {
    "an empty tombstone list": ({"deleted": []}, "KB_TOMBSTONE_INVALID"),
    "a tombstone with an absolute path": (
        {"deleted": [{"sourcePath": "/etc/passwd"}]},
        "KB_TOMBSTONE_INVALID",
    ),
    "a manifest without its repo": ({"manifestSnapshot": {"pathsAfterPush": []}}, "KB_MANIFEST_INVALID"),
    "a base without a head": ({"repoSlug": "app", "baseRevision": BASE}, "KB_REVISION_BOUNDARY_INVALID"),
    "no mechanism at all": ({"repoSlug": "app"}, "KB_DELETE_SIGNAL_INVALID"),
    "a path both tombstoned and written": (
        {
            "deleted": [{"sourcePath": "docs/a.md", "repoSlug": "app"}],
            "files": [{"sourcePath": "docs/a.md", "repoSlug": "app"}],
        },
        "KB_DELETE_SIGNAL_INVALID",
    ),
}


@pytest.mark.kbconform(id="delete-08", level="L3")
@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_signal_is_refused_with_its_code_and_deletes_nothing(case: str, layout: Layout) -> None:
    """Each malformed mechanism has its own error code; a valid signal then works (control)."""
    signal, code = INVALID[case]
    acme = layout.principals.acme
    with pytest.raises(ContractViolation) as raised:
        layout.backend.apply_deletion_signal(acme, signal)
    assert raised.value.code == code
    assert layout.stored(acme) == layout.everything("acme")
    layout.apply({"deleted": [{"sourcePath": "docs/d.md", "repoSlug": "app"}]}, {("app", "docs/d.md")})


@pytest.mark.kbconform(id="delete-09", level="L3", requires="shared-namespace")
def test_a_member_cannot_delete_shared_content(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A member of the shared namespace is Forbidden; its operator deletes (control)."""
    principals = kbconform_principals
    assert principals.shared is not None
    assert principals.shared_member is not None
    assert principals.shared_writer is not None
    curated = record("docs/curated.md", "curated", tenant=principals.shared)
    [chunk] = kbconform_backend.ingest(principals.shared_writer, [curated]).ids
    signal = {"deleted": [{"sourcePath": "docs/curated.md", "repoSlug": "app"}]}
    with pytest.raises(Forbidden):
        kbconform_backend.apply_deletion_signal(principals.shared_member, signal)
    assert kbconform_backend.get(principals.acme, chunk).id == chunk
    assert list(kbconform_backend.apply_deletion_signal(principals.shared_writer, signal).deleted_ids) == [
        chunk
    ]
