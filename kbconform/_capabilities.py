"""What a manifest offers, decided in one place.

From an adapter-manifest-v1 declaration follow: the read facades and spoof modes the suite
tests are parametrized over (:data:`AXES`), why a capability is declined (:func:`declines`,
:func:`skip_reason`), and which catalogue entries a run must report (:func:`applies`). The
plugin parametrizes and skips by these functions, :class:`kbconform.adapter.Manifest` answers
by them, and the report computes its expected tests by them, so the three cannot disagree.

Standard library only: the pytest plugin imports this when an adapter is set, the report at
load time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from kbconform._levels import LEVELS
from kbconform.profiles import DEFAULT, SHARED_CAPABILITIES, names, profile, profile_of

Feature = Literal[
    "client-where",
    "revision-boundary",
    "fault-injection",
    "escalation",
    "workspace-scan",
    "envelope",
    "sync",
    "maintenance",
]
FEATURES: tuple[Feature, ...] = get_args(Feature)
# What a suite test may require: an optional feature, or a shape the manifest declares.
Capability = Literal[
    Feature,
    "shared-namespace",
    "shared-namespace-grants",
    "id-profile",
    "spoof-overwrite",
    "spoof-reject",
    "multi-store",
    "multi-model",
    "get",
    "update",
    "update-metadata",
    "delete",
    "delete-all",
    "filter",
    "fork",
    "caller-identity",
    "concurrency",
]
CAPABILITIES: tuple[Capability, ...] = get_args(Capability)


@dataclass(frozen=True, slots=True)
class Axis:
    """A dimension the suite tests are parametrized over, taken from the manifest.

    ``fixture`` is the parameter a suite test asks for, ``key`` the catalogue's (and report's)
    key for the value it ran with, ``field`` the manifest's list of values, and ``unset`` the
    values without a manifest. A test without the parameter runs whatever the manifest declares.
    """

    fixture: str
    key: str
    field: str
    unset: tuple[str, ...]

    def values(self, manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
        """The values the tests asking for ``fixture`` run with, one test each."""
        return self.unset if manifest is None else tuple(manifest.get(self.field, ()))

    def ids(self, manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
        """How each of :meth:`values` is named in a stable test id (``leak-01[query]``): the
        value itself, or its profile's name for it (``Profile.facade_ids``)."""
        renamed = profile(profile_of(manifest or {})).facade_ids if self.field == "readFacades" else {}
        return tuple(renamed.get(value, value) for value in self.values(manifest))

    def runs_in(self, entry: Mapping[str, Any], manifest: Mapping[str, Any]) -> bool:
        """Whether the catalogue ``entry`` runs at all against ``manifest`` on this axis."""
        if self.key not in entry:  # a test not parametrized on this axis
            return True
        return entry[self.key] in manifest.get(self.field, ())


def _caller_identity(manifest: Mapping[str, Any]) -> str | None:
    if manifest.get("callerIdentity") != "application":
        return None
    return (
        "the backend takes no caller identity: the application supplies it (callerIdentity: "
        "application), so what a call naming none means is the application's choice"
    )


AXES = (
    Axis("kbconform_facade", "facade", "readFacades", ("query", "get", "list")),
    Axis("kbconform_spoof_mode", "spoofMode", "spoofModes", ("overwrite",)),
)


def declines(manifest: Mapping[str, Any], capability: str) -> str | None:
    """Why ``manifest`` does not offer ``capability``, or None when it does.

    The manifest's profile decides (``Profile.declines``): a feature is declined by a reason
    string in ``features``; in the tenant-namespace profile the shared namespace and the id
    profile by ``null`` and a spoof mode by leaving it out of ``spoofModes``; in the kb-grant
    profile ``multi-store`` and ``multi-model`` by a manifest listing fewer than two stores
    (models). A capability the manifest's profile does not define is declined.
    """
    if capability in SHARED:
        return SHARED[capability](manifest)
    name = profile_of(manifest)
    declared = profile(name)
    if capability not in declared.capabilities:
        return f"not part of the {name} profile"
    return declared.declines(manifest, capability)


def concurrency_declined(manifest: Mapping[str, Any]) -> str | None:
    """Why ``manifest`` does not offer callers at once (``schemas/concurrency.md``): the reason
    of ``{"serial": REASON}``, or that it declares nothing (a declaration added after the first
    manifests); None for ``"threads"``."""
    declared = manifest.get("concurrency")
    if declared == "threads":
        return None
    if isinstance(declared, Mapping) and isinstance(declared.get("serial"), str):
        return f"serial: {declared['serial']}"
    return "the manifest does not declare concurrency"


#: The capabilities every profile has, each declined by the rule beside it (whatever the profile):
#: ``caller-identity``, a caller naming no identity refused, which a backend whose identity the
#: application supplies declines (schemas/declared-design.md); ``concurrency``, callers served
#: at once, which a manifest declares at its top (schemas/concurrency.md).
SHARED = {"caller-identity": _caller_identity, "concurrency": concurrency_declined}
assert tuple(SHARED) == SHARED_CAPABILITIES, "each shared capability has its rule here"


def skip_reason(manifest: Mapping[str, Any], required: Iterable[str]) -> str | None:
    """Why a test requiring ``required`` is skipped against ``manifest``, or None if it runs."""
    reasons = []
    for capability in required:
        reason = declines(manifest, capability)
        if reason is not None:
            reasons.append(f"{capability} not offered: {reason}")
    return "; ".join(reasons) or None


def declined(manifest: Mapping[str, Any], required: Iterable[str]) -> tuple[str, ...]:
    """The capabilities of ``required`` that ``manifest`` declines, in order."""
    return tuple(capability for capability in required if declines(manifest, capability) is not None)


def caps(manifest: Mapping[str, Any], required: Iterable[str]) -> bool:
    """Whether a test requiring ``required``, skipped against ``manifest``, counts against its
    level: when no declined capability explains the skip, or one of them is a probe of the
    manifest's profile (``Profile.probes``). A skip for a design's declined capability never
    caps a level; the level's verdict names it instead (``report.levels``)."""
    name = profile_of(manifest)
    found = declined(manifest, required)
    return not found or name not in names() or bool(set(found) & set(profile(name).probes))


def applies(entry: Mapping[str, Any], manifest: Mapping[str, Any], level: str) -> bool:
    """Whether a run at ``level`` against ``manifest`` must report the catalogue ``entry`` (a
    test whose required capability is declined is reported, as a skip). An entry belongs to one
    profile (``profile``, the default when absent): another profile's tests are never asked."""
    return (
        entry.get("profile", DEFAULT) == profile_of(manifest)
        and LEVELS.index(entry["level"]) <= LEVELS.index(level)
        and all(axis.runs_in(entry, manifest) for axis in AXES)
    )
