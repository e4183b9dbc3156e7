"""kbconform: prove that a multi-tenant knowledge base keeps its tenants apart.

The public surface is small: validate instances against the contract, and the errors.
Everything else lives in subpackages (``kbconform.contract``, ``kbconform.cli``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbconform.errors import (
    BackendUnavailable,
    ContractViolation,
    Forbidden,
    KbconformError,
    NotFound,
    Problem,
    SpoofRejected,
    Unauthenticated,
)

if TYPE_CHECKING:
    from kbconform.contract import explain, is_valid, schema_names, validate

__version__ = "0.1.0"
_CONTRACT = ("explain", "is_valid", "schema_names", "validate")


def __getattr__(name: str) -> Any:
    # The validators load on first use: the pytest plugin imports this package, and loading it
    # must not load the schema engines (a project that never validates never pays for them).
    # Each name is then bound in this module, so later look-ups never come back here.
    if name not in _CONTRACT:
        raise AttributeError(f"module 'kbconform' has no attribute {name!r}")
    from kbconform import contract

    value = globals()[name] = getattr(contract, name)
    return value


__all__ = [
    "BackendUnavailable",
    "ContractViolation",
    "Forbidden",
    "KbconformError",
    "NotFound",
    "Problem",
    "SpoofRejected",
    "Unauthenticated",
    "__version__",
    "explain",
    "is_valid",
    "schema_names",
    "validate",
]
