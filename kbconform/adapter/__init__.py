"""The adapter protocol and the capability manifest: how any backend is put under the suites.

See :mod:`kbconform.adapter._protocol` for the protocol every isolation profile shares, and
each profile's package for its facades (``kbconform.profiles.<name>.protocol``). The
tenant-namespace, project-pool and kb-grant names this module offered before they moved there
are still found here (:data:`MOVED`), each imported from its profile's package when first asked.
"""

from typing import TYPE_CHECKING, Any

from kbconform._capabilities import CAPABILITIES, FEATURES, Capability, Feature
from kbconform.adapter._doubles import FaultPlan, FaultSwitch, RevisionMap
from kbconform.adapter._helpers import (
    DELETION_CODES,
    ENVELOPE_FIELDS,
    WHERE_OPERATORS,
    boundary_repo,
    check_deletion_signal,
    check_sync,
    check_where,
    deletion_code,
    deletion_invalid,
    envelope_claims,
    server_stamps,
    signal_paths,
    spoofed_fields,
)
from kbconform.adapter._manifest import (
    ADAPTER_DIR,
    Manifest,
    adapter_directory,
    check_backend,
    check_schema,
    load_adapter,
)
from kbconform.adapter._protocol import MAX_LIMIT, Adapter, BackendOptions, RevisionResolver, SpoofMode
from kbconform.adapter._where import sql_literal, where_literal, where_matches, where_sql

if TYPE_CHECKING:  # the moved names as the type checker sees them; at run time, __getattr__
    from kbconform.profiles.kb_grant.protocol import (
        GRANT_INVALID,
        GRANT_READ_FACADES,
        MODEL_MISMATCH,
        GrantHit,
        GrantHitView,
        KbGrantBackend,
        KbInfo,
        KbView,
        grant_invalid,
        model_mismatch,
    )
    from kbconform.profiles.project_pool.protocol import (
        POOL_INVALID,
        POOL_READ_FACADES,
        PoolHitView,
        ProjectPoolBackend,
        pool_invalid,
    )
    from kbconform.profiles.tenant_namespace.protocol import (
        AnswerView,
        Backend,
        DeletionResultView,
        HitView,
        IngestResultView,
        SpoofWarningView,
        SupportsAsk,
        SupportsCount,
        SupportsEnvelope,
        SupportsMaintain,
        SupportsScan,
        SupportsSync,
        SyncResultView,
    )

#: Where each name this module offered before its profile's package held it lives now.
MOVED = {
    **dict.fromkeys(
        (
            "GRANT_INVALID",
            "GRANT_READ_FACADES",
            "MODEL_MISMATCH",
            "GrantHit",
            "GrantHitView",
            "KbGrantBackend",
            "KbInfo",
            "KbView",
            "grant_invalid",
            "model_mismatch",
        ),
        "kbconform.profiles.kb_grant.protocol",
    ),
    **dict.fromkeys(
        ("POOL_INVALID", "POOL_READ_FACADES", "PoolHitView", "ProjectPoolBackend", "pool_invalid"),
        "kbconform.profiles.project_pool.protocol",
    ),
    **dict.fromkeys(
        (
            "AnswerView",
            "Backend",
            "DeletionResultView",
            "HitView",
            "IngestResultView",
            "SpoofWarningView",
            "SupportsAsk",
            "SupportsCount",
            "SupportsEnvelope",
            "SupportsMaintain",
            "SupportsScan",
            "SupportsSync",
            "SyncResultView",
        ),
        "kbconform.profiles.tenant_namespace.protocol",
    ),
}


def __getattr__(name: str) -> Any:
    """A moved name (:data:`MOVED`), imported from its profile's package."""
    if name in MOVED:
        import importlib

        value = getattr(importlib.import_module(MOVED[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ADAPTER_DIR",
    "CAPABILITIES",
    "FEATURES",
    "GRANT_INVALID",
    "GRANT_READ_FACADES",
    "MODEL_MISMATCH",
    "GrantHit",
    "GrantHitView",
    "KbGrantBackend",
    "KbInfo",
    "KbView",
    "grant_invalid",
    "model_mismatch",
    "MAX_LIMIT",
    "POOL_INVALID",
    "POOL_READ_FACADES",
    "PoolHitView",
    "ProjectPoolBackend",
    "pool_invalid",
    "DELETION_CODES",
    "ENVELOPE_FIELDS",
    "WHERE_OPERATORS",
    "boundary_repo",
    "check_deletion_signal",
    "check_sync",
    "check_where",
    "deletion_code",
    "deletion_invalid",
    "envelope_claims",
    "server_stamps",
    "signal_paths",
    "spoofed_fields",
    "sql_literal",
    "where_literal",
    "where_matches",
    "where_sql",
    "Adapter",
    "AnswerView",
    "Backend",
    "BackendOptions",
    "Capability",
    "DeletionResultView",
    "FaultPlan",
    "FaultSwitch",
    "Feature",
    "HitView",
    "IngestResultView",
    "Manifest",
    "RevisionMap",
    "RevisionResolver",
    "SpoofMode",
    "SpoofWarningView",
    "SupportsAsk",
    "SupportsCount",
    "SupportsScan",
    "SupportsSync",
    "SupportsEnvelope",
    "SupportsMaintain",
    "SyncResultView",
    "adapter_directory",
    "check_backend",
    "check_schema",
    "load_adapter",
]
