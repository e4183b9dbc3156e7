"""Judging a backend against a profile's policy model, for every profile alike.

A profile's suite reads a backend through its facades and compares what it shows with the
profile's model (:class:`World`, :class:`Isolation`, found through the profile registry by
:func:`isolation_for`); a call is judged by :func:`judged` (the model's answer, or the refusal it
expects, and never an error carrying stored text the call did not send). A profile's own world,
driver and model live in its package under ``kbconform.profiles``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from kbconform.adapter import BackendOptions, Manifest
from kbconform.errors import BackendUnavailable, ContractViolation, KbconformError, error_texts
from kbconform.profiles import profile

#: What the suites' stored texts are about: a search for it finds every one of them.
TOPIC = "deploy the billing service with the shared config file and rotate the keys"
#: The text a single read call searches with: no stored text holds it whole, nor any token.
PROBE = "what was said about the release plan and the deploy keys"


#: The kinds of caller a failure charges (:class:`Charge`); the report groups causes by them.
NO_IDENTITY = "no identity"
MALFORMED = "a malformed identity"
AS_OPERATOR = "a member acting as operator"
ANOTHER_TENANT = "another tenant"
LOOK_ALIKE = "a look-alike tenant"
ANOTHER_AGENT = "another agent"
CALLERS = (
    NO_IDENTITY,
    MALFORMED,
    AS_OPERATOR,
    ANOTHER_TENANT,
    LOOK_ALIKE,
    ANOTHER_AGENT,
    "a member",
    "an operator",
)
#: The effects a failure charges, gravest first: another's data read, written, deleted;
#: identity forged; a failed call that changed data; a write that replaced or merged into the
#: caller's own data (replaced); a call that fails while other callers are served (crashed); a
#: call that fails with an error the contract does not name (failed); input taken otherwise
#: than the contract says (strictness); a read short of its scope.
EFFECTS = (
    "read",
    "written",
    "deleted",
    "forged",
    "atomicity",
    "replaced",
    "crashed",
    "failed",
    "strictness",
    "recall",
)
#: Which way a backend took input otherwise than the contract says (a strictness failure's
#: ``direction``): it answered input the rule refuses, or refused input the rule lets land.
DIRECTIONS = ("accepted", "refused")

#: The attribute of a failure that says what it charges the backend with (:func:`charged`).
CHARGE = "kbconform_charge"


@dataclass(frozen=True, slots=True)
class Charge:
    """What a failure charges the backend with, as the test that found it knows it: the kind of
    caller that got through (``no identity``, ``another tenant``, ``a look-alike tenant``,
    ``another agent``, ``a member acting as operator``, ...) and the effect (:data:`EFFECTS`):
    the report groups failures into causes by them. None leaves the catalogue's word for the
    test. What the backend did, where the judging code saw it: which way it took input
    (``direction``, :data:`DIRECTIONS`) and the error it raised that the contract does not name
    (``raised``, with the effect ``failed``)."""

    caller: str | None = None
    effect: str | None = None
    #: The facade whose call failed, where a driver knows it (its family names the cause).
    operation: str | None = None
    direction: str | None = None
    raised: str | None = None

    def fields(self) -> dict[str, str]:
        """The charge as a report's test entry carries it (only what it says)."""
        said = (
            ("caller", self.caller),
            ("effect", self.effect),
            ("operation", self.operation),
            ("direction", self.direction),
            ("raised", self.raised),
        )
        return {k: v for k, v in said if v is not None}


def charge(
    error: BaseException,
    caller: str | None = None,
    effect: str | None = None,
    operation: str | None = None,
    *,
    direction: str | None = None,
    raised: str | None = None,
) -> BaseException:
    """``error`` carrying what it charges the backend with (:class:`Charge`); an earlier charge
    keeps what this one leaves None."""
    before = getattr(error, CHARGE, None)
    if isinstance(before, Charge):
        caller, effect = caller or before.caller, effect or before.effect
        operation = operation or before.operation
        direction, raised = direction or before.direction, raised or before.raised
    setattr(error, CHARGE, Charge(caller, effect, operation, direction, raised))
    return error


def error_name(error: BaseException) -> str:
    """The name of the error a backend raised: its type's, or behind a harness the type the
    harness named (its ``raised``)."""
    named = getattr(error, "raised", None)
    return (named if isinstance(named, str) and named else type(error).__name__)[:100]


def charge_of(error: BaseException) -> Charge | None:
    """What ``error`` charges the backend with; of several distinct failures (Hypothesis's
    group of them), the charge of the gravest effect (:data:`EFFECTS` is gravest first), the
    first found among equals."""
    found: list[Charge] = []
    pending: list[BaseException] = [error]
    while pending:  # the failure, then each failure it holds, in turn
        failure = pending.pop(0)
        charge = getattr(failure, CHARGE, None)
        if isinstance(charge, Charge):
            found.append(charge)
        inner = getattr(failure, "exceptions", None)
        if isinstance(inner, (list, tuple)):
            pending += [e for e in inner if isinstance(e, BaseException)]
    return gravest(found)


def gravest(charges: Iterable[Charge]) -> Charge | None:
    """Of ``charges``, the one of the gravest effect (:data:`EFFECTS` is gravest first), the
    first found among equals; None for none."""
    rank = {effect: number for number, effect in enumerate(EFFECTS)}
    return min(charges, key=lambda c: rank.get(c.effect or "", len(EFFECTS)), default=None)


@contextmanager
def charged(
    caller: str | None = None,
    effect: str | None = None,
    operation: str | None = None,
    *,
    direction: str | None = None,
) -> Iterator[None]:
    """Inside it, an assertion that fails carries ``caller``, ``effect``, ``operation`` and
    ``direction`` (:func:`charge`); another error that already carries a charge (a call that
    failed with an error the contract does not name, :func:`judged`) gains the ``operation``
    only, its own effect kept."""
    try:
        yield
    except AssertionError as error:
        charge(error, caller, effect, operation, direction=direction)
        raise
    except Exception as error:
        if isinstance(getattr(error, CHARGE, None), Charge):
            charge(error, operation=operation)
        raise


@contextmanager
def refuses(error: type[KbconformError], call: str) -> Iterator[list[KbconformError]]:
    """Inside it, ``call`` must raise ``error``: the list it yields holds the error raised. A
    call the backend answered fails charged as input accepted (``direction`` ``accepted``);
    any other error passes through."""
    raised: list[KbconformError] = []
    try:
        yield raised
    except error as refused:
        raised.append(refused)
        return
    failure = AssertionError(f"{call} must raise {error.__name__}; it was answered")
    raise charge(failure, direction="accepted")


@dataclass(frozen=True, slots=True)
class Refused:
    """The call must raise this error and change nothing. ``caller`` and ``effect`` are what a
    backend that does not refuse it is charged with (:class:`Charge`), where the model knows."""

    error: type[KbconformError]
    why: str
    caller: str | None = None
    effect: str | None = None


@dataclass(frozen=True, slots=True)
class MayRefuse(Refused):
    """The call may raise this error (and change nothing) or land: where the contract leaves
    the choice to the backend, both are judged conforming."""


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

    def effect(self, got: Reading) -> str:
        """What ``got`` charges the backend with, against this expected reading: ``read`` when it
        shows an item it may not, or alters a text; ``recall`` when it only shows too few."""
        if self.items is not None and got.items is not None:
            if set(got.items) - set(self.items) or any(
                got.items[i] != self.items[i] for i in set(got.items) & set(self.items)
            ):
                return "read"
            return "recall" if got.number <= self.number else "read"
        return "recall" if got.number < self.number else "read"


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
    return profile(manifest.profile).isolation(manifest)


def marks(texts: Iterable[str | None]) -> frozenset[str]:
    """The unique token every text the suites store starts with."""
    return frozenset(text.split()[0] for text in texts if text)


def carried(error: BaseException, stored: Iterable[str | None], sent: Iterable[str] = ()) -> list[str]:
    """The unique marks of ``stored`` texts that ``error`` carries, but for those the call ``sent``."""
    text = "\n".join(error_texts(error))
    return sorted(mark for mark in marks(stored) - marks(sent) if mark in text)


def wrong_error(expected: Refused, outcome: object) -> str | None:
    """Why ``outcome`` is not the refusal ``expected`` (a ``ContractViolation`` must carry the
    code the model names), or None when it is."""
    if not isinstance(outcome, expected.error):
        return f"expected {expected.error.__name__} ({expected.why}); got {outcome!r}"
    if expected.error is ContractViolation:
        code = expected.why.split(":", 1)[0]
        if getattr(outcome, "code", None) != code:
            return f"expected {code} ({expected.why}); got {outcome!r}"
    return None


def judged(
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
    does an error that carries a ``stored`` text the call did not send; a failure charges what
    a refusal ``expected`` names (:func:`charged`) and which way the backend took the call
    (answered what the model refuses: ``accepted``; refused what it lets land: ``refused``).
    An error the contract does not name (a ``TypeError`` inside the backend) is charged as
    itself (the effect ``failed``), never as the refusal's effect."""
    refused = expected if isinstance(expected, Refused) else Refused(KbconformError, "")
    try:
        with charged(refused.caller, refused.effect):
            return _judged(call, expected, make, stored, sent, may_fail, returned)
    except (AssertionError, KbconformError, NotImplementedError):
        raise  # judged, or a facade not implemented yet (the run says so apart)
    except Exception as error:
        charge(error, effect="failed", raised=error_name(error))
        raise


def _judged(
    call: str,
    expected: object,
    make: Callable[[], Any],
    stored: Iterable[str],
    sent: Iterable[str],
    may_fail: bool,
    returned: Callable[[Any], str],
) -> Any:
    try:
        outcome = make()
    except KbconformError as error:
        outcome = error
    if isinstance(outcome, KbconformError):
        told = carried(outcome, stored, sent)
        assert not told, f"{call}: its {type(outcome).__name__} carries stored text {told}"
        if may_fail and isinstance(outcome, BackendUnavailable):
            return outcome
        if not isinstance(expected, Refused):
            raise charge(AssertionError(f"{call} failed: {outcome!r}"), direction="refused")
        problem = wrong_error(expected, outcome)
        assert problem is None, f"{call}: {problem}"
        return outcome
    if isinstance(expected, Refused) and not isinstance(expected, MayRefuse):
        named = f"{expected.error.__name__} ({expected.why})"
        failure = AssertionError(f"{call} must raise {named}; it returned {returned(outcome)}")
        raise charge(failure, direction="accepted")
    return outcome


def crossed(got: Iterable[str], expected: Iterable[str], whose: Callable[[str], str]) -> tuple[str, str]:
    """How the ids a read ``got`` differ from those it is ``expected`` to, each named by
    ``whose`` it is (``beta's app/docs/b.md``), never by a bare id; and the effect it charges:
    ``read`` when it shows one it may not, else ``recall``. Empty when they are equal."""
    shown, wanted = set(got), set(expected)
    extra, missing = sorted(map(whose, shown - wanted)), sorted(map(whose, wanted - shown))
    said = [f"shows {', '.join(extra)}, which it may not read"] if extra else []
    said += [f"lacks {', '.join(missing)}, which it reads ({len(shown)} of {len(wanted)})"] if missing else []
    return "; ".join(said), "read" if extra else "recall"


def few(ids: Iterable[str], shown: int = 8) -> str:
    """Sorted ids, the first ``shown`` of them, and how many more (for a failure's message)."""
    listed = sorted(ids)
    more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
    return f"{listed[:shown]}{more}"


def scope_problems(
    scope: Mapping[str, str], hits: Iterable[Any], limit: int | None, at_most: bool = False
) -> list[str]:
    """How a read's ``hits`` (each with ``id`` and ``text``) differ from a scope the model holds,
    id to text: no id twice, every hit in ``scope`` with its text exactly as stored, and
    ``min(limit, len(scope))`` of them (with ``limit`` None, the whole scope; with ``at_most``,
    no more than that): with ``limit`` at least the scope's size, exactly the scope."""
    found = [(hit.id, hit.text) for hit in hits]
    ids = [i for i, _ in found]
    problems = []
    if len(set(ids)) != len(ids):
        problems.append(f"an id twice: {few(i for i in set(ids) if ids.count(i) > 1)}")
    foreign = {i for i in ids if i not in scope}
    if foreign:
        problems.append(f"hits out of scope: {few(foreign)}")
    altered = {i for i, text in found if i in scope and text != scope[i]}
    if altered:
        problems.append(f"hits whose text is not the stored text: {few(altered)}")
    wanted = len(scope) if limit is None else min(limit, len(scope))
    if len(found) > wanted or (len(found) < wanted and not at_most):
        missing = set(scope) - set(ids) if limit is None or limit >= len(scope) else set()
        problems.append(
            f"{len(found)} hits; expected {wanted} (limit {limit}, scope {len(scope)})"
            + (f", missing {few(missing)}" if missing else "")
        )
    return problems


def shortfall(scope: Mapping[str, str], hits: Iterable[Any], limit: int | None = None) -> bool:
    """Whether a read's ``hits`` only fall short of ``scope`` (id to text): fewer than
    ``min(limit, len(scope))`` of them (with ``limit`` None, the whole scope), no id twice, and
    every hit in the scope with its text as stored (nothing a read of the scope must not show)."""
    found = [(hit.id, hit.text) for hit in hits]
    ids = [i for i, _ in found]
    wanted = len(scope) if limit is None else min(limit, len(scope))
    return (
        len(found) < wanted
        and len(set(ids)) == len(ids)
        and all(i in scope and scope[i] == text for i, text in found)
    )


def hits_count(hits: Sequence[Any]) -> str:
    return f"{len(hits)} hits"


def sent_texts(args: Sequence[Any]) -> list[str]:
    """The texts a call sent (an episode's text, entity names): an error may echo them."""
    texts = [a for a in args if isinstance(a, str)]
    for arg in args:
        if isinstance(arg, Sequence) and not isinstance(arg, str):
            texts += [str(v) for item in arg if isinstance(item, Mapping) for v in item.values()]
    return texts


def call_args(args: Sequence[Any]) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"
