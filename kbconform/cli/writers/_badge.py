"""The shields.io endpoint badge (``run --badge``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kbconform.report import badge, write

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished


class Badge:
    option = "--badge"
    help = "write a shields.io endpoint badge (JSON) here"

    def pytest_arguments(self, path: str) -> list[str]:
        return []

    def write(self, path: str, finished: Finished) -> None:
        write(path, json.dumps(badge(finished.report)) + "\n")
