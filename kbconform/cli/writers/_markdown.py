"""The Markdown summary (``run --summary``, e.g. ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbconform.report import summary, write

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished


class Summary:
    option = "--summary"
    help = "write a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY)"

    def pytest_arguments(self, path: str) -> list[str]:
        return []

    def write(self, path: str, finished: Finished) -> None:
        write(path, summary(finished.report))
