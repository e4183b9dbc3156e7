"""What the conformance suites stand on: the run context, the policy models of every isolation
profile, and the seeded data."""

from kbconform.conformance._data import (
    ENVELOPE_CLAIMS,
    Canaries,
    Canary,
    Principals,
    ingest_batches,
    record,
    seed_canaries,
)
from kbconform.conformance._deadline import (
    DEFAULT_CALL_TIMEOUT,
    DeadlineExceeded,
    NotImplementedFacade,
    Unimplemented,
    ending_tests,
)
from kbconform.conformance._effects import (
    Stored,
    changes,
    described,
    refusal,
    stored,
    stored_in_full,
    unrefused,
)
from kbconform.conformance._faults import ATTEMPTS, COUNTING, FAULT_KINDS, Fault, every_fault, fault_points
from kbconform.conformance._grant_model import GrantPolicy
from kbconform.conformance._model import ENVELOPE_REFUSALS, Ingest, Policy, Refused, Row, differences
from kbconform.conformance._pool_model import PoolPolicy
from kbconform.conformance._profiles import (
    DriverMachine,
    GrantDriver,
    Isolation,
    PoolDriver,
    Reader,
    Reading,
    World,
    isolation_for,
    not_principals,
)
from kbconform.conformance._run import DEFAULT_PAGE_SIZES, PROFILES, ProfileName, Run

__all__ = [
    "ATTEMPTS",
    "COUNTING",
    "FAULT_KINDS",
    "Fault",
    "every_fault",
    "fault_points",
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_PAGE_SIZES",
    "ENVELOPE_CLAIMS",
    "ENVELOPE_REFUSALS",
    "PROFILES",
    "DeadlineExceeded",
    "NotImplementedFacade",
    "Unimplemented",
    "ending_tests",
    "Canaries",
    "Canary",
    "DriverMachine",
    "GrantDriver",
    "GrantPolicy",
    "Ingest",
    "Isolation",
    "Policy",
    "PoolDriver",
    "PoolPolicy",
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
    "changes",
    "described",
    "ingest_batches",
    "isolation_for",
    "not_principals",
    "record",
    "refusal",
    "seed_canaries",
    "stored",
    "stored_in_full",
    "unrefused",
]
