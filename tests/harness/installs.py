"""What the tests of the harnesses for real systems share: a harness's ``install`` script run
with its output shown when it fails, and a harness folder's Python script loaded as a module."""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest


def run_install(script: Path, timeout: float, cwd: Path | None = None, arguments: Sequence[str] = ()) -> None:
    """``bash script ARGUMENTS``; a failure or an overrun fails the test with the script's output."""
    label = " ".join([f"{script.parent.name}/{script.name}", *arguments])
    try:
        done = subprocess.run(
            ["bash", str(script), *arguments],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as overrun:
        output = "".join(str(part or "") for part in (overrun.stdout, overrun.stderr))
        pytest.fail(f"harnesses/{label} did not finish within {timeout} s; its output:\n{output}")
    assert done.returncode == 0, (
        f"harnesses/{label} failed (exit {done.returncode}); its output:\n{done.stdout}{done.stderr}"
    )


def load_script(path: Path) -> Any:
    """The Python file ``path`` (a harness folder's script, no package) as a module."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
