"""The ``tenant-namespace`` profile (the default): tenants' namespaces behind a server-side read
filter, stamps and spoof checks on write, deletion signals, backup and restore
(``schemas/stamping.md``, ``schemas/read-filter.md``, ``schemas/deletion-signaling.md``,
``schemas/backup.md``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.profiles import Declared, Profile, feature_declined, identity_declarations


def _declines(manifest: Mapping[str, Any], capability: str) -> str | None:
    if capability == "shared-namespace":
        return None if manifest["sharedNamespace"] else "the manifest declares sharedNamespace: null"
    if capability == "shared-namespace-grants":
        if not manifest["sharedNamespace"]:
            return "the manifest declares sharedNamespace: null"
        if manifest.get("sharedNamespaceReaders") == "every-tenant":
            return (
                "the manifest declares the shared namespace readable by every tenant "
                "(sharedNamespaceReaders: every-tenant)"
            )
        return None
    if capability == "id-profile":
        return (
            None
            if manifest["idProfile"]
            else "the manifest declares idProfile: null (the ids are the backend's own)"
        )
    if capability in ("spoof-overwrite", "spoof-reject"):
        mode = capability.removeprefix("spoof-")
        return None if mode in manifest["spoofModes"] else f"spoofModes does not declare {mode}"
    return feature_declined(manifest, capability)


def _declarations(manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
    """The design choices a tenant-namespace manifest declares, each priced
    (``schemas/declared-design.md``)."""
    shared, limit = manifest.get("sharedNamespace"), manifest.get("maxWriteBatch")
    chosen: list[Declared] = []
    if shared and manifest.get("sharedNamespaceReaders") == "every-tenant":
        chosen.append(
            Declared(
                f"shared namespace {shared} readable by every tenant",
                "nothing written there can be withheld from a tenant",
            )
        )
    elif shared:
        chosen.append(Declared(f"shared namespace {shared} readable by the principals granted it"))
    if limit is not None:
        chosen.append(Declared(f"at most {limit} records a write", "a bigger write is refused whole"))
    chosen.extend(identity_declarations(manifest))
    if manifest.get("operatorPaths") == "command-line":
        chosen.append(
            Declared(
                "export and restore are reached only from an operator's command line",
                "reachability, not a pass: the backup tests judge the operator's tool, which no"
                " tenant reaches",
            )
        )
    return tuple(chosen)


def _design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(declared.design for declared in _declarations(manifest))


PROFILE = Profile(
    name="tenant-namespace",
    rule="read-filter.md#fail-closed",
    guide="every-facade",
    rules={
        "iso-01": "read-filter.md#the-filter",
    },
    capabilities=(
        "client-where",
        "revision-boundary",
        "fault-injection",
        "escalation",
        "workspace-scan",
        "envelope",
        "sync",
        "maintenance",
        "shared-namespace",
        "shared-namespace-grants",
        "id-profile",
        "spoof-overwrite",
        "spoof-reject",
    ),
    declines=_declines,
    operations=(
        "ingest",
        "query",
        "get",
        "list",
        "count",
        "ask",
        "applyDeletionSignal",
        "export",
        "restore",
        "scan",
        "sync",
        "maintain",
    ),
    implementation="kbconform.profiles.tenant_namespace.implementation:IMPLEMENTATION",
    design=_design,
    declarations=_declarations,
    skeleton={
        "isolationProfile": "tenant-namespace",
        "readFacades": ["query", "get", "list"],
        "isolationModel": "metadata-filter",
        # reject: a spoofed write is refused whole, the simplest mode to get right first
        "spoofModes": ["reject"],
        "sharedNamespace": None,
        "idProfile": None,
        "features": {
            "client-where": "not offered yet: query takes no client where clause",
            "revision-boundary": "not offered yet: no revision resolver is wired in",
            "fault-injection": "not offered yet: the store cannot be switched off by the suites",
            "escalation": "not offered yet: spoof modes do not escalate",
            "workspace-scan": "not offered yet: parsing happens in the client",
        },
    },
    levels={
        "L0": "contract (invalid input refused)",
        "L1": "write isolation",
        "L2": "read isolation (every facade, fail closed)",
        "L3": "lifecycle (deletion, backup, atomic writes)",
        "L4": "robustness (state machine, scale)",
    },
)
