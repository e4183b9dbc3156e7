"""Both isolation profiles behind one interface, for the profile-independent suite.

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
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Protocol

from kbconform.adapter import MAX_LIMIT, POOL_READ_FACADES, BackendOptions, Manifest
from kbconform.conformance._data import TOPIC, Principals, record, seed_canaries
from kbconform.conformance._model import Policy, Refused
from kbconform.conformance._pool_model import PoolPolicy
from kbconform.errors import BackendUnavailable, KbconformError, NotFound
from kbconform.identity import Principal

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


def _error_texts(error: BaseException) -> str:
    """Everything an error carries: its text, repr, args, fields and notes, and its causes'."""
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), *map(repr, current.args)]
        texts += [repr(v) for v in getattr(current, "__dict__", {}).values()]
        fields = getattr(type(current), "__attrs_attrs__", ())  # attrs records keep fields in slots
        texts += [repr(getattr(current, f.name, None)) for f in fields]
        texts += [str(note) for note in getattr(current, "__notes__", ())]
        current = current.__cause__ or current.__context__
    return "\n".join(texts)


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

    def options(self, store_fails: Callable[[], bool]) -> BackendOptions:
        """The options that open a backend whose store fails while ``store_fails`` says so."""
        ...


def isolation_for(manifest: Manifest) -> Isolation:
    """The isolation profile ``manifest`` declares."""
    if manifest.profile == "project-pool":
        return PoolIsolation()
    return TenantIsolation(manifest)


def _marks(texts: Iterable[str | None]) -> frozenset[str]:
    """The unique token every text the suites store starts with."""
    return frozenset(text.split()[0] for text in texts if text)


def _carried(error: BaseException, marks: frozenset[str]) -> list[str]:
    text = _error_texts(error)
    return sorted(mark for mark in marks if mark in text)


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
        """None, and the look-alikes the fail-closed suite uses: only an exact, valid Principal
        authenticates."""
        return {
            "None": None,
            "a tenant id string": "acme",
            "a dict that looks like a principal": {"tenant_id": "acme", "role": "operator"},
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

    def carried(self, error: BaseException) -> list[str]:
        return _carried(error, _marks(self.contents.values()))


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
class PoolDriver:
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
        expected: Refused | None = getattr(self.policy, operation)(*args)
        try:
            outcome = getattr(self.backend, operation)(*args)
        except KbconformError as error:
            outcome = error
        if isinstance(outcome, KbconformError):
            self._clean(outcome, f"{operation}{_shown(args)}", _texts(args))
            if may_fail and isinstance(outcome, BackendUnavailable):
                return outcome
            assert expected is not None, f"{operation}{_shown(args)} failed: {outcome!r}"
            problem = self.policy.wrong_error(expected, outcome)
            assert problem is None, f"{operation}{_shown(args)}: {problem}"
            return outcome
        assert expected is None, (
            f"{operation}{_shown(args)} must raise {expected.error.__name__} ({expected.why}); "
            f"it returned {outcome!r}"
        )
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

    def call(self, operation: str, *args: Any) -> Any:
        """A call the model allows: it must land; what it returned."""
        assert getattr(self.policy, operation)(*args) is None, (
            f"the suite's {operation}{_shown(args)} is refused by the model"
        )
        return self.attempt(operation, *args)

    def refuse(self, operation: str, *args: Any) -> KbconformError:
        """A call the model refuses: it must raise exactly that error, and change nothing."""
        assert getattr(self.policy, operation)(*args) is not None, (
            f"the suite's {operation}{_shown(args)} is not refused by the model"
        )
        outcome = self.attempt(operation, *args)
        assert isinstance(outcome, KbconformError)
        return outcome

    def session_id(self) -> str:
        """A new external session id as clients make them: a random UUID."""
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, what: str = TOPIC) -> str:
        """An episode's text: a unique token, then ``what``."""
        return f"kbp{self.rng.getrandbits(48):012x} {what}"

    def entities(self, n: int = 1, what: str = "the billing service") -> list[dict[str, str]]:
        """``n`` valid entities whose names start with a unique token, then ``what``."""
        return [
            {"name": f"kbe{self.rng.getrandbits(48):012x} {what}", "type": "concept", "notes": f"note {k}"}
            for k in range(n)
        ]

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
        try:
            outcome: list[Any] | KbconformError = list(
                getattr(self.backend, facade.replace("-", "_"))(session, text, limit)
            )
        except KbconformError as error:
            outcome = error
        who = f"{facade} as {session!r} (limit {limit})"
        if isinstance(outcome, KbconformError):
            self._clean(outcome, who, [text])
            if may_fail and isinstance(outcome, BackendUnavailable):
                return outcome
            assert isinstance(scope, Refused), f"{who} failed: {outcome!r}"
            problem = self.policy.wrong_error(scope, outcome)
            assert problem is None, f"{who}: {problem}"
            return outcome
        assert not isinstance(scope, Refused), (
            f"{who} must raise {scope.error.__name__} ({scope.why}); it returned {len(outcome)} hits"
        )
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

    def _clean(self, error: KbconformError, call: str, sent: Iterable[str]) -> None:
        """No error carries a stored text the call did not send."""
        told = _carried(error, _marks(self.policy.stored.values()) - _marks(sent))
        assert not told, f"{call}: its {type(error).__name__} carries stored text {told}"


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
        return _carried(error, _marks(self.policy.stored.values()))


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
    """The ``project-pool`` profile."""

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
