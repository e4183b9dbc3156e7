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
import pkgutil
from typing import Any

import pytest


def _kit() -> list[str]:
    """Every module of the kit (not the command line's entry or the harness runtime's copy)."""
    import kbconform

    return [
        found.name
        for found in pkgutil.walk_packages(kbconform.__path__, "kbconform.")
        if not found.name.endswith("__main__") and not found.name.startswith("kbconform._harness_runtime")
    ]


#: What a run of the suites imports first: the kit, the reference's in-memory parts, Hypothesis
#: and numpy.
KEPT = ("hypothesis", "numpy.random", *_kit(), "kbconform_reference", "kbconform_reference.stores")
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
