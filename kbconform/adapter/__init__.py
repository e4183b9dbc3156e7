"""The adapter protocol and the capability manifest: how any backend is put under the suites.

See :mod:`kbconform.adapter._protocol` for the specification of every member.
"""

from kbconform._capabilities import CAPABILITIES, FEATURES, Capability, Feature
from kbconform.adapter._doubles import FaultPlan, FaultSwitch, RevisionMap
from kbconform.adapter._grant import (
    GRANT_INVALID,
    GRANT_READ_FACADES,
    MODEL_MISMATCH,
    GrantHitView,
    KbGrantBackend,
    KbView,
    grant_invalid,
    model_mismatch,
)
from kbconform.adapter._manifest import Manifest, check_backend, load_adapter
from kbconform.adapter._pool import (
    MAX_LIMIT,
    POOL_INVALID,
    POOL_READ_FACADES,
    PoolHitView,
    ProjectPoolBackend,
    pool_invalid,
)
from kbconform.adapter._protocol import (
    Adapter,
    AnswerView,
    Backend,
    BackendOptions,
    DeletionResultView,
    HitView,
    IngestResultView,
    RevisionResolver,
    SpoofMode,
    SpoofWarningView,
    SupportsAsk,
    SupportsCount,
    SupportsScan,
)

__all__ = [
    "CAPABILITIES",
    "FEATURES",
    "GRANT_INVALID",
    "GRANT_READ_FACADES",
    "MODEL_MISMATCH",
    "GrantHitView",
    "KbGrantBackend",
    "KbView",
    "grant_invalid",
    "model_mismatch",
    "MAX_LIMIT",
    "POOL_INVALID",
    "POOL_READ_FACADES",
    "PoolHitView",
    "ProjectPoolBackend",
    "pool_invalid",
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
    "check_backend",
    "load_adapter",
]
