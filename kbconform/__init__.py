"""kbconform: prove that a multi-tenant knowledge base keeps its tenants apart.

The public surface is small: validate instances against the contract, and the errors.
Everything else lives in subpackages (``kbconform.contract``, ``kbconform.cli``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbconform.contract import explain, is_valid, schema_names, validate
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

__version__ = "0.1.0"
_CONTRACT = ("explain", "is_valid", "schema_names", "validate")


def __getattr__(name: str) -> Any:
    # Every name loads on first use: the pytest plugin imports this package, and loading it
    # must cost the standard library only (not attrs, nor the schema engines: a project that
    # never validates never pays for them). Each name is then bound in this module, so later
    # look-ups never come back here.
    if name not in __all__:
        raise AttributeError(f"module 'kbconform' has no attribute {name!r}")
    home = "kbconform.contract" if name in _CONTRACT else "kbconform.errors"
    value = globals()[name] = getattr(importlib.import_module(home), name)
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
