"""The install runner the harness tests share: two workers asking for one harness at once take
turns, and different arguments (another virtual environment) do not wait for each other."""

from __future__ import annotations

import threading
import time
from pathlib import Path

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
