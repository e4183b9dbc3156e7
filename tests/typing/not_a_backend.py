"""Checked by mypy, which must reject it (the control): a backend whose get takes no principal."""

from __future__ import annotations

from typing import Any

from kbconform.profiles.tenant_namespace.protocol import Backend
from kbconform_reference import KnowledgeBase


class Unscoped(KnowledgeBase):
    def get(self, chunk_id: str) -> Any:  # type: ignore[override]
        return super().get(chunk_id, chunk_id)  # type: ignore[arg-type]


backend: Backend = Unscoped.__new__(Unscoped)
