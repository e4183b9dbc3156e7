"""The ``kb-grant`` profile: knowledge bases on several stores, shared by grant
(``schemas/kb-grant.md``, from WeKnora's design)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.profiles import Profile, feature_declined

#: The capabilities of shape: the manifest's list that must hold two entries, and its noun.
_SHAPES = {"multi-store": ("stores", "store"), "multi-model": ("models", "model")}


def _declines(manifest: Mapping[str, Any], capability: str) -> str | None:
    if capability in _SHAPES:
        field, noun = _SHAPES[capability]
        listed = len(manifest[field])
        return None if listed >= 2 else f"the manifest lists {listed} {noun}; this test needs two"
    return feature_declined(manifest, capability)


PROFILE = Profile(
    name="kb-grant",
    rule="kb-grant.md#the-rules",
    guide="the-kb-grant-profile",
    rules={
        "iso-01": "kb-grant.md#g1",
        "iso-02": "kb-grant.md#g2",
        "iso-03": "kb-grant.md#g3",
    },
    capabilities=("fault-injection", "multi-store", "multi-model"),
    declines=_declines,
    operations=(
        "createTenant",
        "createKb",
        "shareKb",
        "revokeKb",
        "ingestDocuments",
        "searchKbs",
        "getKb",
        "listKbs",
        "deleteKb",
        "copyKb",
        "moveKb",
    ),
    implementation="kbconform.profiles.kb_grant.implementation:IMPLEMENTATION",
    # get and list would otherwise give ids the tenant-namespace profile has (iso-01[get])
    facade_ids={"search": "search-kbs", "get": "get-kb", "list": "list-kbs"},
    contract="kb-grant",
    skeleton={
        "isolationProfile": "kb-grant",
        "isolationModel": "metadata-filter",
        "readFacades": ["search", "get", "list"],
        "stores": [{"id": "main", "engine": "unknown: name the engine behind the store"}],
        "models": [{"name": "m-8", "dimension": 8}],
        "maxFanOut": 1,
        "groupDeadlineSeconds": 3.0,
        "features": {
            "fault-injection": "not offered yet: the store cannot be switched off by the suites",
        },
    },
    levels={
        "L0": "contract (malformed calls refused)",
        "L1": "ownership and grants (owner, grantee, stranger on every facade)",
        "L2": "stores (searches across stores and models, fail closed, copies and moves)",
        "L3": "lifecycle (programs of grants, writes, copies, moves and deletes)",
        "L4": "robustness (state machine)",
    },
)
