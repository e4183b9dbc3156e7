"""The isolation profiles, registered in one place.

A profile is two things. Its :class:`Profile` is a descriptor of plain data, read without
importing anything: its name, the capabilities its manifest may decline (and why one is
declined), its read facades' names in stable test ids, its harness-v1 operations and the
contract their errors name, the design choices a manifest declares, its probes, what its levels
ask, a new backend's manifest, the spec and guide sections of the shared suite's tests. Its
:class:`Implementation` holds the heavy parts (the manifest check, the facades a backend must
have, the isolation the shared suite judges by, the harness-v1 table, its suite tests and their
catalogue entries); the descriptor names it once, as ``module:attribute``, and it is imported
on first use. The kit reaches per-profile behaviour only through :func:`profile` and the
descriptor's typed accessors; nothing else compares a profile's name.

Every profile registers the same way: its descriptor's ``module:attribute`` in one list,
:data:`BUILT_IN` for the kit's own, which the entry points of the group ``kbconform.profiles``
join (an entry names a :class:`Profile`), so a new isolation model is a plug-in that edits no
module of the kit.

Standard library only: the pytest plugin and the report import this at load time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # for the type checker only: the registry imports none of them
    from kbconform.adapter import Manifest
    from kbconform.conformance import Isolation
    from kbconform.harness import WireTable

#: The entry-point group a package registers its own profiles in.
ENTRY_POINTS = "kbconform.profiles"
#: The profile of a manifest that declares none (older manifests keep their meaning).
DEFAULT = "tenant-namespace"
#: The kit's own profiles, registered as a plug-in registers: each descriptor as
#: ``module:attribute``, the default first (harness-v1 lists their operations in this order).
BUILT_IN = (
    "kbconform.profiles.tenant_namespace:PROFILE",
    "kbconform.profiles.project_pool:PROFILE",
    "kbconform.profiles.kb_grant:PROFILE",
    "kbconform.profiles.memory_scope:PROFILE",
    "kbconform.profiles.store_tenancy:PROFILE",
)

#: The capabilities every profile has, whatever it registers (a test of the shared suite may
#: require one): a caller naming no identity refused, declined by a backend whose identity the
#: application supplies; callers served at once, declared at a manifest's top
#: (``kbconform._capabilities.SHARED`` holds each rule).
SHARED_CAPABILITIES = ("caller-identity", "concurrency")

#: What each level asks, in words any profile's levels fit (a profile says its own).
LEVEL_MEANINGS: Mapping[str, str] = {
    "L0": "contract (invalid calls refused)",
    "L1": "identity and write isolation",
    "L2": "read isolation (every facade, fail closed)",
    "L3": "lifecycle (programs of writes, failed writes)",
    "L4": "robustness (state machine)",
}


@dataclass(frozen=True, slots=True)
class Declared:
    """One design choice a manifest declares (``schemas/declared-design.md``): ``design``, what
    it is; ``price``, its consequence for a caller in one line (None: it costs a caller nothing,
    as a stricter choice); ``honoured``, False for a declaration that would hide another
    tenant's data a caller can reach, which the kit judges as if it were not declared (the
    verdict fails it, and says so beside the level)."""

    design: str
    price: str | None = None
    honoured: bool = True

    def line(self) -> str:
        """``design (price: ...)``, then `` (not honoured: judged a failure)`` for one the kit
        does not honour: how every rendering says a declaration beside the level."""
        said = self.design if self.price is None else f"{self.design} (price: {self.price})"
        return said if self.honoured else f"{said} (not honoured: judged a failure)"


def identity_declarations(manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
    """The declarations every profile's manifest may make about its callers and its records
    (``callerIdentity``, ``noIdentity``, ``recordSchema``; ``schemas/declared-design.md``), each
    priced. What a call naming no identity is (``noIdentity``, and a profile's own choices of
    the kind) is honoured only where the application supplies the identity: declared by a
    backend that takes its caller's identity, a caller naming none reaches it, and it is
    judged a failure."""
    application = manifest.get("callerIdentity") == "application"
    found: list[Declared] = []
    if application:
        found.append(
            Declared(
                "identity supplied by the application, not the backend",
                "a call naming no identity is the application's to refuse: the backend answers any"
                " identity it is handed (the tests of no identity are declined)",
            )
        )
    no_identity = manifest.get("noIdentity", "refused")
    if no_identity == "single-tenant":
        found.append(
            Declared(
                "with no identity it runs single-tenant",
                "a call naming no identity reads every tenant's data: safe only if every call"
                " carries an identity",
                honoured=application,
            )
        )
    elif no_identity == "default-user":
        found.append(
            Declared(
                "a call naming no identity is one shared default user",
                "every caller that names none reads and writes the same data",
                honoured=application,
            )
        )
    if manifest.get("recordSchema") == "looser":
        found.append(
            Declared(
                "its own record schema is looser than the kit's",
                "a strictness note: the contract tests (L0) fail and bar no higher level, never an"
                " isolation level",
            )
        )
    return tuple(found)


def _no_design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return ()


#: How a reason written by ``kbconform new-adapter`` or ``new-harness`` begins: a placeholder the
#: author replaces with the real reason, or offers the feature; until then the run names it.
PLACEHOLDER = "PLACEHOLDER (offer it, or replace this with the real reason): "


def placeholders(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The optional features ``manifest`` still declines with a scaffold's placeholder reason,
    and ``concurrency`` while its ``{"serial": REASON}`` is one."""
    declared = manifest.get("concurrency")
    serial = declared.get("serial") if isinstance(declared, Mapping) else None
    return tuple(
        sorted(
            [
                *(
                    feature
                    for feature, value in manifest.get("features", {}).items()
                    if isinstance(value, str) and value.startswith(PLACEHOLDER)
                ),
                *(["concurrency"] if isinstance(serial, str) and serial.startswith(PLACEHOLDER) else []),
            ]
        )
    )


def _no_declarations(manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
    return ()


def feature_declined(manifest: Mapping[str, Any], feature: str) -> str | None:
    """Why ``manifest`` declines the optional ``feature`` (the reason string it gives in
    ``features``), or None when it offers it (``true`` or its parameters). A feature the
    schema lets a manifest leave out (one added after the first manifests) is declined."""
    features = manifest["features"]
    if feature not in features:
        return f"the manifest does not declare {feature}"
    value = features[feature]
    return value if isinstance(value, str) else None


@runtime_checkable
class Implementation(Protocol):
    """A profile's heavy parts, loaded when a run asks for the profile (:meth:`Profile.parts`).

    ``facades(manifest)`` are the ``runtime_checkable`` protocols a backend must satisfy, each
    with its name (the profile's protocol, and the optional facades the manifest declares);
    ``check_manifest(data)`` validates a manifest mapping of this profile or raises
    ``ContractViolation``; ``isolation(manifest)`` is the profile's
    :class:`~kbconform.conformance.Isolation`, which the shared suite judges it by; ``wire()``
    its harness-v1 table; ``suites()`` the directory of its own suite tests (``test_*.py``,
    collected beside the shared ``test_isolation.py``); ``catalogue()`` the catalogue entries of
    its tests, the shared suite's included, as its tests' marks declare them (generated, each
    with its ``profile`` but the default profile's).
    """

    def facades(self, manifest: Manifest, /) -> Sequence[tuple[str, Any]]: ...

    def check_manifest(self, data: object, /) -> None: ...

    def isolation(self, manifest: Manifest, /) -> Isolation: ...

    def wire(self) -> WireTable: ...

    def suites(self) -> Path: ...

    def catalogue(self) -> Sequence[Mapping[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class Profile:
    """One isolation profile, as the kit reaches it: plain data, and its implementation.

    ``capabilities`` are what a suite test of this profile may require (a ``requires=`` of its
    mark); ``declines(manifest, capability)`` says why a manifest declines one of them, or None.
    ``operations`` are the harness-v1 operations the profile adds to the common ones.
    ``implementation`` names its :class:`Implementation` as ``module:attribute``, imported on
    first use (:meth:`parts`; the typed accessors :meth:`check_manifest`, :meth:`facades`,
    :meth:`isolation`, :attr:`wire`, :meth:`suites_dir` and :meth:`entries` go through it).
    ``facade_ids`` renames a read facade in stable test ids where the name would collide with
    another profile's (``iso-01[get-kb]``); ``contract`` is what a ``ContractViolation`` of one
    of its operations names when it crosses the wire (None: the operation's own name).
    ``design(manifest)`` says, one phrase each, the policy choices the manifest declares where
    the contract lets a design choose (a report shows them beside the level: the backend is
    judged against them); ``declarations(manifest)`` says them as :class:`Declared` records,
    each with its price (:meth:`declared` reads either). ``probes`` are the capabilities the kit
    needs to observe a rule rather than features a design may lack (``fault-injection``: without
    a store that can fail on cue, failing closed cannot be seen): a test skipped for a declined
    probe counts against its level, while a test skipped for any other declined capability is
    reported beside the level and never caps it. ``levels`` says in a few words what each level
    of this profile asks (shown after a run). ``skeleton`` is what a new backend's manifest
    declares for this profile beside its ``manifestVersion``, ``adapter`` and ``backend`` (every
    optional feature declined, with a reason): the scaffolds (``kbconform new-adapter``,
    ``kbconform new-harness``) write it. ``rule`` and ``guide`` are the profile's rules section
    (``DOC.md#anchor``) and the adapter guide's section the shared suite's tests (iso-01 to
    iso-03) name for this profile (None: they name none); ``rules`` names the profile's own rule
    of each shared test, by its id (``iso-01``) or, where its facades check different rules, its
    stable id (``iso-01[get-records]``): :meth:`rule_of` reads it, ``rule`` for a test it does not
    name.
    """

    name: str
    capabilities: tuple[str, ...]
    operations: tuple[str, ...]
    implementation: str
    declines: Callable[[Mapping[str, Any], str], str | None] = feature_declined
    facade_ids: Mapping[str, str] = field(default_factory=dict)
    contract: str | None = None
    design: Callable[[Mapping[str, Any]], tuple[str, ...]] = _no_design
    declarations: Callable[[Mapping[str, Any]], tuple[Declared, ...]] = _no_declarations
    probes: tuple[str, ...] = ("fault-injection",)
    levels: Mapping[str, str] = field(default_factory=lambda: LEVEL_MEANINGS)
    skeleton: Mapping[str, Any] = field(default_factory=dict)
    rule: str | None = None
    guide: str | None = None
    rules: Mapping[str, str] = field(default_factory=dict)

    def rule_of(self, test: str) -> str | None:
        """The spec anchor of the rule the shared test ``test`` (a stable id) checks for this
        profile: its stable id's entry in ``rules``, else its id's, else ``rule``."""
        return self.rules.get(test, self.rules.get(test.split("[", 1)[0], self.rule))

    def declared(self, manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
        """The design choices ``manifest`` declares, each with its price: the profile's
        ``declarations``, or, for a profile that gives only ``design``, each phrase unpriced."""
        found = self.declarations(manifest)
        return found if found else tuple(Declared(phrase) for phrase in self.design(manifest))

    def parts(self) -> Implementation:
        """The profile's implementation, imported on first use."""
        return _implementation(self.implementation)

    def check_manifest(self, data: object) -> None:
        """Validate ``data`` as a manifest of this profile, or raise ``ContractViolation``."""
        self.parts().check_manifest(data)

    def facades(self, manifest: Manifest) -> Sequence[tuple[str, Any]]:
        """The protocols a backend of ``manifest`` must satisfy, each with its name."""
        return self.parts().facades(manifest)

    def isolation(self, manifest: Manifest) -> Isolation:
        """The isolation the shared suite judges a backend of ``manifest`` by."""
        return self.parts().isolation(manifest)

    @property
    def wire(self) -> WireTable:
        """The profile's harness-v1 table: its handlers and its client's backend class."""
        return self.parts().wire()

    def suites_dir(self) -> Path:
        """The directory of the profile's own suite tests."""
        return self.parts().suites()

    def entries(self) -> tuple[dict[str, Any], ...]:
        """The catalogue entries of the profile's tests, as its tests' marks declare them."""
        return tuple(dict(entry) for entry in self.parts().catalogue())

    # -- the earlier interface, kept for callers that name a part and load it ------------------

    @property
    def catalogue(self) -> list[dict[str, Any]] | None:
        """The entries the shipped catalogue lacks: a plug-in's (:meth:`entries`), or None for a
        built-in profile, whose entries ``catalogue.json`` holds."""
        return None if self.name in built_in() else list(self.entries())

    def load(self, reference: object) -> Any:
        """The object ``reference`` names (``module:attribute``); any other value as it is."""
        if not isinstance(reference, str):
            return reference
        module, _, attribute = reference.partition(":")
        return getattr(importlib.import_module(module), attribute)


@cache
def _implementation(reference: str) -> Implementation:
    module, _, attribute = reference.partition(":")
    loaded: Implementation = getattr(importlib.import_module(module), attribute)
    return loaded


def _descriptor(where: str, reference: str) -> Profile:
    """The :class:`Profile` ``reference`` (``module:attribute``) names; TypeError naming
    ``where`` it was registered when it names anything else."""
    module, _, attribute = reference.partition(":")
    loaded = getattr(importlib.import_module(module), attribute)
    if not isinstance(loaded, Profile):
        raise TypeError(f"{where} = {reference} is no kbconform Profile")
    return loaded


@cache
def _registered() -> tuple[tuple[Profile, ...], tuple[Profile, ...]]:
    """The kit's own profiles (:data:`BUILT_IN`) and those installed packages register (the
    entry-point group :data:`ENTRY_POINTS`), each checked to be a profile registered once."""
    from importlib.metadata import entry_points

    own = tuple(_descriptor("the built-in profile", reference) for reference in BUILT_IN)
    found: dict[str, Profile] = {declared.name: declared for declared in own}
    for entry in entry_points(group=ENTRY_POINTS):
        loaded = _descriptor(f"the entry point {entry.name}", entry.value)
        if loaded.name in found:
            raise ValueError(f"the entry point {entry.name} registers the profile {loaded.name!r} again")
        found[loaded.name] = loaded
    return own, tuple(found.values())[len(own) :]


def built_in() -> Mapping[str, Profile]:
    """The profiles the kit ships, by name, the default first."""
    return {declared.name: declared for declared in _registered()[0]}


def names() -> tuple[str, ...]:
    """Every registered profile's name: the built-in ones first, the default first of all."""
    return tuple(declared.name for group in _registered() for declared in group)


def profile(name: str) -> Profile:
    """The profile called ``name``; LookupError naming the registered ones when there is none."""
    for group in _registered():
        for declared in group:
            if declared.name == name:
                return declared
    raise LookupError(f"no isolation profile {name!r}; expected one of {', '.join(names())}")


def profile_of(manifest: Mapping[str, Any]) -> str:
    """The isolation profile ``manifest`` declares (:data:`DEFAULT` when it declares none)."""
    return str(manifest.get("isolationProfile", DEFAULT))


def capabilities() -> tuple[str, ...]:
    """Every capability a registered profile's suite test may require, each once (the shared
    ones last)."""
    own = (c for name in names() for c in profile(name).capabilities)
    return tuple(dict.fromkeys((*own, *SHARED_CAPABILITIES)))
