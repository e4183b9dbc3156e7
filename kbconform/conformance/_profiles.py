"""Every isolation profile behind one interface, for the profile-independent suite.

``suites/test_isolation.py`` is written once: it seeds a world into a fresh backend, reads
everything one read facade shows each reader, and compares it with the profile's policy model;
it calls with no identity, and with a failing store. What differs between profiles is here:

* ``tenant-namespace``: the seeded canaries (:func:`~kbconform.conformance.seed_canaries`) and a
  few rows of the operator's tenant; the readers are the principals (members, the operator, the
  shared namespace's writer and member); a facade is read as the cross-tenant leak suite reads it
  (query and ask probed with every stored text, get with every id, list page by page, count);
  the model is :class:`~kbconform.conformance.Policy`.
* ``project-pool``: projects (one holding only a session that wrote nothing), sessions in no
  project, sessions whose external ids read as small numbers, a session moved between projects
  and one removed from its project, episodes and entities in every scope; the readers are the
  sessions; a facade is one search with a limit above the world's size; the model is
  :class:`~kbconform.conformance.PoolPolicy`, driven with the backend by :class:`PoolDriver`.
* ``kb-grant``: tenants owning knowledge bases on every declared store, grants (one revoked), a
  moved, a copied, a deleted and an empty knowledge base, and a tenant that owns nothing; the
  readers are the tenants; search reads everything a tenant reads (one search per model) and
  every other knowledge base alone, get reads every knowledge base, list lists; the model is
  :class:`~kbconform.conformance.GrantPolicy`, driven with the backend by :class:`GrantDriver`.

The project-pool and kb-grant suites' state machines stand on :class:`DriverMachine`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from types import SimpleNamespace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from hypothesis.stateful import RuleBasedStateMachine, invariant

from kbconform.adapter import MAX_LIMIT, POOL_READ_FACADES, BackendOptions, FaultPlan, FaultSwitch, Manifest
from kbconform.conformance._data import TOPIC, Principals, record, seed_canaries
from kbconform.conformance._grant_model import GrantPolicy
from kbconform.conformance._model import MayRefuse, Policy, Refused
from kbconform.conformance._pool_model import PoolPolicy
from kbconform.conformance._run import Run
from kbconform.errors import BackendUnavailable, ContractViolation, KbconformError, NotFound, error_texts
from kbconform.identity import Principal
from kbconform.profiles import profile

#: The text a single read call searches with: no stored text holds it whole, nor any token.
PROBE = "what was said about the release plan and the deploy keys"


@dataclass(frozen=True, slots=True)
class Reader:
    """Someone who reads: a label for messages, and the identity a read facade takes."""

    label: str
    identity: Any


@dataclass(frozen=True, slots=True)
class Reading:
    """What one read facade shows one reader: every item it shows, id to text (None for a facade
    that shows only a number, as count), and how many it showed (an item shown twice counts twice)."""

    items: Mapping[str, str | None] | None
    #: For a facade read with several probes (query, ask), the fewest hits one probe got.
    number: int

    def differences(self, got: Reading) -> list[str]:
        """How ``got`` differs from this expected reading: items it shows that it must not, items
        it lacks, items whose text is altered, and its number."""
        found = []
        if self.items is not None and got.items is not None:
            extra = sorted(set(got.items) - set(self.items))
            missing = sorted(set(self.items) - set(got.items))
            altered = sorted(i for i in set(got.items) & set(self.items) if got.items[i] != self.items[i])
            found += [f"shows {extra}, which it may not read"] if extra else []
            found += [f"lacks {missing}, which it reads"] if missing else []
            found += [f"alters the text of {altered}"] if altered else []
        if got.number != self.number:
            found.append(f"shows {got.number} items; its scope holds {self.number}")
        return found


class World(Protocol):
    """A backend's seeded data, as the model holds it, and how to read it."""

    @property
    def readers(self) -> tuple[Reader, ...]:
        """Everyone the suite reads as."""
        ...

    def size(self, facade: str) -> int:
        """How many stored items ``facade`` could show anyone (a scope this size is everything)."""
        ...

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        """Everything ``facade`` shows ``reader`` (errors other than a foreign id's NotFound raise)."""
        ...

    def expected(self, facade: str, reader: Reader) -> Reading:
        """What the model says ``facade`` shows ``reader``."""
        ...

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        """One call of ``facade`` with ``identity`` as the caller (one that would answer from its
        scope, for a reader); its answer."""
        ...

    def no_identities(self) -> dict[str, object]:
        """Callers that are no identity, by label: each read facade raises Unauthenticated."""
        ...

    def carried(self, error: BaseException) -> list[str]:
        """The unique marks of stored texts that ``error`` carries (none may be there)."""
        ...


class Isolation(Protocol):
    """One isolation profile: how a world is seeded, and how a backend is opened with a store
    switch (feature ``fault-injection``)."""

    def seed(self, backend: Any, rng: random.Random) -> World:
        """Write the profile's world into the fresh ``backend``, checking every write landed."""
        ...

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        """The options that open a backend whose store fails while ``store_fails`` says so."""
        ...


def isolation_for(manifest: Manifest) -> Isolation:
    """The isolation of the profile ``manifest`` declares (``Profile.isolation``)."""
    declared = profile(manifest.profile)
    made: Isolation = declared.load(declared.isolation)(manifest)
    return made


def _marks(texts: Iterable[str | None]) -> frozenset[str]:
    """The unique token every text the suites store starts with."""
    return frozenset(text.split()[0] for text in texts if text)


def _carried(error: BaseException, stored: Iterable[str | None], sent: Iterable[str] = ()) -> list[str]:
    """The unique marks of ``stored`` texts that ``error`` carries, but for those the call ``sent``."""
    text = "\n".join(error_texts(error))
    return sorted(mark for mark in _marks(stored) - _marks(sent) if mark in text)


def _wrong_error(expected: Refused, outcome: object) -> str | None:
    """Why ``outcome`` is not the refusal ``expected`` (a ``ContractViolation`` must carry the
    code the model names), or None when it is."""
    if not isinstance(outcome, expected.error):
        return f"expected {expected.error.__name__} ({expected.why}); got {outcome!r}"
    if expected.error is ContractViolation:
        code = expected.why.split(":", 1)[0]
        if getattr(outcome, "code", None) != code:
            return f"expected {code} ({expected.why}); got {outcome!r}"
    return None


def _judged(
    call: str,
    expected: object,
    make: Callable[[], Any],
    stored: Iterable[str],
    sent: Iterable[str],
    may_fail: bool,
    returned: Callable[[Any], str] = repr,
) -> Any:
    """The outcome of ``make()`` (``call``, in messages), judged by the model's ``expected``:
    what it returned, where ``expected`` is no refusal; else the error it raised, which must be
    that refusal (with ``may_fail``, a store fault armed, BackendUnavailable too: a call that
    changed nothing; with a :class:`MayRefuse`, an answer too). Any other outcome fails, and so
    does an error that carries a ``stored`` text the call did not send."""
    try:
        outcome = make()
    except KbconformError as error:
        outcome = error
    if isinstance(outcome, KbconformError):
        told = _carried(outcome, stored, sent)
        assert not told, f"{call}: its {type(outcome).__name__} carries stored text {told}"
        if may_fail and isinstance(outcome, BackendUnavailable):
            return outcome
        assert isinstance(expected, Refused), f"{call} failed: {outcome!r}"
        problem = _wrong_error(expected, outcome)
        assert problem is None, f"{call}: {problem}"
        return outcome
    assert not isinstance(expected, Refused) or isinstance(expected, MayRefuse), (
        f"{call} must raise {expected.error.__name__} ({expected.why}); it returned {returned(outcome)}"
    )
    return outcome


def _hits(hits: Sequence[Any]) -> str:
    return f"{len(hits)} hits"


class _Driver:
    """What :class:`PoolDriver` and :class:`GrantDriver` do alike: a call of a facade judged by
    the model, a call the model allows, and one it refuses (each made by the driver's
    ``attempt``)."""

    backend: Any
    policy: PoolPolicy | GrantPolicy

    def attempt(self, operation: str, *args: Any, may_fail: bool = False) -> Any:
        """Call ``operation`` with ``args``, judged by the model, and commit what landed."""
        raise NotImplementedError

    def _made(
        self, operation: str, args: tuple[Any, ...], may_fail: bool, stored: Iterable[str]
    ) -> tuple[Any, Any]:
        """The model's answer to ``operation`` with ``args``, and the backend's outcome of the
        call judged by it (:func:`_judged`; ``stored``: every text the model holds)."""
        expected = getattr(self.policy, operation)(*args)
        made = partial(getattr(self.backend, operation), *args)
        return expected, _judged(f"{operation}{_shown(args)}", expected, made, stored, _texts(args), may_fail)

    def call(self, operation: str, *args: Any) -> Any:
        """A call the model allows: it must land; what it returned. (A call the contract lets a
        backend refuse or take, :class:`MayRefuse`, is the driver's ``attempt``.)"""
        expected = getattr(self.policy, operation)(*args)
        assert not isinstance(expected, Refused), (
            f"the suite's {operation}{_shown(args)} is refused: {expected}"
        )
        return self.attempt(operation, *args)

    def refuse(self, operation: str, *args: Any) -> KbconformError:
        """A call the model refuses: it must raise exactly that error, and change nothing."""
        assert isinstance(getattr(self.policy, operation)(*args), Refused), (
            f"the suite's {operation}{_shown(args)} is not refused by the model"
        )
        outcome = self.attempt(operation, *args)
        assert isinstance(outcome, KbconformError)
        return outcome


# -- tenant-namespace -----------------------------------------------------------------------------


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
            if facade == "query":
                hits = list(backend.query(principal, probe, n, None))
            else:
                answer = backend.ask(principal, probe, n)
                hits = list(answer.sources)
                quoted = {i for i, text in contents.items() if text and text.split()[0] in answer.text}
                for chunk in quoted:  # a stored text the answer quotes is shown too
                    found.setdefault(chunk, contents[chunk])
            found.update((hit.id, hit.document) for hit in hits)
            fewest = len(hits) if fewest is None else min(fewest, len(hits))
        return Reading(found, fewest or 0)

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

    def carried(self, error: BaseException) -> list[str]:
        return _carried(error, self.contents.values())


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


# -- project-pool ---------------------------------------------------------------------------------


@dataclass
class PoolDriver(_Driver):
    """A project-pool backend and its model, driven together: each call is made, its outcome
    compared with :class:`~kbconform.conformance.PoolPolicy`, and what landed committed to it.
    Every error is checked for stored text the call did not send. ``rng`` makes the unique
    token each written text starts with."""

    backend: Any
    rng: random.Random = field(default_factory=random.Random)
    policy: PoolPolicy = field(default_factory=PoolPolicy)

    # -- membership and writes -------------------------------------------------------------------

    def attempt(self, operation: str, *args: Any, may_fail: bool = False) -> Any:
        """Call ``operation`` (a membership or write facade) with ``args``: a refusal the model
        expects comes back as the error; a call that lands is checked (its ids) and committed.
        With ``may_fail`` (a store fault armed), BackendUnavailable is a call that changed
        nothing. Any other outcome fails."""
        _, outcome = self._made(operation, args, may_fail, self.policy.stored.values())
        if isinstance(outcome, KbconformError):
            return outcome
        if operation == "write_episode":
            problems = self.policy.check_ids([outcome], 1)
            assert not problems, f"write_episode{_shown(args)}: {'; '.join(problems)}"
            self.policy.commit_episode(args[0], args[1], outcome)
        elif operation == "extract_entities":
            outcome = list(outcome)
            problems = self.policy.check_ids(outcome, len(args[1]))
            assert not problems, f"extract_entities{_shown(args)}: {'; '.join(problems)}"
            self.policy.commit_entities(args[0], args[1], outcome)
        else:
            getattr(self.policy, f"commit_{operation}")(*args)
        return outcome

    def session_id(self) -> str:
        """A new external session id as clients make them: a random UUID."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, what: str = TOPIC) -> str:
        """An episode's text: a unique token, then ``what``."""
        return f"kbp{self.rng.getrandbits(48):012x} {what}"

    def entities(self, n: int = 1, what: str = "the billing service") -> list[dict[str, str]]:
        """``n`` valid entities whose names start with a unique token, then ``what``. Each claims
        a scope inside its data, as extracted notes do (P16): its notes name a project and a
        session the backend knows (or made-up ones), and so do keys beside the three an entity
        has, which are dropped."""
        projects = sorted(self.policy.projects) or ["alpha"]
        sessions = sorted(self.policy.sessions) or ["1"]
        made = []
        for k in range(n):
            project, session = self.rng.choice(projects), self.rng.choice(sessions)
            made.append(
                {
                    "name": f"kbe{self.rng.getrandbits(48):012x} {what}",
                    "type": "concept",
                    "notes": f"note {k}; project: {project}; session: {session}",
                    "project": project,
                    "session": session,
                }
            )
        return made

    def write(self, session: str, what: str = TOPIC) -> str:
        """An episode of ``session`` that must land; its id."""
        return str(self.call("write_episode", session, self.text(what)))

    def extract(self, session: str, n: int = 1, what: str = "the billing service") -> list[str]:
        """``n`` entities of ``session`` that must land; their ids."""
        return [str(i) for i in self.call("extract_entities", session, self.entities(n, what))]

    # -- searches --------------------------------------------------------------------------------

    @property
    def everything(self) -> int:
        """A search limit at least the size of every scope."""
        limit = len(self.policy.stored) + 1
        assert limit <= MAX_LIMIT, "the suite stored more than a search may return"
        return limit

    def attempt_search(
        self,
        facade: str,
        session: object,
        text: str = PROBE,
        limit: int | None = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Search as ``session`` (any caller): the hits, checked against the model's scope (P13),
        or the error the model expects (with ``may_fail``, BackendUnavailable too)."""
        limit = self.everything if limit is None else limit
        scope = self.policy.search(facade, session)
        who = f"{facade} as {session!r} (limit {limit})"
        outcome: list[Any] | KbconformError = _judged(
            who,
            scope,
            lambda: list(getattr(self.backend, facade.replace("-", "_"))(session, text, limit)),
            self.policy.stored.values(),
            [text],
            may_fail,
            _hits,
        )
        if isinstance(outcome, KbconformError):
            return outcome
        assert not isinstance(scope, Refused)  # what _judged checked
        problems = self.policy.hit_problems(scope, outcome, limit)
        assert not problems, f"{who}: {'; '.join(problems)}"
        return outcome

    def search(self, facade: str, session: object, text: str = PROBE, limit: int | None = None) -> list[Any]:
        """A search the model allows: its hits, exactly as the model says (P13)."""
        assert not isinstance(self.policy.search(facade, session), Refused), (
            f"the suite searches as {session!r}, which the model refuses"
        )
        outcome = self.attempt_search(facade, session, text, limit)
        assert isinstance(outcome, list)
        return outcome

    def refuse_search(self, facade: str, session: object) -> KbconformError:
        """A search the model refuses: it must raise exactly that error."""
        assert isinstance(self.policy.search(facade, session), Refused), (
            f"the suite expects {session!r} to be refused, which the model is not"
        )
        outcome = self.attempt_search(facade, session)
        assert isinstance(outcome, KbconformError)
        return outcome

    def check(self) -> int:
        """Every search of every session equals the model; how many scopes were neither empty
        nor everything (a check that could tell a leak, or a loss, from a correct backend)."""
        informative = 0
        for session in self.policy.sessions:
            for facade in POOL_READ_FACADES:
                hits = self.search(facade, session)
                informative += 0 < len(hits) < self.policy.size(facade)
        return informative


def _texts(args: Sequence[Any]) -> list[str]:
    """The texts a call sent (an episode's text, entity names): an error may echo them."""
    texts = [a for a in args if isinstance(a, str)]
    for arg in args:
        if isinstance(arg, Sequence) and not isinstance(arg, str):
            texts += [str(v) for item in arg if isinstance(item, Mapping) for v in item.values()]
    return texts


def _shown(args: Sequence[Any]) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"


@dataclass
class PoolWorld:
    """The seeded sessions, and the model that holds what they wrote."""

    policy: PoolPolicy
    readers: tuple[Reader, ...]

    def size(self, facade: str) -> int:
        return self.policy.size(facade)

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self.policy.search(facade, reader.identity)
        assert not isinstance(scope, Refused), f"{reader.label} is no identity to the model"
        return Reading(dict(scope), len(scope))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        limit = min(MAX_LIMIT, len(self.policy.stored) + 1)
        hits = list(getattr(backend, facade.replace("-", "_"))(reader.identity, PROBE, limit))
        return Reading({hit.id: hit.text for hit in hits}, len(hits))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        return getattr(backend, facade.replace("-", "_"))(identity, PROBE, 10)

    def no_identities(self) -> dict[str, object]:
        """None, values that are not strings, and strings that are no session: empty, never
        started, a number that is some session's internal id, case and space variants of one."""
        started = [s for s in self.policy.sessions if not s.isdecimal()]
        numbers = {s for s in self.policy.sessions if s.isdecimal()}
        unused = next(str(n) for n in range(1, 100) if str(n) not in numbers)
        return {
            "None": None,
            "a number": 1,
            "a list holding a session's id": [started[0]],
            "an empty string": "",
            "a session never started": f"never-started-{started[0]}",
            "a small number no session has as its id": unused,
            "a session's id in upper case": started[0].upper(),
            "a session's id with a trailing space": f"{started[0]} ",
        }

    def carried(self, error: BaseException) -> list[str]:
        return _carried(error, self.policy.stored.values())


#: The seeded layout: each project, and the sessions started in it (None: in no project).
#: Session labels: "uN" become random UUIDs; digit strings stay (they look like the internal
#: ids a backend gives; the UUID sessions are started first, so no digit is its own internal id).
POOL_LAYOUT: tuple[tuple[str | None, tuple[str, ...]], ...] = (
    ("alpha", ("u1", "3")),
    ("alpha-2", ("u2", "1")),
    ("1", ("u3",)),  # a project named like another project's internal id
    ("empty", ("u4",)),  # its one session writes nothing
    (None, ("u5", "u6", "4")),
)


@dataclass(frozen=True)
class PoolIsolation:
    """The ``project-pool`` profile (its world is the same for every manifest)."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> PoolWorld:
        driver = PoolDriver(backend, rng)
        for project, _ in POOL_LAYOUT:
            if project is not None:
                driver.call("create_project", project)
        uuids = {
            label: driver.session_id() for _, labels in POOL_LAYOUT for label in labels if label[0] == "u"
        }
        placed = [(uuids.get(label, label), project) for project, labels in POOL_LAYOUT for label in labels]
        mover, leaver = driver.session_id(), driver.session_id()
        for session, project in sorted(placed, key=lambda pair: pair[0].isdecimal()):
            driver.call("start_session", session, project)
        driver.call("start_session", mover, "alpha")
        driver.call("start_session", leaver, "1")
        for session, project in placed:
            if project != "empty":
                driver.write(session, f"{TOPIC} said by {session}")
                driver.write(session, f"{TOPIC} said by {session} again")
                driver.extract(session, 2, f"what {session} named")
        for session in (mover, leaver):  # entities before and after a move keep their tags (P7)
            driver.write(session)
            driver.extract(session)
        driver.call("assign_session", mover, "alpha-2")
        driver.call("remove_session", leaver)
        for session in (mover, leaver):
            driver.write(session, f"{TOPIC} after the move")
            driver.extract(session, 1, "after the move")
        readers = tuple(
            Reader(f"session {s!r} (in {'no project' if p is None else f'project {p!r}'})", s)
            for s, p in driver.policy.sessions.items()
        )
        return PoolWorld(driver.policy, readers)

    def options(self, store_fails: Callable[[], bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)


# -- kb-grant -------------------------------------------------------------------------------------


def _view(kb: Any) -> tuple[str, str, str, str, int]:
    """A knowledge base as get_kb or list_kbs showed it: (id, owner, store, model, documents)."""
    return (str(kb.id), str(kb.owner), str(kb.store), str(kb.model), kb.documents)


def _shown_view(view: tuple[str, str, str, str, int]) -> str:
    _, owner, store, model, documents = view
    return f"owner {owner}, store {store}, model {model}, {documents} documents"


@dataclass
class GrantDriver(_Driver):
    """A kb-grant backend and its model, driven together: each call is made, its outcome
    compared with :class:`~kbconform.conformance.GrantPolicy` and what landed committed to it.
    Every error is checked for stored text the call did not send. ``rng`` makes the unique
    token each text starts with, tenant names and the vectors (gaussian, of the model's
    dimension, never zero)."""

    backend: Any
    manifest: Manifest
    rng: random.Random = field(default_factory=random.Random)
    policy: GrantPolicy = field(init=False)
    #: A copy that landed whose documents' ids are not known yet: (caller, source, store, copy).
    unlearned: list[tuple[str, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.policy = GrantPolicy(self.manifest.stores, self.manifest.models)

    # -- data ------------------------------------------------------------------------------------

    def vector(self, model: str) -> list[float]:
        """A random gaussian vector of ``model``'s dimension (never the zero vector)."""
        while True:
            vector = [self.rng.gauss(0.0, 1.0) for _ in range(self.policy.models[model])]
            if any(vector):
                return vector

    def text(self, what: str = TOPIC) -> str:
        """A document's text: a unique token, then ``what``."""
        return f"kbg{self.rng.getrandbits(48):012x} {what}"

    def documents(self, model: str, n: int, what: str = TOPIC) -> list[dict[str, Any]]:
        """``n`` valid documents of ``model``. Each claims a place inside its data (G18): keys
        beside ``text`` and ``embedding``, which are dropped, name a stored document's id, a
        knowledge base and a tenant the backend knows (when there are any)."""
        texts, kbs = sorted(self.policy.texts), sorted(self.policy.kbs)
        tenants = self.policy.tenants
        made = []
        for _ in range(n):
            document: dict[str, Any] = {"text": self.text(what), "embedding": self.vector(model)}
            claims = {"id": texts, "kb": kbs, "owner": tenants}
            document.update({key: self.rng.choice(known) for key, known in claims.items() if known})
            made.append(document)
        return made

    def tenant_name(self, prefix: str = "t") -> str:
        return f"{prefix}-{self.rng.getrandbits(32):08x}"

    # -- calls -----------------------------------------------------------------------------------

    def attempt(self, operation: str, *args: Any, may_fail: bool = False, learn: bool = True) -> Any:
        """Call ``operation`` (any facade but search) with ``args``: a refusal the model expects
        comes back as the error; an answer is compared with the model (ids, views) and what
        landed committed. With ``may_fail`` (a store fault armed), BackendUnavailable is a call
        that changed nothing. A copy's document ids are learnt by a search of the copy (with
        ``learn`` False: by :meth:`learn`, once the fault is off). Any other outcome fails."""
        expected, outcome = self._made(operation, args, may_fail, self.policy.texts.values())
        if isinstance(outcome, KbconformError):
            return outcome
        call = f"{operation}{_shown(args)}"
        if operation in ("get_kb", "list_kbs"):
            got = _view(outcome) if operation == "get_kb" else _views(outcome)
            assert got == expected, f"{call} shows {got}; the model holds {expected}"
            return outcome
        if operation in ("create_kb", "copy_kb"):
            problems = self._new_ids([outcome])
            assert not problems, f"{call}: {'; '.join(problems)}"
        if operation == "ingest":
            outcome = list(outcome)
            problems = self._new_ids(outcome, len(args[2]))
            assert not problems, f"{call}: {'; '.join(problems)}"
            self.policy.commit_ingest(args[1], args[2], outcome)
        elif operation == "create_kb":
            self.policy.commit_create_kb(args[0], args[1], args[2], outcome)
        elif operation == "copy_kb":
            self.unlearned.append((*args, outcome))
            self.policy.given.add(outcome)
            if learn:
                self.learn()
        else:
            getattr(self.policy, f"commit_{operation}")(*args)
        return outcome

    def _new_ids(self, returned: Sequence[object], count: int | None = None) -> list[str]:
        """Problems with ids a call returned: ``count`` of them, non-empty strings, all different,
        none given before (ids are unique and never reused)."""
        if count is not None and len(returned) != count:
            return [f"expected {count} ids; got {len(returned)}: {list(returned)!r}"]
        if any(not isinstance(i, str) or not i for i in returned):
            return [f"ids that are not non-empty strings: {list(returned)!r}"]
        if len(set(returned)) != len(returned):
            return [f"one id twice in {list(returned)!r}"]
        taken = sorted(str(i) for i in returned if i in self.policy.given)
        return [f"ids given before: {taken}"] if taken else []

    def learn(self) -> None:
        """The document ids of every copy that landed, by a search of the copy (G12: it holds
        every document of its source, with the source's texts, under new ids)."""
        while self.unlearned:
            caller, source, store, copy = self.unlearned.pop(0)
            documents = list(self.policy.kbs[source].documents.values())
            ids: dict[str, str] = {}
            if documents:
                hits = list(self.backend.search(caller, [copy], documents[0].vector, len(documents)))
                by_text = {str(hit.text): str(hit.id) for hit in hits}
                texts = sorted(d.text for d in documents)
                held = sorted(str(hit.text) for hit in hits)
                assert held == texts, f"the copy {copy!r} of {source!r} holds {held}; its source {texts}"
                assert all(str(hit.kb) == copy for hit in hits), (
                    f"a search of {copy!r} shows other knowledge bases"
                )
                ids = {d.id: by_text[d.text] for d in documents}
                problems = self._new_ids(list(ids.values()))
                assert not problems, f"the documents of the copy {copy!r}: {'; '.join(problems)}"
            self.policy.commit_copy_kb(caller, source, store, copy, ids)

    def tenant(self, name: str | None = None) -> str:
        """A new tenant (a random name unless ``name``)."""
        tenant = name or self.tenant_name()
        self.call("create_tenant", tenant)
        return tenant

    def kb(self, caller: str, store: str | None = None, model: str | None = None, documents: int = 0) -> str:
        """A new knowledge base of ``caller`` (the first store and model unless named) holding
        ``documents`` documents; its id."""
        model = model or next(iter(self.policy.models))
        kb = str(self.call("create_kb", caller, store or self.policy.stores[0], model))
        if documents:
            self.ingest(caller, kb, documents)
        return kb

    def ingest(self, caller: str, kb: str, n: int = 1, what: str = TOPIC) -> list[str]:
        """``n`` documents of ``caller`` into ``kb`` that must land; their ids."""
        batch = self.documents(self.policy.kbs[kb].model, n, what)
        return [str(i) for i in self.call("ingest", caller, kb, batch)]

    # -- searches --------------------------------------------------------------------------------

    def everything(self, kbs: Iterable[str]) -> int:
        """A limit above the number of documents of ``kbs`` (at most the largest limit)."""
        return min(
            MAX_LIMIT, sum(len(self.policy.kbs[kb].documents) for kb in kbs if kb in self.policy.kbs) + 1
        )

    def attempt_search(
        self,
        caller: object,
        kbs: Any,
        embedding: Any = None,
        limit: Any = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Search as ``caller``: the hits, compared with the exact ranking (G8, G9), or the error
        the model expects (with ``may_fail``, BackendUnavailable too). ``embedding`` defaults to
        a random vector of the first named knowledge base's model, ``limit`` to everything."""
        if embedding is None:
            first = self.policy.kbs.get(kbs[0]) if kbs and isinstance(kbs[0], str) else None
            embedding = self.vector(first.model if first else next(iter(self.policy.models)))
        limit = self.everything(kbs) if limit is None else limit
        who = f"search as {caller!r} of {kbs!r} (limit {limit!r})"
        outcome: list[Any] | KbconformError = _judged(
            who,
            self.policy.search(caller, kbs, embedding, limit),
            lambda: list(self.backend.search(caller, kbs, embedding, limit)),
            self.policy.texts.values(),
            [],
            may_fail,
            _hits,
        )
        if isinstance(outcome, KbconformError):
            return outcome
        problems = self.policy.hit_problems(kbs, embedding, limit, outcome)
        assert not problems, f"{who}: {'; '.join(problems)}"
        return outcome

    def search(self, caller: object, kbs: Any, embedding: Any = None, limit: Any = None) -> list[Any]:
        """A search the model allows: its hits, exactly the model's ranking."""
        outcome = self.attempt_search(caller, kbs, embedding, limit)
        assert isinstance(outcome, list), f"search as {caller!r} of {kbs!r} failed: {outcome!r}"
        return outcome

    def refuse_search(
        self, caller: object, kbs: Any, embedding: Any = None, limit: Any = None
    ) -> KbconformError:
        """A search the model refuses: it must raise exactly that error."""
        outcome = self.attempt_search(caller, kbs, embedding, limit)
        assert isinstance(outcome, KbconformError), f"search as {caller!r} of {kbs!r} answered"
        return outcome

    def groups(self, caller: str) -> list[list[str]]:
        """The knowledge bases ``caller`` reads, one list per model (what one search may name)."""
        by_model: dict[str, list[str]] = {}
        for kb in self.policy.scope(caller).values():
            by_model.setdefault(kb.model, []).append(kb.id)
        return list(by_model.values())

    def check(self, tenants: Iterable[str] | None = None) -> int:
        """Every read of every tenant (of ``tenants`` only, when named) equals the model (G1, G4,
        G6): list_kbs, get_kb of every knowledge base, a search of everything it reads (per
        model), the very same search by the next tenant right after (answered from that
        tenant's own rights), and each knowledge base it may not read searched alone
        (NotFound). How many
        tenants read documents that are neither none nor all (a check that could tell a leak,
        or a loss, from a correct backend)."""
        self.learn()
        informative = 0
        total = len(self.policy.texts)
        everyone = list(self.policy.tenants)
        for tenant in everyone if tenants is None else tenants:
            self.attempt("list_kbs", tenant)
            for kb in self.policy.kbs:
                self.attempt("get_kb", tenant, kb)
                if not self.policy.readable(tenant, kb):
                    self.attempt_search(tenant, [kb])
            shown = 0
            after = everyone[(everyone.index(tenant) + 1) % len(everyone)]
            for group in self.groups(tenant):
                vector = self.vector(self.policy.kbs[group[0]].model)
                shown += len(self.search(tenant, group, vector))
                # The very same search from another tenant right after: answered from its own
                # rights, never from what the first left behind (a cache keyed by the request).
                self.attempt_search(after, group, vector)
            informative += 0 < shown < total
        return informative


def _views(kbs: Iterable[Any]) -> dict[str, tuple[str, str, str, str, int]]:
    shown = [_view(kb) for kb in kbs]
    views = {view[0]: view for view in shown}
    assert len(views) == len(shown), f"list_kbs shows a knowledge base twice: {sorted(v[0] for v in shown)}"
    return views


@dataclass
class GrantWorld:
    """The seeded tenants, knowledge bases and grants, and the model that holds them."""

    driver: GrantDriver
    readers: tuple[Reader, ...]

    @property
    def policy(self) -> GrantPolicy:
        return self.driver.policy

    def size(self, facade: str) -> int:
        return len(self.policy.texts) if facade == "search" else len(self.policy.kbs)

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self.policy.scope(reader.identity)
        if facade == "search":
            items = {d.id: d.text for kb in scope.values() for d in kb.documents.values()}
        else:
            items = {i: _shown_view(kb.view()) for i, kb in scope.items()}
        return Reading(items, len(items))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        tenant, found = reader.identity, {}
        if facade == "list":
            views = [_view(kb) for kb in backend.list_kbs(tenant)]
            return Reading({v[0]: _shown_view(v) for v in views}, len(views))
        if facade == "get":
            for kb in self.policy.kbs:
                try:
                    view = _view(backend.get_kb(tenant, kb))
                except NotFound:  # what a foreign knowledge base and a missing one raise alike
                    continue
                found[view[0]] = _shown_view(view)
            return Reading(found, len(found))
        shown = 0
        for group in self.driver.groups(tenant):  # everything it reads, one search per model
            hits = list(
                backend.search(
                    tenant,
                    group,
                    self.driver.vector(self.policy.kbs[group[0]].model),
                    self.driver.everything(group),
                )
            )
            found.update((str(hit.id), str(hit.text)) for hit in hits)
            shown += len(hits)
        for kb in self.policy.kbs:  # and every knowledge base it may not read, alone
            if not self.policy.readable(tenant, kb):
                try:
                    hits = list(
                        backend.search(tenant, [kb], self.driver.vector(self.policy.kbs[kb].model), MAX_LIMIT)
                    )
                except NotFound:
                    continue
                found.update((str(hit.id), str(hit.text)) for hit in hits)
        return Reading(found, shown)

    def _own(self, identity: object) -> list[str]:
        """The knowledge bases a read as ``identity`` names: a model's group it reads that holds
        documents (for a reader), else any knowledge base holding documents."""
        if isinstance(identity, str) and identity in self.policy.tenants:
            for group in self.driver.groups(identity):
                if any(self.policy.kbs[kb].documents for kb in group):
                    return group
        return [next(kb.id for kb in self.policy.kbs.values() if kb.documents)]

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        kbs = self._own(identity)
        if facade == "search":
            return backend.search(identity, kbs, self.driver.vector(self.policy.kbs[kbs[0]].model), 10)
        if facade == "get":
            return backend.get_kb(identity, kbs[0])
        return backend.list_kbs(identity)

    def no_identities(self) -> dict[str, object]:
        """None, values that are not strings, and strings that are no tenant: empty, never
        created, case, space and prefix variants of one, a knowledge base's id."""
        tenant = self.policy.tenants[0]
        return {
            "None": None,
            "a number": 1,
            "a list holding a tenant": [tenant],
            "an empty string": "",
            "a tenant never created": f"never-created-{tenant}",
            "a tenant in upper case": tenant.upper(),
            "a tenant with a trailing space": f"{tenant} ",
            "a prefix of a tenant": tenant[:-1],
            "a knowledge base's id": next(iter(self.policy.kbs)),
        }

    def carried(self, error: BaseException) -> list[str]:
        return _carried(error, self.policy.texts.values())


#: The seeded tenants: names that are prefixes of each other, and a digit.
GRANT_TENANTS = ("acme", "acme-2", "beta", "1", "stranger")


@dataclass(frozen=True)
class GrantIsolation:
    """The ``kb-grant`` profile: tenants owning knowledge bases on every declared store (and
    model), some granted to others (one grant revoked), one moved, one copied, one deleted, one
    empty, and a tenant that owns nothing."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> GrantWorld:
        d = GrantDriver(backend, self.manifest, rng)
        acme, acme2, beta, one, stranger = (d.tenant(name) for name in GRANT_TENANTS)
        stores, models = d.policy.stores, list(d.policy.models)
        owned = {}
        for index, store in enumerate(stores):
            owned[(acme, store)] = d.kb(acme, store, models[0], 3)
            owned[(acme2, store)] = d.kb(acme2, store, models[index % len(models)], 3)
        shared = owned[(acme, stores[0])]
        d.kb(beta, stores[0], models[-1], 3)
        d.kb(one, stores[-1], models[0])  # an empty knowledge base
        d.call("share_kb", acme, shared, acme2)
        d.call("share_kb", acme, shared, beta)
        d.call("share_kb", acme2, owned[(acme2, stores[-1])], one)
        revoked = owned[(acme, stores[-1])]
        d.call("share_kb", acme, revoked, stranger)
        d.search(stranger, [revoked])  # read once before the revoke: a cached grant would show
        d.call("revoke_kb", acme, revoked, stranger)
        if len(stores) > 1:
            d.call("move_kb", acme, shared, stores[1])
        d.ingest(acme, shared, 1, f"{TOPIC} after the move")
        d.call("copy_kb", beta, shared, stores[-1])
        gone = d.kb(acme2, stores[0], models[0], 2)
        d.call("share_kb", acme2, gone, beta)
        d.call("delete_kb", acme2, gone)
        d.check()
        readers = tuple(Reader(f"tenant {t!r}", t) for t in d.policy.tenants)
        return GrantWorld(d, readers)

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)


# -- the profiles' state machines -----------------------------------------------------------------

_D = TypeVar("_D", PoolDriver, GrantDriver)
_M = TypeVar("_M", bound="DriverMachine[Any]")


class DriverMachine(RuleBasedStateMachine, Generic[_D]):
    """What the project-pool and kb-grant state machines share: a backend opened by the suite's
    ``initialize`` rule (:meth:`fresh_backend`) and driven with its model by ``driver``, a store
    switch armed around a block, and the invariant; :meth:`bound` binds a machine to a run. The
    rules are the suite's."""

    run: ClassVar[Run]
    compared: ClassVar[list[int]]  # informative comparisons over every example (vacuity guard)

    def __init__(self) -> None:
        super().__init__()
        self.fault = FaultSwitch()
        self.faults = self.run.manifest.supports("fault-injection")
        self.backend: Any = None
        self.driver: _D | None = None

    @classmethod
    def bound(cls: type[_M], run: Run, name: str) -> type[_M]:
        """The machine as ``name``, bound to ``run``, with no comparison counted yet."""
        return type(name, (cls,), {"run": run, "compared": [0]})

    def fresh_backend(self) -> Any:
        """A fresh backend, its store behind the switch when the manifest declares fault-injection."""
        self.backend = self.run.open(BackendOptions(store_fails=self.fault if self.faults else None))
        return self.backend

    def teardown(self) -> None:
        if self.backend is not None:
            self.run.close(self.backend)

    @property
    def d(self) -> _D:
        assert self.driver is not None
        return self.driver

    @contextmanager
    def _armed(self, fault: int | None) -> Iterator[bool]:
        """The (fault+1)th store call of the block and every later one fail; whether armed."""
        armed = fault is not None and self.faults
        if armed:
            self.fault.set(FaultPlan(fault or 0))
        try:
            yield armed
        finally:
            if armed:
                self.fault.set(None)

    @invariant()
    def every_read_equals_the_model(self) -> None:
        """After every step, every read equals the model (the driver's check: every search of
        every session; every tenant's list, gets and searches)."""
        if self.driver is not None:
            self.compared[0] += self.driver.check()
