"""The language-neutral test vectors, run against every validator kbconform ships."""

from __future__ import annotations

import json

import pytest

from kbconform._resources import data_dir
from kbconform.contract import BASE_URI, loads
from tests.contract._validators import VALIDATORS, covers

_SUFFIX = ".schema.json"


def _cases() -> list[object]:
    cases = []
    for path in sorted((data_dir("schemas") / "vectors").glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            schema = group["schema"]["$ref"].removeprefix(BASE_URI).removesuffix(_SUFFIX)
            for test in group["tests"]:
                case_id = f"{path.stem}: {group['description']}: {test['description']}"
                cases.append(pytest.param(schema, test["data"], test["valid"], id=case_id))
    return cases


CASES = _cases()


def test_the_vectors_cover_every_schema_with_accepted_and_rejected_cases() -> None:
    """A vector suite with only valid (or only invalid) cases could not catch a broken validator."""
    by_schema: dict[str, set[bool]] = {}
    for case in CASES:
        schema, _, valid = case.values
        by_schema.setdefault(schema, set()).add(valid)
    assert by_schema == {name: {True, False} for name in by_schema}
    assert len(CASES) >= 100


@pytest.mark.parametrize(
    ("validator", "schema", "data", "valid"),
    [
        pytest.param(validator, *case.values, id=f"{case.id}-{validator}")
        for case in CASES
        for validator in sorted(VALIDATORS)
        if covers(validator, case.values[0])
    ],
)
def test_every_validator_gives_the_vector_verdict(
    validator: str, schema: str, data: object, valid: bool
) -> None:
    """Each validator accepts exactly the vectors marked valid."""
    assert VALIDATORS[validator](data, schema) is valid


@pytest.mark.parametrize(("schema", "data", "valid"), CASES)
def test_the_verdict_survives_a_json_round_trip(schema: str, data: object, valid: bool) -> None:
    """Serialising and strictly re-reading a vector changes neither the data nor its verdict."""
    again = loads(json.dumps(data))
    assert again == data
    assert VALIDATORS["jsonschema-rs"](again, schema) is valid
