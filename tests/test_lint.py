"""Lint, format and types as tests: ruff and mypy --strict, run from the repository root.

Each tool runs from this interpreter (``python -m ruff``, ``python -m mypy``), so the README's
test command (``pip install -e '.[test]' && python -m pytest``) runs them too. Each check has a
control: the same command on a known-bad input fails, so a pass is not a tool that looked at
nothing. A failing check prints the tool's output.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TYPED = ("kbconform", "reference_impl/kbconform_reference", "suites")
HANG = 900  # seconds: stops a hung tool, far above a cold mypy run
# The controls: ruff reads code from stdin as if it were a module of the kit (same configuration).
_STDIN_AS_MODULE = ("--stdin-filename", "kbconform/_control.py", "-")

pytestmark = pytest.mark.skipif(
    not (ROOT / "pyproject.toml").is_file(),
    reason=f"{ROOT} is not a source checkout (no pyproject.toml): there is no tree to lint",
)


def _tool(*args: str, stdin: str | None = None) -> tuple[int, str]:
    """Run ``python -m <args>`` in the repository root: the exit status and all output."""
    done = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
    )
    return done.returncode, f"$ python -m {' '.join(args)}\n{done.stdout}{done.stderr}"


def _mypy(cache: Path, *paths: str) -> tuple[int, str]:
    """``mypy --strict`` with the repository's configuration, reading and writing ``cache``."""
    config = str(ROOT / "pyproject.toml")
    return _tool("mypy", "--strict", "--config-file", config, "--cache-dir", str(cache), *paths)


def test_ruff_finds_no_lint_errors() -> None:
    """``ruff check .`` passes; an unused import under the same configuration fails (control)."""
    status, output = _tool("ruff", "check", ".")
    assert status == 0, output
    status, output = _tool("ruff", "check", *_STDIN_AS_MODULE, stdin="import os\n")
    assert status == 1, output
    assert "F401" in output


def test_ruff_format_would_change_no_file() -> None:
    """``ruff format --check .`` passes; badly spaced code under the same configuration fails (control)."""
    status, output = _tool("ruff", "format", "--check", ".")
    assert status == 0, output
    status, output = _tool("ruff", "format", "--check", *_STDIN_AS_MODULE, stdin="x = ( 1 )\n")
    assert status == 1, output


def test_mypy_strict_accepts_the_kit_the_reference_and_the_suites(tmp_path: Path, mypy_cache: Path) -> None:
    """``mypy --strict`` passes on kbconform, kbconform_reference and suites, having checked every
    Python file in them; an unannotated function fails under the same command (control)."""
    status, output = _mypy(mypy_cache, *TYPED)
    assert status == 0, output
    on_disk = sum(1 for folder in TYPED for _ in (ROOT / folder).rglob("*.py"))
    checked = re.search(r"no issues found in (\d+) source files?", output)
    assert checked is not None, output
    assert int(checked.group(1)) == on_disk, output
    control = tmp_path / "untyped.py"
    control.write_text("def twice(x):\n    return 2 * x\n", encoding="utf-8")
    status, output = _mypy(mypy_cache, str(control))
    assert status == 1, output
    assert "no-untyped-def" in output
