"""A manifest's declared design (schemas/declared-design.md): each declaration is valid by
adapter-manifest-v1, judged as declared (a capability declined, the policy model's expected
value, a level's bar), and said with its price; one that would hide another tenant's data from
a caller who can reach it is not honoured."""

from __future__ import annotations

from typing import Any

import pytest

from kbconform import profiles
from kbconform._capabilities import declines
from kbconform._levels import bars_higher
from kbconform.adapter import Manifest
from kbconform.errors import ContractViolation
from kbconform.profiles.memory_scope.model import ScopePolicy
from kbconform.report import declared_design, levels, price_line


def _memory(**declared: Any) -> dict[str, Any]:
    base = dict(profiles.profile("memory-scope").skeleton)
    return {
        "manifestVersion": "1",
        "adapter": {"name": "a", "version": "1"},
        "backend": {"name": "b", "version": "1"},
        **base,
        **declared,
    }


def _tenant(**declared: Any) -> dict[str, Any]:
    return {
        "manifestVersion": "1",
        "adapter": {"name": "a", "version": "1"},
        "backend": {"name": "b", "version": "1"},
        **profiles.profile("tenant-namespace").skeleton,
        **declared,
    }


@pytest.mark.parametrize(
    "declared",
    [
        {"callerIdentity": "application"},
        {"noIdentity": "default-user"},
        {"recordSchema": "looser"},
        {"emptyScope": "everything"},
        {"byIdKeys": ["user_id"]},
        {"searchOrder": "recency"},
    ],
)
def test_each_memory_scope_declaration_is_a_valid_manifest_and_an_unknown_value_is_not(
    declared: dict[str, Any],
) -> None:
    """Every declaration validates; the same field with a value the schema lacks is refused."""
    Manifest.from_mapping(_memory(**declared))
    [(field, _)] = declared.items()
    with pytest.raises(ContractViolation):
        Manifest.from_mapping(_memory(**{field: "anything"}))


def test_tenant_namespace_takes_the_identity_and_operator_declarations() -> None:
    """The tenant-namespace branch takes callerIdentity, noIdentity, recordSchema and
    operatorPaths; emptyScope is memory-scope's only."""
    declared = _tenant(
        callerIdentity="application",
        noIdentity="single-tenant",
        recordSchema="looser",
        operatorPaths="command-line",
    )
    Manifest.from_mapping(declared)
    with pytest.raises(ContractViolation):
        Manifest.from_mapping(_tenant(emptyScope="everything"))


def test_an_application_supplied_identity_declines_the_tests_of_no_identity_in_every_profile() -> None:
    """``callerIdentity: application`` declines ``caller-identity`` with its reason, whatever the
    profile; the default (and ``library``) offers it."""
    assert declines(_memory(callerIdentity="application"), "caller-identity") is not None
    assert "application" in str(declines(_tenant(callerIdentity="application"), "caller-identity"))
    assert declines(_memory(), "caller-identity") is None
    assert declines(_memory(callerIdentity="library"), "caller-identity") is None
    assert declines(_tenant(), "caller-identity") is None


def test_a_declaration_that_would_hide_data_a_caller_reaches_is_not_honoured() -> None:
    """An empty scope reading everything, or a default user, declared where the application
    supplies the identity is honoured and priced; declared by a backend that takes its caller's
    identity, it is not honoured, and the price line says it is judged a failure."""
    honoured = declared_design(_memory(callerIdentity="application", emptyScope="everything"))
    refused = declared_design(_memory(emptyScope="everything", noIdentity="default-user"))
    assert {d["design"]: d["honoured"] for d in honoured if "empty scope" in d["design"]} == {
        "an empty scope (an empty namespace prefix) reads every memory": True
    }
    assert [d["honoured"] for d in refused if d["price"]] == [False, False]
    line = price_line({"manifest": _memory(emptyScope="everything")})
    assert "reads every user's memories) (not honoured: judged a failure)" in line
    assert price_line({"manifest": _memory()}) == ""  # control: nothing priced, no line


def test_every_priced_declaration_says_its_consequence_in_one_line() -> None:
    """Each declaration that costs a caller something has a one-line price; a stricter one
    (byIdScope exact) has none."""
    manifest = _memory(
        callerIdentity="application",
        recordSchema="looser",
        emptyScope="everything",
        searchOrder="recency",
        byIdKeys=["user_id"],
    )
    said = profiles.profile("memory-scope").declared(manifest)
    priced = {d.design: d.price for d in said if d.price is not None}
    assert len(priced) == 5, priced
    assert all(price and "\n" not in price for price in priced.values())
    exact = profiles.profile("memory-scope").declared(_memory(byIdScope="exact"))
    assert [d.price for d in exact if "exactly" in d.design] == [None]


def _tests(l0: str) -> list[dict[str, Any]]:
    return [
        {"id": "c", "level": "L0", "status": l0},
        {"id": "i", "level": "L1", "status": "pass"},
        {"id": "r", "level": "L2", "status": "pass"},
    ]


def test_a_looser_record_schema_makes_l0_a_note_that_bars_no_higher_level() -> None:
    """With ``recordSchema: looser`` a failing contract test leaves L0 not earned and L1, L2
    earned; without it (control) L0 bars every level above it."""
    looser = levels(_tests("fail"), _memory(recordSchema="looser"))
    assert [looser[lv]["earned"] for lv in ("L0", "L1", "L2")] == [False, True, True]
    strict = levels(_tests("fail"), _memory())
    assert [strict[lv]["earned"] for lv in ("L0", "L1", "L2")] == [False, False, False]
    assert not bars_higher("L0", _memory(recordSchema="looser"))
    assert bars_higher("L1", _memory(recordSchema="looser"))


def test_by_id_keys_check_only_those_keys_of_the_scope() -> None:
    """Under ``byIdKeys: [user_id]`` a by-id call from the same user and another agent finds the
    memory, another user does not; without it (control) the agent must match too."""
    subset = ScopePolicy.of(_memory(byIdKeys=["user_id"]))
    every = ScopePolicy.of(_memory())
    for policy in (subset, every):
        policy.commit_add({"user_id": "alice", "agent_id": "planner"}, "t", {}, "m1")
    other_agent = {"user_id": "alice", "agent_id": "writer"}
    assert subset.get(other_agent, "m1") == {"m1": "t"}
    assert not isinstance(every.get(other_agent, "m1"), dict)
    assert not isinstance(subset.get({"user_id": "bob"}, "m1"), dict)


def test_a_recency_ordered_search_expects_the_newest_memory_first() -> None:
    """Under ``searchOrder: recency`` the first hit the model expects is the scope's newest
    memory, whatever the text; by relevance, the memory whose text it is."""
    recent, relevant = ScopePolicy.of(_memory(searchOrder="recency")), ScopePolicy.of(_memory())
    for policy in (recent, relevant):
        policy.commit_add({"user_id": "alice"}, "old", {}, "m1")
        policy.commit_add({"user_id": "alice"}, "new", {}, "m2")
        policy.commit_add({"user_id": "bob"}, "newest", {}, "m3")
    assert recent.first_hit({"user_id": "alice"}, "old") == "m2"
    assert relevant.first_hit({"user_id": "alice"}, "old") == "m1"


def test_a_failure_charged_with_recall_alone_is_a_note_that_bars_no_level() -> None:
    """A failed L1 test whose test said recall (a read short of its scope, nothing of another's)
    leaves L1 and L2 earned and is counted as ``recall``; the same failure charged with read, or
    with no effect said (a default is never enough), bars L1 and above (controls)."""

    def tests(effect: str | None) -> list[dict[str, Any]]:
        return [
            {"id": "c", "level": "L0", "status": "pass"},
            {"id": "i", "level": "L1", "status": "fail", "effect": effect},
            {"id": "s", "level": "L1", "status": "pass"},
            {"id": "r", "level": "L2", "status": "pass"},
        ]

    noted = levels(tests("recall"), _memory())
    assert [noted[lv]["earned"] for lv in ("L0", "L1", "L2")] == [True, True, True]
    assert (noted["L1"]["fail"], noted["L1"]["recall"]) == (1, 1)
    for effect in ("read", None):
        barred = levels(tests(effect), _memory())
        assert [barred[lv]["earned"] for lv in ("L0", "L1", "L2")] == [True, False, False]
        assert "recall" not in barred["L1"]
    erred = levels([{**t, "status": "error"} if t["id"] == "i" else t for t in tests("recall")], _memory())
    assert not erred["L1"]["earned"]
