"""The schema files themselves: well-formed, identified, documented, and loadable."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import pytest

from kbconform.contract import BASE_URI, bundled, is_valid, load, schema_names, uri

EXPECTED = {
    "adapter-manifest-v1",
    "backup-record-v1",
    "deletion-signal-v1",
    "identity-tuple-v1",
    "parsed-chunk-v1",
}


def test_the_contract_ships_the_expected_schemas() -> None:
    """The contract is exactly these schemas (a later one is added here on purpose)."""
    assert set(schema_names()) >= EXPECTED


@pytest.mark.parametrize("name", schema_names())
def test_each_schema_is_valid_draft_2020_12_with_an_id_and_title(name: str) -> None:
    """Every schema passes the 2020-12 metaschema and is identified under one base URI."""
    schema = load(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == uri(name)
    assert schema["$id"].startswith(BASE_URI)
    assert schema["title"]
    assert schema["description"]


def _properties(node: Any, where: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        for key, value in node.get("properties", {}).items():
            yield f"{where}/properties/{key}", value
        for key, value in node.items():
            yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _properties(value, f"{where}/{index}")


@pytest.mark.parametrize("name", schema_names())
def test_every_property_has_a_description(name: str) -> None:
    """An implementer in another language reads what each field means from the schema."""
    undocumented = [where for where, node in _properties(load(name)) if not node.get("description")]
    assert undocumented == []


@pytest.mark.parametrize("name", schema_names())
def test_a_bundled_schema_is_self_contained_and_agrees(name: str) -> None:
    """The bundled form has no cross-schema $ref and accepts what the original accepts."""
    flat = bundled(name)
    assert "https://" not in str({k: v for k, v in flat.items() if k not in ("$id", "$schema")})
    validator = jsonschema.Draft202012Validator(flat)
    sample = {"tenantId": "a", "repoSlug": "b", "rootKind": "bare-repo", "sourcePath": "c"}
    assert validator.is_valid(sample) == is_valid(sample, name)
    assert validator.is_valid({**sample, "tenantId": "A"}) == is_valid({**sample, "tenantId": "A"}, name)


def test_an_unknown_schema_name_is_a_clear_error() -> None:
    """The error names the schemas that exist."""
    with pytest.raises(LookupError, match="parsed-chunk-v1"):
        is_valid({}, "parsed-chunk-v2")
