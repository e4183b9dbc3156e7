"""The install runner the harness tests share: two workers asking for one harness at once take
turns, and different arguments (another virtual environment) do not wait for each other; and an
advisory release derived from its harness's install (harnesses/kept-venv.sh) only when it is
provably the pinned set."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.harness.installs import run_install

#: An install that rebuilds its folder as the harnesses' scripts do, slowly enough to overlap.
SCRIPT = """\
set -eu
log="$1"; shift
echo "start $*" >> "$log"
sleep 1
echo "end $*" >> "$log"
"""


def _both(script: Path, first: list[str], second: list[str]) -> list[str]:
    threads = [
        threading.Thread(target=run_install, args=(script, 30), kwargs={"arguments": arguments})
        for arguments in (first, second)
    ]
    for thread in threads:
        thread.start()
        time.sleep(0.05)
    for thread in threads:
        thread.join()
    return (script.parent / "log").read_text().split("\n")[:-1]


def test_one_install_with_the_same_arguments_runs_at_a_time(tmp_path: Path) -> None:
    script = tmp_path / "install"
    script.write_text(SCRIPT)
    log = str(tmp_path / "log")
    assert _both(script, [log, "a"], [log, "a"]) == ["start a", "end a", "start a", "end a"]


def test_installs_with_other_arguments_overlap(tmp_path: Path) -> None:
    """Control: the lock is per arguments, so the same script for two folders runs at once."""
    script = tmp_path / "install"
    script.write_text(SCRIPT)
    log = str(tmp_path / "log")
    said = _both(script, [log, "a"], [log, "b"])
    assert sorted(said[:2]) == ["start a", "start b"], said  # the second started before the first ended
    assert sorted(said[2:]) == ["end a", "end b"], said


#: kept_venv_derive run on its own: ``derive VENV PINS REQUIREMENTS`` derives VENV from the
#: LangGraph harness's install with PINS, REQUIREMENTS the pins it must come to.
DERIVE = """\
set -uo pipefail
say() { printf 'derive: %s\\n' "$*" >&2; }
. "$1/kept-venv.sh"
venv="$2"
base="$1/langgraph/.venv"
kept_venv_derive "$base" "$base/bin/python" "$3" "$(cat "$1/langgraph/requirements.txt" "$4")"
"""


@pytest.mark.slow  # installs the LangGraph harness (shared with its own tests) and asks PyPI
@pytest.mark.installs("langgraph")
def test_a_release_is_derived_only_when_it_is_provably_the_pinned_set(tmp_path: Path) -> None:
    """Derived from the harness's install, a release whose pins leave a requirement unmet (pip
    check) or whose packages are not exactly the pinned ones is refused, so its install runs in
    full; control: the advisory's own pins derive, and the venv holds their release."""
    harnesses = Path(__file__).resolve().parents[2] / "harnesses"
    pins = harnesses.parent / "advisories" / "langgraph" / "sqlite-3.1.0.txt"
    run_install(harnesses / "langgraph" / "install", 900)
    script = tmp_path / "derive"
    script.write_text(DERIVE)
    partial = tmp_path / "partial.txt"
    partial.write_text("langgraph-checkpoint-sqlite==3.1.0\n")  # without aiosqlite and sqlite-vec

    def derive(name: str, given: Path, pinned: Path) -> subprocess.CompletedProcess[str]:
        command = ["bash", str(script), str(harnesses), str(tmp_path / name), str(given), str(pinned)]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)

    unmet = derive("unmet", partial, partial)
    assert unmet.returncode == 1, unmet.stderr
    assert "requires aiosqlite, which is not installed" in unmet.stdout + unmet.stderr
    unpinned = derive("unpinned", pins, Path("/dev/null"))
    assert unpinned.returncode == 1, unpinned.stderr
    assert "not the pinned ones" in unpinned.stderr
    derived = derive("derived", pins, pins)
    assert derived.returncode == 0, derived.stderr
    python = tmp_path / "derived" / "bin" / "python"
    asked = "import importlib.metadata as m; print(m.version('langgraph-checkpoint-sqlite'))"
    shown = subprocess.run([str(python), "-I", "-c", asked], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "3.1.0"
