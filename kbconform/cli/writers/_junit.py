"""JUnit XML (``run --junitxml``), written by the suites' pytest process itself."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished


class JUnit:
    option = "--junitxml"
    help = "write JUnit XML here"

    def pytest_arguments(self, path: str) -> list[str]:
        return ["--junitxml", str(Path(path).resolve())]

    def write(self, path: str, finished: Finished) -> None:
        """Nothing more: pytest wrote the file as the suites ran."""
