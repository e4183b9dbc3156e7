"""The isolation profiles, registered in one place.

A :class:`Profile` says everything that differs between isolation models: which capabilities
its manifest may decline (and why one is declined), its read facades' names in stable test
ids, its harness-v1 operations and the contract their errors name, and, named as
``module:attribute`` and imported only when asked, its backend protocol, its manifest check,
its isolation (world, reads and model for the shared suite) and its suite modules. The kit
reaches per-profile behaviour only through :func:`profile`; nothing else compares a profile's
name.

The four built-in profiles are :func:`built_in`. Any installed package may add one through the
entry-point group ``kbconform.profiles`` (an entry names a :class:`Profile`), so a new isolation
model is a plug-in that edits no module of the kit.

Standard library only: the pytest plugin and the report import this at load time.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

#: The entry-point group a package registers its own profiles in.
ENTRY_POINTS = "kbconform.profiles"
#: The profile of a manifest that declares none (older manifests keep their meaning).
DEFAULT = "tenant-namespace"


#: What each level asks, in words any profile's levels fit (a profile says its own).
LEVEL_MEANINGS: Mapping[str, str] = {
    "L0": "contract (invalid calls refused)",
    "L1": "identity and write isolation",
    "L2": "read isolation (every facade, fail closed)",
    "L3": "lifecycle (programs of writes, failed writes)",
    "L4": "robustness (state machine)",
}


def _no_design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
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


@dataclass(frozen=True, slots=True)
class Profile:
    """One isolation profile, as the kit reaches it.

    ``capabilities`` are what a suite test of this profile may require (a ``requires=`` of its
    mark); ``declines(manifest, capability)`` says why a manifest declines one of them, or None.
    ``facade_ids`` renames a read facade in stable test ids where the name would collide with
    another profile's (``iso-01[get-kb]``). ``operations`` are the harness-v1 operations the
    profile adds to the common ones; ``contract`` is what a ``ContractViolation`` of one of them
    names when it crosses the wire (None: the operation's own name). ``design(manifest)`` says,
    one phrase each, the policy choices the manifest declares where the contract lets a design
    choose (a report shows them beside the level: the backend is judged against them).
    ``probes`` are the capabilities the kit needs to observe a rule rather than features a design
    may lack (``fault-injection``: without a store that can fail on cue, failing closed cannot be
    seen): a test skipped for a declined probe counts against its level, while a test skipped
    for any other declined capability is reported beside the level and never caps it.
    ``levels`` says in a few words what each level of this profile asks (shown after a run).
    ``skeleton`` is what a new backend's manifest declares for this profile beside its
    ``manifestVersion``, ``adapter`` and ``backend`` (every optional feature declined, with a
    reason): the scaffolds (``kbconform new-adapter``, ``kbconform new-harness``) write it.
    ``rule`` and ``guide`` are the spec section and the guide section the shared suite's tests
    name for this profile.

    The rest name ``module:attribute`` and are imported on first use (:meth:`load`):
    ``facades``, a function taking the :class:`~kbconform.adapter.Manifest` and returning the
    ``runtime_checkable`` protocols a backend must satisfy, each with its name (the profile's
    protocol, and the optional facades the manifest declares); ``check_manifest``, a function
    that validates a manifest mapping of this profile or raises ``ContractViolation``;
    ``isolation``, a callable taking the :class:`~kbconform.adapter.Manifest` and returning the
    profile's :class:`~kbconform.conformance.Isolation`; ``wire``, the harness-v1 table
    (:class:`~kbconform.harness.WireTable`). A profile from another package also names
    ``suites``, a package whose ``test_*.py`` modules hold its own suite tests (run beside the
    shipped shared suite, ``test_isolation.py``), and ``catalogue``, the list of its tests'
    catalogue entries (each with its ``profile``), which joins the installed catalogue; a
    built-in profile's tests are the shipped suites' folder named as the profile
    (``suites/tenant_namespace/``), listed in ``catalogue.json``.
    """

    name: str
    capabilities: tuple[str, ...]
    declines: Callable[[Mapping[str, Any], str], str | None]
    operations: tuple[str, ...]
    facades: str
    check_manifest: str
    isolation: str
    wire: str
    facade_ids: Mapping[str, str] = field(default_factory=dict)
    contract: str | None = None
    design: Callable[[Mapping[str, Any]], tuple[str, ...]] = _no_design
    probes: tuple[str, ...] = ("fault-injection",)
    levels: Mapping[str, str] = field(default_factory=lambda: LEVEL_MEANINGS)
    skeleton: Mapping[str, Any] = field(default_factory=dict)
    suites: str | None = None
    catalogue: str | None = None
    #: The spec section (``DOC.md#anchor``) the profile's read isolation is written in, and the
    #: adapter guide's section for the profile: what the shared tests (iso-01 to iso-03) name
    #: as their rule and guide for a backend of this profile (None: they name none).
    rule: str | None = None
    guide: str | None = None

    def suites_dir(self) -> Path | None:
        """The directory of :attr:`suites` (None for a profile whose tests are shipped)."""
        if self.suites is None:
            return None
        spec = importlib.util.find_spec(self.suites)
        if spec is None or not spec.submodule_search_locations:
            raise LookupError(f"the profile {self.name}'s suites {self.suites!r} is no package")
        return Path(next(iter(spec.submodule_search_locations)))

    def load(self, reference: str) -> Any:
        """The object ``reference`` (one of this profile's ``module:attribute`` fields) names."""
        module, _, attribute = reference.partition(":")
        return getattr(importlib.import_module(module), attribute)


@cache
def built_in() -> Mapping[str, Profile]:
    """The profiles the kit ships, by name, the default first."""
    from kbconform.profiles.kb_grant import PROFILE as KB_GRANT
    from kbconform.profiles.memory_scope import PROFILE as MEMORY_SCOPE
    from kbconform.profiles.project_pool import PROFILE as PROJECT_POOL
    from kbconform.profiles.tenant_namespace import PROFILE as TENANT_NAMESPACE

    return {p.name: p for p in (TENANT_NAMESPACE, PROJECT_POOL, KB_GRANT, MEMORY_SCOPE)}


@cache
def _installed() -> Mapping[str, Profile]:
    """The profiles installed packages register (entry-point group :data:`ENTRY_POINTS`)."""
    from importlib.metadata import entry_points

    found: dict[str, Profile] = {}
    for entry in entry_points(group=ENTRY_POINTS):
        loaded = entry.load()
        if not isinstance(loaded, Profile):
            raise TypeError(f"the entry point {entry.name} = {entry.value} is no kbconform Profile")
        if loaded.name in built_in() or loaded.name in found:
            raise ValueError(f"the entry point {entry.name} registers the profile {loaded.name!r} again")
        found[loaded.name] = loaded
    return found


def names() -> tuple[str, ...]:
    """Every registered profile's name: the built-in ones first, the default first of all."""
    return (*built_in(), *_installed())


def profile(name: str) -> Profile:
    """The profile called ``name``; LookupError naming the registered ones when there is none."""
    found = built_in().get(name) or _installed().get(name)
    if found is None:
        raise LookupError(f"no isolation profile {name!r}; expected one of {', '.join(names())}")
    return found


def profile_of(manifest: Mapping[str, Any]) -> str:
    """The isolation profile ``manifest`` declares (:data:`DEFAULT` when it declares none)."""
    return str(manifest.get("isolationProfile", DEFAULT))


def capabilities() -> tuple[str, ...]:
    """Every capability a registered profile's suite test may require, each once."""
    return tuple(dict.fromkeys(c for name in names() for c in profile(name).capabilities))
