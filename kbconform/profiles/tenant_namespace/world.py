"""The ``tenant-namespace`` profile's world for the shared isolation suite: the seeded
canaries and the operator's rows, read as each principal reads them, and the callers that are
no identity."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from kbconform.adapter import BackendOptions, Manifest
from kbconform.conformance import PROBE, TOPIC, Reader, Reading, Refused, carried
from kbconform.errors import NotFound
from kbconform.identity import Principal
from kbconform.profiles.tenant_namespace.data import Principals, record, seed_canaries
from kbconform.profiles.tenant_namespace.model import Policy

__all__ = ["OPERATOR_ROWS", "TenantIsolation", "TenantWorld", "not_principals"]


class _WiderPrincipal(Principal):
    """A real Principal's fields, and a subclass's answer to what it may read."""

    @property
    def readable_tenants(self) -> tuple[str, ...]:
        return ("acme", "beta", "loner", "kb-ops", "neo-shared")


def _tampered(**fields: object) -> Principal:
    """An operator's Principal of acme, its frozen fields then changed in place."""
    principal = Principal("acme", "agent-acme", role="operator")
    for name, value in fields.items():
        object.__setattr__(principal, name, value)
    return principal


def not_principals() -> dict[str, object]:
    """Callers that are no identity, by label: None, and look-alikes of a principal. Only an
    exact, valid Principal authenticates; a backend checks its fields again on every call."""
    return {
        "None": None,
        "a tenant id string": "acme",
        "a dict that looks like a principal": {"tenant_id": "acme", "role": "operator"},
        # Every attribute a Principal has, with an operator's rights.
        "an object with a principal's attributes": SimpleNamespace(
            tenant_id="acme",
            agent_identity="agent-7",
            readable_namespaces=frozenset(),
            role="operator",
            is_operator=True,
            readable_tenants=("acme",),
        ),
        "a Principal subclass that reads every tenant": _WiderPrincipal(
            "acme", "agent-acme", role="operator"
        ),
        "a Principal changed in place to an invalid tenant id": _tampered(tenant_id="*"),
        "a Principal changed in place to read a mutable set": _tampered(readable_namespaces={"beta"}),
    }


@dataclass
class TenantWorld:
    """The canaries, the operator's rows, and the policy model that holds them."""

    principals: Principals
    policy: Policy
    readers: tuple[Reader, ...]
    #: The stored ids a get's probes ask, in their order, and the ids they were dealt from.
    _probes: tuple[tuple[str, ...], list[str]] = field(
        default=((), []), init=False, repr=False, compare=False
    )

    @property
    def contents(self) -> dict[str, str | None]:
        return {i: row.document for i, row in self.policy.rows.items()}

    def size(self, facade: str) -> int:
        return len(self.policy.rows)

    def _scope(self, reader: Reader) -> dict[str, str | None]:
        return {i: row.document for i, row in self.policy.scope(reader.identity).items()}

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self._scope(reader)
        return Reading(None if facade == "count" else scope, len(scope))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        principal, contents = reader.identity, self.contents
        n = max(1, len(self._scope(reader)))  # a top-k of the scope's size: a filter after it shows
        found: dict[str, str | None] = {}
        if facade == "count":
            return Reading(None, backend.count(principal))
        if facade == "list":
            shown = 0
            while shown <= len(contents):  # a backend that pages past everything stops here
                page = list(backend.list(principal, 5, shown))
                if not page:
                    break
                found.update((hit.id, hit.document) for hit in page)
                shown += len(page)
            return Reading(found, shown)
        if facade == "get":
            for chunk in contents:
                try:
                    found[chunk] = backend.get(principal, chunk).document
                except NotFound:  # what a foreign id and a missing one raise alike
                    continue
            return Reading(found, len(found))
        fewest = None  # each probe's top-k is the whole scope: the fewest hits a probe got
        for probe in contents.values():  # query and ask: own, shared and foreign texts as probes
            shown = self._probed(backend, facade, principal, probe, n, found)
            fewest = shown if fewest is None else min(fewest, shown)
        return Reading(found, fewest or 0)

    def read_probe(self, backend: Any, facade: str, reader: Reader, turn: int) -> Reading:
        """Query and ask with the ``turn``-th stored text (counted round them) as the one probe,
        get with the ``turn``-th stored id; every other facade read whole (:meth:`read`)."""
        if facade == "get":
            chunk, got = self._probe_id(turn), {}
            with contextlib.suppress(NotFound):  # what a foreign id and a missing one raise alike
                got[chunk] = backend.get(reader.identity, chunk).document
            return Reading(got, len(got))
        if facade not in ("query", "ask"):
            return self.read(backend, facade, reader)
        probes = list(self.contents.values())
        n = max(1, len(self._scope(reader)))
        found: dict[str, str | None] = {}
        shown = self._probed(backend, facade, reader.identity, probes[turn % len(probes)], n, found)
        return Reading(found, shown)

    def expected_probe(self, facade: str, reader: Reader, turn: int) -> Reading:
        """What :meth:`read_probe` shows ``reader``: a query's or an ask's probe, the whole scope
        (:meth:`expected`); a get's, the ``turn``-th stored id's row when it is in scope, else
        nothing."""
        expected = self.expected(facade, reader)
        if facade != "get":
            return expected
        chunk, scope = self._probe_id(turn), expected.items or {}
        part = {chunk: scope[chunk]} if chunk in scope else {}
        return Reading(part, len(part))

    def _probe_id(self, turn: int) -> str:
        """The stored id a get's probe of ``turn`` asks (counted round them): the ids taken in
        turn from each audience (the readers that may read an id), so that the first rounds ask
        an id of every audience."""
        ids = tuple(self.policy.rows)
        if self._probes[0] != ids:
            audiences: dict[frozenset[str], list[str]] = {}
            scopes = [(r.label, self.policy.scope(r.identity)) for r in self.readers]
            for chunk in ids:
                audience = frozenset(label for label, scope in scopes if chunk in scope)
                audiences.setdefault(audience, []).append(chunk)
            groups = list(audiences.values())
            dealt = [g[i] for i in range(max(map(len, groups))) for g in groups if i < len(g)]
            self._probes = (ids, dealt)
        dealt = self._probes[1]
        return dealt[turn % len(dealt)]

    def _probed(
        self, backend: Any, facade: str, principal: object, probe: str | None, n: int, found: dict[str, Any]
    ) -> int:
        """One query or ask with ``probe`` and a top-k of ``n``: what it shows added to ``found``
        (and each stored text an answer quotes); how many hits it got."""
        if facade == "query":
            hits = list(backend.query(principal, probe, n, None))
        else:
            answer = backend.ask(principal, probe, n)
            hits = list(answer.sources)
            contents = self.contents
            quoted = {i for i, text in contents.items() if text and text.split()[0] in answer.text}
            for chunk in quoted:  # a stored text the answer quotes is shown too
                found.setdefault(chunk, contents[chunk])
        found.update((hit.id, hit.document) for hit in hits)
        return len(hits)

    def _some(self, identity: object) -> str:
        """A stored id: the first the caller reads, when it is a principal that reads one."""
        readable = self.policy.scope(identity) if type(identity) is Principal else {}
        return min(readable or self.policy.rows)

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        some = self._some(identity)
        calls: dict[str, Callable[[], object]] = {
            "query": lambda: backend.query(identity, PROBE, 5, None),
            "get": lambda: backend.get(identity, some),
            "list": lambda: backend.list(identity, 10, 0),
            "count": lambda: backend.count(identity),
            "ask": lambda: backend.ask(identity, PROBE, 5),
        }
        return calls[facade]()

    def no_identities(self) -> dict[str, object]:
        return not_principals()

    def writers(self) -> tuple[Reader, ...]:
        members = set(self.principals.members)
        return tuple(r for r in self.readers if r.identity in members)

    @staticmethod
    def _written(identity: object, mark: str) -> dict[str, Any]:
        tenant = identity.tenant_id if type(identity) is Principal else "acme"
        return record(f"conc/{mark}.md", f"{mark} {TOPIC} written at once", tenant=tenant)

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        return backend.ingest(identity, [self._written(identity, mark)])

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        plan = self.policy.ingest(writer.identity, [self._written(writer.identity, mark)], "overwrite")
        if isinstance(plan, Refused):
            return [f"the model refuses it ({plan.why}); it landed"]
        ids = [str(i) for i in getattr(answer, "ids", ())]
        problems = self.policy.check_ids(plan, ids)
        if not problems:
            self.policy.commit_ingest(plan, ids)
        return problems

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, self.contents.values())


#: How many rows the operator's own tenant holds: an operator reads them, and no other tenant's.
OPERATOR_ROWS = 2


@dataclass(frozen=True)
class TenantIsolation:
    """The ``tenant-namespace`` profile."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> TenantWorld:
        principals = Principals.for_manifest(self.manifest)
        canaries = seed_canaries(backend, principals, rng)
        policy = canaries.policy
        operator = principals.operator
        records = [
            record(f"ops/runbook-{n}.md", f"kbo{rng.getrandbits(48):012x} {TOPIC} ops {n}", tenant="kb-ops")
            for n in range(OPERATOR_ROWS)
        ]
        plan = policy.ingest(operator, records, "overwrite")
        assert not isinstance(plan, Refused), f"the model refuses the operator's rows: {plan}"
        ids = [str(i) for i in backend.ingest(operator, records).ids]
        problems = policy.check_ids(plan, ids)
        assert not problems, "; ".join(problems)
        policy.commit_ingest(plan, ids)
        for chunk, written in zip(ids, records, strict=True):
            hit = backend.get(operator, chunk)
            assert (hit.id, hit.document) == (chunk, written["content"]), f"{chunk} does not read back"
        readers = [*principals.members, operator]
        readers += [p for p in (principals.shared_writer, principals.shared_member) if p is not None]
        labelled = tuple(Reader(f"{p.tenant_id} ({p.role}, agent {p.agent_identity})", p) for p in readers)
        return TenantWorld(principals, policy, labelled)

    def options(self, store_fails: Callable[[], bool]) -> BackendOptions:
        return BackendOptions(spoof_mode=self.manifest.spoof_modes[0], store_fails=store_fails)
