"""Running the suites as a command: one pytest process per adapter, read back through its report.

Each run is a separate ``python -m pytest`` with the plugin, started in an empty working
directory so the caller's own pytest configuration does not leak into the verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbconform.report import FAILED

DEFAULT_ADAPTER = "kbconform_reference.adapter:chroma_embedded"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One suite run: pytest's exit code, the report, and what pytest printed."""

    returncode: int
    report: dict[str, Any]
    output: str

    @property
    def failed(self) -> list[str]:
        return sorted(t["id"] for t in self.report.get("tests", ()) if t["status"] in FAILED)


def run_suites(
    adapter: str,
    *,
    level: str | None = None,
    seed: int | None = None,
    profile: str | None = None,
    extra: Sequence[str] = (),
    stream: bool = False,
) -> Outcome:
    """Run the suites against ``adapter`` in a fresh pytest process."""
    with tempfile.TemporaryDirectory(prefix="kbconform-run-") as where:
        report = Path(where) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pytest",
            f"--kbconform-adapter={adapter}",
            f"--kbconform-report={report}",
            "-p",
            "no:cacheprovider",
            *(["--kbconform-level", level] if level else []),
            *(["--kbconform-seed", str(seed)] if seed is not None else []),
            *(["--kbconform-profile", profile] if profile else []),
            *extra,
        ]
        # The caller's directory stays importable (as with ``python -m pytest`` there), so an
        # adapter module beside the caller is found although pytest runs elsewhere.
        path = os.pathsep.join(p for p in (str(Path.cwd()), os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        done = subprocess.run(command, cwd=where, env=env, capture_output=not stream, text=True, check=False)
        output = "" if stream else done.stdout + done.stderr
        data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return Outcome(done.returncode, data, output)


@dataclass(frozen=True, slots=True)
class MutantResult:
    name: str
    breaks: str
    killed: bool
    killed_by: list[str]
    expected: list[str]
    error: str | None = None  # the suites did not run: the end of pytest's output


def run_mutants(seed: int = 0, workers: int = 2) -> list[MutantResult]:
    """Run the suites against every mutant; a mutant is killed when every test named for it
    fails (a smoke: when the run fails at all)."""
    from kbconform_reference.mutants import MUTANTS

    def one(mutant: Any) -> MutantResult:
        factory = f"kbconform_reference.mutants:by_name.{mutant.name.replace('-', '_')}"
        outcome = run_suites(factory, seed=seed)
        if not outcome.report:
            tail = "\n".join(outcome.output.strip().splitlines()[-5:])
            return MutantResult(
                mutant.name, mutant.breaks, False, [], list(mutant.killers), tail or "no output"
            )
        failed = outcome.failed
        if mutant.smoke:
            killed = outcome.returncode != 0 and bool(failed)
        else:
            killed = bool(failed) and set(mutant.killers) <= set(failed)
        return MutantResult(mutant.name, mutant.breaks, killed, failed, list(mutant.killers))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, MUTANTS))
