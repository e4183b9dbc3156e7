"""The ``store-tenancy`` profile: a vector store's own tenants and databases, kept apart by the
store's authentication and authorization (``schemas/store-tenancy.md``; from Chroma's tenants
and databases behind token authentication and role-based authorization, and the tenancy of
Qdrant's scoped keys and Milvus's databases with RBAC)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.profiles import Declared, Profile


def _declarations(manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
    routes = manifest.get("config", {}).get("route") if isinstance(manifest.get("config"), Mapping) else None
    return (Declared(f"the server's API {routes} (config.route)"),) if isinstance(routes, str) else ()


def _design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(declared.design for declared in _declarations(manifest))


PROFILE = Profile(
    name="store-tenancy",
    rule="store-tenancy.md#the-rules",
    guide="the-store-tenancy-profile",
    rules={
        "iso-01[get-records]": "store-tenancy.md#s3",
        "iso-01[list-collections]": "store-tenancy.md#s5",
        "iso-02": "store-tenancy.md#s1",
        "iso-03": "store-tenancy.md#s9",
    },
    capabilities=("fault-injection", "fork"),
    operations=(
        "provisionStore",
        "createCollection",
        "getCollection",
        "listCollections",
        "countCollections",
        "modifyCollection",
        "deleteCollection",
        "forkCollection",
        "addRecords",
        "upsertRecords",
        "updateRecords",
        "getRecords",
        "queryRecords",
        "deleteRecords",
        "countRecords",
    ),
    implementation="kbconform.profiles.store_tenancy.implementation:IMPLEMENTATION",
    facade_ids={"get": "get-records", "list": "list-collections"},
    contract="store-tenancy",
    design=_design,
    declarations=_declarations,
    probes=(),
    skeleton={
        "isolationProfile": "store-tenancy",
        "readFacades": ["get"],
        "features": {
            "fault-injection": "not offered yet: the store cannot be switched off by the suites",
            "fork": "not offered yet",
        },
    },
    levels={
        "L0": "contract (malformed calls refused)",
        "L1": "identity (no credential, an unknown or malformed one, refused)",
        "L2": "tenancy (every path reaches only the credential's tenants and databases, its actions only)",
        "L3": "lifecycle (writes, modifications, deletes and forks change only what they name)",
        "L4": "robustness (refused calls change nothing)",
    },
)
