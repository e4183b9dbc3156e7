"""A suite test that runs for long is named on the terminal while it runs
(kbconform.plugin._verdict.still_running): a whole run otherwise shows dots only."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kbconform.plugin import _verdict

pytest_plugins = ["pytester"]
TINY = (Path(__file__).parent / "tiny_adapter.py").read_text(encoding="utf-8")


def test_a_test_still_running_is_named_with_its_time_and_one_that_ends_sooner_is_not() -> None:
    """A call that outlasts the interval gets a line naming the test and its seconds, from the
    watcher's thread, while it runs; the control, a call that ends at once, gets none, and the
    watcher stops with the call."""
    said: list[str] = []
    named = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        named.set()

    with _verdict.still_running(say, "scale-01", every=0.05):
        assert named.wait(30), "no line while the test ran"
    count = len(said)
    assert said[0].startswith("still running: scale-01 (")
    assert said[0].endswith(" s)")
    assert not any(t.name == "kbconform-still-running" for t in threading.enumerate())
    quiet: list[str] = []
    with _verdict.still_running(quiet.append, "leak-01", every=30):
        pass
    assert quiet == []
    assert len(said) == count  # nothing after the call ended


def test_a_run_names_a_suite_test_still_running_on_its_terminal(pytester: pytest.Pytester) -> None:
    """The plugin watches each suite test's call: with the interval made short and each call
    made to last a second (a plugin of the run's own), a run of two tests in a process of its
    own names each on the terminal, past pytest's capture of the test's output, each line a
    line of its own (with ``-q``, the second after the first test's dot), and names no other."""
    pytester.makepyfile(tiny_adapter=TINY)
    pytester.makepyfile(
        slow_calls="import time\n\nimport pytest\n\nfrom kbconform.plugin import _verdict\n\n"
        "_verdict.LONG_TEST = 0.3\n\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_runtest_call(item):\n"
        "    time.sleep(1.0)  # inside pytest's capture, which the line must get past\n"
    )
    for quiet in ((), ("-q",)):  # -q prints dots with no file's name before them
        result = pytester.runpytest_subprocess(
            "-p",
            "slow_calls",
            "--kbconform-adapter=tiny_adapter:make",
            "--kbconform-only=leak-01[query]",
            "--kbconform-only=leak-02",
            "-p",
            "no:cacheprovider",
            *quiet,
        )
        result.stdout.fnmatch_lines(["still running: leak-01[[]query[]] (* s)"])
        result.stdout.fnmatch_lines(["still running: leak-02 (* s)"])
        named = {line.split(" (")[0] for line in result.stdout.lines if line.startswith("still running:")}
        shown = [line for line in result.stdout.lines if "still running:" in line]
        assert all(line.startswith("still running:") for line in shown), (quiet, shown)
        assert named == {"still running: leak-01[query]", "still running: leak-02"}, quiet
