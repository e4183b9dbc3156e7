"""L3 deletion signals: tombstones, manifest, revision boundary and precedence, in one tenant."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from hypothesis import strategies as st

from kbconform.adapter import BackendOptions, RevisionMap
from kbconform.conformance import Run, refuses
from kbconform.errors import ContractViolation, Forbidden, NotFound, RevisionBoundaryUnavailable
from kbconform.profiles.tenant_namespace.data import Principals, record

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)

BASE, HEAD = "a1b2c3d4e5f6", "0f9e8d7c6b5a"
APP = ("docs/a.md", "docs/b.md", "docs/c.md", "docs/d.md")


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


@pytest.mark.kbconform(
    id="delete-01",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
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


@pytest.mark.kbconform(
    id="delete-02",
    rule="deletion-signaling.md#which-repository",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_tombstone_without_a_repo_slug_takes_the_signals(layout: Layout) -> None:
    """``repoSlug`` on the signal is the default for its tombstones."""
    layout.apply({"repoSlug": "app", "deleted": [{"sourcePath": "docs/b.md"}]}, {("app", "docs/b.md")})


@pytest.mark.kbconform(
    id="delete-03",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_manifest_snapshot_deletes_the_rest_of_its_repo_only(layout: Layout) -> None:
    """Paths of repo app not listed go; repo lib and beta's app stay."""
    layout.apply(
        {"manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/a.md", "docs/c.md"]}},
        {("app", "docs/b.md"), ("app", "docs/d.md")},
    )


@pytest.mark.kbconform(
    id="delete-04",
    rule="deletion-signaling.md#payload",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
    requires="revision-boundary",
)
def test_a_revision_boundary_deletes_what_the_resolver_reports(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """The resolver's paths go; the resolver is asked for exactly that repo and revisions."""
    resolver = RevisionMap({("app", BASE, HEAD): ["docs/c.md", "docs/gone-long-ago.md"]})
    backend = kbconform_open(
        BackendOptions(spoof_mode=kbconform_run.manifest.spoof_modes[0], resolver=resolver)
    )
    layout = Layout(backend, kbconform_principals)
    layout.apply({"repoSlug": "app", "baseRevision": BASE, "headRevision": HEAD}, {("app", "docs/c.md")})
    assert resolver.calls == [("app", BASE, HEAD)]


@pytest.mark.kbconform(
    id="delete-05",
    rule="deletion-signaling.md#error-codes",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
    requires="revision-boundary",
)
def test_a_revision_boundary_that_cannot_be_resolved_deletes_nothing(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """No resolver, or unknown revisions: KB_REVISION_BOUNDARY_UNAVAILABLE and nothing deleted,
    even with a valid tombstone in the same push; the tombstone alone works (control)."""
    mode = kbconform_run.manifest.spoof_modes[0]
    for resolver in (None, RevisionMap({})):
        backend = kbconform_open(BackendOptions(spoof_mode=mode, resolver=resolver))
        layout = Layout(backend, kbconform_principals)
        acme = kbconform_principals.acme
        signal = {
            "repoSlug": "app",
            "baseRevision": BASE,
            "headRevision": HEAD,
            "deleted": [{"sourcePath": "docs/a.md"}],
        }
        with refuses(RevisionBoundaryUnavailable, "a signal whose base revision is unknown"):
            backend.apply_deletion_signal(acme, signal)
        assert layout.stored(acme) == layout.everything("acme")
        layout.apply({"repoSlug": "app", "deleted": [{"sourcePath": "docs/a.md"}]}, {("app", "docs/a.md")})


@pytest.mark.kbconform(
    id="delete-06",
    rule="deletion-signaling.md#precedence",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
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


@pytest.mark.kbconform(
    id="delete-07",
    rule="deletion-signaling.md#precedence",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
    requires="revision-boundary",
)
def test_precedence_boundary_then_tombstones_then_manifest_minus_files(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """All three mechanisms in one push: the union of what each deletes, minus ``files``."""
    resolver = RevisionMap({("app", BASE, HEAD): ["docs/a.md"]})
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


@pytest.mark.kbconform(
    id="delete-08",
    rule="deletion-signaling.md#error-codes",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
@pytest.mark.parametrize("case", sorted(INVALID))
def test_an_invalid_signal_is_refused_with_its_code_and_deletes_nothing(case: str, layout: Layout) -> None:
    """Each malformed mechanism has its own error code; a valid signal then works (control)."""
    signal, code = INVALID[case]
    acme = layout.principals.acme
    with refuses(ContractViolation, f"apply_deletion_signal of {case}") as raised:
        layout.backend.apply_deletion_signal(acme, signal)
    assert raised[0].code == code
    assert layout.stored(acme) == layout.everything("acme")
    layout.apply({"deleted": [{"sourcePath": "docs/d.md", "repoSlug": "app"}]}, {("app", "docs/d.md")})


@pytest.mark.kbconform(
    id="delete-09",
    rule="deletion-signaling.md#tenant-scope",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
    requires="shared-namespace",
)
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


# -- the same paths in two repos, two chunks a file: exact deletes, exact deleted_ids -----------

TWIN_REPOS = ("app", "app/web")  # one slug a prefix of the other
TWIN_PATHS = ("docs/a.md", "docs/b.md", "docs/c.md")
SECTIONS = ("intro", "usage")


class Twins:
    """acme and beta both hold docs/a-c.md in repos app and app/web, two sections a file.

    ``rows`` is the model (id -> tenant, repo, path); ``apply`` compares the backend with it.
    """

    def __init__(self, backend: Any, principals: Principals) -> None:
        self.backend, self.principals = backend, principals
        self.rows: dict[str, tuple[str, str, str]] = {}
        for principal in (principals.acme, principals.beta):
            tenant = principal.tenant_id
            records = [
                record(path, f"{tenant} {repo} {path} {section}", tenant=tenant, repo=repo, name=section)
                for repo in TWIN_REPOS
                for path in TWIN_PATHS
                for section in SECTIONS
            ]
            ids = backend.ingest(principal, records).ids
            assert len(set(ids)) == len(records), "two sections of one file got one id"
            for chunk, rec in zip(ids, records, strict=True):
                self.rows[chunk] = (tenant, rec["repoSlug"], rec["sourcePath"])
        for principal in (principals.acme, principals.beta):
            assert self.listed(principal) == self.owned(principal.tenant_id), "the twins did not land"

    def listed(self, principal: Any) -> set[str]:
        return {hit.id for hit in self.backend.list(principal, 100, 0)}

    def owned(self, tenant: str) -> set[str]:
        return {i for i, (t, _, _) in self.rows.items() if t == tenant}

    def apply(self, signal: dict[str, Any], deleted: set[tuple[str, str]]) -> None:
        """As acme: exactly the chunks of ``deleted`` (repo, path) go and are reported, each once;
        every other chunk of acme and all of beta's stay."""
        expected = sorted(
            i for i, (t, repo, path) in self.rows.items() if t == "acme" and (repo, path) in deleted
        )
        result = self.backend.apply_deletion_signal(self.principals.acme, signal)
        assert sorted(result.deleted_ids) == expected, f"deleted_ids for {signal}"
        for chunk in expected:
            del self.rows[chunk]
        assert self.listed(self.principals.acme) == self.owned("acme"), f"acme's chunks after {signal}"
        assert self.listed(self.principals.beta) == self.owned("beta"), "acme's signal deleted beta's chunks"


@pytest.fixture
def twins(kbconform_backend: Any, kbconform_principals: Principals) -> Twins:
    return Twins(kbconform_backend, kbconform_principals)


@pytest.mark.kbconform(
    id="delete-10",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_tombstone_deletes_its_path_in_its_own_repo_only(twins: Twins) -> None:
    """docs/a.md tombstoned in app: both its sections go and are reported; app/web's docs/a.md
    stays; then the tombstone in app/web deletes that one (control)."""
    twins.apply({"deleted": [{"sourcePath": "docs/a.md", "repoSlug": "app"}]}, {("app", "docs/a.md")})
    twins.apply({"repoSlug": "app/web", "deleted": [{"sourcePath": "docs/a.md"}]}, {("app/web", "docs/a.md")})


@pytest.mark.kbconform(
    id="delete-12",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_manifest_reconciles_its_own_repo_and_not_the_same_paths_elsewhere(twins: Twins) -> None:
    """A manifest of app listing docs/a.md deletes app's b and c; app/web's b and c, unlisted
    there too, stay."""
    twins.apply(
        {"manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": ["docs/a.md"]}},
        {("app", "docs/b.md"), ("app", "docs/c.md")},
    )


@pytest.mark.kbconform(
    id="delete-13",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_an_empty_manifest_deletes_its_whole_repo_and_nothing_else(twins: Twins) -> None:
    """``pathsAfterPush: []`` deletes every chunk of the repo in the requester's tenant; the
    tenant's other repo and beta's same repo stay."""
    twins.apply(
        {"manifestSnapshot": {"repoSlug": "app/web", "pathsAfterPush": []}},
        {("app/web", path) for path in TWIN_PATHS},
    )


NOTHING_MATCHES = {
    "a tombstone of a path never written": {"deleted": [{"sourcePath": "docs/z.md", "repoSlug": "app"}]},
    "a tombstone of a folder": {"repoSlug": "app", "deleted": [{"sourcePath": "docs"}]},
    "a tombstone in a repo the tenant lacks": {"deleted": [{"sourcePath": "docs/a.md", "repoSlug": "lib"}]},
    "an empty manifest of a repo the tenant lacks": {
        "manifestSnapshot": {"repoSlug": "lib", "pathsAfterPush": []}
    },
    "a manifest listing every path": {
        "manifestSnapshot": {"repoSlug": "app", "pathsAfterPush": list(TWIN_PATHS)}
    },
}


@pytest.mark.kbconform(
    id="delete-14",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_signal_that_matches_nothing_deletes_nothing(twins: Twins) -> None:
    """Each signal naming nothing stored reports and deletes nothing, in either tenant; a
    tombstone that matches then deletes exactly its path (control)."""
    for case, signal in NOTHING_MATCHES.items():
        result = twins.backend.apply_deletion_signal(twins.principals.acme, signal)
        assert list(result.deleted_ids) == [], f"{case} reported deletions"
        assert twins.listed(twins.principals.acme) == twins.owned("acme"), f"{case} deleted acme's chunks"
        assert twins.listed(twins.principals.beta) == twins.owned("beta"), f"{case} deleted beta's chunks"
    twins.apply({"deleted": [{"sourcePath": "docs/c.md", "repoSlug": "app"}]}, {("app", "docs/c.md")})


# -- a path matches itself only: no prefix, suffix, case or Unicode-normalization match ----------

_SEGMENT = st.text(st.sampled_from("abcxyzABCXYZ019-_"), min_size=1, max_size=5)
_COMPOSED = "éÅñöÇü"  # each has a different NFD form


@st.composite
def _tricky_paths(draw: st.DrawFn) -> str:
    """A path in NFC with a cased ASCII letter and a precomposed letter in its last segment."""
    folders = draw(st.lists(_SEGMENT, min_size=0, max_size=2))
    stem = draw(_SEGMENT) + draw(st.sampled_from("aBzQ")) + draw(st.sampled_from(_COMPOSED)) + draw(_SEGMENT)
    return "/".join([*folders, stem])


def _neighbours(path: str) -> dict[str, str]:
    """Paths a loose match confuses with ``path``, each a different path, by what they are."""
    return {
        "itself": path,
        "a file it is a prefix of": f"{path}.md",
        "a file in it as a folder": f"{path}/index.md",
        "a path it is a suffix of": f"old/{path}",
        "its case variant": path.swapcase(),
        "its NFD form": unicodedata.normalize("NFD", path),
    }


@pytest.mark.kbconform(
    id="delete-11",
    rule="deletion-signaling.md#matching",
    guide="apply_deletion_signalprincipal-signal",
    level="L3",
)
def test_a_tombstone_matches_its_path_exactly(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Generated paths beside their prefix, suffix, case and NFD neighbours: tombstoning the path
    deletes it alone; tombstoning the NFD form then deletes that one alone (control)."""
    acme = kbconform_principals.acme

    @kbconform_run.given(path=_tricky_paths())
    def check(path: str) -> None:
        backend = kbconform_open()
        try:
            family = _neighbours(path)
            assert len(set(family.values())) == len(family), family
            written = dict(
                zip(
                    backend.ingest(
                        acme, [record(p, f"{what}: {p}", tenant="acme") for what, p in family.items()]
                    ).ids,
                    family.values(),
                    strict=True,
                )
            )
            for what in ("itself", "its NFD form"):
                gone = family[what]
                result = backend.apply_deletion_signal(
                    acme, {"deleted": [{"sourcePath": gone, "repoSlug": "app"}]}
                )
                expected = {i for i, p in written.items() if p == gone}
                assert set(result.deleted_ids) == expected, f"tombstoning {what} {gone!r} reported others"
                written = {i: p for i, p in written.items() if p != gone}
                left = {hit.metadata["sourcePath"] for hit in backend.list(acme, 100, 0)}
                assert left == set(written.values()), (
                    f"tombstoning {what} {gone!r} deleted {set(written.values()) - left}"
                )
        finally:
            kbconform_run.close(backend)

    check()


# -- a deleted chunk is gone through every read facade ------------------------------------------


def _shown(backend: Any, facade: str, principal: Any, texts: dict[str, str]) -> set[str] | int:
    """Which of ``texts`` (id -> stored text, first word a unique token) ``facade`` shows; count
    gives its number. Every text a facade returns must be the model's for its id."""
    if facade == "count":
        return int(backend.count(principal))
    found: set[str] = set()
    if facade == "get":
        for chunk in texts:
            try:
                hit = backend.get(principal, chunk)
            except NotFound:
                continue
            assert hit.document == texts[chunk], f"get({chunk}) reads {hit.document!r}"
            found.add(chunk)
        return found
    hits: list[Any] = []
    if facade == "list":
        hits = list(backend.list(principal, 100, 0))
    for text in texts.values():
        if facade == "query":
            hits += backend.query(principal, text, len(texts), None)
        elif facade == "ask":
            answer = backend.ask(principal, text, len(texts))
            hits += answer.sources
            words = set(answer.text.split())
            found |= {chunk for chunk, stored in texts.items() if stored.split()[0] in words}
    for hit in hits:
        assert hit.document == texts.get(hit.id), f"{facade} gave {hit.id} with {hit.document!r}"
        found.add(hit.id)
    return found


@pytest.mark.kbconform(
    id="delete-15",
    rule="deletion-signaling.md#matching",
    guide="queryprincipal-text-n_results-where",
    level="L3",
)
def test_a_deleted_chunk_is_gone_through_every_read_facade(
    kbconform_facade: str, kbconform_run: Run, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """Three chunks read through the facade (control: all three), a tombstone on one: the facade
    shows the other two and nothing of the deleted one, by id or by text."""
    acme = kbconform_principals.acme
    rng = kbconform_run.rng("delete-15")
    names = ("kept", "also-kept", "deleted")
    tokens = {name: f"kbc{rng.getrandbits(48):012x}" for name in names}
    records = [
        record(f"docs/{name}.md", f"{tokens[name]} release notes for the {name} page", tenant="acme")
        for name in names
    ]
    ids = dict(zip(names, kbconform_backend.ingest(acme, records).ids, strict=True))
    texts = {ids[name]: rec["content"] for name, rec in zip(names, records, strict=True)}
    before = _shown(kbconform_backend, kbconform_facade, acme, texts)
    assert before == (3 if kbconform_facade == "count" else set(texts)), (
        f"{kbconform_facade} before the delete"
    )
    deleted = kbconform_backend.apply_deletion_signal(
        acme, {"deleted": [{"sourcePath": "docs/deleted.md", "repoSlug": "app"}]}
    )
    assert list(deleted.deleted_ids) == [ids["deleted"]]
    after = _shown(kbconform_backend, kbconform_facade, acme, texts)
    kept = set(texts) - {ids["deleted"]}
    assert after == (2 if kbconform_facade == "count" else kept), f"{kbconform_facade} after the delete"
