"""L4 state machine: interleaved operations of many principals, compared with the policy model.

One backend, driven by a Hypothesis ``RuleBasedStateMachine``: ingests of batches (re-ingests of
the same and changed content, spoofs anywhere in a batch, the same path in several repos and
tenants, records that leave ``sourcePath`` or ``content`` out of their hash inputs), deletion
signals of every declared mechanism (ones that match nothing, empty manifests, paths of other
tenants), exports and restores (visibility changes, dropped optional and scope stamps), rights
granted and revoked and agents changed between calls, and store faults that start at any store
call of a facade call. After every step every declared read facade is read as every principal
and compared exactly with :class:`kbconform.conformance.Policy`; every error is checked for
other tenants' ids and text. A failure shrinks to a short program, printed, that reruns from the
run's seed.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule

from kbconform.adapter import ENVELOPE_FIELDS, RevisionMap, where_matches
from kbconform.conformance import DriverMachine, Refused, Run, charged
from kbconform.conformance.strategies import (
    OUTSIDE,
    PATHS,
    SPLICED_AGENT,
    World,
    unclean_spellings,
    worlds,
)
from kbconform.contract import is_valid
from kbconform.errors import BackendUnavailable, KbconformError, NotFound
from kbconform.identity import DEFAULT_NAMESPACE, Principal
from kbconform.profiles.tenant_namespace.data import record
from kbconform.profiles.tenant_namespace.model import ENVELOPE_REFUSALS, Policy, differences

#: The isolation profile these tests are written for.
PROFILES = ("tenant-namespace",)

HASH_INPUTS = (
    ["sourcePath", "kind", "name", "content"],
    ["content"],
    ["sourcePath", "kind", "name"],
    ["kind", "name", "content"],
)
SPOOFS = (
    None,
    "tenantId",
    "customMeta.tenantId",
    "customMeta.repoSlug",
    "customMeta.originAgentIdentity",
    "customMeta.visibility",
    "customMeta.ingestedAt",
)
RESTORE_CHANGES = (
    None,
    "private",
    "team",
    "public",
    "drop originAgentIdentity",
    "drop ingestedAt",
    "drop tenantConfigVersion",
    "drop kind",
    "drop tenantId",
    "drop visibility",
    "private ownerless",
)
#: Revision boundaries: the first three are in the machine's revision map, the last is not.
BOUNDARIES = (("1a2b3c4", "5d6e7f8"), ("0000aaa", "0000bbb"), ("c0ffee1", "c0ffee2"), ("deadbee", "feedbee"))
WORDS = "deploy billing config rotate keys service notes release"


@dataclass(frozen=True, slots=True)
class RecordSpec:
    """One record of a batch, by indices into the world: repo, path, hash inputs, and whether
    its content is new or what that (repo, path) holds now; an optional spoof; fields inside the
    data that look like identity (customMeta keys, and for new content header lines of the text
    and names)."""

    repo: int
    path: int
    new_content: bool = True
    hash_inputs: int = 0
    spoof: str | None = None
    identity_keys: bool = False


@dataclass(frozen=True, slots=True)
class SignalSpec:
    """A deletion signal by indices: tombstones (repo or the signal's, path), a manifest's repo
    and kept paths, a revision boundary, the files of the push, and the signal's repo."""

    repo: int
    tombstones: tuple[tuple[int | None, int], ...] = ()
    manifest: tuple[int, tuple[int, ...]] | None = None
    boundary: int | None = None
    files: tuple[int, ...] = ()


RECORDS = st.builds(
    RecordSpec,
    repo=st.integers(0, 2),
    path=st.integers(0, len(PATHS) - 1),
    new_content=st.booleans(),
    hash_inputs=st.integers(0, len(HASH_INPUTS) - 1),
    spoof=st.sampled_from(SPOOFS),
    identity_keys=st.booleans(),
)
FAULTS = st.none() | st.integers(0, 3)
#: A write's request envelope (feature envelope), by its fields: each with whether it claims
#: another identity than the server's, or carries the server's own value.
ENVELOPES = st.none() | st.lists(
    st.tuples(st.sampled_from(ENVELOPE_FIELDS), st.booleans()),
    min_size=1,
    max_size=4,
    unique_by=lambda f: f[0],
).map(tuple)


#: The client clauses a query's where takes, each over a path: the path exactly; every path but
#: it; the path, and a key no row holds ``$nin`` a value (true where a key is lacked, never SQL's
#: NULL); the path, where another key that differs from ``sourcePath`` only by case ``$ne`` it.
WHERE_FORMS: tuple[Callable[[str], dict[str, Any]], ...] = (
    lambda path: {"sourcePath": {"$in": [path]}},
    lambda path: {"sourcePath": {"$ne": path}},
    lambda path: {"$and": [{"line_start": {"$nin": [1, 2]}}, {"sourcePath": {"$eq": path}}]},
    lambda path: {"sourcePath": {"$eq": path}, "SourcePath": {"$ne": path}},
)


@dataclass
class User:
    """A caller whose rights and agent may change between calls."""

    tenant: str
    agent: str | None
    role: str = "member"
    reads_shared: bool = False

    def principal(self, shared: str | None) -> Principal:
        namespaces = frozenset({shared}) if shared and self.reads_shared else frozenset()
        return Principal(self.tenant, self.agent, namespaces, role=self.role)  # type: ignore[arg-type]


class KnowledgeBaseMachine(DriverMachine[Any]):
    """The machine (:class:`DriverMachine` holds the backend, the store switch and the
    invariant); :func:`machine_for` binds it to a run and a spoof mode."""

    mode: ClassVar[str]

    def __init__(self) -> None:
        super().__init__()
        manifest = self.run.manifest
        self.facades = set(manifest.read_facades)
        self.features = {
            name
            for name in ("fault-injection", "revision-boundary", "client-where", "sync")
            if manifest.supports(name)
        }
        self.shared = manifest.shared_namespace
        #: The most records one ingest or sync carries (``maxWriteBatch``; None: no limit): a
        #: drawn batch is cut to it, never sent to be refused.
        self.write_limit = manifest.max_write_batch
        self.policy = Policy.for_manifest(manifest)
        self.users: list[User] = []
        self.world: World | None = None
        self.resolver: RevisionMap | None = None
        self.seen: set[str] = set()
        self.bulk: set[str] = set()
        self.checks = 0  # invariant passes so far
        #: Ids a step changed for some principals (written, restored or deleted where they read
        #: it before or after, or their visibility changed with a principal's rights or agent):
        #: get reads them as those principals after the step (:meth:`_get_matrix`).
        self.regard: dict[Principal, set[str]] = {}
        #: Each (principal, id) get has asked while the model refuses that principal the id:
        #: every other such pair is asked at the first check that knows it (:meth:`_get_matrix`;
        #: a principal whose rights or agent changed is another principal).
        self.refusals: set[tuple[Principal, str]] = set()
        #: The reads asked since the state last changed (every write, and every call that failed,
        #: changes it), each as (principal, question): none is asked twice of one state.
        self.asked: set[tuple[Any, ...]] = set()
        self.exported: list[Mapping[str, Any]] = []
        #: The principal and record each landed id was last written by and from.
        self.written: dict[str, tuple[Principal, dict[str, Any]]] = {}
        self.tokens = itertools.count()

    # -- setup -----------------------------------------------------------------------------------

    @initialize(
        world=worlds(),
        shared=st.lists(st.booleans(), min_size=9, max_size=9),
        deleted=st.data(),
        population=st.lists(st.lists(RECORDS, min_size=1, max_size=3), min_size=12, max_size=12),
        private=st.lists(
            st.tuples(st.integers(0, 10_000), st.sampled_from(["private", "private ownerless", "public"])),
            min_size=1,
            max_size=4,
        ),
        again=st.integers(0, 10_000),
    )
    def open_backend(
        self,
        world: World,
        shared: list[bool],
        deleted: st.DataObject,
        population: list[list[RecordSpec]],
        private: list[tuple[int, str | None]],
        again: int,
    ) -> None:
        """A backend with the world's names: every user writes a few records, one chunk is
        deleted and ingested again by its writer, then an operator exports and restores some of
        them as private (with and without an owner) or public; then a query and an ask about a
        file outside the corpus and about a stored path."""
        self.world = world
        for tenant in world.tenants:
            self.users += [User(tenant, agent) for agent in world.agents]
        # the operator's agent identity closes a quote and ORs a tautology onto a filter built as
        # text: it reads its tenant's team rows and none of its agents' private ones
        self.users += [User(world.tenants[0], None), User(world.tenants[1], SPLICED_AGENT, "operator")]
        for user, reads in zip(self.users, shared, strict=False):
            user.reads_shared = reads
        if self.shared:
            self.users += [User(self.shared, "curator", "operator"), User(self.shared, "intruder")]
        resolver = None
        if "revision-boundary" in self.features:
            paths = st.lists(st.sampled_from(world.paths), max_size=3, unique=True).map(tuple)
            # the third boundary lists every path of the world as a file system would spell it
            # (./a.md, x/../a.md): a resolver may, and each names nothing stored
            unclean = tuple(spelling for path in world.paths for spelling in unclean_spellings(path))
            self.resolver = RevisionMap(
                {
                    **{
                        (repo, base, head): deleted.draw(paths, label=f"deleted in {repo} {base}..{head}")
                        for repo in world.repos
                        for base, head in BOUNDARIES[:2]
                    },
                    **{(repo, *BOUNDARIES[2]): unclean for repo in world.repos},
                }
            )
            resolver = self.resolver
        self.fresh_backend(spoof_mode=self.mode, resolver=resolver)
        for index, specs in enumerate(population[: len(self.users)]):
            self.ingest(index, specs, None)
        # each agent of the first tenant (a pair that collides under a common mistake) writes a
        # record with no spoof, so that both own a chunk whatever the population's spoofs left;
        # its text and names claim another scope (header lines a metadata reader might honour);
        # the two paths are the first two of a collision family, in one repository, and each
        # agent writes its path in a second repository too (so that after the tombstone below
        # the tenant still holds a row of each agent and one more, for the visibility corners)
        for index in range(len(world.agents)):
            specs = [RecordSpec(repo=repo, path=index, identity_keys=True) for repo in (0, 1)]
            self.ingest(index, specs, None)
        if self.shared == DEFAULT_NAMESPACE.tenant_id:
            # the default namespace's legacy repository keeps pre-tenancy ids (content hashes
            # anyone can compute): its curator writes one there, read by id by every principal
            curator = next(i for i, u in enumerate(self.users) if u.agent == "curator")
            legacy = record(
                "docs/legacy.md",
                self._content(self.shared, DEFAULT_NAMESPACE.repo_slug, "docs/legacy.md", True),
                tenant=self.shared,
                repo=DEFAULT_NAMESPACE.repo_slug,
            )
            self.seen |= set(self._ingest(self._principal(curator), [legacy], None))
        self.delete_then_ingest_again(again, None)  # a lifecycle order every program starts with
        # then a tombstone aimed at the first of those two paths (its twin stays), with a boundary
        # whose paths are spelled as a file system would (naming nothing stored)
        boundary = 2 if self.resolver is not None else None
        self.delete(0, SignalSpec(repo=0, tombstones=((None, 0),), boundary=boundary), None)
        self._patterns_and_pairs()
        self._send_again()
        self._syncs()
        self._emptied_repository()
        operator = next(i for i, u in enumerate(self.users) if u.role == "operator")
        self.export(operator, None)
        if self.exported:
            # In each tenant, each agent's first row becomes private (to that agent) and another
            # row private without an owner, then the drawn picks change more: the corners of the
            # visibility rule, and a private chunk of each of two colliding agents, exist from
            # step 0.
            ordered = {r["id"]: n for n, r in enumerate(self.exported)}
            corners: list[tuple[int, str | None]] = []
            for tenant in world.tenants:
                own = sorted(i for i, row in self.policy.rows.items() if row.tenant == tenant)
                agents = [self.policy.rows[i].stamps.get("originAgentIdentity") for i in own]
                firsts = [own[agents.index(a)] for a in world.agents if a in agents]
                rest = [i for i in own if i not in firsts][:1]
                corners += [(ordered[i], "private") for i in firsts]
                corners += [(ordered[i], "private ownerless") for i in rest]
            self.restore(operator, [*corners, *private], None)
            self.export(operator, None)  # an export taken after chunks became private
            self._overwrite_private()
            self._collide(operator)
        self.export(0, None)  # a member's export is refused (schemas/backup.md: operators only)
        # every program asks once about a file a deployment holds and once about a stored path
        # (read-filter.md: every result is a stored chunk in the reader's scope), whatever rules
        # Hypothesis draws after
        names = (*world.paths, *world.repos, *world.tenants, *world.agents)
        self.ask_about_names(0, len(names))  # OUTSIDE[0], package.json
        self.ask_about_names(1, 0)  # the world's first path
        self.list_while_others_write(0, 0, 2)  # and the first user pages while another tenant writes

    # -- helpers ---------------------------------------------------------------------------------

    def _other_agent(self, principal: Principal) -> str:
        """An agent of the world other than the principal's: its family twin when it has one."""
        assert self.world is not None
        return next(a for a in (*self.world.agents, "agent-3") if a != principal.agent_identity)

    def _principal(self, index: int) -> Principal:
        return self.users[index % len(self.users)].principal(self.shared)

    def _call(
        self,
        principal: Principal,
        fault: int | None,
        inputs: object,
        call: Callable[[], Any],
        read: bool = False,
    ) -> Any:
        """Call the backend; a KbconformError comes back as the value, checked for foreign data
        beyond what the caller sent (``inputs``). Unless the call is a ``read`` that answered
        (a hit, or NotFound) with no store fault firing, the state changed (:attr:`asked`)."""
        with self._armed(fault):  # the (fault+1)th store call of this call and every later one fail
            try:
                outcome = call()
            except KbconformError as error:
                self._clean(error, principal, json.dumps(inputs, ensure_ascii=False, default=str))
                outcome = error
        fired = fault is not None and self.consulted > fault
        if not read or fired or (isinstance(outcome, KbconformError) and not isinstance(outcome, NotFound)):
            self.asked.clear()
        return outcome

    def _fresh(self, principal: Principal, *question: Any, fault: int | None = None) -> bool:
        """True, once per state, for ``question`` asked of ``principal`` (with the store failing
        at its call ``fault``): a read asked again of an unchanged state would tell nothing new."""
        key = (principal, fault, *question)
        if key in self.asked:
            return False
        self.asked.add(key)
        return True

    def _readers_of(self, ids: Iterable[str]) -> None:
        """Get reads each of ``ids``, after the step, as every principal that reads it now:
        called before a commit and after it, those whose view of it the step changed."""
        for index in range(len(self.users)):
            principal = self._principal(index)
            readable = set(ids) & set(self.policy.scope(principal))
            if readable:
                self.regard.setdefault(principal, set()).update(readable)

    def _rights_changed(self, user: User, change: Callable[[], None]) -> None:
        """Change ``user``'s rights or agent: get reads, as its new principal after the step, each
        id whose visibility to it changed."""
        before = self.policy.scope(user.principal(self.shared))
        change()
        principal = user.principal(self.shared)
        after = self.policy.scope(principal)
        changed = {i for i in set(before) | set(after) if before.get(i) != after.get(i)}
        self.regard.setdefault(principal, set()).update(changed)

    def _clean(self, error: KbconformError, principal: Principal, inputs: str) -> None:
        """No error text carries a chunk the caller may not read: its id, its text, its path;
        unless the caller sent it (or, for a path, reads a chunk at that path)."""
        text = f"{error} {error!r}"
        readable = self.policy.scope(principal)
        own_paths = {row.path for row in readable.values()}
        for chunk, row in self.policy.foreign(principal).items():
            token = (row.document or " ").split()[0]
            assert token not in text, (
                f"{type(error).__name__} for {principal.tenant_id} carries the text of {chunk}"
            )
            assert chunk not in text or chunk in inputs, (
                f"{type(error).__name__} for {principal.tenant_id} names the foreign chunk {chunk}"
            )
            if isinstance(row.path, str) and row.path not in own_paths and row.path not in inputs:
                assert row.path not in text, f"{type(error).__name__} names the foreign path {row.path!r}"

    def _failed(self, outcome: Any, fault: int | None, expected: Any, operation: str) -> bool:
        """True when the call of ``operation`` failed as it may: the expected refusal, or a store
        fault it was given (then it must have changed nothing). A fault at the first store call
        must fail, unless the call made no store call (a signal whose every path the push wrote
        needs none). A refusal it did not make charges that operation's family."""
        injected = fault is not None and "fault-injection" in self.features
        if isinstance(expected, Refused):
            if injected and isinstance(outcome, BackendUnavailable):
                return True
            with charged(expected.caller, expected.effect, operation):
                assert isinstance(outcome, expected.error), (
                    f"expected {expected.error.__name__} ({expected.why}), got {outcome!r}"
                )
            return True
        if injected and isinstance(outcome, BackendUnavailable):
            return True
        assert not isinstance(outcome, KbconformError), f"the call failed: {outcome!r}"
        every_call_failed = injected and fault == 0 and self.consulted > 0
        assert not every_call_failed, "a call whose every store call failed succeeded"
        return False

    def _content(self, tenant: str, repo: str, path: str, new: bool) -> str:
        if not new:
            for row in self.policy.rows.values():
                if (row.tenant, row.repo, row.path) == (tenant, repo, path) and row.document:
                    return row.document
        return f"kbt{next(self.tokens):05d} {WORDS} {path}"

    def _new_record(self, tenant: str, repo: str, path: str | None = None, **extra: Any) -> dict[str, Any]:
        """A record of new text claiming ``tenant`` at ``path`` of ``repo`` (default: a path no
        other record has)."""
        path = f"docs/{next(self.tokens)}.md" if path is None else path
        return record(path, self._content(tenant, repo, path, True), tenant=tenant, repo=repo, **extra)

    def _record(self, principal: Principal, spec: RecordSpec, spoofing: bool) -> dict[str, Any]:
        assert self.world is not None
        world = self.world
        repo, path = world.repos[spec.repo % 3], world.paths[spec.path % len(world.paths)]
        other = next(t for t in (*world.tenants, "other") if t != principal.tenant_id)
        made = record(
            path,
            self._content(principal.tenant_id, repo, path, spec.new_content),
            tenant=principal.tenant_id,
            repo=repo,
            hashInputs=HASH_INPUTS[spec.hash_inputs % len(HASH_INPUTS)],
        )
        custom: dict[str, Any] = {}
        if spec.identity_keys and spec.new_content:
            # claims inside the data: header lines of the text and names that look like scope
            # (schemas/stamping.md: only the server's stamps say whose a chunk is)
            claims = {
                "tenantId": other,
                "repoSlug": world.repos[(spec.repo + 1) % 3],
                "visibility": "private",
                "originAgentIdentity": self._other_agent(principal),
            }
            made["content"] += "".join(f"\n{key}: {value}" for key, value in claims.items())
            made["className"] = f"tenantId={other}"
            made["extends"] = f"{other}/{claims['repoSlug']}"
        if spec.identity_keys:
            custom.update(
                {
                    "sourcePath": "elsewhere/shadow.md",
                    "rootKind": "external-source",
                    "id": "x",
                    "chunkId": "y",
                }
            )
        if spoofing and spec.spoof == "tenantId":
            made["tenantId"] = other
        elif spoofing and spec.spoof:
            name = spec.spoof.removeprefix("customMeta.")
            custom[name] = {
                "tenantId": other,
                "repoSlug": world.repos[(spec.repo + 1) % 3],
                "originAgentIdentity": self._other_agent(principal),
                "visibility": "public",
                "ingestedAt": "2001-01-01T00:00:00Z",
            }[name]
        if custom:
            made["customMeta"] = custom
        assert is_valid(made, "parsed-chunk-v1"), f"the machine built an invalid record: {made}"
        return made

    def _envelope(
        self, principal: Principal, repo: str, spec: tuple[tuple[str, bool], ...] | None, spoofing: bool
    ) -> tuple[dict[str, Any], ...]:
        """The envelope argument of a write of ``repo``'s records: none, or the fields ``spec``
        names, each the server's own value or, while ``spoofing`` (within the spoof budget, where
        a claiming envelope counts as one spoofed record), another identity's."""
        if spec is None or "envelope" not in self.features:
            return ()
        assert self.world is not None
        world = self.world
        agent = principal.agent_identity
        own = {
            "tenantId": principal.tenant_id,
            "repoSlug": repo,
            "visibility": "team",
            "originAgentIdentity": agent,
        }
        other = {
            "tenantId": next(t for t in (*world.tenants, "other") if t != principal.tenant_id),
            "repoSlug": next((r for r in world.repos if r != repo), "elsewhere"),
            "visibility": "private",
            "originAgentIdentity": self._other_agent(principal),
        }
        return ({name: (other if claims and spoofing else own)[name] for name, claims in spec},)

    def _within_budget(
        self, principal: Principal, specs: list[RecordSpec], envelope: tuple[tuple[str, bool], ...] | None
    ) -> bool:
        """Whether a write may spoof every record its specs spoof and claim what its envelope
        claims (one more), and stay within the principal's spoof budget."""
        budget = self.policy.spoof_budget(principal)
        wanted = sum(1 for s in specs if s.spoof) + any(claims for _, claims in envelope or ())
        return budget is None or budget >= wanted

    def _refused_whole(
        self,
        principal: Principal,
        envelope: tuple[dict[str, Any], ...],
        records: list[dict[str, Any]],
        outcome: Any,
    ) -> bool:
        """A write whose envelope claims another identity may be refused whole (schemas/stamping.md):
        the model is left as it was, and the invariants hold the backend to it."""
        claims = envelope and self.policy.envelope_claims(principal, envelope[0], records)
        return bool(claims) and isinstance(outcome, ENVELOPE_REFUSALS)

    # -- rules -----------------------------------------------------------------------------------

    @rule(
        user=st.integers(0, 11),
        specs=st.lists(RECORDS, min_size=1, max_size=6),
        fault=FAULTS,
        envelope=ENVELOPES,
    )
    def ingest(
        self,
        user: int,
        specs: list[RecordSpec],
        fault: int | None,
        envelope: tuple[tuple[str, bool], ...] | None = None,
    ) -> None:
        principal, specs = self._principal(user), specs[: self.write_limit]
        spoofing = self._within_budget(principal, specs, envelope)
        records = [self._record(principal, spec, spoofing) for spec in specs]
        sent = self._envelope(principal, records[0]["repoSlug"], envelope, spoofing)
        self.seen |= set(self._ingest(principal, records, fault, sent))

    def _ingest(
        self,
        principal: Principal,
        records: list[dict[str, Any]],
        fault: int | None,
        envelope: tuple[dict[str, Any], ...] = (),
    ) -> list[str]:
        """Ingest, compare ids and warnings with the model, and commit; the ids that landed."""
        expected = self.policy.ingest(principal, records, self.mode)
        sent = (records, *envelope, self.policy.ids_for(principal, records))
        outcome = self._call(
            principal, fault, sent, lambda: self.backend.ingest(principal, records, *envelope)
        )
        self.policy.count_spoofs(principal, records, self.mode, *envelope)
        if self._refused_whole(principal, envelope, records, outcome) or self._failed(
            outcome, fault, expected, "ingest"
        ):
            return []
        assert not isinstance(expected, Refused)
        ids = [str(i) for i in outcome.ids]
        problems = self.policy.check_ids(expected, ids)
        assert not problems, "; ".join(problems)
        warned = {(w.field, w.chunk_id) for w in outcome.warnings}
        with charged(effect="forged", operation="ingest"):  # a spoofed field went unreported
            assert warned == self.policy.expected_warnings(expected, ids), f"warnings {sorted(warned)}"
        self._readers_of(ids)
        self.policy.commit_ingest(expected, ids)
        self._readers_of(ids)
        self.written.update(zip(ids, ((principal, dict(r)) for r in records), strict=False))
        return ids

    @rule(
        user=st.integers(0, 11),
        repo=st.integers(0, 2),
        size=st.integers(7, 30),
        fault=st.none() | st.integers(0, 6),
    )
    def ingest_many(self, user: int, repo: int, size: int, fault: int | None) -> None:
        """A batch big enough to span pages of a paged store."""
        principal = self._principal(user)
        assert self.world is not None
        slug = self.world.repos[repo % 3]
        size = min(size, self.write_limit or size)
        records = [self._new_record(principal.tenant_id, slug, f"bulk/{n}.md") for n in range(size)]
        ids = self._ingest(principal, records, fault)
        self.seen |= set(ids[:2])
        self.bulk |= set(ids[2:])

    @rule(
        user=st.integers(0, 11),
        spec=st.builds(
            SignalSpec,
            repo=st.integers(0, 2),
            tombstones=st.lists(st.tuples(st.none() | st.integers(0, 2), st.integers(0, 10)), max_size=3).map(
                tuple
            ),
            manifest=st.none()
            | st.tuples(st.integers(0, 2), st.lists(st.integers(0, 10), max_size=4).map(tuple)),
            boundary=st.none() | st.integers(0, 3),
            files=st.lists(st.integers(0, 10), max_size=2).map(tuple),
        ),
        fault=st.none() | st.integers(0, 3),
    )
    def delete(self, user: int, spec: SignalSpec, fault: int | None) -> None:
        principal = self._principal(user)
        assert self.world is not None
        world = self.world
        repos, pool = world.repos, world.paths

        def paths(index: int) -> str:
            return pool[index % len(pool)]

        signal: dict[str, Any] = {"repoSlug": repos[spec.repo]}
        if spec.tombstones:
            signal["deleted"] = [
                {"sourcePath": paths(p)} if r is None else {"sourcePath": paths(p), "repoSlug": repos[r]}
                for r, p in spec.tombstones
            ]
        if spec.manifest is not None:
            repo, kept = spec.manifest
            signal["manifestSnapshot"] = {
                "repoSlug": repos[repo],
                "pathsAfterPush": sorted({paths(p) for p in kept}),
            }
        if spec.boundary is not None and self.resolver is not None:
            signal["baseRevision"], signal["headRevision"] = BOUNDARIES[spec.boundary]
        if len(signal) == 1:
            signal["manifestSnapshot"] = {"repoSlug": repos[spec.repo], "pathsAfterPush": list(pool)}
        if spec.files:
            signal["files"] = [{"sourcePath": p} for p in sorted({paths(i) for i in spec.files})]
        assert is_valid(signal, "deletion-signal-v1"), f"the machine built an invalid signal: {signal}"
        self._delete(principal, signal, fault)

    def _delete(self, principal: Principal, signal: dict[str, Any], fault: int | None) -> None:
        """Apply ``signal``, compare what it deleted with the model, and commit."""
        resolved = self.resolver.deleted if self.resolver is not None else None
        expected = self.policy.deletion(principal, signal, resolved)
        outcome = self._call(
            principal, fault, signal, lambda: self.backend.apply_deletion_signal(principal, signal)
        )
        if self._failed(outcome, fault, expected, "apply_deletion_signal"):
            return
        assert not isinstance(expected, Refused)
        deleted = set(outcome.deleted_ids)
        assert deleted == expected, (
            f"deleted {sorted(deleted - expected)} it must not, "
            f"kept {sorted(expected - deleted)} it must delete"
        )
        self._readers_of(expected)
        self.policy.commit_deletion(expected)

    def _patterns_and_pairs(self) -> None:
        """Paths that read as patterns, pairs whose cross product names others, one id twice in a
        batch, and a write that fails after deletes, in every program's set-up: the first user
        writes both paths of the world's pattern pair in two repositories, and the pattern
        path's NFD form in the first, in one batch that holds the first record twice (one id,
        another text: the last one is stored, stamping.md), and the second tenant's first agent
        writes a row (after the set-up, a private one); one signal tombstones the pattern path in
        the first repository and its twin in the second (the pairs' cross product names two
        more, and the NFD form stays; deletion-signaling.md: a pair matches exactly); another
        tombstones the pattern path in the second repository while its push writes that path in
        the first (a file is protected in its own repository only), and a third tombstones the
        twin in the first while its push writes it there (refused: one path both tombstoned and
        written, deletion-signaling.md); then a
        write fails at its second store call (its rollback restores what it touched, never a
        state from before the deletes)."""
        assert self.world is not None
        (pattern, twin), (first, second) = self.world.patterns, self.world.repos[:2]
        principal = self._principal(0)
        tenant, inputs = principal.tenant_id, ["sourcePath", "kind", "name"]
        records = [
            self._new_record(tenant, repo, path, hashInputs=inputs)
            for repo in (first, second)
            for path in (pattern, twin)
        ]
        records.append({**records[0], "content": self._content(tenant, first, pattern, True)})
        nfd = unicodedata.normalize("NFD", pattern)  # the pattern path's NFD form: another path
        records.append(self._new_record(tenant, first, nfd))
        ids = self._ingest(principal, records, None)
        self.seen |= set(ids)
        if ids:  # read back before anything writes over it
            held = self._call(principal, None, ids[0], partial(self.backend.get, principal, ids[0]), True)
            assert not isinstance(held, KbconformError), f"{ids[0]} does not read back: {held!r}"
            self._same(self.policy.scope(principal), [held], tenant, "get after a batch holding its id twice")
        # the second tenant's first agent writes a row (one of its private rows after the set-up)
        neighbour = self._principal(len(self.world.agents))
        made = self._new_record(neighbour.tenant_id, first)
        self.seen |= set(self._ingest(neighbour, [made], None))
        crossed = {
            "repoSlug": first,
            "deleted": [{"sourcePath": pattern}, {"repoSlug": second, "sourcePath": twin}],
        }
        self._delete(principal, crossed, None)
        protected = {
            "repoSlug": first,
            "deleted": [{"repoSlug": second, "sourcePath": pattern}],
            "files": [{"sourcePath": pattern}],
        }
        self._delete(principal, protected, None)
        both = {"repoSlug": first, "deleted": [{"sourcePath": twin}], "files": [{"sourcePath": twin}]}
        self._delete(principal, both, None)  # one path both tombstoned and written: refused
        if "fault-injection" in self.features:
            late = self._new_record(tenant, first, "docs/late.md")
            self.seen |= set(self._ingest(principal, [late], 1))

    def _send_again(self) -> None:
        """An identical re-send, in every program's set-up: the writer of the first chunk still
        as written (not spoofed, not restored or rewritten since) sends its record again, which
        keeps every stamp, ``ingestedAt`` included (schemas/stamping.md; the invariant reads it
        back: get reads it just before and after). Where the store can fail, the same re-send is made once
        more with its last store call failing, the call after which a backend's own bookkeeping
        runs: it changes nothing."""
        for chunk, (writer, made) in self.written.items():
            row = self.policy.rows.get(chunk)
            if row is None or chunk not in self.policy.learned or row.document != made["content"]:
                continue
            if any(self.policy.spoofed_fields(writer, made)):
                continue
            if not isinstance(self.policy.ingest(writer, [made], self.mode), Refused):
                break
        else:
            return

        def read_back(when: str) -> None:
            if "get" in self.facades:
                held = self._call(writer, None, chunk, partial(self.backend.get, writer, chunk), True)
                assert not isinstance(held, KbconformError), f"{chunk} does not read back: {held!r}"
                self._same(self.policy.scope(writer), [held], writer.tenant_id, f"get {when}")

        read_back("before an identical re-send")  # the stamps it holds, learned
        calls, _ = self._store_calls(lambda: self._ingest(writer, [made], None))
        read_back("after an identical re-send")
        if calls:
            self._ingest(writer, [made], calls - 1)

    def _syncs(self) -> None:
        """Syncs, in every program's set-up where the backend syncs: the first user writes a row
        in a repository no rule writes and one in its extension (``synced-old``), and the second
        tenant's first agent a row in the first; then the first user syncs it with one record at
        another path whose ``tenantId`` names the second tenant (within the spoof budget). In
        overwrite mode the sync replaces its caller's tenant's repository: its own row goes, the
        other tenant's stays (schemas/maintenance.md); in reject mode it is refused whole
        (schemas/stamping.md). Then a sync of that repository with no records, in both modes: its
        tenant's rows there go, the other tenant's row and the extension's stay (a repository
        compares exactly, maintenance.md). Last, a member of the shared namespace syncs its first
        repository with no records: refused (maintenance.md: only its operator may)."""
        if "sync" not in self.features:
            return
        assert self.world is not None
        first, neighbour = self._principal(0), self._principal(len(self.world.agents))
        slug = "synced"
        writes = ((first, slug), (first, f"{slug}-old"), (neighbour, slug))
        for principal, repo in writes:
            self.seen |= set(self._ingest(principal, [self._new_record(principal.tenant_id, repo)], None))
        budget = self.policy.spoof_budget(first)
        claimed = neighbour.tenant_id if budget is None or budget >= 1 else first.tenant_id
        self._sync(first, slug, [{**self._new_record(first.tenant_id, slug), "tenantId": claimed}], None)
        self._sync(first, slug, [], None)
        member = next((i for i, u in enumerate(self.users) if u.agent == "intruder"), None)
        if member is not None:
            self._sync(self._principal(member), self.world.repos[0], [], None)

    def _emptied_repository(self) -> None:
        """A repository emptied by a manifest, in every program's set-up: the first user writes a
        batch into a repository no rule writes, one row more than the smallest page the manifest
        declares (two rows where it declares none), counts its scope (past a page: a paged count
        that stops at a full page is short, schemas/pages.md) and lists it; a manifest snapshot
        of that repository with no paths deletes the whole batch (schemas/deletion-signaling.md:
        an empty ``pathsAfterPush`` empties the repository); the same list again, in pages of the
        same size, lacks it (a list cache the signal does not clear still answers with it); and
        the same signal again matches nothing, and deletes nothing."""
        principal, slug = self._principal(0), "emptied"
        size = min(self.run.manifest.page_sizes or (1,)) + 1
        records = [self._new_record(principal.tenant_id, slug) for _ in range(size)]
        limit = self.write_limit or size
        for start in range(0, size, limit):
            self.bulk |= set(self._ingest(principal, records[start : start + limit], None))
        if "count" in self.facades:
            self._read(principal, "count", None)
        page = max(1, len(self.policy.scope(principal)) // 2 + 1)
        listing = "list" in self.facades
        if listing:
            self._read(principal, "list", None, page)
        emptied = {"repoSlug": slug, "manifestSnapshot": {"repoSlug": slug, "pathsAfterPush": []}}
        self._delete(principal, emptied, None)
        if listing:
            self._read(principal, "list", None, page)
        self._delete(principal, emptied, None)

    def _overwrite_private(self) -> None:
        """Another agent of its tenant sends the very record of a chunk made private to its
        writer's agent, in every program's set-up: refused, and the chunk stays private
        (schemas/stamping.md: a private chunk is written over by its origin agent only)."""
        for chunk, (writer, made) in self.written.items():
            row = self.policy.rows.get(chunk)
            if row is None or row.stamps.get("visibility") != "private" or not row.origin_is(writer):
                continue
            if writer.tenant_id == self.shared:
                continue
            other = next(
                (
                    self._principal(index)
                    for index, user in enumerate(self.users)
                    if user.tenant == writer.tenant_id and user.agent not in (None, writer.agent_identity)
                ),
                None,
            )
            if other is not None and not any(self.policy.spoofed_fields(other, made)):
                self._ingest(other, [made], None)
                return

    def _collide(self, operator: int) -> None:
        """An aimed id collision: the operator restores a chunk's id as another tenant's chunk,
        with another text and path; its writer then ingests the very record again, and is
        refused (the id is taken), with no word of the chunk that holds it (schemas/stamping.md)."""
        assert self.world is not None
        held = next((chunk for chunk in sorted(self.written) if chunk in self.policy.rows), None)
        exported = {r["id"]: r for r in self.exported}
        if held is None or held not in exported:
            return
        writer, made = self.written[held]
        holder = next(t for t in self.world.tenants if t != writer.tenant_id)
        forged = dict(exported[held])
        forged["document"] = f"kbt{next(self.tokens):05d} held by {holder}"
        forged["metadata"] = {**forged["metadata"], "tenantId": holder, "sourcePath": "elsewhere/held.md"}
        self.restore_records(operator, [forged], None)
        self.seen |= set(self._ingest(writer, [made], None))

    def delete_then_ingest_again(self, pick: int, fault: int | None) -> None:
        """A lifecycle order every program starts with: a stored chunk is tombstoned by the
        principal that wrote it, which then ingests the very record again (schemas/deletion-signaling.md: a
        deleted chunk is gone; an ingest after it writes the chunk anew, never a no-op against
        a soft-deleted row, never a revival of the deleted stamps)."""
        chosen = sorted(chunk for chunk in self.policy.rows if chunk in self.written)
        if not chosen:
            return
        principal, made = self.written[chosen[pick % len(chosen)]]
        signal = {"repoSlug": made["repoSlug"], "deleted": [{"sourcePath": made["sourcePath"]}]}
        self._delete(principal, signal, None)
        self.seen |= set(self._ingest(principal, [made], fault))

    @precondition(lambda self: "sync" in self.features)
    @rule(
        user=st.integers(0, 11),
        repo=st.integers(0, 2),
        specs=st.lists(RECORDS, max_size=4),
        fault=st.none() | st.integers(0, 3),
        envelope=ENVELOPES,
    )
    def sync(
        self,
        user: int,
        repo: int,
        specs: list[RecordSpec],
        fault: int | None,
        envelope: tuple[tuple[str, bool], ...] | None,
    ) -> None:
        """Replace one repository of the principal's tenant (schemas/maintenance.md)."""
        principal, specs = self._principal(user), specs[: self.write_limit]
        assert self.world is not None
        slug = self.world.repos[repo]
        spoofing = self._within_budget(principal, specs, envelope)
        records = [self._record(principal, replace(spec, repo=repo), spoofing) for spec in specs]
        self._sync(principal, slug, records, fault, self._envelope(principal, slug, envelope, spoofing))

    def _sync(
        self,
        principal: Principal,
        slug: str,
        records: list[dict[str, Any]],
        fault: int | None,
        enveloped: tuple[dict[str, Any], ...] = (),
    ) -> None:
        """Sync ``slug`` with ``records``, compare ids, warnings and deletions with the model,
        and commit."""
        expected = self.policy.sync(principal, slug, records, self.mode)
        sent = (slug, records, *enveloped, self.policy.ids_for(principal, records))
        outcome = self._call(
            principal, fault, sent, lambda: self.backend.sync(principal, slug, records, *enveloped)
        )
        self.policy.count_spoofs(principal, records, self.mode, *enveloped)
        if self._refused_whole(principal, enveloped, records, outcome) or self._failed(
            outcome, fault, expected, "sync"
        ):
            return
        assert not isinstance(expected, Refused)
        plan, stale = expected
        ids = [str(i) for i in outcome.ids]
        problems = self.policy.check_ids(plan, ids)
        assert not problems, "; ".join(problems)
        warned = {(w.field, w.chunk_id) for w in outcome.warnings}
        with charged(effect="forged", operation="sync"):  # a spoofed field went unreported
            assert warned == self.policy.expected_warnings(plan, ids), f"warnings {sorted(warned)}"
        doomed, deleted = stale - set(ids), set(outcome.deleted_ids)
        assert deleted == doomed, (
            f"the sync of {slug} deleted {sorted(deleted - doomed)} it must not, "
            f"kept {sorted(doomed - deleted)} it must delete"
        )
        self._readers_of({*doomed, *ids})
        self.policy.commit_ingest(plan, ids)
        self.policy.commit_deletion(doomed)
        self._readers_of(ids)
        self.seen |= set(ids)

    @rule(user=st.integers(0, 11), probe=st.integers(0, 10_000))
    def ask_about_names(self, user: int, probe: int) -> None:
        """A query (and ask) about a name: a path, repository, tenant or agent of the world, or a
        file a deployment holds (schemas/read-filter.md: every result is a stored chunk in the
        reader's scope, with its stored text)."""
        principal = self._principal(user)
        assert self.world is not None
        world = self.world
        names = (*world.paths, *world.repos, *world.tenants, *world.agents, *OUTSIDE)
        text = names[probe % len(names)]
        scope = self.policy.scope(principal)
        who = f"{principal.tenant_id}/{principal.agent_identity}"
        n = len(scope) + 3
        if self._fresh(principal, "query", text, n, None):
            got = self._call(
                principal, None, text, lambda: self.backend.query(principal, text, n, None), True
            )
            assert not isinstance(got, KbconformError), f"{who} query about {text!r} failed: {got!r}"
            self._same(scope, got, who, f"query about {text!r}")
        if "ask" in self.facades and self._fresh(principal, "ask", text, n):
            answer = self._call(principal, None, text, lambda: self.backend.ask(principal, text, n), True)
            assert not isinstance(answer, KbconformError), f"{who} ask about {text!r} failed: {answer!r}"
            self._same(scope, answer.sources, who, f"ask about {text!r}, its sources")

    @rule(user=st.integers(0, 11), fault=st.none() | st.integers(0, 2))
    def export(self, user: int, fault: int | None) -> None:
        principal = self._principal(user)
        expected = self.policy.export(principal)
        outcome = self._call(principal, fault, "", lambda: self.backend.export(principal))
        if self._failed(outcome, fault, expected, "export"):
            return
        assert not isinstance(expected, Refused)
        got = {r["id"]: r for r in outcome}
        assert len(got) == len(outcome), "export holds one id twice"
        assert set(got) == set(expected), (
            f"export holds {sorted(set(got) - set(expected))} it must not, "
            f"and lacks {sorted(set(expected) - set(got))}"
        )
        for chunk, row in expected.items():
            problems = differences(row, got[chunk]["document"], got[chunk]["metadata"])
            problems += self.policy.stamp_problems(chunk, got[chunk]["metadata"])
            assert not problems, f"exported {chunk}: {'; '.join(problems)}"
        self.exported = [dict(r) for r in outcome]

    @precondition(lambda self: bool(self.exported))
    @rule(
        user=st.integers(0, 11),
        picks=st.lists(
            st.tuples(st.integers(0, 10_000), st.sampled_from(RESTORE_CHANGES)), min_size=1, max_size=4
        ),
        fault=st.none() | st.integers(0, 3),
    )
    def restore(self, user: int, picks: list[tuple[int, str | None]], fault: int | None) -> None:
        records = []
        for index, change in picks:
            chosen = self.exported[index % len(self.exported)]
            metadata = dict(chosen["metadata"])
            if change in ("private", "team", "public"):
                metadata["visibility"] = change
            elif change == "private ownerless":
                metadata["visibility"] = "private"
                metadata.pop("originAgentIdentity", None)
            elif change is not None:
                metadata.pop(change.removeprefix("drop "), None)
            records.append({**chosen, "metadata": metadata})
        self.restore_records(user, records, fault)

    def restore_records(self, user: int, records: list[dict[str, Any]], fault: int | None) -> None:
        """Restore ``records`` as ``user``, compare with the model, and commit."""
        principal = self._principal(user)
        expected = self.policy.restore(principal, records)
        outcome = self._call(principal, fault, records, lambda: self.backend.restore(principal, records))
        if self._failed(outcome, fault, expected, "restore"):
            return
        assert not isinstance(expected, Refused)
        assert outcome == len(records), f"restore says {outcome} for {len(records)} records"
        restored = {row.id for row in expected}
        self._readers_of(restored)
        self.policy.commit_restore(expected)
        self._readers_of(restored)
        self.seen |= {r["id"] for r in records}

    @rule(user=st.integers(0, 11))
    def toggle_shared(self, user: int) -> None:
        """A right granted or revoked takes effect on the next call."""
        chosen = self.users[user % len(self.users)]

        def toggle() -> None:
            chosen.reads_shared = not chosen.reads_shared

        self._rights_changed(chosen, toggle)

    @rule(user=st.integers(0, 11), agent=st.integers(0, 3))
    def change_agent(self, user: int, agent: int) -> None:
        """An agent changed takes effect on the next call: to one of the world's two agents (a
        pair that collides under a common mistake), a third, or none."""
        assert self.world is not None
        chosen = self.users[user % len(self.users)]
        if chosen.role == "member":
            self._rights_changed(
                chosen, partial(setattr, chosen, "agent", (*self.world.agents, "agent-3", None)[agent])
            )

    @rule(user=st.integers(0, 11), path=st.integers(0, 10), fault=st.none() | st.integers(0, 2))
    def query_where(self, user: int, path: int, fault: int | None) -> None:
        """A client where clause with an adversarial value narrows within scope, exactly."""
        if "client-where" not in self.features:
            return
        assert self.world is not None
        self._where(self._principal(user), self.world.paths[path % len(self.world.paths)], fault, path)

    def _where(self, principal: Principal, value: str, fault: int | None, form: int = 0) -> None:
        """A query whose client clause holds ``value``, in one of the :data:`WHERE_FORMS`, asking
        for exactly as many hits as the clause selects in scope (at least one): a clause applied
        after the scoped top-k, rather than with it, returns fewer. What it selects is
        client-where.md's Matching over the model's rows (a key a row lacks: ``$ne`` and
        ``$nin`` hold there; ``SourcePath`` is another key than ``sourcePath``)."""
        scope = self.policy.scope(principal)
        where = WHERE_FORMS[form % len(WHERE_FORMS)](value)
        expected = {i for i, row in scope.items() if where_matches(row.stamps, where)}
        n = max(1, len(expected))
        question = json.dumps(where, ensure_ascii=False)
        if not self._fresh(principal, "query", WORDS, n, question, fault=fault):
            return
        outcome = self._call(
            principal,
            fault,
            value,
            lambda: self.backend.query(principal, WORDS, n, where),
            read=True,
        )
        if self._failed(outcome, fault, None, "query"):
            return
        got = [h.id for h in outcome]
        assert len(got) == len(set(got)), f"query where {question} returns an id twice"
        assert set(got) == expected, (
            f"query of {n} where {question} as {principal.tenant_id}: "
            f"got {sorted(got)}, expected {sorted(expected)}"
        )

    @rule(first=st.integers(0, 11), second=st.integers(0, 11), page=st.integers(1, 3))
    def list_in_turns(self, first: int, second: int, page: int) -> None:
        """Two principals page through list in turns, a page each (schemas/read-filter.md:
        nothing one call leaves behind, a cursor or an offset memo, changes another's answer):
        each reads its scope exactly."""
        readers = (self._principal(first), self._principal(second))
        found: tuple[list[Any], list[Any]] = ([], [])
        # a reader that paged by this size since the state last changed (or the first reader
        # again) would ask each page again: the other pages alone
        done = {n for n, principal in enumerate(readers) if not self._fresh(principal, "list", page)}
        paging = [n for n in (0, 1) if n not in done]
        for offset in itertools.count(0, page):
            for n, principal in enumerate(readers):
                if n not in done:
                    listed = partial(self.backend.list, principal, page, offset)
                    got = self._call(principal, None, "", listed, read=True)
                    assert not isinstance(got, KbconformError), f"{principal.tenant_id} list failed: {got!r}"
                    found[n].extend(got)
                    if len(got) < page:
                        done.add(n)
            if len(done) == 2 or offset > 10 * (len(self.policy.rows) + 1):
                break
        for n in paging:
            principal, other = readers[n], readers[1 - n]
            who = f"{principal.tenant_id}/{principal.agent_identity}"
            turns = f"list in pages of {page}, in turns with {other.tenant_id}/{other.agent_identity}"
            self._same(self.policy.scope(principal), found[n], who, turns, exact=True)

    def list_while_others_write(self, reader: int, writer: int, page: int) -> None:
        """A principal pages through list while a caller outside its scope writes between pages
        (schemas/read-filter.md: pages are cut in a stable total order; a write the reader
        cannot read changes nothing it reads): its pages are exactly its scope, each id once.
        The other caller writes after each of the first two pages. Every program's set-up does
        it once, in pages of two (a rule of its own would change the state in one step of many,
        and every read after it is asked again: the kit's choice, to keep a run's time)."""
        principal = self._principal(reader)
        others = [i for i in range(len(self.users)) if not self._reads_tenant(principal, i)]
        if not others:
            return
        author = self._principal(others[writer % len(others)])
        scope = set(self.policy.scope(principal))
        found: list[Any] = []
        for offset in itertools.count(0, page):
            got = self._call(
                principal, None, "", partial(self.backend.list, principal, page, offset), read=True
            )
            assert not isinstance(got, KbconformError), f"{principal.tenant_id} list failed: {got!r}"
            found.extend(got)
            if len(got) < page or offset > 10 * (len(self.policy.rows) + 1):
                break
            if offset >= 2 * page:  # a write after each of the first two pages: the store grows little
                continue
            made = self._new_record(author.tenant_id, "app", f"between/{next(self.tokens)}.md")
            self.bulk |= set(self._ingest(author, [made], None))  # read by get as bulk rows are
        self._fresh(principal, "list", page)  # its last pages were read of this state: not again
        assert set(self.policy.scope(principal)) == scope, "a write outside the reader's scope changed it"
        who = f"{principal.tenant_id}/{principal.agent_identity}"
        turns = f"list in pages of {page} while {author.tenant_id} writes between them"
        self._same(self.policy.scope(principal), found, who, turns, exact=True)

    def _reads_tenant(self, principal: Principal, index: int) -> bool:
        """Whether ``principal`` reads the tenant the user ``index`` writes into."""
        return self._principal(index).tenant_id in self.policy.reader(principal).readable_tenants

    @rule(
        user=st.integers(0, 11),
        facade=st.sampled_from(["query", "get", "list", "count", "ask"]),
        fault=st.integers(0, 2),
    )
    def read_under_fault(self, user: int, facade: str, fault: int) -> None:
        """A read whose store fails part-way raises BackendUnavailable or answers exactly."""
        if "fault-injection" not in self.features or facade not in self.facades:
            return
        principal = self._principal(user)
        self._read(principal, facade, fault)

    # -- the invariant ---------------------------------------------------------------------------

    def check(self) -> int:
        """Every declared read facade, as every principal, equals the model; how many
        principals' scopes were neither empty nor everything."""
        informative = 0
        # The very same query from every principal, one right after another (a cache keyed by
        # the request alone answers the next with the last one's hits); then the other facades.
        everything = len(self.policy.rows) + 3
        for index in range(len(self.users)):
            self._read(self._principal(index), "query", None, everything)
        gets = self._get_matrix() if "get" in self.facades else []
        for index in range(len(self.users)):
            principal = self._principal(index)
            scope = self.policy.scope(principal)
            if scope and len(scope) < len(self.policy.rows):
                informative += 1
            for facade in sorted(self.facades - {"query"}):
                if facade == "get":
                    self._get(principal, gets[index], None)
                else:
                    self._read(principal, facade, None)
            if "client-where" in self.features and self.world is not None:
                paths = self.world.paths  # each principal a path per step, in turn: all of them over a run
                self._where(principal, paths[(self.checks + index) % len(paths)], None, self.checks + index)
        self.checks += 1
        self.regard = {}
        return informative

    def _known(self) -> list[str]:
        """Every id get may ask about: every id seen, and every stored one but the rows of big
        batches (a few of each are seen)."""
        return sorted(self.seen | (set(self.policy.rows) - self.bulk))

    def _refusal(self, principal: Principal, chunk: str) -> tuple[Any, ...]:
        """Why the model refuses ``principal`` the id ``chunk`` (which it may not read): it is
        gone; another tenant's or a shared namespace not granted (named); or, in a tenant it
        reads, a row of this visibility and origin agent (another agent's private row, a
        collision twin's, one without an owner)."""
        row = self.policy.rows.get(chunk)
        if row is None:
            return ("gone",)
        if row.tenant not in self.policy.reader(principal).readable_tenants:
            return ("tenant", row.tenant)
        return ("visibility", row.stamps.get("visibility"), row.stamps.get("originAgentIdentity"))

    def _get_matrix(self) -> list[set[str]]:
        """The ids get asks at this check, per user (by index): each a question that can tell
        something new of this state.

        * Its scope: every id it reads in turn (those at every third place of the known ids,
          the next third at the next check) and every id a step changed for it (:attr:`regard`:
          written or restored where it reads it before or after, deleted where it read it, or
          whose visibility to it its rights or agent changed). A get must return the model's row.
        * Its refusals: each id it is refused and has not been asked while refused
          (:attr:`refusals`), at the first check that knows the pair, so that over a program
          every principal asks every id outside its scope at some state; each id a step changed
          for it and it does not read now (above); and, by class (:meth:`_refusal`: gone,
          another tenant's or a namespace not granted, a private row of another agent or of
          none), a third of its classes at each check, in turn as the ids of its scope are,
          each asking one member, in turn by the check and the user (principals refused one
          class ask different members of it): whether the filter still refuses that reason.
        * The cache probes: each id a reader gets at this check is asked by one user of each
          class that is refused it (in turn among them), which takes every written id to its
          refused classes at the check after its write. A get cache keyed by less than the
          reader (the id alone, its tenant, its agent) answers one of them with the reader's
          row, or the reader with their NotFound, whichever asks first; a check writes nothing,
          so no write clears the cache between them.

        Cut: the ids of the turn outside a principal's scope asked by every principal at every
        third check. Each answers NotFound, as the others of its class did at that state and
        it did at states that changed nothing for it: after its first refusal, an id comes
        back to a principal when a step changes it for that principal, when a reader gets it
        (a probe), or as its class's member in turn."""
        known = self._known()
        place = {chunk: n for n, chunk in enumerate(known)}
        principals = [self._principal(index) for index in range(len(self.users))]
        scopes = [set(self.policy.scope(principal)) for principal in principals]
        turn = {chunk for chunk, n in place.items() if n % 3 == self.checks % 3}
        asks = [
            {*(turn & scope), *(self.regard.get(principal, set()) & place.keys())}
            for principal, scope in zip(principals, scopes, strict=True)
        ]
        for index, (principal, scope) in enumerate(zip(principals, scopes, strict=True)):
            classes: dict[tuple[Any, ...], list[str]] = {}
            for chunk in known:
                if chunk not in scope:
                    classes.setdefault(self._refusal(principal, chunk), []).append(chunk)
                    if (principal, chunk) not in self.refusals:
                        asks[index].add(chunk)
            for k, key in enumerate(sorted(classes, key=repr)):  # a third of them, in turn
                members = classes[key]
                if (self.checks + index + k) % 3 == 0:
                    asks[index].add(members[(self.checks // 3 + index) % len(members)])
        got = set().union(*(ids & scope for ids, scope in zip(asks, scopes, strict=True)))
        for chunk in sorted(got):
            refusing: dict[tuple[Any, ...], list[int]] = {}
            for index, (principal, scope) in enumerate(zip(principals, scopes, strict=True)):
                if chunk not in scope:
                    refusing.setdefault(self._refusal(principal, chunk), []).append(index)
            for users in refusing.values():
                asks[users[(self.checks + place[chunk]) % len(users)]].add(chunk)
        for principal, scope, ids in zip(principals, scopes, asks, strict=True):
            self.refusals |= {(principal, chunk) for chunk in ids - scope}
        return asks

    def _get(self, principal: Principal, ids: Iterable[str], fault: int | None) -> None:
        """Get each of ``ids`` as ``principal`` (with the store failing at its call ``fault``):
        an id in its scope returns the model's row, any other NotFound."""
        scope = self.policy.scope(principal)
        who = f"{principal.tenant_id}/{principal.agent_identity}"
        for chunk in sorted(ids):
            if not self._fresh(principal, "get", chunk, fault=fault):
                continue
            got = self._call(principal, fault, chunk, partial(self.backend.get, principal, chunk), True)
            if fault is not None and isinstance(got, BackendUnavailable):
                continue
            if chunk in scope:
                assert not isinstance(got, KbconformError), f"{who} cannot get its own {chunk}: {got!r}"
                self._same(scope, [got], who, "get")
            else:
                assert isinstance(got, NotFound), f"{who} gets {chunk}, which it may not read: {got!r}"

    def _read(self, principal: Principal, facade: str, fault: int | None, n: int | None = None) -> None:
        """Read through ``facade`` as ``principal`` and compare with the model; a query or ask
        asks for ``n`` hits (default: the scope's size and 3 more), a list pages by ``n`` (default:
        half the scope and 1). Get asks every known id
        (a read under a fault; the invariant's gets are :meth:`_get_matrix`'s)."""
        scope = self.policy.scope(principal)
        who = f"{principal.tenant_id}/{principal.agent_identity}"
        if facade == "get":
            self._get(principal, self._known(), fault)
            return
        if facade == "list":
            found: list[Any] = []
            page = max(1, len(scope) // 2 + 1) if n is None else n
            if not self._fresh(principal, "list", page, fault=fault):
                return
            for offset in itertools.count(0, page):
                listed = partial(self.backend.list, principal, page, offset)
                got = self._call(principal, fault, "", listed, read=True)
                if fault is not None and isinstance(got, BackendUnavailable):
                    return
                assert not isinstance(got, KbconformError), f"{who} list failed: {got!r}"
                found += got
                if len(got) < page or offset > 10 * (len(scope) + 1):
                    break
            self._same(scope, found, who, "list", exact=True)
            return
        if facade == "count":
            if not self._fresh(principal, "count", fault=fault):
                return
            got = self._call(principal, fault, "", lambda: self.backend.count(principal), read=True)
            if not (fault is not None and isinstance(got, BackendUnavailable)):
                assert got == len(scope), f"{who} counts {got}, its scope holds {len(scope)}"
            return
        n = len(scope) + 3 if n is None else n
        question = (WORDS, n, None) if facade == "query" else (WORDS, n)
        if not self._fresh(principal, facade, *question, fault=fault):
            return
        if facade == "query":
            got = self._call(
                principal, fault, "", lambda: self.backend.query(principal, WORDS, n, None), True
            )
            if not (fault is not None and isinstance(got, BackendUnavailable)):
                assert not isinstance(got, KbconformError), f"{who} query failed: {got!r}"
                self._same(scope, got, who, "query", exact=True)
            return
        got = self._call(principal, fault, "", lambda: self.backend.ask(principal, WORDS, n), read=True)
        if fault is not None and isinstance(got, BackendUnavailable):
            return
        assert not isinstance(got, KbconformError), f"{who} ask failed: {got!r}"
        self._same(scope, got.sources, who, "ask sources")
        assert bool(got.sources) == bool(scope), (
            f"{who} ask found {len(got.sources)} sources in a scope of {len(scope)}"
        )
        allowed = {(h.document or " ").split()[0] for h in got.sources}
        for chunk, row in self.policy.foreign(principal).items():
            token = (row.document or " ").split()[0]
            assert token in allowed or token not in got.text, f"{who}'s answer carries the text of {chunk}"

    def _same(
        self, scope: Mapping[str, Any], hits: Iterable[Any], who: str, facade: str, exact: bool = False
    ) -> None:
        hits = list(hits)
        ids = [h.id for h in hits]
        assert len(set(ids)) == len(ids), f"{facade} as {who} returns an id twice: {sorted(ids)}"
        unknown = set(ids) - set(self.policy.rows)
        assert not unknown, (
            f"{facade} as {who} returns {sorted(unknown)}, which no one wrote: "
            "an answer from outside the corpus"
        )
        extra = set(ids) - set(scope)
        assert not extra, f"{facade} as {who} returns {sorted(extra)}, which it may not read"
        if exact:
            missing = set(scope) - set(ids)
            assert not missing, f"{facade} as {who} lacks {sorted(missing)}, which it reads"
        for hit in hits:
            problems = differences(scope[hit.id], hit.document, hit.metadata)
            problems += self.policy.stamp_problems(hit.id, hit.metadata)
            assert not problems, f"{facade} as {who}, {hit.id}: {'; '.join(problems)}"


def machine_for(run: Run, mode: str) -> type[KnowledgeBaseMachine]:
    return KnowledgeBaseMachine.bound(run, "KnowledgeBase", mode=mode)


@pytest.mark.kbconform(id="state-01", rule="read-filter.md#the-filter", guide="every-facade", level="L4")
def test_interleaved_operations_of_many_principals_match_the_model(
    kbconform_run: Run, kbconform_spoof_mode: str
) -> None:
    """Every step of every program, every facade as every principal, equals the policy model;
    the model compared non-trivial scopes (control: a scope that is neither empty nor all)."""
    machine = machine_for(kbconform_run, kbconform_spoof_mode)
    kbconform_run.run_machine(machine)
    assert machine.compared[0] > 0, "no step compared a scope that is neither empty nor everything"
