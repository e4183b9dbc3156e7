"""Properties of kbconform-v1 ids: deterministic, injective, tenant-distinct, legacy-compatible."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from kbconform.identity import DEFAULT_NAMESPACE, chunk_id, kbconform_v1_id, legacy_id

IDENT = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=20)
FIELDS = ["content", "name", "kind", "sourcePath"]


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    values = {field: draw(TEXT) for field in FIELDS}
    inputs = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=4, unique=True))
    return {**values, "hashInputs": inputs}


@given(record=records(), tenant=IDENT, repo=IDENT)
def test_ids_are_deterministic_hex_digests(record: dict[str, Any], tenant: str, repo: str) -> None:
    """The same input gives the same 64-hex-digit id, also after a JSON round trip."""
    first = kbconform_v1_id(record, tenant, repo)
    assert first == kbconform_v1_id(json.loads(json.dumps(record)), tenant, repo)
    assert len(first) == 64
    assert set(first) <= set("0123456789abcdef")


@given(a=records(), b=records(), ta=IDENT, tb=IDENT, ra=IDENT, rb=IDENT)
def test_distinct_inputs_give_distinct_ids(
    a: dict[str, Any], b: dict[str, Any], ta: str, tb: str, ra: str, rb: str
) -> None:
    """Ids collide only when tenant, repo and the hashed (field, value) pairs are all equal."""
    key_a = (ta, ra, [(f, a[f]) for f in a["hashInputs"]])
    key_b = (tb, rb, [(f, b[f]) for f in b["hashInputs"]])
    assert (kbconform_v1_id(a, ta, ra) == kbconform_v1_id(b, tb, rb)) == (key_a == key_b)


@given(left=TEXT, right=TEXT, separator=st.sampled_from(["|", ":", "/", "\x00", '","', "]["]))
def test_values_crafted_to_collide_under_concatenation_stay_distinct(
    left: str, right: str, separator: str
) -> None:
    """Moving a separator between two fields changes the id (naive joining would not)."""
    one = {"content": left + separator, "name": right, "hashInputs": ["content", "name"]}
    two = {"content": left, "name": separator + right, "hashInputs": ["content", "name"]}
    assume(separator)
    assert kbconform_v1_id(one, "acme", "core") != kbconform_v1_id(two, "acme", "core")


@given(record=records(), tenant=IDENT, other=IDENT, repo=IDENT)
def test_the_same_content_under_two_tenants_gets_two_ids(
    record: dict[str, Any], tenant: str, other: str, repo: str
) -> None:
    """Positive control included: the same tenant gets the same id."""
    assume(tenant != other)
    assert kbconform_v1_id(record, tenant, repo) == kbconform_v1_id(record, tenant, repo)
    assert kbconform_v1_id(record, tenant, repo) != kbconform_v1_id(record, other, repo)
    assert kbconform_v1_id(record, tenant, repo) != kbconform_v1_id(record, tenant, repo + "x")


@given(record=records(), tenant=IDENT, repo=IDENT)
def test_only_the_default_namespace_lands_in_the_legacy_domain(
    record: dict[str, Any], tenant: str, repo: str
) -> None:
    """Default namespace: id == legacy id. Any other namespace: a different id."""
    default = DEFAULT_NAMESPACE
    assert chunk_id(record, default.tenant_id, default.repo_slug) == legacy_id(record)
    assume((tenant, repo) != (default.tenant_id, default.repo_slug))
    assert chunk_id(record, tenant, repo) != legacy_id(record)


def test_the_encoding_is_the_documented_one() -> None:
    """An independent computation of the spec (sorted-key, compact, UTF-8 JSON of ASCII strings)."""
    record = {"content": "hello", "name": "main", "hashInputs": ["content", "name"]}
    payload = json.dumps(
        ["kbconform-v1", "acme", "core", [["content", "hello"], ["name", "main"]]], separators=(",", ":")
    )
    assert kbconform_v1_id(record, "acme", "core") == hashlib.sha256(payload.encode()).hexdigest()
    legacy = json.dumps(["kbconform-v0", [["content", "hello"], ["name", "main"]]], separators=(",", ":"))
    assert legacy_id(record) == hashlib.sha256(legacy.encode()).hexdigest()
