"""The conformance levels and the test statuses, shared by the plugin, the CLI and the report.

Standard library only: the pytest plugin imports this at load time.
"""

from collections.abc import Mapping

LEVELS = ("L0", "L1", "L2", "L3", "L4")
# A test's status only moves up this ranking over its setup, call and teardown.
STATUSES = ("disabled", "skip", "pass", "fail", "error")
RANK = {status: rank for rank, status in enumerate(STATUSES)}

#: The manifest's value that makes L0 a strictness note (schemas/declared-design.md).
LOOSER_RECORDS = ("recordSchema", "looser")


def bars_higher(level: str, manifest: object) -> bool:
    """Whether ``level`` not earned bars every level above it. Each level does, but the contract
    level (L0) of a backend declaring its own record schema looser than the kit's
    (``recordSchema: looser``): its failures are strictness, a note beside the verdict, never an
    isolation level withheld."""
    key, value = LOOSER_RECORDS
    looser = isinstance(manifest, Mapping) and manifest.get(key) == value
    return not (level == LEVELS[0] and looser)


def recall_only(test: Mapping[str, object]) -> bool:
    """Whether a test's entry is a failure its test charged with recall alone (the ``effect`` it
    said when it failed, never a default): a read that showed less than its scope holds and
    nothing of another's. Such a failure is a note beside the verdict, never a level withheld:
    a level says what a caller can do to another's data (``schemas/read-filter.md``,
    *Recall is a note*)."""
    return test.get("status") == "fail" and test.get("effect") == "recall"
