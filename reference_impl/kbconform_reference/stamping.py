"""Write-side stamping: the server's values for the guarded fields, spoof detection, escalation.

A client value of a guarded field (top level, or inside ``customMeta``) that differs from the
server's is a spoof. ``overwrite`` keeps the server's value and returns one warning per field;
``reject`` refuses the batch. A principal whose spoofs within a sliding window pass the
threshold is switched to ``reject`` for the life of the service, and the switch is logged.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kbconform.identity import RESERVED_FIELDS, Principal

LOG = logging.getLogger("kbconform_reference.stamping")


@dataclass(frozen=True, slots=True)
class SpoofWarning:
    """One spoofed field in overwrite mode: what the client sent and what the server kept."""

    index: int
    field: str
    chunk_id: str
    client_value: object
    server_value: object
    tenant_id: str
    repo_slug: str
    agent: str | None


def server_stamps(
    principal: Principal, record: Mapping[str, Any], *, visibility: str, config_version: str
) -> dict[str, Any]:
    """The guarded fields the server writes for ``record`` (ingestedAt is set at write time)."""
    stamps: dict[str, Any] = {
        "tenantId": principal.tenant_id,
        "repoSlug": record["repoSlug"],
        "visibility": visibility,
        "tenantConfigVersion": config_version,
    }
    if principal.agent_identity is not None:
        stamps["originAgentIdentity"] = principal.agent_identity
    return stamps


def spoofs(record: Mapping[str, Any], stamps: Mapping[str, Any]) -> list[tuple[str, object, object]]:
    """``(field, client value, server value)`` for every guarded field the record claims otherwise."""
    found = []
    if record["tenantId"] != stamps["tenantId"]:
        found.append(("tenantId", record["tenantId"], stamps["tenantId"]))
    custom = record.get("customMeta") or {}
    for field in sorted(RESERVED_FIELDS & set(custom)):
        if field == "ingestedAt" or custom[field] != stamps.get(field):
            found.append((f"customMeta.{field}", custom[field], stamps.get(field)))
    return found


class SpoofMonitor:
    """Counts spoofed records per principal in a sliding window; escalates past the threshold."""

    def __init__(self, threshold: int, window: float, clock: Callable[[], float]) -> None:
        self.threshold = threshold
        self.window = window
        self._clock = clock
        self._seen: dict[tuple[str, str | None], deque[float]] = {}
        self._escalated: set[tuple[str, str | None]] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _key(principal: Principal) -> tuple[str, str | None]:
        return (principal.tenant_id, principal.agent_identity)

    def escalated(self, principal: Principal) -> bool:
        with self._lock:
            return self._key(principal) in self._escalated

    def record(self, principal: Principal, count: int) -> bool:
        """Note ``count`` spoofed records; True when this call switched the principal to reject."""
        if count <= 0 or self.threshold <= 0:
            return False
        key, now = self._key(principal), self._clock()
        with self._lock:
            seen = self._seen.setdefault(key, deque())
            seen.extend([now] * count)
            while seen and seen[0] <= now - self.window:
                seen.popleft()
            if key in self._escalated or len(seen) < self.threshold:
                return False
            self._escalated.add(key)
        LOG.warning(
            "spoof escalation: tenant %s agent %s sent %d spoofed records within %.0f s; switching to reject",
            principal.tenant_id,
            principal.agent_identity,
            len(seen),
            self.window,
            extra={"kb_event": "spoof-escalation", "tenantId": principal.tenant_id},
        )
        return True
