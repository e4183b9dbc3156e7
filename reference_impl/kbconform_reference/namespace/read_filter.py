"""The read-side filter: built from the principal only, AND-combined with a checked client clause.

Scope = the principal's own tenant and its readable shared namespaces, and the visibility rule:
``team`` and ``public`` chunks are readable in scope, ``private`` ones only by their origin agent.
Both are written as positive matches (``$in``/``$eq``), so a row that lacks a stamp matches
nothing. The client clause is checked by the kit's :func:`kbconform.adapter.check_where`
(``schemas/client-where.md``): every violation is a :class:`ContractViolation` (contract ``where``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.adapter import check_where
from kbconform.identity import Principal

__all__ = ["READABLE_VISIBILITY", "build_where", "check_where", "in_scope", "scope"]

READABLE_VISIBILITY = ("public", "team")


def scope(principal: Principal) -> list[dict[str, Any]]:
    """The clauses every read carries: tenant scope and visibility."""
    tenants = {"tenantId": {"$in": list(principal.readable_tenants)}}
    shared = {"visibility": {"$in": list(READABLE_VISIBILITY)}}
    if principal.agent_identity is None:
        return [tenants, shared]
    own_private = {
        "$and": [
            {"visibility": {"$eq": "private"}},
            {"originAgentIdentity": {"$eq": principal.agent_identity}},
        ]
    }
    return [tenants, {"$or": [shared, own_private]}]


def build_where(principal: Principal, client: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The store clause for a read: scope AND the client clause (checked)."""
    clauses = scope(principal) + ([] if client is None else check_where(client))
    return {"$and": clauses}


def in_scope(principal: Principal, metadata: Mapping[str, Any]) -> bool:
    """The final check on a hit, independent of the store's filtering."""
    if metadata.get("tenantId") not in principal.readable_tenants:
        return False
    visibility = metadata.get("visibility")
    if visibility in READABLE_VISIBILITY:
        return True
    return (
        visibility == "private"
        and principal.agent_identity is not None
        and metadata.get("originAgentIdentity") == principal.agent_identity
    )
