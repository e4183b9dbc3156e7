"""verify --replay turns a report into evidence; mutant sets come from an entry-point group."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbconform import mutants, report
from kbconform.cli import main
from kbconform.errors import ContractViolation

#: Each test here runs the suites (or a whole tool) in child processes: the slow tier.
pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
MEMORY = "kbconform_reference.adapter:memory"


@pytest.fixture(scope="module")
def memory_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A report of the reference in memory, seed 21, up to L2 (replays rerun the same level)."""
    path = tmp_path_factory.mktemp("replay") / "report.json"
    assert main(["run", "--adapter", MEMORY, "--seed", "21", "--level", "L2", "--report", str(path)]) == 0
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "claimed.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_report_replays_to_the_same_outcomes(
    memory_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """verify --replay reruns the report's tests with its seed, profile and level: all alike."""
    assert main(["verify", _write(tmp_path, memory_report), "--replay"]) == 0
    assert f"replayed: all {len(memory_report['tests'])} outcomes reproduced" in capsys.readouterr().out


def test_a_consistent_but_false_report_verifies_and_fails_its_replay(
    memory_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report claiming a failure that did not happen (levels recomputed, so plain verify
    accepts it: a report alone is a claim) is refused by --replay, which names the test."""
    forged = json.loads(json.dumps(memory_report))
    [entry] = [t for t in forged["tests"] if t["id"] == "leak-04"]
    entry["status"] = "fail"
    forged["levels"] = report.levels(forged["tests"], forged["manifest"])
    path = _write(tmp_path, forged)
    assert main(["verify", path]) == 0
    capsys.readouterr()
    assert main(["verify", path, "--replay"]) == 1
    err = capsys.readouterr().err
    assert "KB_REPLAY_DIFFERS" in err
    assert "leak-04: fail in the report, pass now" in err


def test_a_report_replayed_against_another_backend_differs(
    memory_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reference's report replayed against a mutant that leaks through list: the manifest and
    the outcomes of the tests it fails differ."""
    moved = json.loads(json.dumps(memory_report))
    mutant = "kbconform_reference.mutants:by_name.unfiltered_list"
    assert moved["config"]["harness"]["transport"] == "stdio"  # kbconform run served it
    for key, value in (("adapter", moved["config"]), ("command", moved["config"]["harness"])):
        value[key] = value[key].replace(MEMORY, mutant)
    assert main(["verify", _write(tmp_path, moved), "--replay"]) == 1
    err = capsys.readouterr().err
    assert "the adapter now declares another manifest (differs in: adapter)" in err
    assert "leak-01[list]: pass in the report, fail now" in err


# -- mutant sets --------------------------------------------------------------------------------


def test_the_reference_registers_its_mutants_as_a_set() -> None:
    """discover() finds the reference's set through the entry point, every mutant checked."""
    from kbconform_reference.mutants import MUTANTS

    found = mutants.discover(["reference"])
    assert [m.name for m in found] == [m.name for m in MUTANTS]
    assert {m.source for m in found} == {"reference"}
    assert all(m.adapter.startswith("kbconform_reference.namespace.mutants:by_name.") for m in found)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path``, as an installed distribution's is. The modules imported from it
    are forgotten after the test: a later test's folder holds other modules of the same names
    (``tiny_adapter``), which a module left in ``sys.modules`` would stand in for."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(folder)):
            del sys.modules[name]


def _register(site: Path, value: str, module: str = "", source: str = "") -> None:
    """An installed distribution registering ``value`` as the mutant set ``tiny``."""
    if module:
        (site / f"{module}.py").write_text(source, encoding="utf-8")
    info = site / "kbconform_test_tiny-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kbconform-test-tiny\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[kbconform.mutants]\ntiny = {value}\n", encoding="utf-8")


TINY_SET = """
from types import SimpleNamespace

MUTANTS = [
    SimpleNamespace(
        name="leaky-list",
        breaks="list reads every tenant",
        killers=("leak-01[list]",),
        smoke=False,
        adapter="tiny_adapter:leaky",
    )
]
"""


def test_an_adapter_author_ships_mutants_of_their_own_backend(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A set registered by another distribution is found beside the reference's and run alone
    with --set; its mutant is killed by the test named for it."""
    _register(site, "tiny_mutants:MUTANTS", "tiny_mutants", TINY_SET)
    shutil.copy(HERE / "tiny_adapter.py", site / "tiny_adapter.py")
    monkeypatch.chdir(site)
    assert {m.source for m in mutants.discover()} == {
        "reference",
        "reference-pool",
        "reference-grant",
        "reference-memory",
        "reference-postgres",
        "reference-tenancy",
        "tiny",
    }
    assert main(["mutants", "--set", "tiny", "--json", str(tmp_path / "m.json")]) == 0
    assert "1 of 1 mutants killed" in capsys.readouterr().out
    [entry] = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))["mutants"]
    assert (entry["set"], entry["name"], entry["killed"]) == ("tiny", "leaky-list", True)


@pytest.mark.parametrize(
    ("value", "source", "message"),
    [
        ("no_such_package_here:MUTANTS", "", "ModuleNotFoundError: No module named 'no_such_package_here'"),
        ("not_a_mutant:MUTANTS", "MUTANTS = [object()]", "/0/name: expected a name of lower-case words"),
        (
            "no_killers:MUTANTS",
            "from types import SimpleNamespace as N\n"
            "MUTANTS = [N(name='x', breaks='y', killers=(), smoke=False, adapter='a:b')]\n",
            "/0/killers: expected the suite test ids that must fail (empty only for a smoke)",
        ),
    ],
    ids=["not importable", "not a mutant", "no killers"],
)
def test_a_broken_mutant_set_is_a_clear_error(
    site: Path,
    capsys: pytest.CaptureFixture[str],
    value: str,
    source: str,
    message: str,
) -> None:
    """kbconform mutants names the set and what was expected, exit 2, no traceback."""
    _register(site, value, value.split(":")[0] if source else "", source)
    with pytest.raises(ContractViolation) as raised:
        mutants.discover(["tiny"])
    assert raised.value.code == "KB_MUTANTS_INVALID"
    assert main(["mutants", "--set", "tiny"]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "(mutant set 'tiny')" in err
    assert "Traceback" not in err


def test_no_mutant_set_installed_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the reference (or any set) installed, mutants says how to get one; an unknown
    --set name lists the installed ones (control: the reference's set is there)."""
    assert main(["mutants", "--set", "nope"]) == 2
    assert (
        "an installed mutant set (installed: reference, reference-grant, reference-memory, reference-pool, "
        "reference-postgres, reference-tenancy)" in capsys.readouterr().err
    )
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kwargs: [])
    assert main(["mutants"]) == 2
    err = capsys.readouterr().err
    assert "KB_MUTANTS_INVALID: no mutants to run" in err
    assert "pip install 'kbconform[reference]'" in err
