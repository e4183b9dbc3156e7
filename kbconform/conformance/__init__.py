"""What the conformance suites stand on: the run context, deadlines, store faults, judging a
backend against a policy model, the state machine base, and the tenant-namespace profile's
model and seeded data (each other profile's model, driver and world are in its package under
``kbconform.profiles``)."""

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
from kbconform.conformance._judging import Isolation, Reader, Reading, World, isolation_for, judged
from kbconform.conformance._machine import Driver, DriverMachine
from kbconform.conformance._model import ENVELOPE_REFUSALS, Ingest, Policy, Refused, Row, differences
from kbconform.conformance._run import DEFAULT_PAGE_SIZES, DEFAULT_SHRINK_BUDGET, PROFILES, ProfileName, Run

__all__ = [
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
    "DeadlineExceeded",
    "NotImplementedFacade",
    "Unimplemented",
    "ending_tests",
    "Canaries",
    "Canary",
    "Driver",
    "DriverMachine",
    "Ingest",
    "Isolation",
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
    "changes",
    "described",
    "ingest_batches",
    "isolation_for",
    "judged",
    "record",
    "refusal",
    "seed_canaries",
    "stored",
    "stored_in_full",
    "unrefused",
]
