"""A backend is judged against the design it declares: a shared namespace every tenant reads
(``"sharedNamespaceReaders": "every-tenant"``, Neo's design) is no leak for a backend that
declares it, the tests of withholding it are declined, and the declaration is held: a backend
that declares it and still withholds the namespace fails."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kbconform import report as reports
from kbconform.cli import main

#: Each test here runs the suites in a child process: the slow tier.
pytestmark = pytest.mark.slow

#: loner is granted no shared namespace: these read its scope (and the seeded shared canaries).
READS = ("leak-01[list]", "leak-01[get]", "iso-01[list]", "backup-04")
#: The tests of withholding and revoking the shared namespace.
WITHHOLDING = ("leak-05", "leak-12[list]")

#: The reference as granted (it withholds the shared namespace), declaring every-tenant.
WITHHOLDS = textwrap.dedent(
    """
    from kbconform_reference.adapter import ReferenceAdapter


    class Withholds(ReferenceAdapter):
        @property
        def manifest(self):
            declared = super().manifest
            declared["sharedNamespaceReaders"] = "every-tenant"
            return declared


    def make():
        return Withholds("memory")
    """
)


def _run(adapter: str, *selected: str) -> tuple[int, dict[str, Any]]:
    path = Path.cwd() / "report.json"
    path.unlink(missing_ok=True)
    only = [arg for stable in selected for arg in ("--only", stable)]
    code = main(["run", "--seed", "5", "--adapter", adapter, "--report", str(path), *only])
    return code, json.loads(path.read_text(encoding="utf-8"))


def _statuses(report: dict[str, Any]) -> dict[str, str]:
    return {test["id"]: test["status"] for test in report["tests"]}


def test_a_shared_namespace_every_tenant_reads_is_judged_by_the_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference configured so that every tenant reads the shared namespace, and declaring
    it, passes the reads of a tenant granted no shared namespace; leak-05 and leak-12 are
    declined with the declaration as the reason, and the summary names the declared design.
    Control: the granted reference declaring the same fails those reads (the model expects the
    shared canaries in loner's scope), and passes them when it declares what it does."""
    monkeypatch.chdir(tmp_path)
    code, report = _run("kbconform_reference.adapter:memory_shared_for_all", *READS, *WITHHOLDING)
    statuses = _statuses(report)
    assert code == 0, statuses
    assert {statuses[stable] for stable in READS} == {"pass"}
    assert {statuses[stable] for stable in WITHHOLDING} == {"skip"}
    reasons = {test["id"]: test.get("reason", "") for test in report["tests"]}
    assert all("every tenant" in reasons[stable] for stable in WITHHOLDING), reasons
    assert reports.design(report) == ("shared namespace neo-shared readable by every tenant",)
    assert "judged against its declared design: shared namespace neo-shared readable by every tenant" in (
        capsys.readouterr().out
    )

    (tmp_path / "withholds.py").write_text(WITHHOLDS, encoding="utf-8")
    code, report = _run("withholds:make", *READS)
    statuses = _statuses(report)
    assert code != 0
    assert {statuses[stable] for stable in ("leak-01[list]", "iso-01[list]", "backup-04")} == {"fail"}, (
        statuses
    )

    code, report = _run("kbconform_reference.adapter:memory", *READS, *WITHHOLDING)
    assert code == 0, _statuses(report)
    assert set(_statuses(report).values()) == {"pass"}
    assert reports.design(report) == ("shared namespace neo-shared readable by the principals granted it",)
