"""What a ``kbconform`` or pytest process costs before it does any work: CPU seconds of each
command below, run again and again, interleaved with the same commands on a baseline copy of the
kit (``--baseline DIR``: a folder holding another ``kbconform`` package, for example
``git archive REV kbconform | tar -x -C DIR``), and the bare interpreter for scale.

The commands: ``kbconform --help``, ``kbconform validate`` of one record, and pytest with the
plugin stopping at a usage error (an adapter module that does not exist). The last includes
every pytest plugin installed beside the kit (in the project's own environment, Hypothesis's
and Schemathesis's), which is not the kit's; ``--imports`` says whose imports a command waits
for, by top-level package (``python -X importtime``).

    python benchmarks/startup.py --baseline /tmp/kbconform-before --rounds 15 --json startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

RECORD = {
    "schemaVersion": "1.0.0",
    "tenantId": "acme",
    "repoSlug": "app",
    "rootKind": "bare-repo",
    "sourcePath": "a.md",
    "content": "x",
    "hashInputs": ["content"],
    "parserId": "p",
    "parserVersion": "1.0.0",
    "kind": "k",
    "name": "n",
}


def commands(folder: Path) -> dict[str, list[str]]:
    """Each measured command, to run in ``folder`` (which holds ``one.jsonl``)."""
    python = sys.executable
    return {
        "python -c pass": [python, "-c", "pass"],
        "kbconform --help": [python, "-m", "kbconform.cli", "--help"],
        "kbconform validate (1 record)": [
            python, "-m", "kbconform.cli", "validate", "--schema", "parsed-chunk-v1", "one.jsonl",
        ],
        "pytest usage error": [
            python, "-m", "pytest", "-p", "no:cacheprovider", "--kbconform-adapter=no_such_module:make",
        ],
    }  # fmt: skip


def _env(path: str) -> dict[str, str]:
    return {**{key: value for key, value in os.environ.items() if key != "PYTHONPATH"}, "PYTHONPATH": path}


def cpu(command: list[str], folder: Path, path: str) -> float:
    """User and system CPU seconds of one run of ``command``, with ``path`` first on sys.path."""
    quiet = subprocess.DEVNULL
    process = subprocess.Popen(command, cwd=folder, env=_env(path), stdout=quiet, stderr=quiet)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def imports(command: list[str], folder: Path, path: str) -> list[tuple[str, float]]:
    """Seconds of import, each top-level package's own, for one run of ``command``."""
    timed = [command[0], "-X", "importtime", *command[1:]]
    done = subprocess.run(timed, cwd=folder, env=_env(path), capture_output=True, text=True, check=False)
    spent: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line and "self [us]" not in line:
            own, _, name = line.removeprefix("import time:").split("|")
            top = name.strip().split(".")[0]
            spent[top] = spent.get(top, 0.0) + int(own) / 1e6
    return [
        (name, round(seconds, 3)) for name, seconds in sorted(spent.items(), key=lambda item: -item[1])[:8]
    ]


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a folder holding the kbconform package to compare with")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--imports", action="store_true", help="each command's imports by package")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--command", action="append", help="measure only this command (by its name above)")
    arguments = parser.parse_args(argv)
    here = str(Path(__file__).resolve().parent.parent)
    sides = {"this": here}
    if arguments.baseline:
        sides["baseline"] = str(Path(arguments.baseline).resolve())
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "one.jsonl").write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
        measured: dict[str, dict[str, list[float]]] = {}
        for _ in range(arguments.rounds):  # interleaved: both sides share the machine's load
            for name, command in commands(folder).items():
                if arguments.command and name not in arguments.command:
                    continue
                for side, path in sides.items():
                    measured.setdefault(name, {}).setdefault(side, []).append(cpu(command, folder, path))
        figures: dict[str, object] = {"rounds": arguments.rounds, "load": os.getloadavg()[0], "commands": {}}
        for name, by_side in measured.items():
            medians = {side: statistics.median(values) for side, values in by_side.items()}
            entry: dict[str, object] = {f"{side} cpu s": round(value, 3) for side, value in medians.items()}
            if "baseline" in medians:
                entry["this / baseline"] = round(medians["this"] / medians["baseline"], 3)
            if arguments.imports:
                entry["imports"] = imports(commands(folder)[name], folder, here)
            figures["commands"][name] = entry  # type: ignore[index]
            print(f"{name}: {entry}")
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
