"""What the suites write and expect: principals, parsed-chunk records, and the seeded canaries.

Expected results always come from the policy model (:class:`~.model.Policy`), never from the
backend: :class:`Canaries` is the seeded data as the model holds it, plus each chunk's
record and unique token. A check whose expected set is empty or is everything refuses to answer
(:meth:`Canaries.readable_by`), so it cannot pass vacuously.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import Manifest
from kbconform.conformance import TOPIC, Refused, batched
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.model import Policy
from kbconform.profiles.tenant_namespace.protocol import Backend

#: Each request-level field a write may carry, with a value no server would stamp for acme's
#: agent writing into ``app`` (schemas/stamping.md, "The request envelope"). The visibility is
#: ``private``, one every backend knows, so a claim is not refused merely as an unknown value.
ENVELOPE_CLAIMS: dict[str, Any] = {
    "tenantId": "beta",
    "repoSlug": "beta-secrets",
    "visibility": "private",
    "originAgentIdentity": "agent-beta",
}


def record(
    path: str,
    content: str,
    *,
    tenant: str,
    repo: str = "app",
    kind: str = "doc-section",
    **extra: Any,
) -> dict[str, Any]:
    """A valid parsed-chunk-v1 record claiming ``tenant`` (the server stamps its own)."""
    return {
        "schemaVersion": "1.0.0",
        "tenantId": tenant,
        "repoSlug": repo,
        "rootKind": "bare-repo",
        "sourcePath": path,
        "content": content,
        "hashInputs": ["sourcePath", "kind", "name", "content"],
        "parserId": "kbconform-suite",
        "parserVersion": "1.0.0",
        "kind": kind,
        "name": path.rsplit("/", 1)[-1],
        **extra,
    }


def ingest_batches(
    backend: Backend, principal: Principal, records: list[dict[str, Any]], limit: int | None
) -> list[str]:
    """Ingest ``records`` in batches of at most ``limit`` (a manifest's ``maxWriteBatch``; None:
    one call), as a set-up that a backend's request size limit must not stop; every id, in order."""
    size = limit or max(1, len(records))
    return [
        str(i)
        for start in range(0, len(records), size)
        for i in backend.ingest(principal, records[start : start + size]).ids
    ]


@dataclass(frozen=True, slots=True)
class Principals:
    """The principals every suite uses. ``shared`` is the manifest's shared namespace (or None),
    ``shared_for_all`` whether the declared design lets every tenant read it.

    ``acme`` and ``beta`` are members that may read the shared namespace; ``loner`` is granted
    no shared namespace (it reads it anyway when ``shared_for_all``); ``operator`` may export and
    restore; ``shared_writer`` is an operator of the shared namespace; ``shared_member`` a member
    of it (whose writes must be refused).
    """

    shared: str | None
    acme: Principal
    beta: Principal
    loner: Principal
    operator: Principal
    shared_writer: Principal | None
    shared_member: Principal | None
    shared_for_all: bool = False

    @classmethod
    def for_manifest(cls, manifest: Manifest) -> Principals:
        shared = manifest.shared_namespace
        readable = frozenset({shared}) if shared else frozenset()
        return cls(
            shared=shared,
            acme=Principal("acme", "agent-acme", readable),
            beta=Principal("beta", "agent-beta", readable),
            loner=Principal("loner", "agent-loner"),
            operator=Principal("kb-ops", "agent-ops", role="operator"),
            shared_writer=Principal(shared, "agent-curator", role="operator") if shared else None,
            shared_member=Principal(shared, "agent-intruder") if shared else None,
            shared_for_all=manifest.shared_for_all,
        )

    @property
    def members(self) -> tuple[Principal, ...]:
        """The member principals of ordinary tenants."""
        return (self.acme, self.beta, self.loner)


@dataclass(frozen=True, slots=True)
class Canary:
    """One chunk the model knows: who wrote it, the record, its unique token, the id ingest gave."""

    tenant: str
    record: Mapping[str, Any]
    token: str
    id: str


@dataclass
class Canaries:
    """A seeded backend: every canary chunk, by id, and the policy model that holds them."""

    principals: Principals
    chunks: dict[str, Canary] = field(default_factory=dict)
    policy: Policy = field(default_factory=Policy)

    def __post_init__(self) -> None:
        if self.principals.shared and not self.policy.shared:
            self.policy.shared = frozenset({self.principals.shared})
        self.policy.shared_for_all = self.principals.shared_for_all

    def whose(self, chunk_id: str) -> str:
        """A chunk as a failure names it: whose it is and where (``beta's app/docs/b.md``)."""
        canary = self.chunks.get(chunk_id)
        if canary is None:
            return f"{chunk_id}, which no one wrote"
        return f"{canary.tenant}'s {canary.record.get('repoSlug')}/{canary.record.get('sourcePath')}"

    def owned_by(self, tenant: str) -> set[str]:
        return {i for i, c in self.chunks.items() if c.tenant == tenant}

    def readable_by(self, principal: Principal) -> set[str]:
        """The ids ``principal`` must see: its tenant's and its readable shared namespaces'.

        Refuses (AssertionError) an expected set that is empty or is every chunk: such a check
        could not tell a leaking backend from a correct one.
        """
        expected = set(self.policy.scope(principal))
        assert expected, f"the model expects nothing for {principal.tenant_id}: the check would be vacuous"
        assert expected != set(self.chunks), (
            f"the model expects everything for {principal.tenant_id}: the check could not see a leak"
        )
        return expected

    def foreign_to(self, principal: Principal) -> set[str]:
        """Ids ``principal`` must never see; never empty."""
        foreign = set(self.chunks) - self.readable_by(principal)
        assert foreign, "no foreign chunk in the model: a leak check would be vacuous"
        return foreign

    def by_token(self, text: str | None) -> set[str]:
        """The ids whose unique token appears in ``text``."""
        if not text:
            return set()
        words = set(text.split())
        return {i for i, c in self.chunks.items() if c.token in words}


#: How many canaries each tenant writes. beta is larger than acme so that a filter applied
#: after an unfiltered top-k loses acme's results.
LAYOUT = {"acme": 4, "beta": 16, "loner": 3, "shared": 2}


def seed_canaries(
    backend: Backend, principals: Principals, rng: random.Random, *, read_back: bool = True
) -> Canaries:
    """Write the canary layout through ``ingest`` (one call per writer) and check that every
    write landed with the ids the model allows and, unless ``read_back`` is False, that each
    chunk reads back with get as written (a caller that checks what landed another way: the
    atomicity suite compares each faulted attempt's seeded export with its control's, whose
    seed was read back)."""
    model = Canaries(principals)
    writers: list[tuple[str, Principal]] = [
        ("acme", principals.acme),
        ("beta", principals.beta),
        ("loner", principals.loner),
    ]
    if principals.shared_writer is not None:
        writers.append(("shared", principals.shared_writer))
    for label, writer in writers:
        tenant = writer.tenant_id
        tokens = [f"kbc{rng.getrandbits(48):012x}" for _ in range(LAYOUT[label])]
        records = [
            record(f"docs/{label}-{n}.md", f"{token} {TOPIC} {label} note {n}", tenant=tenant)
            for n, token in enumerate(tokens)
        ]
        plan = model.policy.ingest(writer, records, "overwrite")
        assert not isinstance(plan, Refused), f"the model refuses the seed of {tenant}: {plan}"
        ids = [str(i) for i in backend.ingest(writer, records).ids]
        problems = model.policy.check_ids(plan, ids)
        assert not problems, "; ".join(problems)
        model.policy.commit_ingest(plan, ids)
        for chunk_id, token, rec in zip(ids, tokens, records, strict=True):
            model.chunks[chunk_id] = Canary(tenant, rec, token, chunk_id)
    if read_back:
        batched(backend, lambda: _read_back(backend, principals, model))  # one hand-off for every get
    return model


def _read_back(backend: Backend, principals: Principals, model: Canaries) -> None:
    """Setup asserts too: a seed that wrote nothing fails here."""
    for canary in model.chunks.values():
        owner = principals.shared_writer if canary.tenant == principals.shared else None
        owner = owner or next(p for p in principals.members if p.tenant_id == canary.tenant)
        hit = backend.get(owner, canary.id)
        assert (hit.id, hit.document) == (canary.id, canary.record["content"]), (
            f"the seeded chunk {canary.id} does not read back as written"
        )


#: The repository the sync and maintenance suites write, and repositories a careless comparison
#: takes for it (a prefix, a longer name, a child and a parent path; schemas/maintenance.md).
SYNC_REPO = "app"
SYNC_TWINS = ("ap", "app-old", "app/docs", "docs/app")


def sync_world(backend: Backend, principals: Principals) -> None:
    """The world the sync and maintenance suites start from: acme holds docs/a.md, docs/b.md
    and docs/c.md in ``app`` and docs/b.md in every twin; beta and the shared namespace's writer
    hold docs/b.md in ``app``."""
    acme = principals.acme
    backend.ingest(acme, [record(f"docs/{n}.md", f"acme {n}", tenant="acme") for n in "abc"])
    for twin in SYNC_TWINS:
        backend.ingest(acme, [record("docs/b.md", f"acme b of {twin}", tenant="acme", repo=twin)])
    for other in (principals.beta, principals.shared_writer):
        if other is not None:
            backend.ingest(other, [record("docs/b.md", f"{other.tenant_id} b", tenant=other.tenant_id)])
