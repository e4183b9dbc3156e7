"""A pytest run of the suites inside this test's process, for the plugin's tests that check what
a run says and records, not how a process starts: no interpreter, pytest, Hypothesis or kit to
import again (several seconds of CPU each). A test of a process boundary (a script, xdist, a
signal, an exit) keeps ``runpytest_subprocess``.

pytester restores ``sys.modules`` after an in-process run (and after each test), dropping what
was imported since; the kit, the reference and numpy are imported with this module, at
collection, so each run's kit is the one this process holds (one class per error, one import of
numpy, which cannot load twice), and only the run's own modules (the adapter in its folder, the
suites' test modules) are imported afresh each time.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest

# What a run of the suites imports of the kit, the reference and their libraries.
KEPT = (
    "hypothesis",
    "numpy.random",
    "kbconform",
    "kbconform.adapter",
    "kbconform.conformance",
    "kbconform.conformance.strategies",
    "kbconform.errors",
    "kbconform.harness",
    "kbconform.plugin._collection",
    "kbconform.plugin._fixtures",
    "kbconform.plugin._options",
    "kbconform.plugin._session",
    "kbconform.plugin._verdict",
    "kbconform.profiles",
    *(
        f"kbconform.profiles.{name}.implementation"
        for name in ("kb_grant", "memory_scope", "project_pool", "store_tenancy", "tenant_namespace")
    ),
    *(
        f"kbconform.profiles.tenant_namespace.{name}"
        for name in ("_checks", "data", "model", "protocol", "world")
    ),
    "kbconform.report",
    "kbconform.workspace.golden",
    "kbconform_reference",
    "kbconform_reference.stores",
)
# Imported with this module, at collection: before any test's pytester, which restores
# sys.modules as it found them when the test ends.
for _name in KEPT:
    importlib.import_module(_name)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """``pytest *args`` in this process, in pytester's folder, without the cache provider."""
    pytester.syspathinsert()  # as `python -m pytest` in the folder: its modules import (-p, conftest)
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)


def run_with_report(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """:func:`run` writing ``report.json``, and the report read back ({} when none was written)."""
    result = run(pytester, "--kbconform-report=report.json", *args)
    path = pytester.path / "report.json"
    return result, json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
