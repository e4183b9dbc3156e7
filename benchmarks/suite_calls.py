"""How many backend calls each test of a suite makes, and the CPU it takes, in one process.

    python benchmarks/suite_calls.py [--adapter MODULE:FACTORY] [--json PATH]
        [--export-without-documents] [--phases] [PYTEST ARGS ...]

Runs the suites (default: ``suites/tenant_namespace/test_atomicity.py``) with pytest in this
process against the adapter (default: the in-memory reference), every backend it opens counted,
and prints each test's calls (opens included) and process CPU seconds, then the totals. Run it
from another checkout (``--rootdir``) to compare two versions of a suite on one machine.

``--phases`` (the atomicity suite): every call and CPU second of its tests put in the phase that
made it, over all the tests: ``open`` and ``close``; the control's or the faulted attempts'
``seed`` (canaries written, canaries read back, the rows, the seeded export); ``before`` and
``after`` (the views, by facade: list, count, get, export); ``before known`` (a faulted
attempt's state before its write told from its export, not read); ``write``; ``compare`` (an
after-view against the before); ``check`` (a landed write's own reads). A phase's CPU is its
own, the phases inside it left out.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
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
            with PHASES.call(name):
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
        with PHASES.phase("open"), PHASES.call("open"):
            PHASES.written = False
            return _Counted(self.inner.open(options))

    def close(self, backend: Any) -> None:
        with PHASES.phase("close"):
            self.inner.close(backend.inner if isinstance(backend, _Counted) else backend)

    def shutdown(self) -> None:
        self.inner.shutdown()


class _Phases:
    """Calls and CPU seconds by phase of the atomicity suite (``--phases``): a stack of phases,
    each call counted in the innermost (a view's by facade), each CPU second in the phase that
    was innermost while it ran; the control's and the faulted attempts' apart."""

    def __init__(self) -> None:
        self.on = False
        self.stack: list[str] = []
        self.attempts = False  # inside the faulted attempts' loop
        self.written = False  # the attempt's write is made: a view now is its after-view
        self.test = ""  # the test running
        self.calls: dict[str, int] = defaultdict(int)
        self.cpu: dict[str, float] = defaultdict(float)
        self.mark = time.process_time()

    def _tick(self) -> None:
        now = time.process_time()
        if self.stack:
            self.cpu[self.stack[-1]] += now - self.mark
        self.mark = now

    def name(self, phase: str) -> str:
        return f"{self.test}|{'attempts' if self.attempts else 'control'}: {phase}"

    @contextlib.contextmanager
    def phase(self, phase: str) -> Iterator[None]:
        if not self.on:
            yield
            return
        self._tick()
        self.stack.append(self.name(phase))
        try:
            yield
        finally:
            self._tick()
            self.stack.pop()

    @contextlib.contextmanager
    def call(self, facade: str) -> Iterator[None]:
        """One backend call: counted in the innermost phase (a view's apart by facade, its CPU
        too)."""
        if not self.on or not self.stack:
            yield
            return
        where = self.stack[-1]
        if not where.endswith(("before", "after")):
            self.calls[where] += 1
            yield
            return
        self._tick()
        self.stack.append(f"{where}: {facade}")
        self.calls[self.stack[-1]] += 1
        try:
            yield
        finally:
            self._tick()
            self.stack.pop()

    def wrapped(self, phase: str | Callable[[], str], function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def inner(*args: Any, **kwargs: Any) -> Any:
            with self.phase(phase() if callable(phase) else phase):
                return function(*args, **kwargs)

        return inner

    def points(self, function: Callable[..., list[int]]) -> Callable[..., Iterator[int]]:
        def inner(*args: Any, **kwargs: Any) -> Iterator[int]:
            for k in function(*args, **kwargs):
                self.attempts = True
                yield k
            self.attempts = False

        return inner

    def instrument(self, module: Any) -> None:
        """Put the phases into the atomicity suite's module (once)."""
        if getattr(module, "_phases_instrumented", False) or not hasattr(module, "_every_fault"):
            return
        from kbconform.profiles.tenant_namespace import data

        module._phases_instrumented = True
        module.seed_canaries = self.wrapped("seed canaries", module.seed_canaries)
        data._read_back = self.wrapped("seed canaries read back", data._read_back)
        module.ingest_batches = self.wrapped("seed rows", module.ingest_batches)
        module.fault_points = self.points(module.fault_points)
        seeded = module._seeded

        def _seeded(backend: Any, principals: Any, write: Any, *args: Any, **kwargs: Any) -> Any:
            def made() -> Any:
                self.written = True
                return write()

            with self.phase("seed export"):
                return seeded(backend, principals, self.wrapped("write", made), *args, **kwargs)

        module._seeded = _seeded
        view = module.View
        view.__init__ = self.wrapped(lambda: "after" if self.written else "before", view.__init__)
        view.known = classmethod(self.wrapped("before known", view.known.__func__))
        view.differences = self.wrapped("compare", view.differences)
        every = module._every_fault

        def _every_fault(
            run: Any, open_backend: Any, principals: Any, kind: str, prepare: Any, check: Any
        ) -> Any:
            return every(
                run,
                open_backend,
                principals,
                kind,
                self.wrapped("seed other", prepare),
                self.wrapped("check", check),
            )

        module._every_fault = _every_fault

    def table(self) -> dict[str, dict[str, dict[str, float]]]:
        """Each test's phases (and every test's, ``total``): calls and CPU seconds."""
        found: dict[str, dict[str, dict[str, float]]] = defaultdict(dict)
        for key in sorted(set(self.calls) | set(self.cpu)):
            test, phase = key.split("|", 1)
            calls, cpu = self.calls.get(key, 0), self.cpu.get(key, 0.0)
            for where in (test, "total"):
                row = found[where].setdefault(phase, {"calls": 0, "cpu_seconds": 0.0})
                row["calls"] += calls
                row["cpu_seconds"] += cpu
        return {
            test: {
                phase: {**row, "cpu_seconds": round(row["cpu_seconds"], 3)} for phase, row in phases.items()
            }
            for test, phases in found.items()
        }


PHASES = _Phases()

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

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if PHASES.on:
            for item in session.items:
                PHASES.instrument(getattr(item, "module", None))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        PHASES.test = item.nodeid.split("::")[-1]
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
    parser.add_argument("--phases", action="store_true")
    args, rest = parser.parse_known_args(argv)
    ADAPTER[0] = args.adapter
    DOCUMENTLESS["export"] = args.export_without_documents
    PHASES.on = args.phases
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
    if PHASES.on:
        phases = PHASES.table()
        for test, rows in phases.items():
            print(f"{test}, by phase:")
            for name, row in rows.items():
                print(f"  {name}: {row['calls']:g} calls, {row['cpu_seconds']:g} s CPU")
        figures["phases"] = phases  # type: ignore[assignment]
    return write(figures, args.json)


if __name__ == "__main__":
    main(sys.argv[1:])
