"""What the conformance suites stand on: the run context, deadlines, store faults, judging a
backend against a policy model, the state machine base, and where the suites are. Each
profile's model, driver and world are in its package under ``kbconform.profiles``; the
tenant-namespace names this module offered before they moved there are still found here
(:data:`MOVED`), each imported from the profile's package when first asked."""

from typing import TYPE_CHECKING, Any

from kbconform.conformance._concurrency import (
    ROUNDS,
    ConcurrentCaller,
    Probing,
    Reach,
    Storm,
    concurrent_callers,
    concurrently,
    reach_of,
    storm,
)
from kbconform.conformance._deadline import (
    DEFAULT_CALL_TIMEOUT,
    BackendBroken,
    DeadlineExceeded,
    NotImplementedFacade,
    Tail,
    Unimplemented,
    batched,
    ending_tests,
)
from kbconform.conformance._effects import (
    Stored,
    Unrefused,
    changes,
    described,
    refusal,
    stored,
    stored_in_full,
    unrefused,
)
from kbconform.conformance._faults import ATTEMPTS, COUNTING, FAULT_KINDS, Fault, every_fault, fault_points
from kbconform.conformance._judging import (
    ANOTHER_AGENT,
    ANOTHER_TENANT,
    AS_OPERATOR,
    CALLERS,
    CHARGE,
    DIRECTIONS,
    EFFECTS,
    LOOK_ALIKE,
    MALFORMED,
    NO_IDENTITY,
    PROBE,
    TOPIC,
    Charge,
    Isolation,
    MayRefuse,
    Reader,
    Reading,
    Refused,
    World,
    call_args,
    carried,
    charge,
    charge_of,
    charged,
    crossed,
    error_name,
    few,
    hits_count,
    isolation_for,
    judged,
    refuses,
    scope_problems,
    shortfall,
)
from kbconform.conformance._machine import Driver, DriverMachine
from kbconform.conformance._run import DEFAULT_PAGE_SIZES, DEFAULT_SHRINK_BUDGET, PROFILES, ProfileName, Run
from kbconform.conformance._suites import catalogue_entries, shipped_suites
from kbconform.conformance._writes_at_once import (
    WRITE_ROUNDS,
    Writing,
    Written,
    judge_writes,
    writes_at_once,
)

if TYPE_CHECKING:  # the moved names as the type checker sees them; at run time, __getattr__
    from kbconform.profiles.tenant_namespace.data import (
        ENVELOPE_CLAIMS,
        Canaries,
        Canary,
        Principals,
        ingest_batches,
        record,
        seed_canaries,
    )
    from kbconform.profiles.tenant_namespace.model import ENVELOPE_REFUSALS, Ingest, Policy, Row, differences

#: Where each name this module offered before the tenant-namespace profile's package held it
#: lives now.
MOVED = {
    **dict.fromkeys(
        ("ENVELOPE_CLAIMS", "Canaries", "Canary", "Principals", "ingest_batches", "record", "seed_canaries"),
        "kbconform.profiles.tenant_namespace.data",
    ),
    **dict.fromkeys(
        ("ENVELOPE_REFUSALS", "Ingest", "Policy", "Row", "differences"),
        "kbconform.profiles.tenant_namespace.model",
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
    "ROUNDS",
    "ConcurrentCaller",
    "Probing",
    "Storm",
    "concurrent_callers",
    "concurrently",
    "reach_of",
    "Reach",
    "storm",
    "WRITE_ROUNDS",
    "Writing",
    "Written",
    "judge_writes",
    "writes_at_once",
    "ATTEMPTS",
    "COUNTING",
    "FAULT_KINDS",
    "Fault",
    "every_fault",
    "fault_points",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_SHRINK_BUDGET",
    "DEFAULT_PAGE_SIZES",
    "ENVELOPE_CLAIMS",
    "ENVELOPE_REFUSALS",
    "PROFILES",
    "BackendBroken",
    "DeadlineExceeded",
    "batched",
    "NotImplementedFacade",
    "Tail",
    "Unimplemented",
    "ending_tests",
    "Canaries",
    "Canary",
    "Driver",
    "DriverMachine",
    "Ingest",
    "ANOTHER_AGENT",
    "ANOTHER_TENANT",
    "AS_OPERATOR",
    "CALLERS",
    "CHARGE",
    "DIRECTIONS",
    "EFFECTS",
    "LOOK_ALIKE",
    "MALFORMED",
    "NO_IDENTITY",
    "Charge",
    "Isolation",
    "MayRefuse",
    "PROBE",
    "TOPIC",
    "Policy",
    "Reader",
    "Reading",
    "Refused",
    "Row",
    "differences",
    "Principals",
    "ProfileName",
    "Run",
    "Stored",
    "World",
    "catalogue_entries",
    "changes",
    "described",
    "ingest_batches",
    "isolation_for",
    "judged",
    "call_args",
    "carried",
    "charge",
    "charge_of",
    "charged",
    "crossed",
    "error_name",
    "refuses",
    "shortfall",
    "few",
    "hits_count",
    "scope_problems",
    "record",
    "refusal",
    "seed_canaries",
    "shipped_suites",
    "stored",
    "stored_in_full",
    "unrefused",
    "Unrefused",
]
