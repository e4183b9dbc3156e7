"""The read-side filter: built from the principal only, AND-combined with a checked client clause.

Scope = the principal's own tenant and its readable shared namespaces, and the visibility rule:
``team`` and ``public`` chunks are readable in scope, ``private`` ones only by their origin agent.
Both are written as positive matches (``$in``/``$eq``), so a row that lacks a stamp matches
nothing. A client clause may not mention a reserved key, may not be empty, and may use only the
operators below; every violation is a :class:`ContractViolation` (contract ``where``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.errors import ContractViolation, Problem
from kbconform.identity import RESERVED_FIELDS, Principal

READABLE_VISIBILITY = ("public", "team")
_FIELD_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})
_SCALARS = (str, int, float, bool)


def _bad(pointer: str, keyword: str, expected: str, got: object) -> ContractViolation:
    return ContractViolation(contract="where", problems=(Problem(pointer, keyword, expected, repr(got)),))


def check_where(where: object, pointer: str = "") -> list[dict[str, Any]]:
    """The client clause as a list of single-key clauses to AND in; raise when it could widen scope."""
    if not isinstance(where, Mapping) or not where:
        raise _bad(pointer, "type", "a non-empty where clause (or none at all)", where)
    clauses: list[dict[str, Any]] = []
    for key, value in where.items():
        at = f"{pointer}/{key}"
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise _bad(at, "minItems", f"a non-empty list of clauses under {key}", value)
            parts = [_combine(check_where(part, f"{at}/{i}")) for i, part in enumerate(value)]
            clauses.append(parts[0] if len(parts) == 1 else {key: parts})
        elif not isinstance(key, str) or key.startswith("$"):
            raise _bad(at, "operator", "a metadata key, '$and' or '$or'", key)
        elif key in RESERVED_FIELDS:
            raise _bad(at, "reserved", "no identity or stamped key: the server scopes every read itself", key)
        else:
            clauses.append({key: _condition(at, value)})
    return clauses


def _condition(pointer: str, value: object) -> object:
    if isinstance(value, _SCALARS):
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        raise _bad(pointer, "type", "a scalar, or one {operator: operand}", value)
    [(operator, operand)] = value.items()
    if operator not in _FIELD_OPERATORS:
        raise _bad(
            f"{pointer}/{operator}", "operator", f"one of {', '.join(sorted(_FIELD_OPERATORS))}", operator
        )
    if operator in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand or not all(isinstance(v, _SCALARS) for v in operand):
            raise _bad(f"{pointer}/{operator}", "minItems", "a non-empty list of scalars", operand)
    elif not isinstance(operand, _SCALARS):
        raise _bad(f"{pointer}/{operator}", "type", "a string, number or boolean", operand)
    return {operator: operand}


def _combine(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


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
