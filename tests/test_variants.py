"""``kbconform mutants --variants FILE``: an adapter author's broken variants of their own adapter,
listed in a Python file, run against the tests named to kill each, with no packaging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = """\
from tests.plugin.tiny_adapter import leaky as leaky_backend
from tests.plugin.tiny_adapter import make


def sound():
    return make()


def leaky():
    return leaky_backend()


MUTANTS = [
    {"name": "leaky", "breaks": "reads every tenant", "killers": ["leak-01[list]", "closed-03"],
     "adapter": "leaky"},
    {"name": "not-broken", "breaks": "nothing", "killers": ["leak-01[list]"], "adapter": "sound"},
]
"""


def _mutants(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``kbconform mutants`` from ``where`` (the repository importable, for the tiny adapter)."""
    return subprocess.run(
        [sys.executable, "-m", "kbconform", "mutants", *args],
        cwd=where, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.parametrize("transport", ["in-process", "stdio"])
def test_variants_in_a_file_are_run_against_their_killers_and_a_survivor_is_named(
    transport: str, tmp_path: Path
) -> None:
    """From another directory: the leaky variant is killed by both its killers, the sound one
    named as broken survives (the control: a variant the suites cannot kill is reported, exit 1),
    and --json records both, each from the file."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "my_variants.py").write_text(VARIANTS, encoding="utf-8")
    done = _mutants(
        tmp_path, "--variants", "mine/my_variants.py", "--transport", transport, "--json", "out.json"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.split()[:3] == ["leaky", "killed", "closed-03,"] for line in lines), done.stdout
    assert any(line.split()[:2] == ["not-broken", "SURVIVED"] for line in lines), done.stdout
    assert "not killed: leak-01[list] passed" in done.stdout
    results = {
        m["name"]: m for m in json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["mutants"]
    }
    assert results["leaky"]["killed"] is True
    assert results["leaky"]["killed_by"] == ["closed-03", "leak-01[list]"]
    assert results["not-broken"]["killed"] is False
    assert {m["set"] for m in results.values()} == {"variants mine/my_variants.py"}


UNOPENABLE = """\
from tests.plugin.tiny_adapter import make


class NeedsAClient:
    \"\"\"The tiny adapter, but opening a backend imports a store client not installed here.\"\"\"

    def __init__(self):
        self.manifest = make().manifest

    def open(self, options):
        import kbconform_no_such_store_client  # noqa: F401

    def close(self, backend):
        pass

    def shutdown(self):
        pass


def needs_a_client():
    return NeedsAClient()


MUTANTS = [
    {"name": "needs-a-client", "breaks": "nothing", "killers": ["leak-01[list]", "closed-03"],
     "adapter": "needs_a_client"},
]
"""


def test_a_set_whose_backend_does_not_open_here_kills_nothing(tmp_path: Path) -> None:
    """A variant whose backend cannot open (a store client not installed) fails every test, yet
    is not killed: the control open of its set fails first, and the mutant is reported as an
    error naming the missing module (exit 1), not as killed by its killers. The leaky variant
    above, whose backend opens, is killed (the control)."""
    (tmp_path / "unopenable.py").write_text(UNOPENABLE, encoding="utf-8")
    args = ("--variants", "unopenable.py", "--transport", "in-process", "--json", "out.json")
    done = _mutants(tmp_path, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["mutants"]
    assert (result["killed"], result["killed_by"]) == (False, [])
    assert "no backend of its set opens here" in result["error"]
    assert "No module named 'kbconform_no_such_store_client'" in result["error"]
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "a Python file (.py) listing MUTANTS"),
        ("X = 1\n", "a non-empty list of mutants named MUTANTS"),
        ("raise RuntimeError('broken import')\n", "RuntimeError: broken import"),
        ("MUTANTS = [{'name': 'a', 'breaks': 'x', 'killers': [], 'adapter': 'f'}]\n", "killers"),
        (
            "MUTANTS = [{'name': 'a', 'breaks': 'x', 'killers': ['leak-01[list]'], 'adapter': 'f'}] * 2\n",
            "each mutant name once",
        ),
    ],
)
def test_a_variants_file_that_cannot_be_used_is_a_usage_error(
    text: str | None, expected: str, tmp_path: Path
) -> None:
    """A missing file, one without MUTANTS, one that fails to import, a variant with no killers,
    a name twice: exit 2, KB_MUTANTS_INVALID and what was expected, no traceback."""
    if text is not None:
        (tmp_path / "bad_variants.py").write_text(text, encoding="utf-8")
    done = _mutants(tmp_path, "--variants", "bad_variants.py")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "KB_MUTANTS_INVALID" in done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_variants_and_installed_sets_are_not_mixed(tmp_path: Path) -> None:
    """--variants with --set is a usage error (exit 2) naming both."""
    (tmp_path / "my_variants.py").write_text(VARIANTS, encoding="utf-8")
    done = _mutants(tmp_path, "--variants", "my_variants.py", "--set", "reference")
    assert done.returncode == 2
    assert "--variants or --set" in done.stderr
