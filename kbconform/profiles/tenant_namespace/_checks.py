"""What a tenant-namespace manifest and backend must be."""

from __future__ import annotations

from typing import Any

from kbconform.adapter import Manifest
from kbconform.profiles.tenant_namespace.protocol import (
    Backend,
    SupportsAsk,
    SupportsCount,
    SupportsEnvelope,
    SupportsMaintain,
    SupportsScan,
    SupportsSync,
)

_OPTIONAL_FACADES = {"count": SupportsCount, "ask": SupportsAsk}


def facades(manifest: Manifest) -> list[tuple[str, Any]]:
    """:class:`~kbconform.adapter.Backend`, the optional read facades the manifest declares, ``scan``,
    ``sync`` and ``maintain`` when it offers workspace-scan, sync and maintenance."""
    expected: list[tuple[str, Any]] = [("Backend", Backend)]
    expected += [
        (f"{name} facade", kind) for name, kind in _OPTIONAL_FACADES.items() if name in manifest.read_facades
    ]
    if manifest.supports("workspace-scan"):
        expected.append(("scan (workspace-scan)", SupportsScan))
    if manifest.supports("envelope"):
        expected.append(("ingest with an envelope (envelope)", SupportsEnvelope))
    if manifest.supports("sync"):
        expected.append(("sync", SupportsSync))
    if manifest.supports("maintenance"):
        expected.append(("maintain (maintenance)", SupportsMaintain))
    return expected
