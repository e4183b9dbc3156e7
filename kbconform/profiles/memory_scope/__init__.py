"""The ``memory-scope`` profile: agent memory written and read under a scope of named keys
(``schemas/memory-scope.md``; from the scoping of agent-memory libraries such as mem0's
``user_id``/``agent_id``/``run_id`` and LangGraph's namespaces)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.profiles import Declared, Profile, identity_declarations


def _declarations(manifest: Mapping[str, Any]) -> tuple[Declared, ...]:
    """The design choices a memory-scope manifest declares, each judged as declared and priced
    (``schemas/declared-design.md``)."""
    keys = manifest["scopeKeys"]
    application = manifest.get("callerIdentity") == "application"
    named = (
        f"a scope is a namespace path over {', '.join(keys)} (a leading run of them)"
        if manifest["scopeMatch"] == "prefix"
        else f"a scope names any of {', '.join(keys)}"
    )
    chosen = [Declared(named), *identity_declarations(manifest)]
    if manifest.get("emptyScope") == "everything":
        chosen.append(
            Declared(
                "an empty scope (an empty namespace prefix) reads every memory",
                "an application that passes an empty scope for a user reads every user's memories",
                honoured=application,
            )
        )
    by_id, checked = manifest["byIdScope"], manifest.get("byIdKeys")
    if by_id == "none":
        chosen.append(
            Declared(
                "by-id calls take no scope",
                "anyone holding a memory's id reads, changes and deletes it: the application must"
                " keep ids from other users",
            )
        )
    elif by_id == "exact":
        chosen.append(
            Declared("a by-id call reaches a memory only under exactly the scope it was written under")
        )
    elif checked and set(checked) != set(keys):
        others = ", ".join(key for key in keys if key not in checked)
        chosen.append(
            Declared(
                f"by-id calls check only {', '.join(checked)} of the scope",
                f"a caller with the same {', '.join(checked)} and another {others} reaches a memory by id",
            )
        )
    if manifest.get("searchReturns") == "relevant":
        chosen.append(
            Declared(
                "a search returns only memories above a relevance threshold: its hits are judged,"
                " not counted",
                "a search may return fewer memories than its limit",
            )
        )
    if manifest.get("searchOrder") == "recency":
        chosen.append(
            Declared(
                "a search returns the scope's newest memories first, whatever the query",
                "recall is by recency: an older memory nearer the query can be missed",
            )
        )
    return tuple(chosen)


def _design(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(declared.design for declared in _declarations(manifest))


PROFILE = Profile(
    name="memory-scope",
    rule="memory-scope.md#the-rules",
    guide="the-memory-scope-profile",
    rules={
        "iso-01": "memory-scope.md#m3",
        "iso-02": "memory-scope.md#m1",
        "iso-03": "memory-scope.md#m10",
    },
    capabilities=("fault-injection", "get", "update", "update-metadata", "delete", "delete-all", "filter"),
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
    declarations=_declarations,
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
            "update-metadata": "not offered yet",
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
