"""What a project-pool manifest and backend must be."""

from __future__ import annotations

from typing import Any

from kbconform.adapter import Manifest
from kbconform.profiles.project_pool.protocol import ProjectPoolBackend


def facades(manifest: Manifest) -> list[tuple[str, Any]]:
    """:class:`~kbconform.adapter.ProjectPoolBackend`: its facades are all required."""
    return [("ProjectPoolBackend", ProjectPoolBackend)]
