"""A report-v1 report as one typed, immutable record: what every output of a run reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kbconform.report._causes import Cause, causes
from kbconform.report._terminal import unshrunk
from kbconform.report._verdicts import (
    FAILED,
    design,
    design_line,
    earned,
    failing,
    halted,
    level_verdicts,
    rests_on,
    selection,
)


@dataclass(frozen=True, slots=True)
class Report:
    """A report of a run (report-v1), its fields named and typed. ``data`` is the mapping it was
    built from, as the run wrote it (the JSON report writes it, keys in their order); the
    derived verdicts (:attr:`earned`, :attr:`failing`, ...) are computed from it, never read
    from its ``levels``."""

    data: Mapping[str, Any]
    suite_version: str
    test_list_hash: str
    manifest: Mapping[str, Any]
    config: Mapping[str, Any]
    seed: int
    #: The Hypothesis profile the run used (``quick`` or ``thorough``).
    profile: str
    level: str
    environment: Mapping[str, Any]
    execution: Mapping[str, Any]
    levels: Mapping[str, Mapping[str, Any]]
    missing: tuple[str, ...]
    unknown: tuple[str, ...]
    tests: tuple[Mapping[str, Any], ...]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Report:
        """The record of a report-v1 mapping (as built by the plugin or read by
        :func:`kbconform.report.read`); the mapping is not copied."""
        completeness = data.get("completeness", {})
        return cls(
            data=data,
            suite_version=str(data.get("suiteVersion", "")),
            test_list_hash=str(data.get("testListHash", "")),
            manifest=data.get("manifest", {}),
            config=data.get("config", {}),
            seed=data.get("seed", 0),
            profile=data.get("profile", ""),
            level=data.get("level", ""),
            environment=data.get("environment", {}),
            execution=data.get("execution", {}),
            levels=data.get("levels", {}),
            missing=tuple(completeness.get("missing", ())),
            unknown=tuple(completeness.get("unknown", ())),
            tests=tuple(data.get("tests", ())),
        )

    @classmethod
    def of(cls, report: Report | Mapping[str, Any]) -> Report:
        """``report`` as a record (a mapping is read by :meth:`from_mapping`)."""
        return report if isinstance(report, Report) else cls.from_mapping(report)

    @property
    def selection(self) -> list[str] | None:
        """The test ids a partial run selected, or None for a full run."""
        return selection(self.data)

    @property
    def earned(self) -> str | None:
        """The highest level the report's test statuses earn, or None."""
        return earned(self.data)

    @property
    def level_verdicts(self) -> dict[str, dict[str, Any]]:
        """Per level the catalogue has tests at for this run, its verdict from the statuses."""
        return level_verdicts(self.data)

    @property
    def rests_on(self) -> tuple[str, ...]:
        """The declined capabilities the highest level earned rests on."""
        return rests_on(self.data)

    @property
    def design(self) -> tuple[str, ...]:
        """The policy choices the manifest declares (``Profile.design``)."""
        return design(self.data)

    @property
    def design_line(self) -> str:
        """``judged against its declared design: ...``, or empty."""
        return design_line(self.data)

    @property
    def halted(self) -> bool:
        """Whether the run stopped at its ``maxfail``: its missing tests were not reached."""
        return halted(self.data)

    @property
    def failing(self) -> list[Mapping[str, Any]]:
        """The tests the run failed or erred at (of a halted run, those it reached)."""
        return failing(self.data)

    @property
    def causes(self) -> list[Cause]:
        """The failing tests grouped into causes, gravest first (computed from the tests, so an
        older report without ``causes`` has them too)."""
        return causes(self.tests)

    @property
    def unshrunk(self) -> bool:
        """Whether the run reported each failing example as first found (``--no-shrink``)."""
        return unshrunk(self.data)

    @property
    def failed(self) -> list[Mapping[str, Any]]:
        """Every test recorded as failing or erring, reached or not."""
        return [test for test in self.tests if test["status"] in FAILED]

    @property
    def skipped(self) -> list[Mapping[str, Any]]:
        """Every test recorded as skipped."""
        return [test for test in self.tests if test["status"] == "skip"]
