"""The identity tuple's string rules as plain checks (lengths, whole-string pattern, forbidden
characters), taken from identity-tuple-v1 itself: what the principal, the workspace scanner and
the pydantic models check a tenant id or a path with, without loading a validator engine."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kbconform.contract import _schemas


def string_rule(definition: Mapping[str, Any]) -> Callable[[str], str]:
    """A check equal to a schema's string definition: lengths, whole-string pattern, guards."""
    low, high = definition.get("minLength", 0), definition.get("maxLength")
    pattern = re.compile(definition["pattern"]) if "pattern" in definition else None
    guard = definition.get("not", {})
    forbidden = [re.compile(item["pattern"]) for item in guard.get("anyOf", [guard]) if "pattern" in item]
    expected = definition.get("description", "a valid string")

    def check(value: str) -> str:
        ok = low <= len(value) and (high is None or len(value) <= high)
        ok = ok and (pattern is None or pattern.fullmatch(value) is not None)
        ok = ok and not any(item.search(value) for item in forbidden)
        if not ok:
            raise ValueError(f"expected {expected}")
        return value

    return check


#: One compiled check per identity-tuple-v1 string definition (tenantId, repoSlug, ...).
IDENTITY_RULES: Mapping[str, Callable[[str], str]] = {
    name: string_rule(definition)
    for name, definition in _schemas.load("identity-tuple-v1")["$defs"].items()
    if definition.get("type") == "string"
}
