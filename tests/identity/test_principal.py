"""The principal: immutable, validated, the only source of identity."""

from __future__ import annotations

import dataclasses

import pytest

from kbconform.errors import ContractViolation
from kbconform.identity import Principal


def test_a_valid_principal_reads_its_own_tenant_first_then_shared_namespaces() -> None:
    """Positive control, and the order every read filter uses."""
    principal = Principal("acme", agent_identity="agent-1", readable_namespaces=frozenset({"neo-shared"}))
    assert principal.readable_tenants == ("acme", "neo-shared")
    assert principal.is_operator is False
    assert principal.with_role("operator").is_operator is True


@pytest.mark.parametrize("tenant", ["Acme", "acme\n", "ac me", "\u0430cme", "", "-acme", 7])
def test_an_invalid_tenant_id_is_a_contract_violation(tenant: object) -> None:
    """The same rules as the schemas' tenantId."""
    with pytest.raises(ContractViolation) as caught:
        Principal(tenant)  # type: ignore[arg-type]
    assert caught.value.problems[0].pointer == "/tenantId"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"readable_namespaces": frozenset({"Shared"})},
        {"readable_namespaces": {"neo-shared"}},
        {"role": "admin"},
        {"agent_identity": "agent\n"},
    ],
)
def test_other_invalid_fields_are_contract_violations(kwargs: dict[str, object]) -> None:
    """Namespaces, role and agent identity are checked too."""
    with pytest.raises(ContractViolation):
        Principal("acme", **kwargs)  # type: ignore[arg-type]


def test_a_principal_is_immutable_and_with_returns_a_new_one() -> None:
    """``with_*`` leaves the original untouched."""
    principal = Principal("acme")
    other = principal.with_tenant("globex")
    assert (principal.tenant_id, other.tenant_id) == ("acme", "globex")
    with pytest.raises(dataclasses.FrozenInstanceError):
        principal.tenant_id = "globex"  # type: ignore[misc]
