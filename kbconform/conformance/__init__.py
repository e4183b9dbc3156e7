"""What the conformance suites stand on: the run context and the model of the seeded data."""

from kbconform.conformance._data import (
    LAYOUT,
    TOPIC,
    Canaries,
    Canary,
    Principals,
    hit_ids,
    record,
    seed_canaries,
)
from kbconform.conformance._run import LEVELS, PROFILES, ProfileName, Run

__all__ = [
    "LAYOUT",
    "LEVELS",
    "PROFILES",
    "TOPIC",
    "Canaries",
    "Canary",
    "Principals",
    "ProfileName",
    "Run",
    "hit_ids",
    "record",
    "seed_canaries",
]
