"""L1 shadow ids: ids are tenant-aware, and no write lands on another tenant's chunk."""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import pytest
from hypothesis import strategies as st

from kbconform.conformance import Refused, Run
from kbconform.errors import Forbidden, NotFound, SpoofRejected
from kbconform.identity import Principal, chunk_id
from kbconform.profiles.tenant_namespace.data import Principals, record
from kbconform.profiles.tenant_namespace.model import Policy

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)

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


@pytest.mark.kbconform(
    id="shadow-01", rule="parsed-chunk.md#what-a-record-may-hash", guide="ingestprincipal-records", level="L1"
)
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


@pytest.mark.kbconform(
    id="shadow-02", rule="stamping.md#guarded-fields", guide="ingestprincipal-records", level="L1"
)
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


@pytest.mark.kbconform(
    id="shadow-03",
    rule="stamping.md#guarded-fields",
    guide="ingestprincipal-records",
    level="L1",
    requires="id-profile",
)
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


@pytest.mark.kbconform(
    id="shadow-04", rule="stamping.md#other-write-rules", guide="ingestprincipal-records", level="L1"
)
def test_another_agent_never_overwrites_a_private_chunk(
    kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A chunk private to acme's agent, and a record of another acme agent that hashes to the same
    id (its hashInputs leave out the content): the other agent's ingest is refused (Forbidden)
    with nothing of its batch written, and the chunk keeps its text, its visibility and its
    reader. The same write onto a team chunk lands (control: the id does collide). A private
    chunk without an origin agent is written over by nobody: no agent, acme's or another."""
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

    # A private chunk restored without an origin agent is nobody's: read by no principal
    # (read-filter.md), so written over by none, with an agent identity or without one.
    [orphan_id] = backend.ingest(acme, [colliding("docs/orphan.md", "nobody's notes")]).ids
    orphan = {r["id"]: dict(r) for r in backend.export(operator)}[orphan_id]
    kept = {k: v for k, v in orphan["metadata"].items() if k != "originAgentIdentity"}
    assert backend.restore(operator, [{**orphan, "metadata": {**kept, "visibility": "private"}}]) == 1
    for writer in (acme.with_agent(None), acme, other):
        with pytest.raises(Forbidden):
            backend.ingest(writer, [colliding("docs/orphan.md", f"written by {writer.agent_identity}")])
    stored = {r["id"]: r for r in backend.export(operator)}[orphan_id]
    assert stored["document"] == "nobody's notes"
    assert stored["metadata"].get("visibility") == "private"


SLUGS = st.from_regex(r"[a-z0-9]{1,6}(/[a-z0-9]{1,6})?", fullmatch=True)
#: hashInputs that leave out sourcePath: only the server's repo keeps two repos' copies apart.
REPOLESS = st.sampled_from(
    [["content"], ["kind", "name", "content"], ["name", "content"], ["content", "parserId"]]
)


@pytest.mark.kbconform(
    id="shadow-05", rule="parsed-chunk.md#what-a-record-may-hash", guide="ingestprincipal-records", level="L1"
)
def test_the_same_record_in_two_repos_of_one_tenant_is_two_chunks(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Whatever its hashInputs, one record sent for two repos of acme (in one batch or two) lands
    as two chunks, each read back with its own repo; sending it again to one repo keeps its id
    (control: equal records in one repo are one chunk)."""
    acme = kbconform_principals.acme

    @kbconform_run.given(
        repos=st.lists(SLUGS, min_size=2, max_size=2, unique=True),
        hash_inputs=REPOLESS,
        path=PATHS,
        content=CONTENT,
        together=st.booleans(),
    )
    def check(repos: list[str], hash_inputs: list[str], path: str, content: str, together: bool) -> None:
        backend = kbconform_open()
        try:
            records = [
                record(path, content, tenant="acme", repo=repo, hashInputs=hash_inputs) for repo in repos
            ]
            if together:
                ids = list(backend.ingest(acme, records).ids)
            else:
                ids = [backend.ingest(acme, [rec]).ids[0] for rec in records]
            assert ids[0] != ids[1], f"the record in repos {repos} got one id"
            assert _listed(backend, acme) == set(ids)
            for chunk, repo in zip(ids, repos, strict=True):
                hit = backend.get(acme, chunk)
                assert (hit.document, hit.metadata.get("repoSlug")) == (content, repo), (
                    f"{repo}'s copy was overwritten"
                )
            assert list(backend.ingest(acme, [records[0]]).ids) == [ids[0]]
            assert _listed(backend, acme) == set(ids)
        finally:
            kbconform_run.close(backend)

    check()


PART = st.from_regex(r"[a-z0-9]{1,5}", fullmatch=True)


@pytest.mark.kbconform(
    id="shadow-06",
    rule="identity-tuple.md#identifiers-are-ascii-and-exact",
    guide="ingestprincipal-records",
    level="L1",
)
def test_id_parts_that_concatenate_alike_never_collide(
    kbconform_run: Run, kbconform_open: Any, kbconform_principals: Principals
) -> None:
    """Tenant ``a-b`` with repo ``c`` and tenant ``a`` with repo ``b-c``, then repo ``a/b`` with
    path ``c.md`` and repo ``a`` with path ``b/c.md`` in one tenant: the same content gets
    distinct ids, both writes land, and each reads back its own (and not the other's) chunk."""

    @kbconform_run.given(a=PART, b=PART, c=PART, content=CONTENT)
    def check(a: str, b: str, c: str, content: str) -> None:
        backend = kbconform_open()
        try:
            left, right = Principal(f"{a}-{b}", "agent-left"), Principal(a, "agent-right")
            [left_id] = backend.ingest(
                left, [record("docs/x.md", content, tenant=left.tenant_id, repo=c)]
            ).ids
            [right_id] = backend.ingest(right, [record("docs/x.md", content, tenant=a, repo=f"{b}-{c}")]).ids
            assert left_id != right_id, "tenant and repo concatenate to one id"
            for principal, chunk, foreign, repo in (
                (left, left_id, right_id, c),
                (right, right_id, left_id, f"{b}-{c}"),
            ):
                hit = backend.get(principal, chunk)
                assert (hit.document, hit.metadata.get("repoSlug")) == (content, repo)
                assert _listed(backend, principal) == {chunk}
                with pytest.raises(NotFound):
                    backend.get(principal, foreign)
            acme = kbconform_principals.acme
            split = [
                record(f"{c}.md", content, tenant="acme", repo=f"{a}/{b}"),
                record(f"{b}/{c}.md", content, tenant="acme", repo=a, name=f"{c}.md"),
            ]
            ids = list(backend.ingest(acme, split).ids)
            assert ids[0] != ids[1], "repo and path concatenate to one id"
            for chunk, rec in zip(ids, split, strict=True):
                hit = backend.get(acme, chunk)
                assert (hit.metadata.get("repoSlug"), hit.metadata.get("sourcePath")) == (
                    rec["repoSlug"],
                    rec["sourcePath"],
                )
        finally:
            kbconform_run.close(backend)

    check()


#: How long shadow-07 waits for the backend's clock to give a new chunk another ingestedAt than
#: the one it re-sends (a clock read to the second needs up to one; a minute is the bound).
CLOCK_WAIT = 61.0


def _written(policy: Policy, backend: Any, principal: Principal, records: list[dict[str, Any]]) -> list[str]:
    """Ingest ``records`` as the model predicts (ids included) and commit them to it."""
    plan = policy.ingest(principal, records, "overwrite")
    assert not isinstance(plan, Refused), plan.why
    ids = [str(chunk) for chunk in backend.ingest(principal, records).ids]
    assert policy.check_ids(plan, ids) == []
    policy.commit_ingest(plan, ids)
    return ids


def _tick(stamp: Any) -> float:
    """The smallest step of the clock ``stamp`` was read from, as far as its text shows, in
    seconds: 0.001 for ``...T10:00:00.123Z``, 1 for ``...T10:00:00Z`` (and for a stamp that is
    not an RFC 3339 time)."""
    found = re.search(r"T\d\d:\d\d:\d\d(?:\.(\d+))?", stamp) if isinstance(stamp, str) else None
    digits = (found.group(1) or "") if found else ""
    return 10.0 ** -len(digits)


def _stamped_later(policy: Policy, backend: Any, principal: Principal, first: Any) -> int:
    """Write new chunks as ``principal`` until one gets another ingestedAt than ``first`` (the
    backend's clock has moved past it, so a rewrite now would show); how many it took.

    The first is written one step of the clock ``first`` shows later, so on a backend whose
    clock runs at the step its stamps show one chunk does it: the calls do not depend on where
    in a millisecond or a second the write before landed (one seed, one program)."""
    time.sleep(_tick(first))
    deadline, pause = time.monotonic() + CLOCK_WAIT, 0.005
    for n in itertools.count():
        [probe] = _written(
            policy,
            backend,
            principal,
            [record(f"clock/{n}.md", f"clock probe {n}", tenant=principal.tenant_id)],
        )
        stamped = backend.get(principal, probe).metadata
        problems = policy.stamp_problems(probe, stamped)
        assert not problems, "; ".join(problems)
        if stamped.get("ingestedAt") != first:
            return n + 1
        assert time.monotonic() < deadline, (
            f"every chunk written in {CLOCK_WAIT:.0f} s got ingestedAt {first!r}"
        )
        time.sleep(pause)
        pause = min(2 * pause, 1.0)
    raise AssertionError("unreachable")  # pragma: no cover


@pytest.mark.kbconform(
    id="shadow-07", rule="stamping.md#other-write-rules", guide="ingestprincipal-records", level="L1"
)
def test_re_ingesting_replaces_changed_content_and_keeps_identical_content(
    kbconform_run: Run, kbconform_backend: Any, kbconform_principals: Principals
) -> None:
    """A record whose id leaves out its content: sent again unchanged it keeps its id and every
    stored value, ``ingestedAt`` included, once a chunk written just before the re-send got
    another ``ingestedAt`` (control: the backend's clock has moved, so a rewrite would show);
    sent with new text it keeps its id, reads back with the new text, and a query for the new
    text finds it first, ahead of a chunk sharing half the words (control), while no read
    returns the old text."""
    acme, beta = kbconform_principals.acme, kbconform_principals.beta
    backend = kbconform_backend
    policy = Policy.for_manifest(kbconform_run.manifest)
    rng = kbconform_run.rng("shadow-07")
    words = [f"w{rng.getrandbits(40):010x}" for _ in range(10)]
    old_text, new_text = " ".join(words[:4]), " ".join(words[4:8])
    page = record("docs/page.md", old_text, tenant="acme", hashInputs=["sourcePath", "kind", "name"])
    decoy = record("docs/decoy.md", " ".join(words[4:6] + words[8:]), tenant="acme")
    page_id, decoy_id = _written(policy, backend, acme, [page, decoy])
    first = backend.get(acme, page_id)
    problems = policy.stamp_problems(page_id, first.metadata)
    assert not problems, "; ".join(problems)
    assert _stamped_later(policy, backend, beta, first.metadata.get("ingestedAt")) >= 1
    assert _written(policy, backend, acme, [page]) == [page_id]
    again = backend.get(acme, page_id)
    problems = policy.stamp_problems(page_id, again.metadata)
    assert not problems, f"identical content was restamped: {'; '.join(problems)}"
    assert (again.document, dict(again.metadata)) == (old_text, dict(first.metadata)), (
        "identical content was rewritten"
    )
    assert list(backend.ingest(acme, [{**page, "content": new_text}]).ids) == [page_id]
    assert backend.get(acme, page_id).document == new_text, "the new text did not replace the old"
    [top, *_] = backend.query(acme, new_text, 2, None)
    assert (top.id, top.document) == (page_id, new_text), "a query for the new text does not find it first"
    assert {h.id for h in backend.query(acme, new_text, 2, None)} == {page_id, decoy_id}
    stale = [h.id for h in backend.query(acme, old_text, 2, None) if h.document == old_text]
    listed = {h.id: h.document for h in backend.list(acme, 100, 0)}
    assert stale == [], "a query still returns the old text"
    assert listed == {page_id: new_text, decoy_id: decoy["content"]}
