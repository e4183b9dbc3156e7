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
from kbconform import runner
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
    from kbconform_reference.namespace.adapter import ReferenceAdapter


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


#: The reference refusing a write of more than 50 records (as Neo's remote deployment does),
#: declaring the limit or not.
CAPPED = textwrap.dedent(
    """
    from kbconform.errors import ContractViolation, Problem
    from kbconform_reference.namespace.adapter import ReferenceAdapter
    from kbconform_reference.namespace.service import KnowledgeBase

    LIMIT = 50


    class CappedBase(KnowledgeBase):
        def _write(self, operation, principal, records, **kwargs):
            records = list(records)
            if len(records) > LIMIT:
                got = f"{len(records)} records"
                problem = Problem("", "maxItems", f"at most {LIMIT} records", got)
                raise ContractViolation(contract=operation, problems=(problem,))
            return super()._write(operation, principal, records, **kwargs)


    class Capped(ReferenceAdapter):
        def __init__(self, declares):
            super().__init__("memory")
            self.declares = declares

        @property
        def manifest(self):
            declared = super().manifest
            if self.declares:
                declared["maxWriteBatch"] = LIMIT
            return declared

        def open(self, options):
            backend = super().open(options)
            backend.__class__ = CappedBase
            return backend


    def declared():
        return Capped(True)


    def undeclared():
        return Capped(False)
    """
)
#: The tests whose writes a 50-record limit meets: the atomicity suite's, scale-01's, and
#: state-01's repository emptied in its set-up (65 records: the memory store's page and one).
BIG_WRITES = (
    "atomic-01[lasting]",
    "atomic-02[lasting]",
    "atomic-03[lasting]",
    "atomic-04[lasting]",
    "scale-01",
    "state-01[reject]",
)


def test_a_declared_write_limit_is_honoured_and_an_undeclared_one_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend that takes at most 50 records a write and declares it (``maxWriteBatch``)
    passes the atomicity tests, scale-01 and state-01: their set-ups are split into batches it
    takes and the writes they judge sized to it, and the summary names the limit. Control: the same
    backend declaring nothing fails them (its refusals of the suites' bigger writes). In
    process: what is judged is the declaration, not a transport (kbconform run printing the
    design line is the shared namespace's test, above)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "capped.py").write_text(CAPPED, encoding="utf-8")
    declared = runner.run_suites("capped:declared", transport="in-process", seed=5, select=BIG_WRITES)
    assert (declared.verdict, declared.problems) == ("pass", ()), _statuses(declared.report)
    assert set(_statuses(declared.report).values()) == {"pass"}
    assert "at most 50 records a write" in reports.design(declared.report)
    assert "at most 50 records a write" in reports.design_line(declared.report)

    undeclared = runner.run_suites("capped:undeclared", transport="in-process", seed=5, select=BIG_WRITES)
    assert (undeclared.verdict, undeclared.problems) == ("fail", ())
    assert set(_statuses(undeclared.report).values()) == {"fail"}, _statuses(undeclared.report)


#: The memory-scope reference declaring that its caller's identity is the application's (and,
#: as LangGraph's store does, that an empty scope reads everything), or the same empty scope
#: with the identity its own.
APPLICATION = textwrap.dedent(
    """
    from kbconform_reference.memory.adapter import MemoryAdapter


    class Declares(MemoryAdapter):
        def __init__(self, **declared):
            super().__init__()
            self.declared = declared

        @property
        def manifest(self):
            return {**super().manifest, **self.declared}


    def application():
        return Declares(callerIdentity="application", emptyScope="everything")


    def library():
        return Declares(emptyScope="everything")
    """
)
#: The tests of a caller naming no identity, and a read of a caller naming one (control).
NO_IDENTITY = ("iso-02[search-memories]", "mem-02[None]", "mem-02[empty scope]")


def test_an_identity_the_application_supplies_declines_the_tests_of_no_identity_and_is_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The memory-scope reference declaring ``callerIdentity: application`` skips iso-02 and
    mem-02 with the declaration as the reason, passes the reads of a named scope, and the report
    (``declared``) and the terminal carry each declaration with its price. Control: declaring an
    empty scope that reads everything with the identity its own is not honoured: the tests of no
    identity run (and pass: the reference refuses), and the price line says so."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "declares.py").write_text(APPLICATION, encoding="utf-8")
    code, report = _run("declares:application", *NO_IDENTITY, "iso-01[search-memories]")
    statuses = _statuses(report)
    assert code == 0, statuses
    assert {statuses[stable] for stable in NO_IDENTITY} == {"skip"}
    assert statuses["iso-01[search-memories]"] == "pass"
    reasons = {test["id"]: test.get("reason", "") for test in report["tests"]}
    assert all("callerIdentity: application" in reasons[stable] for stable in NO_IDENTITY), reasons
    priced = {d["design"]: d for d in report["declared"]}
    assert priced["identity supplied by the application, not the backend"]["honoured"] is True
    assert (
        "reads every user's memories"
        in priced["an empty scope (an empty namespace prefix) reads every memory"]["price"]
    )
    out = capsys.readouterr().out
    assert "its declared design's price: identity supplied by the application" in out

    code, report = _run("declares:library", *NO_IDENTITY)
    assert code == 0, _statuses(report)
    assert set(_statuses(report).values()) == {"pass"}
    assert [d["honoured"] for d in report["declared"] if "empty scope" in d["design"]] == [False]
    assert "(not honoured: judged a failure)" in capsys.readouterr().out
