"""What the conformance suites stand on: the run context and the model of the seeded data."""

from kbconform.conformance._data import (
    Canaries,
    Canary,
    Principals,
    record,
    seed_canaries,
)
from kbconform.conformance._deadline import DEFAULT_CALL_TIMEOUT, DeadlineExceeded
from kbconform.conformance._model import Ingest, Policy, Refused, Row, differences
from kbconform.conformance._run import PROFILES, ProfileName, Run

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "PROFILES",
    "DeadlineExceeded",
    "Canaries",
    "Canary",
    "Ingest",
    "Policy",
    "Refused",
    "Row",
    "differences",
    "Principals",
    "ProfileName",
    "Run",
    "record",
    "seed_canaries",
]
