"""Deciding mutants: each mutant set's adapters run against the tests named to kill them, each
job's runs forked from a warm process, and whether each mutant was killed, and why not."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from kbconform.runner._request import RunError, RunRequest, Transport
from kbconform.runner._suites import run_suites
from kbconform.runner._supervision import Warm


@dataclass(frozen=True, slots=True)
class MutantResult:
    """One mutant's run. ``killed_by`` lists the tests that failed (of a killer-only run: the
    named killers that failed); ``unmet`` says, for each named killer that did not fail, why."""

    name: str
    breaks: str
    killed: bool
    killed_by: list[str]
    expected: list[str]
    error: str | None = None  # the suites did not run, or gave no sound report: why
    source: str = ""
    mode: str = "killers"  # "killers": only the named killers ran; "full": every test did
    unmet: list[str] = field(default_factory=list)
    #: Why the mutant was not run (its bug cannot be reached through the transport asked for).
    not_applicable: str | None = None
    #: How long deciding it took, in seconds.
    seconds: float = 0.0


def run_mutants(
    seed: int = 0,
    workers: int = 2,
    sets: Sequence[str] = (),
    *,
    full: bool = False,
    names: Sequence[str] = (),
    transport: Transport = "stdio",
    warm: bool = True,
    variants: Sequence[Any] | None = None,
    request: RunRequest | None = None,
) -> list[MutantResult]:
    """Run every registered mutant (of ``sets``, and named ``names``, when given) and decide
    whether it is killed: when every test named for it fails (a smoke: when the run fails).

    By default each mutant's run selects only its named killers (a partial run); a smoke, which
    names none, runs every test. ``full`` runs every test against every mutant and reports each
    failure. A killer the catalogue lacks, or that passes, is skipped, or does not run, leaves
    the mutant alive, and ``unmet`` says which and why.

    The smokes' runs start first (each runs every test); the results keep the mutants' order.
    Each job forks its runs from a warm process (:class:`Warm`) where the platform allows;
    ``warm=False`` starts every run cold (the benchmark's baseline). ``variants`` (mutants
    from :func:`kbconform.mutants.from_file`) are run instead of the installed sets.

    ``request`` is the run asked of every mutant (its level, Hypothesis profile, deadlines...),
    with the mutant's adapter for its backend, the mutant's killers for its selection and
    shrinking off; given, it says the seed (None: ``seed``) and the transport too."""
    from kbconform.mutants import discover
    from kbconform.report import unknown_ids

    if request is not None and transport != "stdio":
        raise RunError("give the transport in the run request, not beside it")

    mutants = tuple(variants) if variants is not None else discover(sets)
    if names:
        unknown = sorted(set(names) - {mutant.name for mutant in mutants})
        if unknown:
            raise RunError(f"no mutant named {', '.join(unknown)} in the sets installed")
        mutants = tuple(mutant for mutant in mutants if mutant.name in names)

    unopened = _unopened(mutants)

    def one(mutant: Any, warm: Warm) -> MutantResult:
        named = (mutant.name, mutant.breaks)
        killers = list(mutant.killers)
        mode = "full" if full or mutant.smoke else "killers"
        if not mutant.smoke and mutant.source in unopened:
            why = f"no backend of its set opens here, so no failure is its own: {unopened[mutant.source]}"
            return MutantResult(*named, False, [], killers, why, mutant.source, mode)
        asked = _asked(mutant.adapter, request, transport=transport, seed=seed)
        if mutant.in_process_only is not None and asked.transport != "in-process":
            why = f"in process only: {mutant.in_process_only}"
            return MutantResult(*named, False, [], killers, None, mutant.source, mode, not_applicable=why)
        strangers = unknown_ids(killers)
        if strangers:
            why = "names killers the suites' catalogue lacks: " + ", ".join(strangers)
            return MutantResult(*named, False, [], killers, why, mutant.source, mode, [why])
        outcome = run_suites(replace(asked, select=None if mode == "full" else killers), warm=warm)
        if outcome.verdict == "error":
            why = "\n".join(outcome.problems) or "\n".join(outcome.output.strip().splitlines()[-5:])
            return MutantResult(*named, False, [], killers, why or "no output", mutant.source, mode)
        failed = outcome.failed
        if mutant.smoke:
            unmet = [] if outcome.verdict == "fail" else ["every test passed: a smoke must fail the run"]
        else:
            tests = {test["id"]: test for test in outcome.report["tests"]}
            unmet = [_unmet(stable, tests.get(stable)) for stable in killers if stable not in failed]
        return MutantResult(*named, not unmet, failed, killers, None, mutant.source, mode, unmet)

    modules = sorted({mutant.adapter.partition(":")[0] for mutant in mutants})
    idle: queue.Queue[Warm] = queue.Queue()

    def timed(mutant: Any) -> MutantResult:
        try:
            process = idle.get_nowait()
        except queue.Empty:
            process = Warm(modules, start=warm)
        started = time.perf_counter()
        try:
            return replace(one(mutant, process), seconds=round(time.perf_counter() - started, 2))
        finally:
            idle.put(process)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            runs = {index: pool.submit(timed, mutants[index]) for index in _smokes_first(mutants)}
            try:
                return [runs[index].result() for index in range(len(mutants))]
            finally:
                for future in runs.values():
                    future.cancel()
    finally:
        while not idle.empty():
            idle.get_nowait().close()


#: How long the control open of a set's backend (:func:`_unopened`) may take, in seconds.
OPEN_TIMEOUT = 120.0


def _unopened(mutants: Sequence[Any]) -> dict[str, str]:
    """The sets (by source) of ``mutants`` whose backend does not open here, each with why: the
    sweep's control. A run whose backend cannot open (a store's client not installed, its
    server unreachable) fails every test, and so would "kill" every mutant. Before any run, one
    backend of each set is opened and closed in this process, through the first of its mutants
    that opens (a smoke serves no store and is not tried); an open that overruns its deadline
    ends the set's tries (its store does not answer, whichever mutant asks)."""
    why: dict[str, str] = {}
    decided: set[str] = set()
    for mutant in mutants:
        if mutant.smoke or mutant.source in decided:
            continue
        problem, hung = _opens(mutant.adapter)
        if problem is None or hung:
            decided.add(mutant.source)
        if problem is None:
            why.pop(mutant.source, None)
        else:
            why.setdefault(mutant.source, problem)
    return why


def _opens(adapter: str) -> tuple[str | None, bool]:
    """Why a backend of ``adapter`` does not open and close here within :data:`OPEN_TIMEOUT`
    (None: it does), and whether it overran."""
    from kbconform.adapter import BackendOptions, load_adapter

    outcome: list[str | None] = []

    def attempt() -> None:
        try:
            loaded, manifest = load_adapter(adapter)
            modes = manifest.spoof_modes
            try:
                loaded.close(loaded.open(BackendOptions(spoof_mode=modes[0]) if modes else BackendOptions()))
            finally:
                loaded.shutdown()
            outcome.append(None)
        except Exception as error:  # whatever stops it is the answer
            outcome.append(f"{type(error).__name__}: {error}")

    thread = threading.Thread(target=attempt, name=f"control open of {adapter}", daemon=True)
    thread.start()
    thread.join(OPEN_TIMEOUT)
    if not outcome:
        return f"opening a backend took more than {OPEN_TIMEOUT:g} s", True
    return outcome[0], False


def _smokes_first(mutants: Sequence[Any]) -> list[int]:
    """The order the mutants' runs start in (their indices): the smokes first, each a run of
    every test, the longest of a set (a smoke started last keeps one job busy long after the
    others have finished), then the others as given. The results keep the mutants' order."""
    return sorted(range(len(mutants)), key=lambda index: not mutants[index].smoke)


def _unmet(stable: str, test: Mapping[str, Any] | None) -> str:
    """Why the killer ``stable`` did not kill its mutant, given its entry in the report."""
    if test is None:
        return f"{stable} did not run (the manifest or the level does not select it)"
    if test["status"] == "skip":
        return f"{stable} was skipped ({test.get('reason', 'declined')})"
    return f"{stable} {'passed' if test['status'] == 'pass' else 'did not run'}"


#: How a mutant's run renders a failure: as Python prints a traceback (pytest's ``native``
#: style). Only which tests failed decides a mutant, and a failure's message is the same in
#: either style; pytest's own style parses each frame's file again for every failure, most of
#: a smoke's run (which fails every test).
_TRACEBACK = "--tb=native"


def _asked(adapter: str, request: RunRequest | None, *, transport: Transport, seed: int) -> RunRequest:
    """The run of the mutant served by ``adapter``: ``request`` (else one over ``transport``)
    with that adapter, at its seed (else ``seed``), shrinking off, failures rendered natively
    (unless the request's own pytest arguments say otherwise)."""
    if request is None:
        return RunRequest(adapter, transport=transport, seed=seed, shrink=False, extra=(_TRACEBACK,))
    return replace(
        request,
        adapter=adapter,
        harness=None,
        harness_url=None,
        seed=seed if request.seed is None else request.seed,
        shrink=False,
        extra=(_TRACEBACK, *request.extra),
    )
