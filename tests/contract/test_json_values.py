"""Python values that are not JSON: one answer from is_valid, validate and explain, with a pointer."""

from __future__ import annotations

import collections
import decimal
import enum
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import kbconform
from kbconform.contract import explain, is_valid, validate
from kbconform.contract._json import MAX_DEPTH
from kbconform.errors import ContractViolation
from tests.records import MINIMAL_CHUNK

MINIMAL = MINIMAL_CHUNK
SCHEMA = "parsed-chunk-v1"


class _Str(str):
    pass


class Color(enum.Enum):
    RED = "red"
    NESTED = ("not", "json", float("nan"))


class Kind(str, enum.Enum):
    MODULE = "module-context"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _cycle_list() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


def _cycle_dict() -> dict[str, Any]:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def _answers(record: object) -> tuple[bool, tuple[Any, ...], tuple[Any, ...]]:
    """is_valid, explain, and the problems validate raises (empty when it returns None)."""
    try:
        validate(record, SCHEMA)
        raised: tuple[Any, ...] = ()
    except ContractViolation as error:
        raised = error.problems
    return is_valid(record, SCHEMA), explain(record, SCHEMA), raised


NOT_JSON = [
    pytest.param({"customMeta": {"x": float("nan")}}, "/customMeta/x", id="NaN"),
    pytest.param({"customMeta": {"x": float("inf")}}, "/customMeta/x", id="infinity"),
    pytest.param({"customMeta": {"x": [1, float("-inf")]}}, "/customMeta/x/1", id="minus-infinity"),
    pytest.param({"line_start": float("nan")}, "/line_start", id="NaN-where-the-validator-reads-null"),
    pytest.param({"customMeta": {"x": {1, 2}}}, "/customMeta/x", id="set"),
    pytest.param({"customMeta": {"x": frozenset()}}, "/customMeta/x", id="frozenset"),
    pytest.param({"customMeta": {"x": b"bytes"}}, "/customMeta/x", id="bytes"),
    pytest.param({"customMeta": {"x": object()}}, "/customMeta/x", id="object"),
    pytest.param({"customMeta": {"x": 1j}}, "/customMeta/x", id="complex"),
    pytest.param({"customMeta": {"x": decimal.Decimal("1")}}, "/customMeta/x", id="Decimal"),
    pytest.param({"line_start": decimal.Decimal("3")}, "/line_start", id="Decimal-read-as-a-number"),
    pytest.param({"content": np.str_("x")}, "/content", id="numpy-str"),
    pytest.param({"tenantId": _Str("acme")}, "/tenantId", id="str-subclass"),
    pytest.param({"customMeta": {"x": np.float64(1.5)}}, "/customMeta/x", id="numpy-float64"),
    pytest.param({"customMeta": {"x": np.int64(1)}}, "/customMeta/x", id="numpy-int64"),
    pytest.param({"customMeta": {1: "x"}}, "/customMeta/1", id="int-key"),
    pytest.param({"customMeta": {None: "x"}}, "/customMeta/None", id="None-key"),
    pytest.param({"customMeta": {(1, 2): "x"}}, "/customMeta/(1, 2)", id="tuple-key"),
    pytest.param({"content": "a\ud800b"}, "/content", id="lone-surrogate-unread"),
    pytest.param({"className": "\udfff"}, "/className", id="lone-surrogate-optional"),
    pytest.param({"name": "x\ud800"}, "/name", id="lone-surrogate-read"),
    pytest.param({"customMeta": {"x": "\ud800"}}, "/customMeta/x", id="lone-surrogate-nested"),
    pytest.param({"customMeta": {"\ud800": 1}}, "/customMeta/\\ud800", id="lone-surrogate-key"),
    pytest.param({"customMeta": {"x": _cycle_list()}}, "/customMeta/x/0", id="recursive-list"),
    pytest.param({"customMeta": _cycle_dict()}, "/customMeta/self", id="recursive-dict"),
    pytest.param({"customMeta": {"x": _nested(2_000)}}, "/customMeta/x" + "/0" * 254, id="2000-levels"),
    pytest.param({"customMeta": {"x": Color.NESTED}}, "/customMeta/x/2", id="enum-whose-value-is-not-json"),
]


@pytest.mark.parametrize(("change", "pointer"), NOT_JSON)
def test_a_value_that_is_not_json_gets_one_answer_with_a_pointer(
    change: dict[str, Any], pointer: str
) -> None:
    """is_valid is False, validate raises and explain says the same: where the value stops being JSON."""
    valid, explained, raised = _answers({**MINIMAL, **change})
    assert valid is False
    assert explained == raised
    assert [(problem.pointer, problem.keyword) for problem in explained] == [(pointer, "json")]


@pytest.mark.parametrize(
    "change",
    [
        {"customMeta": {"x": 1.5, "y": [1, "a", None, True], "z": {"k": "\U0001f600"}}},
        {"line_start": 3},
        {"content": "a\U0001f600b"},
        {"customMeta": {"x": _nested(MAX_DEPTH - 2)}},
    ],
    ids=["plain-values", "an-integer", "a-paired-surrogate", "nesting-at-the-limit"],
)
def test_plain_json_in_the_same_places_is_valid(change: dict[str, Any]) -> None:
    """Positive control: the same places holding JSON values are valid in all three answers."""
    assert _answers({**MINIMAL, **change}) == (True, (), ())


def test_one_level_past_the_depth_limit_is_refused_and_the_limit_itself_is_not() -> None:
    """A record is level 1 and customMeta level 2: MAX_DEPTH levels pass, one more does not."""
    at_limit = {**MINIMAL, "customMeta": {"x": _nested(MAX_DEPTH - 2)}}
    past = {**MINIMAL, "customMeta": {"x": _nested(MAX_DEPTH - 1)}}
    assert is_valid(at_limit, SCHEMA) is True
    assert is_valid(past, SCHEMA) is False
    assert explain(past, SCHEMA)[0].expected == f"at most {MAX_DEPTH} nested arrays and objects"


def test_a_deep_but_allowed_record_is_still_explained_when_something_else_is_wrong() -> None:
    """Nesting python-jsonschema cannot recurse through still gets problems, never a crash or ()."""
    record = {**MINIMAL, "tenantId": "Upper", "customMeta": {"x": _nested(MAX_DEPTH - 2)}}
    problems = explain(record, SCHEMA)
    assert is_valid(record, SCHEMA) is False
    assert any(problem.pointer == "/tenantId" for problem in problems)
    assert explain({**record, "tenantId": "lower"}, SCHEMA) == ()


def test_enum_members_are_read_as_their_values_by_every_answer() -> None:
    """A str enum and a plain enum count as the value they stand for, in all three answers."""
    record = {**MINIMAL, "kind": Kind.MODULE, "customMeta": {"color": Color.RED, Kind.MODULE: 1}}
    assert _answers(record) == (True, (), ())
    wrong = {**MINIMAL, "rootKind": Color.RED}  # "red" is not a root kind
    valid, explained, raised = _answers(wrong)
    assert (valid, [p.pointer for p in explained], explained) == (False, ["/rootKind"], raised)


def test_tuples_and_container_subclasses_are_arrays_and_objects_for_every_answer() -> None:
    """A tuple hashInputs is the same array to is_valid, validate and explain (and so is an OrderedDict)."""
    record = {**MINIMAL, "hashInputs": ("content", "name"), "customMeta": collections.OrderedDict(a=(1, 2))}
    assert _answers(record) == (True, (), ())
    broken = {**MINIMAL, "hashInputs": ("content", "content")}
    valid, explained, raised = _answers(broken)
    assert (valid, [p.keyword for p in explained], explained) == (False, ["uniqueItems"], raised)


def test_the_package_root_answers_like_the_contract_module() -> None:
    """kbconform.validate and friends are the contract's, bound once on first use."""
    record = {**MINIMAL, "customMeta": {"x": float("nan")}}
    assert kbconform.is_valid(record, SCHEMA) is False
    with pytest.raises(ContractViolation):
        kbconform.validate(record, SCHEMA)
    assert kbconform.validate(MINIMAL, SCHEMA) is None
    assert "validate" in vars(kbconform)


_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=4),
    st.sampled_from([b"x", {1}, decimal.Decimal("2"), np.str_("s"), Color.RED, Kind.MODULE, (1,)]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.text(max_size=3), st.integers(0, 3)), inner, max_size=3),
    ),
    max_leaves=8,
)


@given(
    place=st.sampled_from(["customMeta", "content", "className", "line_start", "name", "hashInputs"]),
    value=_VALUES,
)
def test_is_valid_validate_and_explain_never_disagree(place: str, value: Any) -> None:
    """Whatever Python value lands in a record, the three answers agree and nothing else is raised."""
    if place == "customMeta":
        value = {"v": value}
    valid, explained, raised = _answers({**MINIMAL, place: value})
    assert explained == raised
    assert valid is (explained == ())
