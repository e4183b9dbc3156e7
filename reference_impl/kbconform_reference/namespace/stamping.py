"""Write-side stamping: the server's values for the guarded fields, spoof detection, escalation.

A client value of a guarded field (top level, or inside ``customMeta``) that differs from the
server's is a spoof. ``overwrite`` keeps the server's value and returns one warning per field;
``reject`` refuses the batch. A principal whose spoofs within a sliding window pass the
threshold is switched to ``reject`` for the life of the service, and the switch is logged.
The stamps and the spoof check are the kit's (:func:`kbconform.adapter.server_stamps`,
:func:`kbconform.adapter.spoofed_fields`).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kbconform.adapter import server_stamps, spoofed_fields
from kbconform.identity import Principal

__all__ = ["LOG", "SpoofMonitor", "SpoofWarning", "server_stamps", "spoofs"]

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


#: ``(field, client value, server value)`` for every guarded field the record claims otherwise.
spoofs = spoofed_fields


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
