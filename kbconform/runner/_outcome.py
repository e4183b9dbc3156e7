"""A run's outcome: the report it wrote, read and held to the run asked for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform.errors import ContractViolation
from kbconform.report import FAILED

#: How much of a harness's log is kept with the run's evidence, in bytes.
HARNESS_LOG_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Outcome:
    """One suite run: the verdict its report gives, the report, and what pytest printed.

    ``problems`` is empty when the report is sound (valid, complete, of the run asked for);
    otherwise the verdict is ``error``, whatever the report says.
    """

    returncode: int
    report: dict[str, Any]
    output: str
    problems: tuple[str, ...] = ()
    #: What the harness wrote on its stderr (its last HARNESS_LOG_LIMIT bytes); empty in process.
    harness_log: str = ""

    @property
    def failed(self) -> list[str]:
        return sorted(t["id"] for t in self.report.get("tests", ()) if t["status"] in FAILED)

    @property
    def verdict(self) -> str:
        """``pass`` (every test passed or was declined), ``fail``, or ``error`` (no sound report)."""
        if self.problems or not self.report:
            return "error"
        return "fail" if self.failed else "pass"


def read_report(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The report the run wrote ({} when there is none), and why it cannot be read."""
    from kbconform.report import read

    if not path.exists():
        return {}, []
    try:
        data = read(path)
    except ContractViolation as error:
        return {}, [f"the report is not strict JSON: {problem}" for problem in error.problems]
    if not isinstance(data, dict):
        return {}, ["the report is not a JSON object"]
    return data, []


def soundness(
    report: Mapping[str, Any],
    *,
    adapter: str,
    seed: int,
    level: str | None,
    profile: str | None,
    select: Sequence[str] | None,
) -> list[str]:
    """Why ``report`` is not the sound report of the run asked for (empty when it is)."""
    from kbconform.report import expected, redact, verify

    try:
        verify(report)
    except ContractViolation as error:
        return [f"the report is not valid evidence: {problem}" for problem in error.problems]
    # A selection is made against the whole catalogue; the run reports the ids its manifest and
    # level select of it.
    applicable = (
        None
        if select is None
        else sorted({e["id"] for e in expected(report["manifest"], level or "L4", set(select))})
    )
    asked = {
        "adapter": (report["config"]["adapter"], redact(adapter)),  # a URL's password is never shown
        "seed": (report["seed"], seed),
        "level": (report["level"], level or "L4"),
        "profile": (report["profile"], profile or report["profile"]),
        "selection": (report["execution"]["selection"], None if select is None else applicable),
    }
    return [
        f"the report's {name} is {got!r}, not {want!r}" for name, (got, want) in asked.items() if got != want
    ]
