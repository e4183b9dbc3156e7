"""Regex dialects disagree on anchors; the schemas are written so that the validators cannot.

In Python's ``re`` (python-jsonschema's engine) ``$`` also matches before a trailing newline;
in ECMA-262 and Rust (jsonschema-rs) it matches only at the very end. Every anchored
``pattern`` in the contract therefore sits beside an anchor-free guard (``not`` a pattern
matching any forbidden character), which every dialect reads alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbconform.contract import load, schema_names
from tests.contract._validators import verdicts


def _string_definitions() -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    def walk(node: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        if isinstance(node, Mapping):
            if isinstance(node.get("pattern"), str) and node.get("type") == "string":
                yield where, node
            for key, value in node.items():
                yield from walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from walk(value, f"{where}/{index}")

    for name in schema_names():
        for where, node in walk(load(name), ""):
            if "/not" not in where:
                yield name, where, node


STRING_DEFINITIONS = list(_string_definitions())


def test_the_hazard_is_real_python_and_rust_disagree_on_a_bare_dollar_anchor() -> None:
    """Positive control: without a guard, the two validators give different verdicts."""
    bare = {"type": "string", "pattern": "^[a-z]+$"}
    assert jsonschema.Draft202012Validator(bare).is_valid("tenant\n") is True
    assert jsonschema_rs.validator_for(bare).is_valid("tenant\n") is False


def test_every_anchored_pattern_has_an_anchor_free_guard() -> None:
    """A pattern ending in '$' is always paired with a 'not' that rejects forbidden characters."""
    assert len(STRING_DEFINITIONS) >= 8
    unguarded = [
        f"{name}{where}"
        for name, where, node in STRING_DEFINITIONS
        if node["pattern"].endswith("$") and "not" not in node
    ]
    assert unguarded == []


_SUFFIXES = ["\n", "\r\n", " ", "\t", "\u0000", "\u00a0", "\u2028", "\u200b", "\ufeff"]
_LOOK_ALIKE = "\u0430"  # Cyrillic a: forbidden in identifiers; paths may hold non-ASCII letters


def _suffix_cases() -> list[Any]:
    return [
        pytest.param(definition, suffix, id=f"{name}{where}-{suffix!r}")
        for name, where, definition in STRING_DEFINITIONS
        for suffix in _SUFFIXES + ([] if where.endswith("sourcePath") else [_LOOK_ALIKE])
    ]


@pytest.mark.parametrize(("definition", "suffix"), _suffix_cases())
def test_a_forbidden_suffix_is_rejected_by_every_dialect(definition: Mapping[str, Any], suffix: str) -> None:
    """A value the definition accepts, plus a trailing forbidden character, is rejected everywhere."""
    value = _accepted_value(definition)
    for engine in (jsonschema.Draft202012Validator(definition), jsonschema_rs.validator_for(definition)):
        assert engine.is_valid(value) is True
        assert engine.is_valid(value + suffix) is False


def _accepted_value(definition: Mapping[str, Any]) -> str:
    examples = [
        "client-tenant",
        "src/main.js",
        "1.0.0",
        "a1b2c3d",
        "content",
        "abc",
        "sha256:" + "0" * 64,
        "KB_NOT_FOUND",
        "read-filter.md#every-facade",
        "C1",
    ]
    value = next((e for e in examples if jsonschema.Draft202012Validator(definition).is_valid(e)), None)
    assert value is not None, f"no example fits {definition.get('description')}"
    return value


@given(
    value=st.one_of(
        st.from_regex(re.compile(r"[a-z0-9][a-z0-9-]{0,10}"), fullmatch=True),
        st.text(max_size=12),
    ),
    suffix=st.sampled_from(["", "\n", " ", "-", "\u212a"]),
)
def test_the_validators_agree_on_tenant_ids(value: str, suffix: str) -> None:
    """jsonschema-rs, python-jsonschema and the pydantic model agree on any tenant id."""
    record = {
        "tenantId": value + suffix,
        "repoSlug": "core",
        "rootKind": "bare-repo",
        "sourcePath": "a.md",
    }
    assert len(set(verdicts(record, "identity-tuple-v1").values())) == 1
