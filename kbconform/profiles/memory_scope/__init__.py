"""The ``memory-scope`` profile: agent memory written and read under a scope of named keys
(``schemas/memory-scope.md``; from the scoping of agent-memory libraries such as mem0's
``user_id``/``agent_id``/``run_id`` and LangGraph's namespaces)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.profiles import Profile


def _design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The design choices a memory-scope manifest declares, each judged as declared."""
    keys = ", ".join(manifest["scopeKeys"])
    named = (
        f"a scope is a namespace path over {keys} (a leading run of them)"
        if manifest["scopeMatch"] == "prefix"
        else f"a scope names any of {keys}"
    )
    chosen = [named]
    if manifest["byIdScope"] == "none":
        chosen.append("by-id calls take no scope: anyone holding a memory's id reads, changes and deletes it")
    elif manifest["byIdScope"] == "exact":
        chosen.append("a by-id call reaches a memory only under exactly the scope it was written under")
    if manifest.get("searchReturns") == "relevant":
        chosen.append(
            "a search returns only memories above a relevance threshold: its hits are judged, not counted"
        )
    return tuple(chosen)


PROFILE = Profile(
    name="memory-scope",
    rule="memory-scope.md#the-rules",
    guide="the-memory-scope-profile",
    capabilities=("fault-injection", "get", "update", "delete", "delete-all", "filter"),
    operations=(
        "addMemory",
        "searchMemories",
        "listMemories",
        "getMemory",
        "updateMemory",
        "deleteMemory",
        "deleteMemories",
    ),
    implementation="kbconform.profiles.memory_scope.implementation:IMPLEMENTATION",
    facade_ids={"search": "search-memories", "list": "list-memories"},
    contract="memory-scope",
    design=_design,
    skeleton={
        "isolationProfile": "memory-scope",
        "scopeKeys": ["user_id", "agent_id"],
        "scopeMatch": "keys",
        "byIdScope": "checked",
        "readFacades": ["search"],
        "features": {
            "fault-injection": "not offered yet: the store cannot be switched off by the suites",
            "get": "not offered yet",
            "update": "not offered yet",
            "delete": "not offered yet",
            "delete-all": "not offered yet",
            "filter": "not offered yet",
        },
    },
    levels={
        "L0": "contract (malformed calls refused)",
        "L1": "identity (no scope is no identity; writes land in exactly their scope)",
        "L2": "scope isolation (exact keys, by-id calls, filters, claimed scopes, fail closed)",
        "L3": "lifecycle (programs of writes, updates and deletes; failed writes change nothing)",
        "L4": "robustness (state machine)",
    },
)
