"""Adapters that attack the verdict instead of the data: each serves the tiny adapter's leaky
backend (list reads every tenant, so leak-01[list] and closed-03 fail) and then tries to turn
the run green or to hang it. The verdict tests run them through ``kbconform run``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from tiny_adapter import Broken, LeakyList, Tiny

from kbconform_reference import KnowledgeBase, Settings
from kbconform_reference.stores import MemoryStore


class ExitsInShutdown(Broken):
    """``shutdown`` ends the process with exit code 0 after the suites failed."""

    def __init__(self, how: str) -> None:
        super().__init__(LeakyList)
        self.how = how

    def shutdown(self) -> None:
        sys.stdout.flush()
        if self.how == "os":
            os._exit(0)
        sys.exit(0)


class ExitsInClose(Broken):
    """``close`` kills the process in the middle of the run: no report can be written."""

    def __init__(self) -> None:
        super().__init__(LeakyList)

    def close(self, backend: Any) -> None:
        os._exit(0)


class HangingDeletion(KnowledgeBase):
    def apply_deletion_signal(self, principal: Any, signal: Any) -> Any:
        threading.Event().wait()


class HangingQuery(KnowledgeBase):
    """Its query never returns (a store that stopped answering searches); every other facade
    answers."""

    def query(self, *args: Any, **kwargs: Any) -> Any:
        threading.Event().wait()


class SlowQuery(KnowledgeBase):
    """Slow but answering: the first three queries the process serves take 1.5 s each, within a
    4 s deadline (more than it together); then it answers as the reference does."""

    slow: ClassVar[list[int]] = [3]  # how many slow queries are left, in this process

    def query(self, *args: Any, **kwargs: Any) -> Any:
        if self.slow[0] > 0:
            self.slow[0] -= 1
            time.sleep(1.5)
        return super().query(*args, **kwargs)


class StopsAnswering(KnowledgeBase):
    """Its first deletion signal hangs, and from then on the whole adapter does, in a harness
    started again too: the file named by ``KBCONFORM_TEST_STOPPED`` says so (a backend whose
    store stopped answering and that sets no timeout of its own)."""

    def apply_deletion_signal(self, principal: Any, signal: Any) -> Any:
        Path(os.environ["KBCONFORM_TEST_STOPPED"]).touch()
        threading.Event().wait()


class Dies(Tiny):
    def open(self, options: Any) -> Any:
        if Path(os.environ["KBCONFORM_TEST_STOPPED"]).exists():
            threading.Event().wait()
        return StopsAnswering(MemoryStore(), settings=Settings(spoof_mode=options.spoof_mode))


class Chatty(KnowledgeBase):  # otherwise the reference: it passes
    """Prints 5 MB on every ingest, half through sys.stdout and half straight to file
    descriptor 2 (as C code or a child process would)."""

    def ingest(self, principal: Any, records: Any) -> Any:
        sys.stdout.write("x" * (5 << 19) + "\n")
        os.write(2, b"y" * (5 << 19) + b"\n")
        return super().ingest(principal, records)


class SpawnsAndHangs(Tiny):
    """``open`` starts a long-lived child process, writes both process ids to the file named by
    ``KBCONFORM_TEST_PIDS``, then hangs."""

    def open(self, options: Any) -> Any:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path(os.environ["KBCONFORM_TEST_PIDS"]).write_text(f"{os.getpid()}\n{child.pid}\n", encoding="utf-8")
        threading.Event().wait()
        return KnowledgeBase(MemoryStore(), settings=Settings(spoof_mode=options.spoof_mode))


def leaky() -> Broken:
    return Broken(LeakyList)


def exits_in_shutdown() -> ExitsInShutdown:
    return ExitsInShutdown("sys")


def hard_exits_in_shutdown() -> ExitsInShutdown:
    return ExitsInShutdown("os")


def exits_in_close() -> ExitsInClose:
    return ExitsInClose()


def hangs_in_deletion() -> Broken:
    return Broken(HangingDeletion)


def hangs_in_query() -> Broken:
    return Broken(HangingQuery)


def slow_query() -> Broken:
    return Broken(SlowQuery)


def stops_answering() -> Dies:
    return Dies()


def chatty() -> Broken:
    return Broken(Chatty)  # no leak: only its output is hostile


def spawns_and_hangs() -> SpawnsAndHangs:
    return SpawnsAndHangs()


class PatchesTheJudge(Broken):
    """Serves the leaky backend and, when its factory runs, patches the kbconform plugin in the
    process that loaded it: every result the plugin gathers becomes a pass. In process (the
    pytest plugin's --kbconform-adapter) that process writes the report, so the report says
    pass; behind harness-v1 (kbconform run) the patch reaches only the serving process."""

    def __init__(self) -> None:
        super().__init__(LeakyList)
        from kbconform.plugin._verdict import Gatherer

        gather = Gatherer.pytest_runtest_logreport

        def passing(gatherer: Any, report: Any) -> None:
            for name, entry in report.user_properties:
                if name == "kbconform" and isinstance(entry, dict):
                    entry["status"] = "pass"
                    entry.pop("message", None)
            gather(gatherer, report)

        Gatherer.pytest_runtest_logreport = passing  # type: ignore[method-assign]


def patches_the_judge() -> PatchesTheJudge:
    return PatchesTheJudge()
