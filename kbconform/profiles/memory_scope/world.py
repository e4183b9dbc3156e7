"""The ``memory-scope`` profile's driver (a backend and :class:`ScopePolicy` driven together)
and its world for the shared isolation suite."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import BackendOptions, Manifest
from kbconform.conformance import Driver, Reader, Reading, Refused
from kbconform.conformance._data import TOPIC
from kbconform.conformance._judging import PROBE, call_args, carried, hits_count, judged
from kbconform.errors import KbconformError
from kbconform.profiles.memory_scope.model import ScopePolicy
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, scope_text

__all__ = ["ScopeDriver", "ScopeIsolation", "ScopeWorld"]

#: The operations whose call changes the store, with the model's commit of each.
WRITES = ("add", "update", "delete", "delete_all")


class Named(dict[str, str]):
    """A scope a :class:`~kbconform.conformance.Reader` holds: a plain mapping to every backend,
    and hashable, as a reader's identity is."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))


def _key(scope: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(scope.items())


@dataclass
class ScopeDriver(Driver):
    """A memory-scope backend and its model, driven together: each call is made, its outcome
    compared with :class:`~kbconform.profiles.memory_scope.model.ScopePolicy`, and what landed
    committed to it. Every error is checked for stored text the call did not send. ``rng``
    makes the unique token each written text starts with; ``facades`` are the manifest's read
    facades; ``filters`` whether it offers the ``filter`` feature."""

    backend: Any
    policy: ScopePolicy
    rng: random.Random = field(default_factory=random.Random)
    facades: tuple[str, ...] = ("search",)
    #: Every valid scope the driver wrote under or read, in order (what :meth:`check` reads as).
    scopes: dict[tuple[tuple[str, str], ...], dict[str, str]] = field(default_factory=dict)

    @classmethod
    def of(cls, backend: Any, manifest: Manifest, rng: random.Random) -> ScopeDriver:
        return cls(backend, ScopePolicy.of(manifest.raw), rng, manifest.read_facades)

    # -- scopes ---------------------------------------------------------------------------------

    def scope(self, *values: str, **named: str) -> dict[str, str]:
        """A scope: ``values`` for the declared keys in order, then ``named`` keys."""
        made = dict(zip(self.policy.keys, values, strict=False))
        made.update(named)
        return made

    def remember(self, scope: object) -> None:
        if isinstance(scope, Mapping) and self.policy.valid(scope):
            self.scopes.setdefault(_key(scope), dict(scope))

    # -- writes ---------------------------------------------------------------------------------

    def attempt(self, operation: str, *args: Any, may_fail: bool = False) -> Any:
        """Call ``operation`` (``add``, ``update``, ``delete``, ``delete_all`` or ``get``) with
        ``args``: a refusal the model expects comes back as the error; a call that lands is
        checked and committed. With ``may_fail`` (a store fault armed), BackendUnavailable is a
        call that changed nothing. Any other outcome fails."""
        expected, outcome = self._made(operation, args, may_fail, self.policy.stored.values())
        if isinstance(outcome, KbconformError):
            return outcome
        self.remember(args[0])
        if operation == "add":
            problems = self.policy.check_id(outcome)
            assert not problems, f"add{call_args(args)}: {'; '.join(problems)}"
            self.policy.commit_add(args[0], args[1], args[2], outcome)
        elif operation == "get":
            got = {getattr(outcome, "id", None): getattr(outcome, "text", None)}
            assert got == expected, f"get{call_args(args)} returned {got!r}; expected {expected!r}"
        else:
            getattr(self.policy, f"commit_{operation}")(*args)
        return outcome

    def text(self, what: str = TOPIC) -> str:
        """A memory's text: a unique token, then ``what``."""
        return f"kbm{self.rng.getrandbits(48):012x} {what}"

    def add(
        self, scope: Mapping[str, str], what: str = TOPIC, metadata: Mapping[str, Any] | None = None
    ) -> str:
        """A memory under ``scope`` that must land; its id."""
        return str(self.call("add", scope, self.text(what), dict(metadata or {"topic": "billing"})))

    # -- reads ----------------------------------------------------------------------------------

    @property
    def everything(self) -> int:
        """A search limit at least the size of every scope."""
        return min(MAX_LIMIT, len(self.policy.memories) + 1)

    def attempt_read(
        self,
        facade: str,
        scope: object,
        text: str = PROBE,
        limit: int | None = None,
        where: object = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Read as ``scope`` through ``facade`` (``search`` or ``list``): the hits, checked
        against the model's scope (exactly, or ``limit`` of it), or the error it expects."""
        if facade == "search":
            limit = self.everything if limit is None else limit
            expected = self.policy.search(scope, limit, where)
            who = f"search as {scope!r} (limit {limit}, where {where!r})"

            def made() -> list[Any]:
                return list(self.backend.search(scope, text, limit, where))
        else:
            expected, limit = self.policy.listed(scope), None
            who = f"list as {scope!r}"

            def made() -> list[Any]:
                return list(self.backend.list(scope))

        sent = [text] if facade == "search" else []
        outcome = judged(who, expected, made, self.policy.stored.values(), sent, may_fail, hits_count)
        if isinstance(outcome, KbconformError):
            return outcome
        assert not isinstance(expected, Refused)
        problems = self.policy.hit_problems(expected, outcome, limit)
        assert not problems, f"{who}: {'; '.join(problems)}"
        self.remember(scope)
        hits: list[Any] = outcome
        return hits

    def read(self, facade: str, scope: object, **options: Any) -> set[str]:
        """A read the model allows: the ids it returned (checked as :meth:`attempt_read` says)."""
        outcome = self.attempt_read(facade, scope, **options)
        assert isinstance(outcome, list), f"{facade} as {scope!r} raised {outcome!r}"
        return {hit.id for hit in outcome}

    def refuse_read(self, facade: str, scope: object, **options: Any) -> KbconformError:
        """A read the model refuses: it must raise exactly that error."""
        outcome = self.attempt_read(facade, scope, **options)
        assert isinstance(outcome, KbconformError), f"{facade} as {scope!r} returned {outcome!r}"
        return outcome

    def readers(self) -> list[dict[str, str]]:
        """Every scope :meth:`check` reads as: each scope written under or read, and each of its
        leading runs (a wider scope that must see it)."""
        found: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        for scope in self.scopes.values():
            items = list(scope.items())
            for n in range(1, len(items) + 1):
                if self.policy.valid(dict(items[:n])):
                    found.setdefault(tuple(items[:n]), dict(items[:n]))
        return list(found.values())

    def check(self) -> int:
        """Every read of every known scope equals the model; how many were neither empty nor
        everything (a read that could tell a leak, or a loss, from a correct backend)."""
        informative = 0
        for scope in self.readers():
            for facade in self.facades:
                hits = self.read(facade, scope)
                informative += 0 < len(hits) < len(self.policy.memories)
        return informative


def no_scopes(policy: ScopePolicy) -> dict[str, object]:
    """Callers that name no scope (M1), by what they are: None, values that are not scopes, and
    scopes that name nothing (empty, an undeclared key, an empty or non-string value, a value
    with a reserved character, under prefix a key set that is no leading run)."""
    first = policy.keys[0]
    found: dict[str, object] = {
        "None": None,
        "an empty scope": {},
        f"{first} empty": {first: ""},
        f"{first} None": {first: None},
        f"{first} a number": {first: 1},
        f"{first} a list": {first: ["alice"]},
        "a scope value alone": "alice",
        "a list of scope values": ["alice"],
        "an undeclared key": {"tenant": "alice"},
        "an undeclared key beside a declared one": {first: "alice", "kbconform_other": "x"},
    }
    if len(policy.keys) > 1 and policy.prefix:
        found[f"{policy.keys[1]} without {first}"] = {policy.keys[1]: "planner"}
    if policy.reserved:
        found["a value with a reserved character"] = {first: f"alice{policy.reserved[0]}x"}
    return found


@dataclass
class ScopeWorld:
    """The seeded scopes, and the model that holds what they wrote."""

    policy: ScopePolicy
    readers: tuple[Reader, ...]

    def size(self, facade: str) -> int:
        return len(self.policy.memories)

    def expected(self, facade: str, reader: Reader) -> Reading:
        scope = self.policy.listed(reader.identity)
        assert not isinstance(scope, Refused), f"{reader.label} is no identity to the model"
        return Reading(dict(scope), len(scope))

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        if facade == "search":
            hits = list(backend.search(reader.identity, PROBE, min(MAX_LIMIT, self.size(facade) + 1), None))
        else:
            hits = list(backend.list(reader.identity))
        return Reading({hit.id: hit.text for hit in hits}, len(hits))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        if facade == "search":
            return backend.search(identity, PROBE, 10, None)
        return backend.list(identity)

    def no_identities(self) -> dict[str, object]:
        return no_scopes(self.policy)

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, self.policy.stored.values())


#: The seeded layout: a scope as values of the declared keys in order (a second value is used
#: only when the manifest declares a second key), and how many memories it writes. "Alice" and
#: "alice2" are a case and a prefix twin of "alice"; carol writes nothing.
LAYOUT: tuple[tuple[tuple[str, ...], int], ...] = (
    (("alice",), 2),
    (("alice", "planner"), 2),
    (("alice", "writer"), 1),
    (("bob",), 1),
    (("bob", "planner"), 2),
    (("Alice",), 1),
    (("alice2",), 1),
    (("carol",), 0),
)


def _claims(policy: ScopePolicy, rng: random.Random) -> dict[str, str]:
    """Metadata naming other scopes' keys, as client data does (M7): it changes nothing."""
    return {"topic": "billing", **{key: rng.choice(("bob", "planner", "alice")) for key in policy.keys}}


@dataclass(frozen=True)
class ScopeIsolation:
    """The ``memory-scope`` profile: scopes of the layout above, each writing memories whose
    metadata claims other scopes' keys."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> ScopeWorld:
        d = ScopeDriver.of(backend, self.manifest, rng)
        seen: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        for values, count in LAYOUT:
            scope = d.scope(*values)
            if _key(scope) in seen:
                continue  # one declared key: ("alice", "planner") is ("alice",)
            seen[_key(scope)] = scope
            for n in range(count):
                d.add(scope, f"{TOPIC} said under {scope_text(scope)} {n}", _claims(d.policy, rng))
        if len(d.policy.keys) > 1 and not d.policy.prefix:
            seen[(("x", "x"),)] = {d.policy.keys[1]: "planner"}  # every user's planner
        readers = tuple(Reader(f"scope {scope_text(scope)}", Named(scope)) for scope in seen.values())
        return ScopeWorld(d.policy, readers)

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)


def ids(hits: Iterable[Any]) -> set[str]:
    return {hit.id for hit in hits}
