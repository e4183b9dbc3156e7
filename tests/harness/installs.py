"""What the tests of the harnesses for real systems share: a harness's ``install`` script run
with its output shown when it fails, and a harness folder's Python script loaded as a module."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest


def run_install(script: Path, timeout: float, cwd: Path | None = None, arguments: Sequence[str] = ()) -> None:
    """``bash script ARGUMENTS``; a failure or an overrun fails the test with the script's output.

    Two test workers may want one harness at once: an install starts by removing the virtual
    environment it builds, so a second run of the same script with the same arguments waits for
    the first (a lock file per script and arguments) and then finds everything in place."""
    label = " ".join([f"{script.parent.name}/{script.name}", *arguments])
    key = hashlib.sha256("\0".join([str(script.resolve()), *arguments]).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"kbconform-install-{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _run_install(script, timeout, cwd, arguments, label)


def _run_install(
    script: Path, timeout: float, cwd: Path | None, arguments: Sequence[str], label: str
) -> None:
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


def needing(install: str, *values: Any) -> Any:
    """A parameter set whose test needs ``harnesses/INSTALL/install`` (marked ``installs``, so
    tests/scheduling.py runs it on the worker that runs that install's other tests)."""
    return pytest.param(*values, marks=pytest.mark.installs(install))


def load_script(path: Path) -> Any:
    """The Python file ``path`` (a harness folder's script, no package) as a module."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
