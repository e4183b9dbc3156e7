"""validate, chunk_id and the reference's ingest give one answer on what a record may hash."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbconform.contract import is_valid, validate
from kbconform.errors import ContractViolation
from kbconform.identity import Principal, chunk_id, legacy_id
from tests.records import MINIMAL_CHUNK

MINIMAL = {**MINIMAL_CHUNK, "content": "export default 1;"}
OPTIONAL = {
    "line_start": 3,
    "line_end": 9,
    "className": "Widget",
    "extends": "Base",
    "customMeta": {"a": [1, 2.5]},
}
NAMES = [
    *MINIMAL,
    *OPTIONAL,
    "visibility",
    "originAgentIdentity",
    "ingestedAt",
    "tenantConfigVersion",
    "embedding",
    "author",
]


def _hashes(record: dict[str, Any]) -> bool:
    try:
        chunk_id(record, "acme", "main-app")
        legacy_id(record)
    except ContractViolation:
        return False
    return True


@given(
    present=st.sets(st.sampled_from(sorted(OPTIONAL))),
    named=st.lists(st.sampled_from(NAMES), min_size=1, max_size=4, unique=True),
)
def test_validate_and_chunk_id_accept_the_same_hash_inputs(present: set[str], named: list[str]) -> None:
    """Whatever hashInputs names (identity, stamped, unknown, absent or present fields), one answer."""
    record = {**MINIMAL, **{key: OPTIONAL[key] for key in present}, "hashInputs": named}
    assert is_valid(record, "parsed-chunk-v1") is _hashes(record)


@pytest.mark.parametrize(
    ("named", "pointer"),
    [(["tenantId", "content"], "/hashInputs/0"), (["content", "repoSlug"], "/hashInputs/1")],
)
def test_naming_an_identity_field_is_refused_by_validate_as_by_chunk_id(
    named: list[str], pointer: str
) -> None:
    """The rule chunk ids enforced is now the schema's: validate refuses it at the same entry."""
    record = {**MINIMAL, "hashInputs": named}
    with pytest.raises(ContractViolation) as by_schema:
        validate(record, "parsed-chunk-v1")
    with pytest.raises(ContractViolation) as by_id:
        chunk_id(record, "acme", "main-app")
    assert [problem.pointer for problem in by_schema.value.problems] == [pointer]
    assert "come from the server" in by_schema.value.problems[0].expected
    assert by_id.value.problems[0].pointer == pointer
    assert is_valid({**record, "hashInputs": ["content", "name"]}, "parsed-chunk-v1") is True


def test_naming_an_absent_optional_field_is_refused_by_both_and_accepted_once_it_is_there() -> None:
    """hashInputs naming className needs a className; with one, both accept."""
    record = {**MINIMAL, "hashInputs": ["content", "className"]}
    with pytest.raises(ContractViolation) as caught:
        validate(record, "parsed-chunk-v1")
    assert [(p.pointer, p.keyword) for p in caught.value.problems] == [("/className", "required")]
    assert _hashes(record) is False
    assert is_valid({**record, "className": "Widget"}, "parsed-chunk-v1") is True
    assert _hashes({**record, "className": "Widget"}) is True


@pytest.mark.parametrize(
    ("meta", "pointer", "keyword"),
    [
        ({"n": 2**60}, "/customMeta/n", "maximum"),
        ({"deep": [{"n": -(2**53)}]}, "/customMeta/deep/0/n", "minimum"),
        ({"f": float("inf")}, "/customMeta/f", "json"),
        ({"f": [float("nan")]}, "/customMeta/f/0", "json"),
    ],
)
def test_numbers_rfc8785_cannot_write_are_refused_with_a_pointer_everywhere(
    meta: dict[str, Any], pointer: str, keyword: str
) -> None:
    """validate refuses them (not hashed too), chunk_id when hashed, never RFC 8785's own error."""
    record = {**MINIMAL, "customMeta": meta}
    with pytest.raises(ContractViolation) as by_schema:
        validate(record, "parsed-chunk-v1")
    with pytest.raises(ContractViolation) as by_id:
        chunk_id({**record, "hashInputs": ["customMeta"]}, "acme", "main-app")
    assert [(p.pointer, p.keyword) for p in by_schema.value.problems] == [(pointer, keyword)]
    assert [(p.pointer, p.keyword) for p in by_id.value.problems] == [(pointer, keyword)]


def test_the_largest_i_json_integers_are_accepted_and_hashed() -> None:
    """Positive control: +/-(2**53-1) and fractions pass validate and get an id."""
    record = {**MINIMAL, "hashInputs": ["customMeta"], "customMeta": {"n": [2**53 - 1, -(2**53 - 1), 0.5]}}
    assert is_valid(record, "parsed-chunk-v1") is True
    assert len(chunk_id(record, "acme", "main-app")) == 64


@pytest.mark.parametrize("meta", [{"n": 2**60}, {"f": float("inf")}])
def test_the_reference_ingest_refuses_them_with_a_contract_violation(meta: dict[str, Any]) -> None:
    """Ingest answers with a ContractViolation pointing into the batch, not RFC 8785's error."""
    pytest.importorskip("numpy")
    from kbconform_reference import KnowledgeBase
    from kbconform_reference.stores import MemoryStore

    knowledge_base = KnowledgeBase(MemoryStore())
    acme = Principal("acme")
    with pytest.raises(ContractViolation) as caught:
        knowledge_base.ingest(acme, [MINIMAL, {**MINIMAL, "customMeta": meta}])
    assert caught.value.problems[0].pointer.startswith("/1/customMeta/")
    assert knowledge_base.count(acme) == 0
    assert len(knowledge_base.ingest(acme, [{**MINIMAL, "customMeta": {"n": 2**53 - 1}}]).ids) == 1
