"""Evaluate a Chroma-dialect ``where`` clause against one row's metadata (for the exact store).

Semantics follow Chroma's: ``$ne`` and ``$nin`` match rows that lack the key; every other
comparison needs the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_COMPARE = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches(metadata: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """True when ``metadata`` satisfies ``where`` (None matches everything)."""
    if not where:
        return True
    for key, condition in where.items():
        if key == "$and":
            if not all(matches(metadata, part) for part in condition):
                return False
        elif key == "$or":
            if not any(matches(metadata, part) for part in condition):
                return False
        elif not _field(metadata, key, condition):
            return False
    return True


def textual(where: Mapping[str, Any]) -> bool:
    """True when every comparison of ``where`` is an equality or membership of text (``$eq``,
    ``$ne``, ``$in``, ``$nin`` of strings, the read filter's own): :func:`matches` then answers
    exactly as Chroma does, with no question of how numbers and booleans compare."""
    for key, condition in where.items():
        if key in ("$and", "$or"):
            if not all(isinstance(part, Mapping) and textual(part) for part in condition):
                return False
            continue
        if not isinstance(condition, Mapping):
            condition = {"$eq": condition}
        for operator, operand in condition.items():
            text = isinstance(operand, str)
            members = isinstance(operand, list | tuple) and all(isinstance(v, str) for v in operand)
            if not ((operator in ("$eq", "$ne") and text) or (operator in ("$in", "$nin") and members)):
                return False
    return True


def _field(metadata: Mapping[str, Any], key: str, condition: Any) -> bool:
    if not isinstance(condition, Mapping):
        condition = {"$eq": condition}
    present = key in metadata
    value = metadata.get(key)
    for operator, operand in condition.items():
        if operator == "$eq":
            ok = present and value == operand
        elif operator == "$ne":
            ok = not present or value != operand
        elif operator == "$in":
            ok = present and value in operand
        elif operator == "$nin":
            ok = not present or value not in operand
        elif operator in _COMPARE:
            ok = present and isinstance(value, (int, float)) and _COMPARE[operator](value, operand)
        else:
            raise ValueError(f"unsupported where operator {operator!r}")
        if not ok:
            return False
    return True
