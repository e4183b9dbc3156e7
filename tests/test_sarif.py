"""``kbconform run --sarif``: a SARIF 2.1.0 log valid against the official schema, one result per
failing test; and the repository's GitHub Action (``action.yml``), its steps' commands run."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kbconform import __version__
from kbconform import report as reports
from kbconform.cli import main
from kbconform.cli.writers._sarif import OWASP

ROOT = Path(__file__).resolve().parents[1]
#: The official SARIF 2.1.0 schema (rtm.5, the final), as an npm package ships it: fetched from
#: the registry at this version and checked against this digest, never vendored.
SCHEMA_PACKAGE = "@microsoft/jest-sarif@1.0.0-beta.0"
SCHEMA_INTEGRITY = (
    "sha512-A1fOhPd6Ic5iDk4F9YPw1qNB4XF+7+IviR7xl8r2F6QzQkx5cpY9LsGk2rExiFIEcBbjpVnSmwWGBukASkiQ9A=="
)
SCHEMA_MEMBER = "package/lib/schemas/sarif-2.1.0-rtm.5.json"
ADAPTER = "tests.plugin.tiny_adapter"
#: Two tests the leaky backend fails and the sound one passes.
ONLY = ("--only", "leak-01[list]", "--only", "closed-03")


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The SARIF 2.1.0 schema from the pinned npm package (its tarball's digest checked)."""
    npm = shutil.which("npm")
    assert npm, "npm is not on PATH: the SARIF schema comes from the npm registry (Node.js 20 or later)"
    where = tmp_path_factory.mktemp("sarif-schema")
    packed = subprocess.run(
        [npm, "pack", SCHEMA_PACKAGE, "--pack-destination", str(where), "--json"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert packed.returncode == 0, packed.stderr[-2000:]
    [tarball] = where.glob("*.tgz")
    data = tarball.read_bytes()
    assert "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode() == SCHEMA_INTEGRITY
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        member = archive.extractfile(SCHEMA_MEMBER)
        assert member is not None
        return json.loads(member.read())


def _run(where: Path, *args: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """``kbconform run`` from ``where`` with a SARIF log; its exit code, report and log. The
    command in this process: the run it starts is a process of its own (the action's test
    starts the command as a user does)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(where)
        patch.setenv("PYTHONPATH", str(ROOT))
        code = main(["run", *args, "--no-shrink", "--report", "report.json", "--sarif", "out.sarif"])
    report = json.loads((where / "report.json").read_text(encoding="utf-8"))
    return code, report, json.loads((where / "out.sarif").read_text(encoding="utf-8"))


def test_a_failing_run_gives_a_valid_sarif_log_with_one_result_per_failing_test(
    schema: Any, tmp_path: Path
) -> None:
    """Each failing test is one result: its id the rule, its cause's severity the level, its
    cause then its message's first line, located at the adapter's module; its rule says the
    spec section, the level and LLM08; the run lists the causes, each test in one. A passing
    run gives a valid log with no result; a log broken is refused (controls)."""
    code, report, log = _run(tmp_path, "--adapter", f"{ADAPTER}:leaky", *ONLY)
    assert code == 1
    validator = jsonschema.Draft4Validator(schema)
    assert list(validator.iter_errors(log)) == []
    [run] = log["runs"]
    failing = sorted(t["id"] for t in report["tests"] if t["status"] in ("fail", "error"))
    assert failing == ["closed-03", "leak-01[list]"]
    assert sorted(result["ruleId"] for result in run["results"]) == failing
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    causes = {cause["id"]: cause for cause in run["properties"]["causes"]}
    assert sorted(t for cause in causes.values() for t in cause["tests"]) == failing  # each test once
    # a leak is an error, a strictness failure a note: the level is the cause's severity
    levels = {"leak-01[list]": "error", "closed-03": "note"}
    for result in run["results"]:
        assert result["level"] == levels[result["ruleId"]]
        cause = causes[result["properties"]["cause"]]
        assert result["ruleId"] in cause["tests"]
        assert result["message"]["text"].startswith(f"{cause['id']}: {cause['title']}. ")
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
            ADAPTER.replace(".", "/") + ".py"
        )
        rule = rules[result["ruleId"]]
        assert OWASP in rule["properties"]["tags"]
        assert rule["properties"]["level"] == "L2"
    assert rules["leak-01[list]"]["properties"]["rule"] == "read-filter.md#every-facade"
    assert run["tool"]["driver"]["version"] == report["suiteVersion"]

    code, halted, stopped = _run(tmp_path, "--adapter", f"{ADAPTER}:leaky", *ONLY, "--fail-fast")
    assert code == 1
    assert list(validator.iter_errors(stopped)) == []
    unreached = [t["id"] for t in halted["tests"] if t["id"] in halted["completeness"]["missing"]]
    assert len(unreached) == 1  # the run stopped at its first failure: the other test never ran
    assert [r["ruleId"] for r in stopped["runs"][0]["results"]] == [t["id"] for t in reports.failing(halted)]
    assert [r["ruleId"] for r in stopped["runs"][0]["results"]] != unreached

    code, _, passing = _run(tmp_path, "--adapter", f"{ADAPTER}:make", *ONLY)
    assert code == 0
    assert list(validator.iter_errors(passing)) == []
    assert passing["runs"][0]["results"] == []
    broken = json.loads(json.dumps(log))
    del broken["runs"][0]["results"][0]["message"]
    assert list(validator.iter_errors(broken))
    assert list(validator.iter_errors({**log, "version": "2.0.0"}))


def _action() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return loaded


def _rendered(value: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    """``value`` with the action's ``${{ inputs.X }}`` and ``${{ steps.run.outputs.X }}``."""

    def one(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        return inputs[name] if kind == "inputs" else outputs.get(name, "")

    return re.sub(r"\$\{\{\s*(inputs|steps\.run\.outputs)\.([\w-]+)\s*\}\}", one, value)


def _steps(where: Path, given: dict[str, str]) -> tuple[list[int], dict[str, str]]:
    """Run every ``run`` step of the action as GitHub would (bash, its env and working
    directory rendered from the inputs), in order until one fails; each step's exit code, and
    the outputs written to GITHUB_OUTPUT."""
    action = _action()
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update(given)
    outputs: dict[str, str] = {}
    codes = []
    output_file = where / "github-output"
    for step in action["runs"]["steps"]:
        if "run" not in step:
            continue
        env = {
            **os.environ,
            "GITHUB_OUTPUT": str(output_file),
            "GITHUB_STEP_SUMMARY": str(where / "summary.md"),
        }
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["PYTHONPATH"] = str(ROOT)
        env.update(
            {key: _rendered(str(value), inputs, outputs) for key, value in step.get("env", {}).items()}
        )
        cwd = where / _rendered(step.get("working-directory", "."), inputs, outputs)
        done = subprocess.run(
            ["bash", "-e", "-c", _rendered(step["run"], inputs, outputs)],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        codes.append(done.returncode)
        if output_file.exists():
            outputs = dict(
                line.split("=", 1)
                for line in output_file.read_text(encoding="utf-8").splitlines()
                if "=" in line
            )
        if done.returncode != 0:
            break
    return codes, outputs


def test_the_action_runs_the_suites_writes_sarif_and_fails_on_the_verdict(tmp_path: Path) -> None:
    """The action's commands, run in order with a leaky adapter: the suites run, the SARIF log
    and the report are written, the run's exit code is the step output, and the last step
    fails the job; with a sound adapter every step passes (control). The SARIF upload step
    uploads the log the run wrote; the default install pins this kbconform."""
    action = _action()
    install = f"{sys.executable} -c 'import kbconform'"  # kbconform is installed here already
    # L0, four tests: the wiring is under test, not the suites; the leaky adapter's list returns
    # another tenant's rows, which contract-04 fails there
    level = {"level": "L0", "install": install, "upload-sarif": "false"}
    (tmp_path / "leaky").mkdir()
    codes, outputs = _steps(tmp_path / "leaky", {**level, "adapter": f"{ADAPTER}:leaky"})
    assert outputs["exit"] == "1"
    assert codes == [0, 0, 1]
    log = json.loads((tmp_path / "leaky" / "kbconform.sarif").read_text(encoding="utf-8"))
    assert log["runs"][0]["results"]
    assert (tmp_path / "leaky" / "kbconform.json").exists()
    (tmp_path / "sound").mkdir()
    codes, outputs = _steps(tmp_path / "sound", {**level, "adapter": f"{ADAPTER}:make"})
    assert (codes, outputs["exit"]) == ([0, 0, 0], "0")
    assert (
        json.loads((tmp_path / "sound" / "kbconform.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]
        == []
    )
    [upload] = [step for step in action["runs"]["steps"] if "uses" in step]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ inputs.working-directory }}/${{ inputs.sarif }}"
    assert action["inputs"]["install"]["default"] == f"pip install 'kbconform=={__version__}'"
