"""The kb-grant manifest: what the schema cannot say (unique store ids and model names), what
its shape declines (multi-store, multi-model), and that its errors name the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kbconform import _capabilities
from kbconform.adapter import Manifest
from kbconform.errors import ContractViolation
from tests.plugin.grant_adapter import MANIFEST as GRANT


def _with(**change: Any) -> dict[str, Any]:
    return {**copy.deepcopy(GRANT), **change}


def test_a_kb_grant_manifest_reads_its_stores_models_and_limits() -> None:
    """The accessors the suites use give the manifest's values, in its order."""
    manifest = Manifest.from_mapping(GRANT)
    assert manifest.profile == "kb-grant"
    assert manifest.stores == ("north", "south")
    assert manifest.engines == {"north": "cosine", "south": "l2"}
    assert manifest.models == {"m-6a": 6, "m-6b": 6}
    assert (manifest.max_fan_out, manifest.group_deadline) == (2, 0.5)


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"stores": [{"id": "s", "engine": "chroma"}, {"id": "s", "engine": "qdrant"}]}, "/stores/1/id"),
        ({"models": [{"name": "m", "dimension": 8}, {"name": "m", "dimension": 16}]}, "/models/1/name"),
    ],
)
def test_a_store_id_or_model_name_listed_twice_is_refused_naming_the_second(
    change: dict[str, Any], pointer: str
) -> None:
    """The schema refuses only identical entries; the kit refuses one id (name) given twice, with
    the pointer of the repeat (control: the manifest without the repeat is accepted)."""
    with pytest.raises(ContractViolation) as refused:
        Manifest.from_mapping(_with(**change))
    assert [problem.pointer for problem in refused.value.problems] == [pointer]
    assert "not listed before" in str(refused.value)
    Manifest.from_mapping(GRANT)


@pytest.mark.parametrize(
    ("change", "pointer", "said"),
    [
        ({"stores": []}, "/stores", "at least one"),
        ({"maxFanOut": 0}, "/maxFanOut", "at least 1"),
        ({"groupDeadlineSeconds": 61}, "/groupDeadlineSeconds", "from 0.1 to 60"),
        ({"models": [{"name": "m", "dimension": 1}]}, "/models/0/dimension", "from 2 to 4096"),
        ({"readFacades": ["search", "get"]}, "/readFacades", "list among the read facades"),
    ],
)
def test_an_invalid_kb_grant_manifest_names_the_field_and_what_it_must_be(
    change: dict[str, Any], pointer: str, said: str
) -> None:
    """Each problem points at its field and says what was expected, in the profile's own terms."""
    with pytest.raises(ContractViolation) as refused:
        Manifest.from_mapping(_with(**change))
    problems = {problem.pointer: problem.expected for problem in refused.value.problems}
    assert pointer in problems, problems
    assert said in problems[pointer]


def test_one_store_or_one_model_declines_multi_store_or_multi_model_with_a_reason() -> None:
    """A manifest listing one store declines multi-store, one model multi-model; two offer them;
    other profiles decline both as not theirs, and kb-grant declines the tenant capabilities."""
    single = _with(stores=[{"id": "only", "engine": "memory"}], models=[{"name": "m", "dimension": 8}])
    assert _capabilities.declines(GRANT, "multi-store") is None
    assert _capabilities.declines(GRANT, "multi-model") is None
    assert _capabilities.declines(single, "multi-store") == "the manifest lists 1 store; this test needs two"
    assert _capabilities.declines(single, "multi-model") == "the manifest lists 1 model; this test needs two"
    assert _capabilities.declines(GRANT, "client-where") == "not part of the kb-grant profile"
    assert _capabilities.declines(GRANT, "fault-injection") is None
    pool = {"isolationProfile": "project-pool", "features": {"fault-injection": True}}
    assert _capabilities.declines(pool, "multi-store") == "not part of the project-pool profile"


def test_kb_grant_facades_are_named_in_test_ids_by_their_operation() -> None:
    """iso-01[get] is the tenant-namespace test: kb-grant's get and list take other ids."""
    facades = _capabilities.AXES[0]
    assert facades.values(GRANT) == ("search", "get", "list")
    assert facades.ids(GRANT) == ("search-kbs", "get-kb", "list-kbs")
    tenant = {"readFacades": ["query", "get", "list"]}
    assert facades.ids(tenant) == facades.values(tenant)
