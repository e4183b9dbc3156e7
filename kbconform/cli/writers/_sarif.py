"""A report-v1 report as a SARIF 2.1.0 log, for code-scanning tools (``kbconform run --sarif``).

One result per failing or erroring test: its stable id is the rule (``ruleId``), described in
``tool.driver.rules`` with its level, suite, the spec section it checks and the adapter guide's
section; the result's message names its cause first (``C1: ...``), then the first line of the
test's message, and its level is the cause's severity. The run's properties list the causes,
each with its tests, fix and rerun command. Every rule is an
isolation rule of a vector store or knowledge base, so each carries the OWASP Top 10 for LLM
Applications 2025 category LLM08 (vector and embedding weaknesses: unauthorized access and data
leakage, cross-context leaks, poisoning through another tenant's scope) as a tag. A result is
located at the adapter module or harness file the run tested when the report names one.

Standard library only.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kbconform import report as reports
from kbconform.report import Report, write

if TYPE_CHECKING:
    from kbconform.cli.writers import Finished

VERSION = "2.1.0"
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
OWASP = reports.OWASP
#: File endings of a harness program among a command's words.
_PROGRAMS = (".mjs", ".cjs", ".js", ".ts", ".py", ".rb", ".go", ".java", ".sh")


def _located(config: Mapping[str, Any]) -> str:
    """The file the run tested, as a path from the caller's directory: an adapter's module
    (``pkg.mod:factory`` -> ``pkg/mod.py``, in process or served by ``kbconform serve``), else
    a harness command's program, else ``kbconform`` (a harness reached at a URL)."""
    adapter = reports.served_adapter(config)
    if adapter is not None:
        return adapter.partition(":")[0].replace(".", "/") + ".py"
    harness = config.get("harness")
    command = harness.get("command") if isinstance(harness, Mapping) else None
    if not isinstance(command, str):
        return "kbconform"
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    programs = [word for word in words if word.endswith(_PROGRAMS)]
    return (programs or words or ["kbconform"])[-1]


def sarif(report: Report | Mapping[str, Any]) -> dict[str, Any]:
    """The SARIF 2.1.0 log of ``report``: one run of the tool kbconform, one result per failing
    or erroring test it reached (none for a run where every test passed or was declined; of a
    run stopped at its first failure, not the tests it never ran: :func:`report.failing`)."""
    report = Report.of(report)
    failing = report.failing
    where = _located(report.config)
    made = report.causes
    cause_of = {test: cause for cause in made for test in cause.tests}
    rules: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for index, test in enumerate(failing):
        properties: dict[str, Any] = {
            "tags": ["security", "isolation", OWASP],
            "level": test["level"],
            "suite": test["suite"],
            "owasp": OWASP,
        }
        for key in ("rule", "guide", "profile", "facade", "spoofMode", "notImplemented"):
            if key in test:
                properties[key] = test[key]
        spec = f"; rule: schemas/{test['rule']}" if "rule" in test else ""
        described = f"kbconform {test['id']} ({test['level']} {test['suite']}){spec}"
        rules.append(
            {
                "id": test["id"],
                "name": test["suite"],
                "shortDescription": {"text": described},
                "defaultConfiguration": {"level": "error"},
                "properties": properties,
            }
        )
        said = reports.first_line(test) or str(test.get("reason", "")) or f"{test['id']} {test['status']}"
        cause = cause_of.get(test["id"])
        results.append(
            {
                "ruleId": test["id"],
                "ruleIndex": index,
                "level": reports.SEVERITIES[cause.severity] if cause is not None else "error",
                "kind": "fail",
                "message": {"text": f"{cause.id}: {cause.title}. {said}" if cause is not None else said},
                "locations": [{"physicalLocation": {"artifactLocation": {"uri": where}}}],
                "properties": {
                    "status": test["status"],
                    **({"cause": cause.id, "severity": cause.severity} if cause is not None else {}),
                },
            }
        )
    return {
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "kbconform",
                        "version": report.suite_version,
                        "rules": rules,
                    }
                },
                "results": results,
                "properties": {
                    "seed": report.seed,
                    "highestLevelEarned": report.earned,
                    "testListHash": report.test_list_hash,
                    "causes": reports.cause_records(report.data),
                },
            }
        ],
    }


class Sarif:
    option = "--sarif"
    help = (
        "write a SARIF 2.1.0 log here: one result per failing test, with its rule (for code "
        "scanning, e.g. github/codeql-action/upload-sarif)"
    )

    def pytest_arguments(self, path: str) -> list[str]:
        return []

    def write(self, path: str, finished: Finished) -> None:
        write(path, json.dumps(sarif(finished.report), indent=2) + "\n")
