"""The authenticated principal: the only source of identity anywhere in kbconform."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from kbconform.contract import IDENTITY_RULES, load
from kbconform.errors import ContractViolation, Problem

Role = Literal["member", "operator"]
_ROLES = ("member", "operator")


def _check(definition: str, pointer: str, value: object) -> None:
    try:
        if not isinstance(value, str):
            raise ValueError
        IDENTITY_RULES[definition](value)
    except ValueError:
        expected = load("identity-tuple-v1")["$defs"][definition]["description"]
        raise ContractViolation(
            contract="principal", problems=(Problem(pointer, definition, expected, repr(value)),)
        ) from None


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the tenant, the agent (when known), the shared namespaces it may read,
    and its role. Immutable; ``with_*`` returns a new one. An invalid value raises
    :class:`~kbconform.errors.ContractViolation`.
    """

    tenant_id: str
    agent_identity: str | None = None
    readable_namespaces: frozenset[str] = frozenset()
    role: Role = "member"

    def __post_init__(self) -> None:
        _check("tenantId", "/tenantId", self.tenant_id)
        if self.agent_identity is not None:
            _check("text", "/agentIdentity", self.agent_identity)
        if not isinstance(self.readable_namespaces, frozenset):
            raise ContractViolation(
                contract="principal",
                problems=(
                    Problem(
                        "/readableNamespaces",
                        "type",
                        "a frozenset of tenant ids",
                        repr(self.readable_namespaces),
                    ),
                ),
            )
        for namespace in sorted(self.readable_namespaces):
            _check("tenantId", "/readableNamespaces", namespace)
        if self.role not in _ROLES:
            raise ContractViolation(
                contract="principal",
                problems=(Problem("/role", "enum", "'member' or 'operator'", repr(self.role)),),
            )

    @property
    def is_operator(self) -> bool:
        """Whether the principal may write into shared namespaces, export and restore."""
        return self.role == "operator"

    @property
    def readable_tenants(self) -> tuple[str, ...]:
        """Its own tenant first, then the shared namespaces, sorted: what every read is filtered to."""
        return (self.tenant_id, *sorted(self.readable_namespaces - {self.tenant_id}))

    def with_tenant(self, tenant_id: str) -> Principal:
        return dataclasses.replace(self, tenant_id=tenant_id)

    def with_agent(self, agent_identity: str | None) -> Principal:
        return dataclasses.replace(self, agent_identity=agent_identity)

    def with_namespaces(self, namespaces: frozenset[str]) -> Principal:
        return dataclasses.replace(self, readable_namespaces=namespaces)

    def with_role(self, role: Role) -> Principal:
        return dataclasses.replace(self, role=role)
