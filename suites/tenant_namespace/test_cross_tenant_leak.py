"""L2 cross-tenant leak: canary chunks per tenant, read back through every declared facade.

Beyond the seeded canaries: tenant ids that are prefixes or substrings of each other, tenants and
repositories that join alike, the same path in two repositories, private chunks of another agent,
rights revoked and granted between calls, error texts, hostile where values, and paging.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import strategies as st

from kbconform.conformance import Run, charged, crossed
from kbconform.conformance.strategies import OUTSIDE
from kbconform.errors import ContractViolation, KbconformError, NotFound, error_texts
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import Canaries, Principals, record

#: The isolation profile these tests are written for (schemas/project-pool.md).
PROFILES = ("tenant-namespace",)


def _read_all(
    backend: Any,
    facade: str,
    principal: Principal,
    expected: set[str],
    contents: Mapping[str, str],
    by_token: Callable[[str | None], set[str]],
) -> dict[str, str | None]:
    """Everything ``principal`` can read through ``facade`` (query and ask probe with every
    chunk's text in ``contents``), as {id: document}; count returns no ids."""
    found: dict[str, str | None] = {}
    if facade == "query":
        for probe in contents.values():  # own, shared and foreign texts as query text
            for hit in backend.query(principal, probe, len(expected), None):
                found[hit.id] = hit.document
    elif facade == "ask":
        for probe in contents.values():
            answer = backend.ask(principal, probe, len(expected))
            for hit in answer.sources:
                found[hit.id] = hit.document
            leaked = by_token(answer.text) - expected
            assert not leaked, f"ask's text for {principal.tenant_id} quotes foreign chunks {sorted(leaked)}"
    elif facade == "get":
        for chunk_id in contents:
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
            assert offset <= len(contents), "list pages past everything that was written"
    else:  # pragma: no cover - the manifest schema allows no other facade
        raise AssertionError(facade)
    return found


def _assert_reads_exactly(
    backend: Any,
    facade: str,
    principal: Principal,
    expected: set[str],
    contents: Mapping[str, str],
    by_token: Callable[[str | None], set[str]],
) -> None:
    """``principal`` reads exactly ``expected`` through ``facade``: by id, by text and by number."""
    who = f"{principal.tenant_id} (agent {principal.agent_identity})"
    if facade == "count":
        count = backend.count(principal)
        assert count == len(expected), f"count for {who}: {count}, expected {len(expected)}"
        return
    found = _read_all(backend, facade, principal, expected, contents, by_token)
    leaked_ids = set(found) - expected
    leaked_text = {i for text in found.values() for i in by_token(text)} - expected
    assert not leaked_ids, f"{facade} gave {who} foreign chunks {sorted(leaked_ids)}"
    assert not leaked_text, f"{facade} gave {who} foreign text {sorted(leaked_text)}"
    assert set(found) == expected, f"{facade} for {who} missed {sorted(expected - set(found))}"
    for chunk_id, text in found.items():
        assert text == contents[chunk_id], f"{chunk_id} reads back altered"


def _canaries_read(backend: Any, facade: str, principal: Principal, canaries: Canaries) -> None:
    contents = {i: str(c.record["content"]) for i, c in canaries.chunks.items()}
    _assert_reads_exactly(
        backend, facade, principal, canaries.readable_by(principal), contents, canaries.by_token
    )


@pytest.mark.kbconform(
    id="leak-01", rule="read-filter.md#every-facade", guide="queryprincipal-text-n_results-where", level="L2"
)
def test_every_read_facade_returns_exactly_the_principals_scope(
    kbconform_facade: str, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """Each member reads its own and shared canaries (control) and no other tenant's, by id and
    by text, whatever it asks for; query's top-k is the top-k within scope."""
    canaries = kbconform_canaries
    for principal in canaries.principals.members:
        _canaries_read(kbconform_backend, kbconform_facade, principal, canaries)


@pytest.mark.kbconform(
    id="leak-02",
    rule="read-filter.md#top-k-inside-the-tenant",
    guide="queryprincipal-text-n_results-where",
    level="L2",
)
def test_a_small_tenants_query_gets_its_exact_top_k_beside_a_large_tenant(
    kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """acme's nearest chunk to its own canary text is that canary, and its k results are all its
    scope, although beta has four times as many near-identical chunks. Every text is queried
    before any is judged. A query short of its scope is asked again for every chunk stored: if
    that shows more of acme's scope, others' near chunks took its places (a filter after top-k),
    and the count tells acme how many of another's chunks lie near its text (charged as read);
    a shortfall that stays (a cap of the backend's own) is recall, a note."""
    canaries = kbconform_canaries
    acme = canaries.principals.acme
    expected = canaries.readable_by(acme)
    found: list[tuple[str, str]] = []
    for chunk_id in sorted(canaries.owned_by(acme.tenant_id)):
        text = canaries.chunks[chunk_id].record["content"]
        ids = [h.id for h in kbconform_backend.query(acme, text, len(expected), None)]
        named = canaries.whose(chunk_id)
        said, effect = crossed(ids, expected, canaries.whose)
        if ids[:1] != [chunk_id]:
            top = canaries.whose(ids[0]) if ids else "nothing"
            found.append(
                (
                    "read" if ids and ids[0] not in expected else "recall",
                    f"the top hit for {named}'s own text is {top}",
                )
            )
        if said and effect == "recall":
            every = len(canaries.chunks)
            more = {h.id for h in kbconform_backend.query(acme, text, every, None)} & expected
            if len(more) > len(set(ids) & expected):
                effect = "read"
                said += f"; asked for all {every}, it shows {len(more)}: others' chunks took places"
        if said:
            found.append((effect, f"acme's query for {named}'s text (n={len(expected)}) {said}"))
    gravest = "read" if any(effect == "read" for effect, _ in found) else "recall"
    with charged(effect=gravest):
        assert not found, "; ".join(said for effect, said in found if effect == gravest)


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
    # Reserved keys below the top level: a check that looks at the top level only lets them in.
    "a tenantId two levels down": {"$and": [{"$or": [{"tenantId": "beta"}, {"kind": "doc-section"}]}]},
    "a visibility three levels down": {
        "$or": [
            {"$and": [{"kind": "doc-section"}, {"$or": [{"visibility": "private"}, {"name": "x"}]}]},
            {"kind": "doc-section"},
        ]
    },
}


@pytest.mark.kbconform(
    id="leak-03",
    rule="client-where.md#refused",
    guide="queryprincipal-text-n_results-where",
    level="L2",
    requires="client-where",
)
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


@pytest.mark.kbconform(
    id="leak-04", rule="read-filter.md#no-existence-oracle", guide="getprincipal-chunk_id", level="L2"
)
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


@pytest.mark.kbconform(
    id="leak-05",
    rule="identity-tuple.md#the-shared-namespace",
    guide="queryprincipal-text-n_results-where",
    level="L2",
    requires="shared-namespace-grants",
)
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


@pytest.mark.kbconform(
    id="leak-06",
    rule="stamping.md#visibility-team-on-ingest-private-only-through-restore",
    guide="queryprincipal-text-n_results-where",
    level="L2",
)
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


# -- look-alike identities, private chunks, rights, errors, hostile values, paging --------------


@dataclass(frozen=True, slots=True)
class _Chunk:
    tenant: str
    repo: str
    path: str
    content: str
    token: str
    private_to: str | None = None


@dataclass
class _World:
    """The model of what a test wrote: every chunk by id, and who may read it."""

    chunks: dict[str, _Chunk] = field(default_factory=dict)

    def write(self, backend: Any, writer: Principal, batch: list[_Chunk]) -> list[str]:
        """Ingest ``batch`` as ``writer`` and check that every record landed, under its own id."""
        records = [record(c.path, c.content, tenant=writer.tenant_id, repo=c.repo) for c in batch]
        ids = list(backend.ingest(writer, records).ids)
        assert len(set(ids)) == len(batch), f"ingest gave {len(set(ids))} ids to {len(batch)} records"
        assert not (set(ids) & set(self.chunks)), "ingest gave two chunks of different tenants one id"
        self.chunks.update(zip(ids, batch, strict=True))
        return ids

    def readable_by(self, principal: Principal) -> set[str]:
        """Refuses an expected set that is empty or is everything: such a check is vacuous."""
        expected = {
            i
            for i, c in self.chunks.items()
            if c.tenant in principal.readable_tenants
            and (c.private_to is None or c.private_to == principal.agent_identity)
        }
        assert expected, f"the model expects nothing for {principal}: the check would be vacuous"
        assert expected != set(self.chunks), f"the model expects everything for {principal}"
        return expected

    def contents(self) -> dict[str, str]:
        return {i: c.content for i, c in self.chunks.items()}

    def by_token(self, text: str | None) -> set[str]:
        words = set((text or "").split())
        return {i for i, c in self.chunks.items() if c.token in words}

    def assert_reads_exactly(self, backend: Any, facade: str, principal: Principal) -> None:
        _assert_reads_exactly(
            backend, facade, principal, self.readable_by(principal), self.contents(), self.by_token
        )


def _token(run: Run, name: str, n: int) -> str:
    return f"kbc{run.rng(f'{name}:{n}').getrandbits(48):012x}"


def _chunk(run: Run, name: str, n: int, tenant: str, repo: str, path: str) -> _Chunk:
    token = _token(run, name, n)
    return _Chunk(tenant, repo, path, f"{token} notes of {tenant} in {repo} at {path}", token)


def _write_tenants(run: Run, backend: Any, name: str, layout: Iterable[tuple[str, str]]) -> _World:
    """Per (tenant, repo): a chunk at the path every repository has, and one of its own."""
    world = _World()
    for n, (tenant, repo) in enumerate(layout):
        writer = Principal(tenant, f"agent-{tenant}")
        world.write(
            backend,
            writer,
            [
                _chunk(run, name, 2 * n, tenant, repo, "docs/readme.md"),
                _chunk(run, name, 2 * n + 1, tenant, repo, f"docs/{tenant}-{repo}.md"),
            ],
        )
    return world


#: Tenant ids that are prefixes and substrings of each other.
LOOK_ALIKE_TENANTS = ("acme", "acme-e", "acme-eu", "eu")
_PART = st.from_regex(r"[a-z0-9]{1,4}", fullmatch=True)
#: Generated families: a base, the base with a suffix (with and without "-"), and the suffix.
LOOK_ALIKE_FAMILIES = st.builds(lambda b, x: sorted({b, f"{b}-{x}", f"{b}{x}", x}), _PART, _PART)


@pytest.mark.kbconform(
    id="leak-07",
    rule="identity-tuple.md#identifiers-are-ascii-and-exact",
    guide="queryprincipal-text-n_results-where",
    level="L2",
)
def test_tenant_ids_that_are_prefixes_or_parts_of_each_other_stay_apart(
    kbconform_facade: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """acme, acme-e, acme-eu and eu each read exactly their own chunks through the facade: a
    tenant is matched whole, never by prefix (acme reading acme-eu) or as part of a name
    (acme-eu reading acme or eu)."""
    world = _write_tenants(
        kbconform_run, kbconform_backend, "leak-07", [(t, "app") for t in LOOK_ALIKE_TENANTS]
    )
    for tenant in LOOK_ALIKE_TENANTS:
        world.assert_reads_exactly(kbconform_backend, kbconform_facade, Principal(tenant, f"agent-{tenant}"))


@pytest.mark.kbconform(
    id="leak-14",
    rule="identity-tuple.md#identifiers-are-ascii-and-exact",
    guide="queryprincipal-text-n_results-where",
    level="L2",
)
def test_generated_families_of_look_alike_tenant_ids_stay_apart(
    kbconform_run: Run, kbconform_open: Any
) -> None:
    """For generated families (a base, the base with a suffix joined by "-" and without, the
    suffix alone), each tenant lists and gets exactly its own chunks, and counts them when the
    manifest declares count; leak-07 holds one such family to every facade."""
    facades = [f for f in ("list", "get", "count") if f in kbconform_run.manifest.read_facades]

    @kbconform_run.given(family=LOOK_ALIKE_FAMILIES)
    def check(family: list[str]) -> None:
        backend = kbconform_open()
        try:
            world = _write_tenants(kbconform_run, backend, "leak-14", [(t, "app") for t in family])
            for tenant, facade in itertools.product(family, facades):
                world.assert_reads_exactly(backend, facade, Principal(tenant, f"agent-{tenant}"))
        finally:
            kbconform_run.close(backend)

    check()


@pytest.mark.kbconform(
    id="leak-08",
    rule="identity-tuple.md#identifiers-are-ascii-and-exact",
    guide="queryprincipal-text-n_results-where",
    level="L2",
)
def test_tenants_and_repositories_that_join_alike_stay_apart(
    kbconform_facade: str, kbconform_run: Run, kbconform_backend: Any
) -> None:
    """Tenant acme with repository x-y and tenant acme-x with repository y (both "acme-x-y" when
    joined with "-"), the same path in each, read exactly their own chunks through the facade."""
    layout = [("acme", "x-y"), ("acme-x", "y"), ("acme", "app")]
    world = _write_tenants(kbconform_run, kbconform_backend, "leak-08", layout)
    for tenant in ("acme", "acme-x"):
        world.assert_reads_exactly(kbconform_backend, kbconform_facade, Principal(tenant, f"agent-{tenant}"))


def _assert_tells_nothing_foreign(
    error: BaseException, reader: Principal, canaries: Canaries, passed: Iterable[str] = ()
) -> None:
    """No foreign tenant's name, path, content token or id (other than ``passed``) in ``error``."""
    text = "\n".join(error_texts(error))
    allowed = set(passed)
    for chunk_id in sorted(canaries.foreign_to(reader)):
        canary = canaries.chunks[chunk_id]
        marks = {canary.token, str(canary.record["sourcePath"])} | ({chunk_id} - allowed)
        told = sorted(mark for mark in marks if mark in text)
        assert not told, f"{type(error).__name__} for {reader.tenant_id} carries {told} of {chunk_id}"
        owner = re.compile(rf"(?<![a-z0-9-]){re.escape(canary.tenant)}(?![a-z0-9-])")
        assert not owner.search(text), (
            f"{type(error).__name__} for {reader.tenant_id} names the tenant {canary.tenant}: {text!r}"
        )


@pytest.mark.kbconform(
    id="leak-09", rule="read-filter.md#no-existence-oracle", guide="every-facade", level="L2"
)
def test_errors_carry_nothing_of_another_tenant(kbconform_backend: Any, kbconform_canaries: Canaries) -> None:
    """get of a foreign id raises NotFound whose text, fields, notes and causes name no other
    tenant, path, content or id; so do a member's refused export and a malformed page. The
    owner reads each id (control), and each error is raised (control)."""
    canaries = kbconform_canaries
    principals = canaries.principals
    acme, beta = principals.acme, principals.beta
    for chunk_id in sorted(canaries.owned_by(beta.tenant_id) | canaries.owned_by(principals.loner.tenant_id)):
        with pytest.raises(NotFound) as raised:
            kbconform_backend.get(acme, chunk_id)
        _assert_tells_nothing_foreign(raised.value, acme, canaries, passed=[chunk_id])
        owner = beta if canaries.chunks[chunk_id].tenant == beta.tenant_id else principals.loner
        assert kbconform_backend.get(owner, chunk_id).id == chunk_id
    with pytest.raises(KbconformError) as refused:
        kbconform_backend.export(acme)
    _assert_tells_nothing_foreign(refused.value, acme, canaries)
    with pytest.raises(ContractViolation) as malformed:
        kbconform_backend.list(acme, 0, 0)
    _assert_tells_nothing_foreign(malformed.value, acme, canaries)
    assert {h.id for h in kbconform_backend.list(acme, 100, 0)} == canaries.readable_by(acme)


#: sourcePath values that mean something to SQL, LIKE, regular expressions, JSON paths or a
#: where dialect. Each is stored by acme and by beta; "docs/axb.md" is what "docs/a_b.md" and
#: "docs/a%b.md" match as LIKE patterns, "docs/readme.md" what "docs/.*" matches as a regex.
HOSTILE_PATHS = (
    "docs/it's.md",
    'docs/say "hi".md',
    "docs/x' OR '1'='1.md",
    "docs/a_b.md",
    "docs/a%b.md",
    "docs/axb.md",
    "docs/%",
    "docs/.*",
    "docs/[a-z]+.md",
    "docs/$ne",
    'docs/{"$gt": ""}',
    "docs/$..tenantId",
    "docs/readme.md",
)
HOSTILE_META = {
    "q": "' OR 1=1 --",
    "$or": [{"tenantId": "beta"}],
    "$ne": "acme",
    "path": "$.tenantId",
    "re": ".*",
}


@pytest.mark.kbconform(
    id="leak-10",
    rule="client-where.md#values-are-data",
    guide="ingestprincipal-records",
    level="L2",
    requires="client-where",
)
def test_hostile_values_in_where_clauses_match_literally_within_scope(
    kbconform_run: Run, kbconform_backend: Any
) -> None:
    """Where values with quotes, SQL, LIKE and regex wildcards, JSON paths and operator-looking
    strings match exactly the rows that hold that value, within scope; nested $and/$or that stay
    within scope return exactly their in-scope rows. beta holds the same paths (and acme's
    records hostile customMeta), so a widened or pattern-read clause shows."""
    run, backend = kbconform_run, kbconform_backend
    acme, beta = Principal("acme", "agent-acme"), Principal("beta", "agent-beta")
    world = _World()
    by_path: dict[str, str] = {}
    for n, writer in enumerate((acme, beta)):
        batch = [
            _chunk(run, "leak-10", 100 * n + i, writer.tenant_id, "app", path)
            for i, path in enumerate(HOSTILE_PATHS)
        ]
        records = [record(c.path, c.content, tenant=writer.tenant_id, customMeta=HOSTILE_META) for c in batch]
        ids = list(backend.ingest(writer, records).ids)
        assert len(set(ids)) == len(batch)
        world.chunks.update(zip(ids, batch, strict=True))
        if writer is acme:
            by_path = dict(zip(HOSTILE_PATHS, ids, strict=True))
    probe = world.chunks[by_path["docs/readme.md"]].content

    def read(where: dict[str, Any]) -> set[str]:
        return {h.id for h in backend.query(acme, probe, 50, where)}

    for path in HOSTILE_PATHS:
        assert read({"sourcePath": path}) == {by_path[path]}, f"sourcePath {path!r} matched otherwise"
        assert read({"sourcePath": {"$in": [path]}}) == {by_path[path]}, f"$in [{path!r}] matched otherwise"
        assert read({"name": path.rsplit("/", 1)[-1]}) == {by_path[path]}, f"name of {path!r}"
    nested = {
        "$or": [
            {"sourcePath": "docs/$ne"},
            {"$and": [{"kind": "doc-section"}, {"sourcePath": {"$in": ["docs/a_b.md", "docs/.*"]}}]},
        ]
    }
    assert read(nested) == {by_path[p] for p in ("docs/$ne", "docs/a_b.md", "docs/.*")}
    everything = {"$and": [{"kind": "doc-section"}, {"$or": [{"kind": "doc-section"}, {"name": "$ne"}]}]}
    assert read(everything) == world.readable_by(acme)
    assert read({"sourcePath": {"$nin": ["docs/%", "docs/.*"]}}) == world.readable_by(acme) - {
        by_path["docs/%"],
        by_path["docs/.*"],
    }


def _private_world(run: Run, scratch: Any, kbconform_open: Any, operator: Principal) -> tuple[Any, _World]:
    """A fresh backend holding, restored by the operator, two chunks of acme private to its
    agent agent-acme and two team chunks of acme (written first to ``scratch``); beta then
    writes one chunk of its own."""
    acme = Principal("acme", "agent-acme")
    world = _World()
    paths = ("docs/private-a.md", "docs/private-b.md", "docs/team-a.md", "docs/team-b.md")
    ids = world.write(
        scratch, acme, [_chunk(run, "leak-11", n, "acme", "app", p) for n, p in enumerate(paths)]
    )
    exported = {r["id"]: dict(r) for r in scratch.export(operator)}
    for chunk_id in ids[:2]:
        stored = exported[chunk_id]
        assert stored["metadata"].get("originAgentIdentity") == acme.agent_identity
        stored["metadata"] = {**stored["metadata"], "visibility": "private"}
        world.chunks[chunk_id] = dataclasses.replace(world.chunks[chunk_id], private_to=acme.agent_identity)
    backend = kbconform_open()
    assert backend.restore(operator, [exported[i] for i in ids]) == len(ids)
    beta = Principal("beta", "agent-beta")
    world.write(backend, beta, [_chunk(run, "leak-11", 9, "beta", "app", "docs/b.md")])
    return backend, world


@pytest.mark.kbconform(
    id="leak-11", rule="read-filter.md#the-filter", guide="ingestprincipal-records", level="L2"
)
def test_every_facade_counts_and_quotes_private_chunks_for_their_agent_only(
    kbconform_facade: str,
    kbconform_run: Run,
    kbconform_backend: Any,
    kbconform_open: Any,
    kbconform_principals: Principals,
) -> None:
    """Through the facade (count's number and ask's text included), acme's origin agent reads its
    private and team chunks (control); then another agent of acme, and acme without an agent,
    read only the team chunks, and beta only its own. The agent is the call's, never the one an
    earlier call of the tenant had: acme without an agent reads right after the origin agent
    (what a call leaves on a pooled connection or in a cache meets it) and right after the other
    agent."""
    backend, world = _private_world(
        kbconform_run, kbconform_backend, kbconform_open, kbconform_principals.operator
    )
    readers = (
        Principal("acme", "agent-acme"),
        Principal("acme"),
        Principal("acme", "agent-other"),
        Principal("acme"),
        Principal("beta", "agent-beta"),
        Principal("acme", "agent-acme"),
    )
    for reader in readers:
        world.assert_reads_exactly(backend, kbconform_facade, reader)


@pytest.mark.kbconform(
    id="leak-12",
    rule="read-filter.md#the-filter",
    guide="queryprincipal-text-n_results-where",
    level="L2",
    requires="shared-namespace-grants",
)
def test_a_right_revoked_or_granted_applies_on_the_next_call(
    kbconform_facade: str, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """After acme, beta and loner have read, acme without the shared namespace reads only its own
    canaries through the facade, and loner granted it reads the shared ones too (control); acme
    with it back reads them again. Rights are the call's principal's, never cached."""
    canaries = kbconform_canaries
    principals = canaries.principals
    assert principals.shared is not None
    shared = frozenset({principals.shared})
    for principal in principals.members:  # every tenant has been seen with its first rights
        _canaries_read(kbconform_backend, kbconform_facade, principal, canaries)
    for principal in (
        principals.acme.with_namespaces(frozenset()),
        principals.loner.with_namespaces(shared),
        principals.acme,
        principals.loner,
    ):
        _canaries_read(kbconform_backend, kbconform_facade, principal, canaries)


@pytest.mark.kbconform(
    id="leak-13", rule="read-filter.md#every-facade", guide="listprincipal-limit-offset", level="L2"
)
def test_every_page_size_reads_the_scope_exactly_once(kbconform_run: Run, kbconform_backend: Any) -> None:
    """acme holds the same paths in two repositories, beta the same paths again: as each tenant,
    list read page by page at sizes 1, 2, 3 and 7 returns full pages, no id twice, and together
    exactly its own chunks; the same page read twice is the same (a stable order)."""
    layout = [("acme", "app"), ("acme", "web"), ("beta", "app"), ("acme", "lib")]
    world = _write_tenants(kbconform_run, kbconform_backend, "leak-13", layout)
    for principal in (Principal("acme", "agent-acme"), Principal("beta", "agent-beta")):
        expected = world.readable_by(principal)
        for size in (1, 2, 3, 7):
            seen: list[str] = []
            offset = 0
            while len(seen) <= len(world.chunks):
                page = [h.id for h in kbconform_backend.list(principal, size, offset)]
                again = [h.id for h in kbconform_backend.list(principal, size, offset)]
                assert page == again, (
                    f"list({size}, {offset}) for {principal.tenant_id} changed between calls"
                )
                assert len(page) == min(size, max(len(expected) - offset, 0)), (
                    f"list({size}, {offset}) for {principal.tenant_id} returned {len(page)} rows"
                )
                if not page:
                    break
                seen += page
                offset += len(page)
            assert len(seen) == len(set(seen)), (
                f"pages of {size} repeat {sorted({i for i in seen if seen.count(i) > 1})}"
            )
            assert set(seen) == expected, f"pages of {size} for {principal.tenant_id} differ from the scope"


@pytest.mark.kbconform(
    id="leak-15", rule="read-filter.md#every-facade", guide="queryprincipal-text-n_results-where", level="L2"
)
def test_every_result_is_a_stored_chunk_in_the_readers_scope(
    kbconform_run: Run, kbconform_backend: Any, kbconform_canaries: Canaries
) -> None:
    """Asked about files and names outside the corpus (deployment files, system paths, its own
    and other tenants' paths, tenant, repository and agent names), query (and ask, when
    declared) answer only with chunks the model knows, in the reader's scope, each with its
    stored text; ask's sources likewise, and its text quotes no other chunk. Control: a probe of
    the reader's own canary text finds that canary."""
    canaries = kbconform_canaries
    principals = canaries.principals
    scope_of = {p: canaries.readable_by(p) for p in principals.members}
    contents = {i: str(c.record["content"]) for i, c in canaries.chunks.items()}
    names = {p.tenant_id for p in principals.members} | {str(p.agent_identity) for p in principals.members}
    paths = {str(c.record["sourcePath"]) for c in canaries.chunks.values()}
    probes = sorted({*OUTSIDE, *names, *paths, "app", *(principals.shared or "",)} - {""})
    asks = "ask" in kbconform_run.manifest.read_facades
    for reader, scope in scope_of.items():
        who = f"{reader.tenant_id} (agent {reader.agent_identity})"
        for probe in probes:
            answers: list[tuple[str, Any]] = [("query", kbconform_backend.query(reader, probe, 5, None))]
            if asks:
                answer = kbconform_backend.ask(reader, probe, 5)
                answers.append(("ask's sources", answer.sources))
                quoted = canaries.by_token(answer.text) - scope
                assert not quoted, f"ask for {who} about {probe!r}: its text quotes chunks {sorted(quoted)}"
            for facade, hits in answers:
                for hit in hits:
                    assert hit.id in contents, (
                        f"{facade} for {who} about {probe!r} gave {hit.id!r}, which no one ingested: "
                        f"an answer from outside the corpus ({str(hit.document)[:120]!r})"
                    )
                    assert hit.id in scope, (
                        f"{facade} for {who} about {probe!r} gave the foreign chunk {hit.id}"
                    )
                    assert hit.document == contents[hit.id], f"{facade} gave {hit.id} with other text"
        own = min(scope & canaries.owned_by(reader.tenant_id))
        found = [hit.id for hit in kbconform_backend.query(reader, contents[own], 1, None)]
        assert found == [own], f"query for {who} with its canary's text found {found}, not {own}"
