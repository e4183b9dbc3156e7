"""The JSON report (``run --report``), and the harness's log beside it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from kbconform.report import write

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished


class JsonReport:
    option = "--report"
    help = "write the JSON report here"

    def pytest_arguments(self, path: str) -> list[str]:
        return []

    def write(self, path: str, finished: Finished) -> None:
        """The report as the run gave it, keys in order (a transcript's requests as sent); and
        ``PATH.harness.log`` when a harness ran (an empty log says the harness was quiet)."""
        report = finished.report
        write(path, json.dumps(report.data, indent=2) + "\n")
        if finished.harness_log or report.config.get("harness"):
            write(f"{path}.harness.log", finished.harness_log)
