"""How many backend calls each test of a suite makes, and the CPU it takes, in one process.

    python benchmarks/suite_calls.py [--adapter MODULE:FACTORY] [--json PATH]
        [--export-without-documents] [PYTEST ARGS ...]

Runs the suites (default: ``suites/tenant_namespace/test_atomicity.py``) with pytest in this
process against the adapter (default: the in-memory reference), every backend it opens counted,
and prints each test's calls (opens included) and process CPU seconds, then the totals. Run it
from another checkout (``--rootdir``) to compare two versions of a suite on one machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _bench import write

from kbconform.adapter import load_adapter

ROOT = Path(__file__).resolve().parent.parent
CALLS = {"n": 0}
#: With ``--export-without-documents``: the adapter's export carries no document (as Neo's
#: does, which keeps a chunk's text in its metadata), its lists and gets still show it.
DOCUMENTLESS = {"export": False}


class _Counted:
    """A backend whose every call counts."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            CALLS["n"] += 1
            if name == "export" and DOCUMENTLESS["export"]:
                return [{**dict(row), "document": None} for row in value(*args, **kwargs)]
            return value(*args, **kwargs)

        return counted


class _CountingAdapter:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.manifest = inner.manifest

    def open(self, options: Any) -> Any:
        CALLS["n"] += 1
        return _Counted(self.inner.open(options))

    def close(self, backend: Any) -> None:
        self.inner.close(backend.inner if isinstance(backend, _Counted) else backend)

    def shutdown(self) -> None:
        self.inner.shutdown()


#: The adapter counted (set by :func:`main` before the suites load it).
ADAPTER = ["kbconform_reference.adapter:memory"]


def counting() -> _CountingAdapter:
    """The adapter factory the suites load: :data:`ADAPTER`, every call counted."""
    adapter, _ = load_adapter(ADAPTER[0])
    return _CountingAdapter(adapter)


class _PerTest:
    """Each test's calls and CPU seconds, setup to teardown."""

    def __init__(self) -> None:
        self.figures: dict[str, dict[str, float]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        calls, cpu = CALLS["n"], time.process_time()
        yield
        self.figures[item.nodeid.split("::")[-1]] = {
            "calls": CALLS["n"] - calls,
            "cpu_seconds": round(time.process_time() - cpu, 2),
        }


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=ADAPTER[0])
    parser.add_argument("--json", type=Path)
    parser.add_argument("--export-without-documents", action="store_true")
    args, rest = parser.parse_known_args(argv)
    ADAPTER[0] = args.adapter
    DOCUMENTLESS["export"] = args.export_without_documents
    sys.modules.setdefault("suite_calls", sys.modules[__name__])
    recorder = _PerTest()
    suites = rest or [str(ROOT / "suites" / "tenant_namespace" / "test_atomicity.py")]
    pytest.main(
        ["-q", "-n", "0", "-p", "no:randomly", "--kbconform-adapter", "suite_calls:counting", *suites],
        plugins=[recorder],
    )
    figures = recorder.figures
    figures["total"] = {
        "calls": sum(f["calls"] for f in figures.values()),
        "cpu_seconds": round(sum(f["cpu_seconds"] for f in figures.values()), 2),
    }
    for name, row in figures.items():
        print(f"  {name}: {row['calls']:g} calls, {row['cpu_seconds']:g} s CPU")
    return write(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
