"""The fan-out: store groups asked in parallel, at most ``max_workers`` at once, each with a deadline.

Each group is one task on the backend's executor; its deadline counts from when the task
starts (a group waiting for a free worker has not started yet). The caller waits for every
group or for the first to fail or miss its deadline, whichever comes first: all or nothing.
A group past its deadline is never waited for: its thread is abandoned (it may still be blocked
inside a store call) and the workers are replaced by fresh ones, so the abandoned thread never
holds back a later search, the reply, :meth:`FanOut.close` or the process's exit (workers are
daemon threads, unlike a ``ThreadPoolExecutor``'s, which the interpreter joins at exit).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class GroupFailed(Exception):
    """A group raised: ``index`` is the group, ``error`` what it raised."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(f"group {index} failed: {type(error).__name__}: {error}")
        self.index = index
        self.error = error


class GroupTimedOut(Exception):
    """A group did not answer within its deadline."""

    def __init__(self, index: int, seconds: float) -> None:
        super().__init__(f"group {index} did not answer within {seconds:g} s")
        self.index = index


class _Started(Generic[T]):
    """A task that records when it starts."""

    def __init__(self, task: Callable[[], T]) -> None:
        self.task = task
        self.started: float | None = None

    def __call__(self) -> T:
        self.started = time.monotonic()
        return self.task()


class Workers:
    """``size`` daemon threads taking tasks from one queue; :meth:`shutdown` lets each finish
    the task it runs (never waited for) and end."""

    def __init__(self, size: int) -> None:
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = queue.SimpleQueue()
        self._size = size
        for number in range(size):
            threading.Thread(target=self._work, name=f"kb-grant-group-{number}", daemon=True).start()

    def _work(self) -> None:
        while (item := self._tasks.get()) is not None:
            future, task = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = task()
            except BaseException as error:  # handed to the waiting caller
                future.set_exception(error)
            else:
                future.set_result(result)

    def submit(self, task: Callable[[], T]) -> Future[T]:
        future: Future[T] = Future()
        self._tasks.put((future, task))
        return future

    def shutdown(self) -> None:
        for _ in range(self._size):
            self._tasks.put(None)


class FanOut:
    """A backend's executor for store groups."""

    def __init__(self, max_workers: int, deadline: float) -> None:
        self.max_workers = max_workers
        self.deadline = deadline
        self._lock = threading.Lock()
        self._executor = self._fresh()

    def _fresh(self) -> Workers:
        return Workers(self.max_workers)

    def run(self, tasks: Sequence[Callable[[], T]]) -> list[T]:
        """Every task's result, in order; raises :class:`GroupFailed` for the first task that
        raises and :class:`GroupTimedOut` for the first that runs past the deadline."""
        with self._lock:
            executor = self._executor
        started = [_Started(task) for task in tasks]
        futures: list[Future[T]] = [executor.submit(task) for task in started]
        pending = set(range(len(futures)))
        try:
            while pending:
                now = time.monotonic()
                due = {i: at + self.deadline for i in pending if (at := started[i].started) is not None}
                late = [i for i, at in due.items() if at <= now]
                if late:
                    self._abandon(executor)
                    raise GroupTimedOut(late[0], self.deadline)
                timeout = min(due.values(), default=now + self.deadline) - now
                done, _ = wait([futures[i] for i in pending], timeout=timeout, return_when=FIRST_COMPLETED)
                for index in sorted(i for i in pending if futures[i] in done):
                    error = futures[index].exception()
                    if error is not None:
                        raise GroupFailed(index, error)
                    pending.discard(index)
        finally:
            for index in pending:
                futures[index].cancel()
        return [future.result() for future in futures]

    def run_one(self, task: Callable[[], T]) -> T:
        """One group (the single-store path): no bookkeeping of several groups, the same
        deadline (its worker is free, so it starts at once)."""
        with self._lock:
            executor = self._executor
        future = executor.submit(task)
        try:
            return future.result(timeout=self.deadline)
        except Exception as error:
            if not future.done():
                future.cancel()
                self._abandon(executor)
                raise GroupTimedOut(0, self.deadline) from None
            raise GroupFailed(0, error) from error

    def _abandon(self, executor: Workers) -> None:
        """Leave ``executor``'s threads to finish on their own; later searches get a fresh one."""
        with self._lock:
            if self._executor is executor:
                self._executor = self._fresh()
        executor.shutdown()

    def close(self) -> None:
        with self._lock:
            self._executor.shutdown()
