"""Differential properties: the compiled accept path, the explainer and the models never disagree.

Instances come from hypothesis-jsonschema (valid by construction), then are mutated (a key
dropped, a value replaced by an adversarial one, a key added) to probe the rejection side.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from kbconform.contract import bundled
from tests.contract._validators import verdicts

#: Hypothesis draws thousands of instances per schema here: the slow tier.
pytestmark = pytest.mark.slow

SCHEMAS = ["parsed-chunk-v1", "backup-record-v1", "deletion-signal-v1", "identity-tuple-v1"]


def _unrolled(schema: Any, levels: int = 3) -> Any:
    """``schema`` with each recursive local ``$ref`` unrolled ``levels`` deep, then stopped at
    scalars: hypothesis-jsonschema cannot generate from a recursive schema."""
    definitions = schema.get("$defs", {})

    def expand(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref", "")
            if reference.startswith("#/$defs/"):
                target = definitions[reference.removeprefix("#/$defs/")]
                if depth >= levels:
                    scalar = {key: value for key, value in target.items() if not isinstance(value, dict)}
                    return {**scalar, "type": ["string", "number", "boolean", "null"]}
                return expand(target, depth + 1)
            return {key: expand(value, depth) for key, value in node.items() if key != "$defs"}
        if isinstance(node, list):
            return [expand(item, depth) for item in node]
        return node

    return expand(schema, 0)


STRATEGIES = {name: from_schema(_unrolled(bundled(name))) for name in SCHEMAS}

# Generating from these schemas costs ~10-100 ms an instance: a fraction of the profile's budget.
_VALID_EXAMPLES = max(10, settings.default.max_examples // 4)
_MUTATED_EXAMPLES = max(20, settings.default.max_examples // 2)

# anyOf, dependentRequired and the 'not' guards make hypothesis-jsonschema filter a lot.
_SLOW_GENERATION = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

ADVERSARIAL = st.sampled_from(
    [
        None,
        True,
        0,
        1.0,
        -1,
        1.5,
        "",
        "A",
        "a\n",
        " a",
        "a/../b",
        "/abs",
        "\u0430",
        "\ufeffa",
        [],
        ["x", "x"],
        {},
        {"tenantId": "A"},
        "1.0.0",
        "a" * 70,
    ]
)


def _mutate(data: st.DataObject, instance: Any) -> Any:
    mutated = copy.deepcopy(instance)
    target = mutated
    while isinstance(target, dict) and target and data.draw(st.booleans(), label="descend"):
        key = data.draw(st.sampled_from(sorted(target)), label="into")
        if not isinstance(target[key], dict) or not target[key]:
            break
        target = target[key]
    if not isinstance(target, dict):
        return mutated
    action = data.draw(st.sampled_from(["drop", "replace", "add"]), label="action")
    if action == "add" or not target:
        target[data.draw(st.sampled_from(["embedding", "tenantId", "extra", "visibility"]))] = data.draw(
            ADVERSARIAL
        )
    else:
        key = data.draw(st.sampled_from(sorted(target)), label="key")
        if action == "drop":
            del target[key]
        else:
            target[key] = data.draw(ADVERSARIAL, label="value")
    return mutated


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(suppress_health_check=_SLOW_GENERATION, max_examples=_VALID_EXAMPLES)
@given(data=st.data())
def test_generated_instances_are_accepted_by_every_validator(schema: str, data: st.DataObject) -> None:
    """Whatever the schema generates, every validator accepts."""
    instance = data.draw(STRATEGIES[schema], label="instance")
    assert verdicts(instance, schema) == {"jsonschema-rs": True, "python-jsonschema": True, "pydantic": True}


@pytest.mark.parametrize("schema", SCHEMAS)
@settings(suppress_health_check=_SLOW_GENERATION, max_examples=_MUTATED_EXAMPLES)
@given(data=st.data())
def test_mutated_instances_get_one_verdict_from_every_validator(schema: str, data: st.DataObject) -> None:
    """After a mutation the validators may accept or reject, but always together."""
    instance = data.draw(STRATEGIES[schema], label="instance")
    mutated = _mutate(data, instance)
    assume(mutated != instance)
    results = verdicts(mutated, schema)
    assert len(set(results.values())) == 1, results
