"""``kbconform new-harness``: a harness-v1 skeleton in Node or Python for any profile, which
answers ``hello`` and earns a verdict at once, naming the operation to fill in first."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbconform.adapter import Manifest
from kbconform.cli import _harness_scaffold, main
from kbconform.contract import manifest_branch
from kbconform.profiles import PLACEHOLDER, names, placeholders, profile

#: Each profile's first operation: every test of the profile starts with it.
FIRST = {"tenant-namespace": "ingest", "project-pool": "create_project", "kb-grant": "create_tenant"}
#: The languages and profiles run: both languages, and every profile in one of them.
RUNS = [
    ("python", "tenant-namespace"),
    pytest.param("node", "tenant-namespace", marks=pytest.mark.slow),
    pytest.param("node", "project-pool", marks=pytest.mark.slow),
    pytest.param("python", "kb-grant", marks=pytest.mark.slow),
]


def _run(where: Path, command: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``kbconform run --harness COMMAND`` from ``where``, and its report."""
    done = subprocess.run(
        [sys.executable, "-m", "kbconform", "run", "--harness", command, "--report", "report.json"],
        cwd=where, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    report = where / "report.json"
    return done, json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}


@pytest.mark.parametrize(("language", "profile_name"), RUNS)
def test_a_new_harness_answers_hello_and_its_first_run_names_the_operation_to_fill_in(
    language: str, profile_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The written harness, run as the next-step line says from its directory, passes hello with
    its manifest: the run is sound and complete, every test fails (or is declined) at the
    profile's first operation, unshrunk, and the terminal says so in one line, no traceback."""
    if language == "node":
        assert shutil.which("node"), "node is not on PATH: the Node skeleton needs Node.js 20 or later"
    name = "my-harness" if language == "node" else "my_harness"
    where = tmp_path / "h"
    # A Python harness runs on the interpreter --python names (a virtualenv's, here this one).
    python = ["--python", sys.executable] if language == "python" else []
    arguments = ["new-harness", name, "--lang", language, "--profile", profile_name, "--dir", str(where)]
    assert main([*arguments, *python]) == 0
    out = capsys.readouterr().out
    command = _harness_scaffold.command(name, language, sys.executable)
    assert command.startswith(sys.executable if language == "python" else "node ")
    assert f'kbconform run --harness "{command}"' in out
    done, report = _run(where, command)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    assert report["manifest"] == json.loads((where / f"{name}.manifest.json").read_text(encoding="utf-8"))
    assert report["completeness"] == {"missing": [], "unknown": []}
    failing = [t for t in report["tests"] if t["status"] in ("fail", "error")]
    assert failing
    assert {t["status"] for t in report["tests"]} <= {"fail", "error", "skip"}
    assert {t.get("notImplemented") for t in failing} == {FIRST[profile_name]}
    file = _harness_scaffold.LANGUAGES[language][0].format(name=name)
    said = [line for line in done.stdout.splitlines() if line.startswith("  NOT IMPLEMENTED")]
    assert len(said) == 1
    assert f"{len(failing)} tests ended there" in said[0]
    assert f"fill in {profile(profile_name).operations[0]} in {file}" in said[0]
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.parametrize("profile_name", names())
def test_every_profile_gives_a_valid_skeleton_manifest_declining_every_optional_feature(
    profile_name: str,
) -> None:
    """The manifest a scaffold writes is valid for its profile and names every optional feature
    its branch of adapter-manifest-v1 names, none left out to be declined silently: each declined
    with a placeholder reason (callers at once too, as a placeholder ``serial``), which
    ``placeholders`` finds until the author replaces it (the control: a real reason is not a
    placeholder)."""
    texts = _harness_scaffold.files("x_h", "python", profile_name, "0")
    manifest = json.loads(texts["x_h.manifest.json"])
    declared = Manifest.declared(manifest)
    assert declared.profile == profile_name
    named = (manifest_branch(profile_name) or {})["features"]["properties"]
    assert sorted(manifest["features"]) == sorted(named)
    assert all(reason.startswith(PLACEHOLDER) for reason in manifest["features"].values())
    assert manifest["concurrency"]["serial"].startswith(PLACEHOLDER)
    assert placeholders(manifest) == tuple(sorted([*named, "concurrency"]))
    first = next(iter(named))
    replaced = {**manifest, "features": {**manifest["features"], first: "the store has no such switch"}}
    assert first not in placeholders(replaced)
    assert len(placeholders(replaced)) == len(named)
    assert "concurrency" not in placeholders({**manifest, "concurrency": "threads"})
    assert "concurrency" not in placeholders({**manifest, "concurrency": {"serial": "one event loop"}})


def test_new_harness_never_overwrites_and_refuses_a_name_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of the skeleton exists: exit 2 with KB_SCAFFOLD_EXISTS, nothing written; a name that
    is no file name (node) or would shadow a module (python): KB_SCAFFOLD_NAME_INVALID. In an
    empty directory all three files are written (control)."""
    (tmp_path / "h.md").write_text("mine\n", encoding="utf-8")
    assert main(["new-harness", "h", "--lang", "node", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kbconform: error: KB_SCAFFOLD_EXISTS: ")
    assert {p.name for p in tmp_path.iterdir()} == {"h.md"}
    assert main(["new-harness", "My Harness", "--lang", "node", "--dir", str(tmp_path / "a")]) == 2
    assert "KB_SCAFFOLD_NAME_INVALID" in capsys.readouterr().err
    assert main(["new-harness", "json", "--lang", "python", "--dir", str(tmp_path / "b")]) == 2
    assert "KB_SCAFFOLD_NAME_INVALID" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()
    assert main(["new-harness", "kbharness", "--lang", "node", "--dir", str(tmp_path / "d")]) == 2
    assert "KB_SCAFFOLD_NAME_INVALID" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
    assert main(["new-harness", "h", "--lang", "node", "--dir", str(tmp_path / "c")]) == 0
    assert {p.name for p in (tmp_path / "c").iterdir()} == {
        "h.mjs",
        "kbharness.mjs",
        "harness-v1.schema.json",
        "h.manifest.json",
        "h.md",
    }


RUNTIME = Path(__file__).resolve().parents[1] / "kbconform" / "_harness_runtime"


@pytest.mark.parametrize("language", sorted(_harness_scaffold.LANGUAGES))
@pytest.mark.parametrize("profile_name", names())
def test_a_new_harness_holds_one_method_per_operation_on_the_kits_runtime(
    language: str, profile_name: str
) -> None:
    """The harness written names each operation of its profile once, as a method, and nothing of
    the protocol (no stdin, no JSON framing): that is the kit's runtime, copied byte for byte,
    with the schema it reads the operations from (control: the runtime does read stdin)."""
    texts = _harness_scaffold.files("x_h", language, profile_name, "0")
    runtime = _harness_scaffold.RUNTIME[language]
    harness = texts[_harness_scaffold.LANGUAGES[language][0].format(name="x_h")]
    assert texts[runtime] == (RUNTIME / runtime).read_text(encoding="utf-8")
    stdin = "sys.stdin" if language == "python" else "process.stdin"
    assert stdin in texts[runtime]
    assert stdin not in harness
    assert "json.loads(line" not in harness
    assert "JSON.parse(line" not in harness
    schema = json.loads(texts[_harness_scaffold.SCHEMA])
    assert schema["$id"].endswith("harness-v1.schema.json")
    for op in profile(profile_name).operations:
        assert harness.count(f"fill in {op} in ") == 1, op


def test_the_command_of_a_python_harness_is_the_interpreter_given() -> None:
    """--python names the interpreter (quoted for the shell); python3 without it; node is node."""
    assert _harness_scaffold.command("h", "python") == "python3 h.py"
    assert _harness_scaffold.command("h", "python", "/v env/bin/python") == "'/v env/bin/python' h.py"
    assert _harness_scaffold.command("h", "node", "/v/bin/python") == "node h.mjs"


def test_a_memory_scope_harness_is_told_how_to_declare_a_search_that_returns_only_relevant_hits() -> None:
    """The memory-scope notes name searchReturns (a keyword search returns fewer than limit);
    the control: a tenant-namespace harness's notes do not."""
    memory = _harness_scaffold.files("x_h", "python", "memory-scope", "0")["x_h.md"]
    tenant = _harness_scaffold.files("x_h", "python", "tenant-namespace", "0")["x_h.md"]
    assert '"searchReturns": "relevant"' in memory
    assert "searchReturns" not in tenant
    assert "@notes@" not in memory + tenant


def test_each_harness_is_pointed_to_its_runtimes_fault_switch() -> None:
    """Where fault-injection is declined (the manifest) the Python harness and its README name
    kbharness's FaultSwitch, SwitchedStore and StoreFault, which the runtime copied beside it
    defines; a Node harness and its README name kbharness.mjs's FaultSwitch, switchedStore and
    StoreFault, which its copy exports; neither is told of the other's (the control)."""
    texts = _harness_scaffold.files("x_h", "python", "memory-scope", "0")
    manifest = json.loads(texts["x_h.manifest.json"])
    assert manifest["features"]["fault-injection"].startswith(PLACEHOLDER)
    for name in ("FaultSwitch", "SwitchedStore"):
        assert f"kbharness.{name}" in texts["x_h.py"]
        assert f"kbharness.{name}" in texts["x_h.md"]
        assert f"\nclass {name}" in texts["kbharness.py"]
    assert "kbharness.StoreFault" in texts["x_h.md"]
    assert "\nclass StoreFault" in texts["kbharness.py"]
    node = _harness_scaffold.files("x-h", "node", "memory-scope", "0")
    assert "kbharness.FaultSwitch" not in node["x-h.mjs"] + node["x-h.md"]
    assert "switchedStore" not in texts["x_h.py"] + texts["x_h.md"]
    for name, kind in (("FaultSwitch", "class"), ("StoreFault", "class"), ("switchedStore", "function")):
        assert f"`{name}" in node["x-h.md"]
        assert f"\nexport {kind} {name}" in node["kbharness.mjs"]
    assert "FaultSwitch" in node["x-h.mjs"]
    assert "switchedStore" in node["x-h.mjs"]
    assert "@faults@" not in texts["x_h.md"] + node["x-h.md"]
