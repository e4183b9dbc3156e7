"""kbconform.validate / is_valid / explain: the error lists every problem."""

from __future__ import annotations

import attrs
import pytest

import kbconform
from kbconform.errors import ContractViolation, Problem
from tests.records import MINIMAL_CHUNK

MINIMAL = MINIMAL_CHUNK


def test_a_valid_instance_returns_none() -> None:
    """Positive control."""
    assert kbconform.validate(MINIMAL, "parsed-chunk-v1") is None
    assert kbconform.is_valid(MINIMAL, "parsed-chunk-v1") is True


def test_the_violation_lists_every_problem_with_pointer_keyword_expected_and_got() -> None:
    """Three independent problems are three entries, sorted by pointer."""
    broken = {**MINIMAL, "tenantId": "Other", "line_start": 0}
    del broken["name"]
    with pytest.raises(ContractViolation) as caught:
        kbconform.validate(broken, "parsed-chunk-v1")
    problems = caught.value.problems
    assert [(p.pointer, p.keyword) for p in problems] == [
        ("/line_start", "minimum"),
        ("/name", "required"),
        ("/tenantId", "not"),
    ]
    assert problems[2].got == '"Other"'
    assert "lower-case" in problems[2].expected
    assert caught.value.code == "KB_CONTRACT_VIOLATION"
    assert "/tenantId" in str(caught.value)


def test_an_embedding_on_the_ingest_path_points_to_restore() -> None:
    """The message says where embeddings belong."""
    with pytest.raises(ContractViolation, match="restore path"):
        kbconform.validate({**MINIMAL, "embedding": [0.5]}, "parsed-chunk-v1")


@pytest.mark.parametrize("value", [(1, 2), {1, 2}, object(), b"bytes"])
def test_a_value_that_is_not_json_is_rejected_not_crashed_on(value: object) -> None:
    """Tuples, sets, bytes and arbitrary objects are not JSON: invalid, with a problem."""
    assert kbconform.is_valid({**MINIMAL, "content": value}, "parsed-chunk-v1") is False
    with pytest.raises(ContractViolation) as caught:
        kbconform.validate({**MINIMAL, "content": value}, "parsed-chunk-v1")
    assert caught.value.problems


def test_errors_are_frozen_records() -> None:
    """A raised error cannot be altered after the fact."""
    error = ContractViolation(contract="x", problems=(Problem("", "type", "an object", "1"),))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        error.contract = "y"  # type: ignore[misc]
