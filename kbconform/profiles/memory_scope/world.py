"""The ``memory-scope`` profile's driver (a backend and :class:`ScopePolicy` driven together)
and its world for the shared isolation suite."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbconform.adapter import BackendOptions, Manifest
from kbconform.conformance import (
    PROBE,
    TOPIC,
    Driver,
    Reader,
    Reading,
    Refused,
    call_args,
    carried,
    charged,
    hits_count,
    judged,
    shortfall,
)
from kbconform.errors import KbconformError
from kbconform.profiles.memory_scope.model import ScopePolicy
from kbconform.profiles.memory_scope.protocol import MAX_LIMIT, scope_text

__all__ = ["LONG", "ScopeDriver", "ScopeIsolation", "ScopeWorld"]


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
    facades."""

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
        if isinstance(outcome, KbconformError) or isinstance(expected, Refused):
            return outcome  # refused, or a call the model lets land changing nothing (MayRefuse)
        self.remember(args[0])
        if operation == "add":
            problems = self.policy.check_id(outcome)
            with charged(*self.policy.reused(args[0], outcome), operation="add"):
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
        text: str | None = None,
        limit: int | None = None,
        where: object = None,
        may_fail: bool = False,
    ) -> list[Any] | KbconformError:
        """Read as ``scope`` through ``facade`` (``search`` or ``list``): the hits, checked
        against the model's scope (exactly, or ``limit`` of it), or the error it expects.

        A search with neither ``text`` nor ``limit`` asks for the whole scope: one search for
        :data:`PROBE`, or, from a backend that declares ``searchReturns: relevant`` (a relevance
        threshold), one search for each stored memory's text, whose hits together must be the
        scope (:meth:`_probes`)."""
        if facade == "list":
            expected = self.policy.listed(scope)
            return self._judged(
                f"list as {scope!r}",
                scope,
                expected,
                lambda: list(self.backend.list(scope)),
                [],
                None,
                may_fail,
                searched=False,
            )
        whole = text is None and limit is None
        limit = self.everything if limit is None else limit
        expected = self.policy.search(scope, limit, where)
        if whole and self.policy.relevant and not isinstance(expected, Refused) and expected:
            return self._probes(scope, expected, limit, where, may_fail)
        query = PROBE if text is None else text
        return self._judged(
            f"search as {scope!r} for {query[:40]!r} (limit {limit}, where {where!r})",
            scope,
            expected,
            lambda: list(self.backend.search(scope, query, limit, where)),
            [query],
            limit,
            may_fail,
            at_most=self.policy.relevant,
            widened=lambda: list(self.backend.search(scope, query, self.everything, where)),
        )

    def _probes(
        self, scope: object, expected: dict[str, str], limit: int, where: object, may_fail: bool
    ) -> list[Any] | KbconformError:
        """The whole scope of a search with a relevance threshold: a search for each stored
        memory's text (:meth:`_probe_texts`), none of whose hits may be out of scope; together,
        exactly the scope."""
        found: dict[str, Any] = {}
        for memory, own in self._probe_texts():
            outcome = self._judged(
                f"search as {scope!r} for memory {memory}'s text (limit {limit}, where {where!r})",
                scope,
                expected,
                lambda own=own: list(self.backend.search(scope, own, limit, where)),  # type: ignore[misc]
                [own],
                limit,
                may_fail,
                at_most=True,
            )
            if isinstance(outcome, KbconformError):
                return outcome
            found.update((hit.id, hit) for hit in outcome)
        hits = list(found.values())
        problems = self.policy.hit_problems(expected, hits, None)
        if problems:
            recall = self._recall(scope, expected, hits, None)
            with charged(effect=recall, operation="search" if recall else None):
                together = f"searches as {scope!r} for each stored memory's text, together"
                raise AssertionError(f"{together}: {'; '.join(problems)}")
        return hits

    def _probe_texts(self) -> list[tuple[str, str]]:
        """Every stored memory's id and text, one per distinct text: the probes of a backend with
        a relevance threshold (a memory of the scope is found by its own text; a memory of
        another scope is nearest its own text, where a leak of it shows), in the order the texts
        were first stored."""
        distinct = {text: memory for memory, text in self.policy.stored.items()}
        return [(memory, text) for text, memory in distinct.items()]

    def _judged(
        self,
        who: str,
        scope: object,
        expected: Refused | dict[str, str],
        made: Callable[[], list[Any]],
        sent: list[str],
        limit: int | None,
        may_fail: bool,
        *,
        at_most: bool = False,
        searched: bool = True,
        widened: Callable[[], list[Any]] | None = None,
    ) -> list[Any] | KbconformError:
        """``made()``, a read (a search, or with ``searched`` False a list), judged by the
        model's ``expected`` (:func:`judged`) and its hits by :meth:`ScopePolicy.hit_problems`,
        a search's shortfall charged as recall where it is one (:meth:`_recall`, ``widened``
        the same search with a limit past every scope); the scope is remembered for
        :meth:`check`."""
        outcome = judged(who, expected, made, self.policy.stored.values(), sent, may_fail, hits_count)
        if isinstance(outcome, KbconformError):
            return outcome
        assert not isinstance(expected, Refused)
        problems = self.policy.hit_problems(expected, outcome, limit, at_most=at_most)
        if problems:
            recall = self._recall(scope, expected, outcome, limit, widened) if searched else None
            with charged(effect=recall, operation="search" if recall else None):
                raise AssertionError(f"{who}: {'; '.join(problems)}")
        self.remember(scope)
        hits: list[Any] = outcome
        return hits

    def _recall(
        self,
        scope: object,
        expected: Mapping[str, str],
        hits: list[Any],
        limit: int | None,
        widened: Callable[[], list[Any]] | None = None,
    ) -> str | None:
        """``recall`` when a search's ``hits`` only fall short of ``expected`` (fewer than
        ``limit`` of it, nothing out of scope, no text altered: :func:`shortfall`), the scope's
        list shows every memory the search lacks (they are there, and the search did not find
        them), and the same search with a limit past every scope (``widened``) shows no more of
        the scope (no other scope's memories took the places: a shortfall that depends on
        another's data is not recall, ``schemas/read-filter.md``). None, the test's own charge,
        otherwise: a memory gone from the list too may have been deleted or moved by another's
        call, and without a list that cannot be told."""
        if "list" not in self.facades or not shortfall(expected, hits, limit):
            return None
        try:  # reads that only explain the failure: one that fails tells nothing
            if not set(expected) <= {hit.id for hit in self.backend.list(scope)}:
                return None
            if widened is not None and len(set(expected) & {hit.id for hit in widened()}) > len(hits):
                return None
        except Exception:
            return None
        return "recall"

    def read_within(self, scope: object, where: object) -> set[str]:
        """A search with ``where`` whose hits must lie within ``scope`` (each with its stored
        text, at most the scope), whatever the clause selects: for a clause whose meaning a
        backend may choose (conditions on a scope key), M9's "never widens"."""
        limit = self.everything
        unfiltered = self.policy.search(scope, limit, None)
        probes = [text for _, text in self._probe_texts()] if self.policy.relevant else [PROBE]
        found: set[str] = set()
        for text in probes:
            outcome = self._judged(
                f"search as {scope!r} for {text[:40]!r} (where {where!r})",
                scope,
                unfiltered,
                lambda text=text: list(self.backend.search(scope, text, limit, where)),  # type: ignore[misc]
                [text],
                limit,
                False,
                at_most=True,
            )
            assert isinstance(outcome, list), f"search as {scope!r} (where {where!r}) raised {outcome!r}"
            found |= {hit.id for hit in outcome}
        return found

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
    with a reserved character, under prefix a key set that is no leading run). None when the
    caller's identity is the application's (``callerIdentity: application``): what a call naming
    no scope means is then the application's choice, and no test sends one."""
    if policy.application_identity:
        return {}
    first = policy.keys[0]
    undeclared = next(
        key for key in ("tenant", "tenant_id", "kbconform_undeclared") if key not in policy.keys
    )
    found: dict[str, object] = {
        "None": None,
        "an empty scope": {},
        f"{first} empty": {first: ""},
        f"{first} None": {first: None},
        f"{first} a number": {first: 1},
        f"{first} a list": {first: ["alice"]},
        "a scope value alone": "alice",
        "a list of scope values": ["alice"],
        "an undeclared key": {undeclared: "alice"},
        "an undeclared key beside a declared one": {first: "alice", undeclared: "x"},
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
        """What ``facade`` shows ``reader``: a list, or a search for the whole scope (one for
        :data:`PROBE`; from a backend with a relevance threshold, one for :data:`PROBE` and one
        for each stored memory's text, their hits together)."""
        if facade == "list":
            hits = list(backend.list(reader.identity))
            return Reading({hit.id: hit.text for hit in hits}, len(hits))
        limit = min(MAX_LIMIT, self.size(facade) + 1)
        if not self.policy.relevant:
            hits = list(backend.search(reader.identity, PROBE, limit, None))
            return Reading({hit.id: hit.text for hit in hits}, len(hits))
        texts = [PROBE, *sorted(set(self.policy.stored.values()))]
        shown: dict[str, str] = {}
        for text in texts:
            found = list(backend.search(reader.identity, text, limit, None))
            shown.update((hit.id, hit.text) for hit in found)
        return Reading(shown, len(shown))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        if facade == "search":
            return backend.search(identity, PROBE, 10, None)
        return backend.list(identity)

    def no_identities(self) -> dict[str, object]:
        return no_scopes(self.policy)

    def writers(self) -> tuple[Reader, ...]:
        """The first three scopes: a user and its agents, or three users (one key)."""
        return self.readers[:3]

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        return backend.add(identity, f"{mark} {TOPIC} written at once", {"topic": "billing"})

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        problems = self.policy.check_id(answer)
        if not problems:
            text = f"{mark} {TOPIC} written at once"
            self.policy.commit_add(writer.identity, text, {"topic": "billing"}, str(answer))
        return problems

    def carried(self, error: BaseException) -> list[str]:
        return carried(error, self.policy.stored.values())


#: Two long scope values alike in their first 77 characters (a store that cuts values at a
#: column's width makes them one).
LONG = ("tenant-" + "0" * 70 + "-a", "tenant-" + "0" * 70 + "-b")

#: The seeded layout: a scope as values of the declared keys in order (a second and third value
#: are used only when the manifest declares that many keys), and how many memories it writes.
#: "Alice" and "alice2" are a case and a prefix twin of "alice"; a run of alice's planner uses
#: every key; the long values are look-alikes; carol writes nothing.
LAYOUT: tuple[tuple[tuple[str, ...], int], ...] = (
    (("alice",), 2),
    (("alice", "planner"), 2),
    (("alice", "writer"), 1),
    (("bob",), 1),
    (("bob", "planner"), 2),
    (("Alice",), 1),
    (("alice2",), 1),
    (("alice", "planner", "run-1"), 1),
    ((LONG[0],), 1),
    ((LONG[1],), 1),
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
