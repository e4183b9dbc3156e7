"""What the plugin keeps on pytest's objects (its stash keys), and what a suite test's mark
says of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kbconform.conformance import Run

#: The run (adapter, manifest, seed, Hypothesis profile, level), once an adapter is set.
RUN: pytest.StashKey[Run] = pytest.StashKey()
#: Each suite test's result by node id, gathered where the report is built.
RESULTS = pytest.StashKey[dict[str, dict[str, Any]]]()
#: The suite tests skipped for a capability the manifest declines, with its reason.
DECLINED = pytest.StashKey[dict[str, str]]()
#: The report, once built.
REPORT = pytest.StashKey[dict[str, Any]]()
#: What the run was asked to judge: the adapter, the harness command or its URL.
SPEC = pytest.StashKey[str]()
#: How the harness was reached (None: the adapter is in process).
HARNESS = pytest.StashKey["dict[str, str] | None"]()
#: The stable ids --kbconform-only selects (None: every test).
SELECTION = pytest.StashKey["frozenset[str] | None"]()
#: Why suite tests were deselected, by reason, with how many (said after collection).
DESELECTED = pytest.StashKey[dict[str, int]]()
#: Why the run ended before every test ran (the backend stopped answering), once it did.
STOPPED = pytest.StashKey[str]()
#: Whether Hypothesis stopped shrinking a test's failure at the run's budget.
SHRINK_STOPPED = pytest.StashKey[bool]()
#: When a suite test began (``time.perf_counter``) and the run's calls into the backend then.
STARTED = pytest.StashKey[tuple[float, int]]()
#: Catalogue mode: the profile, its maximal manifest (every value of every axis) and the file.
CATALOGUE: pytest.StashKey[tuple[str, dict[str, Any], Path]] = pytest.StashKey()
#: The name a result travels under in a test report's ``user_properties``.
PROPERTY = "kbconform"
#: The terminal's category for a suite test that ended at a call the backend has not
#: implemented yet: counted apart from the failures, one line for each call.
MISSING_CATEGORY = "not implemented"


def case(item: pytest.Item) -> pytest.Mark | None:
    """The ``kbconform`` mark of a suite test (None: not a suite test)."""
    return item.get_closest_marker("kbconform")


def stable_id(item: pytest.Item, mark: pytest.Mark) -> str:
    """A suite test's stable id: its mark's, with its parameters' id (``leak-01[query]``)."""
    callspec = getattr(item, "callspec", None)
    return str(mark.kwargs["id"]) + (f"[{callspec.id}]" if callspec is not None else "")


def transcript_of(config: pytest.Config) -> Any:
    """The transcript the run's adapter records (a harness-v1 adapter's), or None."""
    run = config.stash.get(RUN, None)
    return getattr(run.adapter, "transcript", None) if run is not None else None
