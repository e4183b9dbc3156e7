"""Works where users are: the built wheel, installed in a fresh virtualenv outside the repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import venv
import zipfile
from collections.abc import Collection
from pathlib import Path

import pytest

from kbconform.profiles import DEFAULT

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
ADAPTER = """\
from kbconform_reference.adapter import memory


def adapter():
    return memory()
"""


def _unshipped(names: Collection[str]) -> set[str]:
    """The files of suites/ and schemas/ (as the tree holds them) not in the wheel's ``names``."""
    files = [path for folder in ("suites", "schemas") for path in (ROOT / folder).rglob("*")]
    tree = {path.relative_to(ROOT).as_posix() for path in files if "__pycache__" not in path.parts}
    return {name for name in tree if (ROOT / name).is_file() and f"kbconform/{name}" not in names}


def _tests(level: str) -> int:
    """How many tests of the default profile the catalogue lists at ``level`` or below."""
    listed = json.loads((ROOT / "suites" / "catalogue.json").read_text(encoding="utf-8"))["tests"]
    return sum(1 for t in listed if t.get("profile", DEFAULT) == DEFAULT and t["level"] <= level)  # L0 < L1


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, timeout=900)


def test_the_installed_wheel_runs_the_suites_through_pytest_and_kbconform_run(tmp_path: Path) -> None:
    """The wheel carries every file of the suites and the schemas (their catalogue too); with an
    adapter written outside the repository, ``pytest --kbconform-adapter`` collects every suite
    test from the installed package and passes the L1 ones, ``kbconform run --adapter`` the L0
    ones, and the installed ``kbconform verify`` accepts the report (and rejects it trimmed)."""
    # with the build backend the test extra installs: an isolated build environment would make
    # the same bytes after installing the backend again
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    built = _run([*build, "-w", str(tmp_path / "dist"), str(ROOT)], tmp_path)
    assert built.returncode == 0, built.stderr
    [wheel] = (tmp_path / "dist").glob("kbconform-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "kbconform/suites/tenant_namespace/test_cross_tenant_leak.py" in names
    assert "kbconform/schemas/adapter-manifest-v1.schema.json" in names
    assert "kbconform/suites/catalogue.json" in names
    assert "kbconform/py.typed" in names  # mypy checks an adapter against the installed protocol
    assert not any(name.startswith(("suites/", "schemas/", "tests/")) for name in names)
    assert _unshipped(names) == set()
    shipped_without = set(names) - {"kbconform/suites/catalogue.json"}
    assert _unshipped(shipped_without) == {"suites/catalogue.json"}  # control: a file left out is seen

    venv.create(tmp_path / "venv")  # no pip of its own: this pip installs into it
    python = tmp_path / "venv" / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
    installed = _run([*install, f"{wheel}[reference]"], tmp_path)
    assert installed.returncode == 0, installed.stderr
    project = tmp_path / "project"
    project.mkdir()
    (project / "my_adapter.py").write_text(ADAPTER, encoding="utf-8")

    pytest_command = str(tmp_path / "venv" / "bin" / "pytest")  # as typed: the directory is not on sys.path
    # every suite module imported and each test collected from the installed package; the L1
    # tests run (every level is the reference conformance test's, on the same code in the tree)
    with_pytest = _run(
        [pytest_command, "--kbconform-adapter=my_adapter:adapter", "--kbconform-level", "L1", "-q"], project
    )
    assert with_pytest.returncode == 0, with_pytest.stdout[-3000:]
    counted = re.search(r"\b(\d+) passed, (\d+) deselected\b", with_pytest.stdout)
    assert counted is not None, with_pytest.stdout[-3000:]
    passed, deselected = (int(number) for number in counted.groups())
    assert passed == _tests("L1")
    assert passed + deselected == _tests("L4")
    assert not re.search(r"\b\d+ failed\b", with_pytest.stdout)  # pytest's count, not the legend's word
    assert (
        "site-packages/kbconform/suites"
        in _run(
            [str(python), "-c", "from kbconform._resources import data_dir; print(data_dir('suites'))"],
            project,
        ).stdout
    )

    kbconform = str(tmp_path / "venv" / "bin" / "kbconform")
    # L0: the installed command serves the adapter, runs the shipped suites and writes a report
    # that verifies; every level through kbconform run is the reference conformance test's
    with_run = _run(
        [kbconform, "run", "--adapter", "my_adapter:adapter", "--level", "L0", "--report", "report.json"],
        project,
    )
    assert with_run.returncode == 0, with_run.stdout[-3000:] + with_run.stderr[-2000:]
    assert "every test passed or was declined" in with_run.stdout
    verified = _run([kbconform, "verify", "report.json"], project)
    assert verified.returncode == 0, verified.stderr
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    report["tests"] = report["tests"][1:]
    (project / "trimmed.json").write_text(json.dumps(report), encoding="utf-8")
    rejected = _run([kbconform, "verify", "trimmed.json"], project)
    assert rejected.returncode == 1
    assert "missing: " in rejected.stderr
