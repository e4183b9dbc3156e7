"""The language-neutral contract: schemas, strict JSON reading and validation.

Each name loads its module on first use: the identity rules (``kbconform.identity``) read the
schemas without loading a validator engine, and the pytest plugin imports nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbconform.contract._json import is_plain, plain, problems, token
    from kbconform.contract._jsonio import Item, iter_records, loads
    from kbconform.contract._rules import IDENTITY_RULES
    from kbconform.contract._schemas import (
        BASE_URI,
        bundled,
        check_name,
        load,
        manifest_branch,
        registry,
        schema_names,
        text,
        uri,
        vectors,
    )
    from kbconform.contract._validate import explain, is_valid, validate

#: Where each public name lives.
_HOMES = {
    "is_plain": "_json",
    "plain": "_json",
    "problems": "_json",
    "token": "_json",
    "Item": "_jsonio",
    "iter_records": "_jsonio",
    "loads": "_jsonio",
    "IDENTITY_RULES": "_rules",
    **dict.fromkeys(
        (
            "BASE_URI",
            "bundled",
            "check_name",
            "load",
            "manifest_branch",
            "registry",
            "schema_names",
            "text",
            "uri",
            "vectors",
        ),
        "_schemas",
    ),
    **dict.fromkeys(("explain", "is_valid", "validate"), "_validate"),
}


def __getattr__(name: str) -> Any:
    # Bound here on first use, so later look-ups never come back.
    if name not in _HOMES:
        raise AttributeError(f"module 'kbconform.contract' has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f"kbconform.contract.{_HOMES[name]}"), name)
    return value


__all__ = [
    "BASE_URI",
    "IDENTITY_RULES",
    "Item",
    "bundled",
    "check_name",
    "explain",
    "is_valid",
    "iter_records",
    "load",
    "loads",
    "manifest_branch",
    "registry",
    "schema_names",
    "text",
    "uri",
    "validate",
    "vectors",
    "is_plain",
    "plain",
    "problems",
    "token",
]
