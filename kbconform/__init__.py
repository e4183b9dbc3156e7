"""kbconform: prove that a multi-tenant knowledge base keeps its tenants apart.

The public surface is small: validate instances against the contract, and the errors.
Everything else lives in subpackages (``kbconform.contract``, ``kbconform.cli``).
"""

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
