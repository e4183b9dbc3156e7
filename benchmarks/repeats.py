"""What the L4 state machine (state-01) asks twice: its calls at one seed, logged, and how many
of its reads are exact repeats.

    python benchmarks/repeats.py [--adapter MODULE:FACTORY] [--profile quick|thorough]
                                 [--seed N] [--suite PATH] [--json PATH]

Runs the state machine once per spoof mode the adapter declares, as ``kbconform run`` does, with
every backend call logged (facade, principal, arguments, what came back), and prints:

* calls: every backend call;
* reads: the calls of query, get, list, count and ask;
* exact_repeats: reads that ask the same principal the same question as an earlier read, with
  no change of state between them (every call that is not a read, every read that failed, and
  every read whose store fault fired changes the state; a read made with a store fault armed
  asks its own question: what the backend answers when its store fails at that call);
* answered_before: reads of another principal's question whose answer equals one already given
  at that state (the cache probes: the same query from every principal back to back).

``--suite`` runs another checkout's ``test_stateful.py`` (an earlier version, to compare).
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from _bench import SUITE, report, state_suite

from kbconform.adapter import load_adapter
from kbconform.conformance import Run
from kbconform.errors import KbconformError, NotFound

READS = frozenset({"query", "get", "list", "count", "ask"})


def _plain(value: Any) -> Any:
    """A logged argument or answer as a comparable value."""
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, str | int | float | bool | type(None)):
        return value
    return repr(value)


class _Fired:
    """A backend's ``store_fails`` switch, recording whether it failed a store call since
    :meth:`take` was last asked, and whether a plan is set (``armed``)."""

    def __init__(self, switch: Any) -> None:
        self.switch, self.fired, self.armed = switch, False, ""
        planned = switch.set

        def set_plan(plan: Any) -> int:
            self.armed = "" if plan is None else repr(plan)
            consulted: int = planned(plan)
            return consulted

        switch.set = set_plan  # the suite arms the switch it made; this one hears of it

    def __call__(self, *args: Any) -> bool:
        fails = bool(self.switch(*args))
        self.fired |= fails
        return fails

    def take(self) -> bool:
        fired, self.fired = self.fired, False
        return fired


class Logged:
    """A backend whose every call is logged: ``(facade, principal, arguments, answer, changed)``,
    ``changed`` True when the call changed the state (not a read, or a read that failed or whose
    store fault fired)."""

    def __init__(self, inner: Any, log: list[tuple[Any, ...]], fired: _Fired | None) -> None:
        self.inner, self._log, self._fired = inner, log, fired

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if not callable(value):
            return value

        def logged(*args: Any) -> Any:
            if self._fired is not None:
                self._fired.take()
            answer: Any = None
            try:
                answer = value(*args)
            except KbconformError as error:
                answer = error
                raise
            finally:
                fired = self._fired is not None and self._fired.take()
                failed = isinstance(answer, KbconformError) and not isinstance(answer, NotFound)
                shown = type(answer).__name__ if isinstance(answer, KbconformError) else _answer(answer)
                principal, rest = (args[0], args[1:]) if args else (None, ())
                changed = name not in READS or failed or fired
                armed = self._fired.armed if self._fired is not None else ""
                self._log.append((name, repr(principal), (*_plain(rest), armed), shown, changed))
            return answer

        return logged


def _answer(value: Any) -> Any:
    """An answer as logged: hits by id, document and metadata; anything else as is."""
    if isinstance(value, list | tuple):
        return tuple(_answer(v) for v in value)
    if hasattr(value, "id") and hasattr(value, "metadata"):
        return (value.id, value.document, _plain(dict(value.metadata)))
    if hasattr(value, "sources"):
        return (value.text, _answer(value.sources))
    return _plain(value)


class LoggedRun(Run):
    log: list[tuple[Any, ...]]

    def open(self, options: Any = None) -> Any:
        fired = None
        if options is not None and options.store_fails is not None:
            fired = _Fired(options.store_fails)
            options = replace(options, store_fails=fired)
        return Logged(super().open(options), self.log, fired)

    def close(self, backend: Any) -> None:
        super().close(backend.inner if isinstance(backend, Logged) else backend)


def repeats(log: list[tuple[Any, ...]]) -> dict[str, int]:
    """Of a call log: calls, reads, exact repeats and reads answered as an earlier read of another
    principal at the same state."""
    asked: set[tuple[Any, ...]] = set()
    answers: set[tuple[Any, ...]] = set()
    figures = {"calls": len(log), "reads": 0, "exact_repeats": 0, "answered_before": 0}
    for name, principal, args, answer, changed in log:
        if name in READS:
            figures["reads"] += 1
            question = (name, principal, args)
            if question in asked:
                figures["exact_repeats"] += 1
            elif (name, args, answer) in answers:
                figures["answered_before"] += 1
            asked.add(question)
            answers.add((name, args, answer))
        if changed:
            asked.clear()
            answers.clear()
    return figures


def main(argv: list[str] | None = None) -> dict[str, int]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default="kbconform_reference.adapter:memory")
    parser.add_argument("--profile", choices=["quick", "thorough"], default="quick")
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(2**32))
    parser.add_argument("--suite", type=Path, default=SUITE)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    suite = state_suite("kbconform_state_suite_logged", args.suite)

    loaded = Run.start(
        args.adapter, partial(load_adapter, args.adapter), seed=args.seed, profile=args.profile, level="L4"
    )
    run = LoggedRun(loaded.adapter, loaded.manifest, loaded.seed, loaded.profile, "L4")
    run.log = []
    try:
        for mode in run.manifest.spoof_modes:
            run.run_machine(suite.machine_for(run, mode))
    finally:
        run.shutdown()
        loaded.shutdown()
    figures = repeats(run.log)
    return report(figures, args.json, f"state-01 on {args.adapter} ({args.profile}, seed {args.seed}):")


if __name__ == "__main__":
    main(sys.argv[1:])
