"""One conformance run: the adapter, its manifest, the seed, the Hypothesis profile, the level."""

from __future__ import annotations

import functools
import hashlib
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import hypothesis
from hypothesis import HealthCheck
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

from kbconform.adapter import Adapter, BackendOptions, Manifest, check_backend
from kbconform.conformance._deadline import DEFAULT_CALL_TIMEOUT, Caller, Guarded

if TYPE_CHECKING:  # what a fixture of the default profile declares it opens
    from kbconform.adapter import Backend

T = TypeVar("T")
ProfileName = Literal["quick", "thorough"]
PROFILES: dict[str, hypothesis.settings] = {
    # quick: for every CI run; thorough: for a nightly job.
    "quick": hypothesis.settings(max_examples=8, stateful_step_count=10),
    "thorough": hypothesis.settings(max_examples=100, stateful_step_count=40),
}

#: How long Hypothesis may shrink one test's failure, in seconds, unless a run says otherwise.
DEFAULT_SHRINK_BUDGET = 60.0
#: What Hypothesis reports when it stops shrinking at its time limit (its engine's
#: ``MAX_SHRINKING_SECONDS``, the budget); tests/plugin/test_plugin.py holds the words (a real
#: run whose shrinking stops at a budget of 0.01 s).
_SHRINK_STOPPED = "stopped because it is making very slow progress"

#: The page sizes a backend that declares none is tried at (schemas/pages.md).
DEFAULT_PAGE_SIZES = (10, 50, 100, 500, 1000)


@contextmanager
def seed_only() -> Iterator[None]:
    """Inside the block, Hypothesis draws its examples from the seed and the strategies alone.

    Now and then Hypothesis draws a constant it found in the source of the "local" modules
    loaded so far (any module outside the installed packages and the standard library): which
    those are depends on the adapter, on how the kit was installed and on the tests that ran
    before, so one seed would make another program in another run. Its own constants stay; the
    local ones are none here (``hypothesis.internal.conjecture.providers``, where Hypothesis
    keeps both; a version without them has nothing to pin).
    """
    from hypothesis.internal.conjecture import providers

    local = getattr(providers, "_get_local_constants", None)
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if local is None or cache is None:  # pragma: no cover - another Hypothesis
        yield
        return
    empty = type(providers._local_constants)()
    providers._get_local_constants = lambda: empty
    cache.cache.clear()  # the values allowed per draw, computed from the pool in use
    try:
        yield
    finally:
        providers._get_local_constants = local
        cache.cache.clear()


@dataclass
class Run:
    """Shared by every suite test of one pytest session.

    Every call into the adapter and its backends (loading, open, close, shutdown and each
    facade) has a deadline of ``call_timeout`` seconds: a hang fails the test that made the
    call, naming it (:class:`~kbconform.conformance.DeadlineExceeded`), and from then on the
    backend is taken as broken: every later call ends at once
    (:class:`~kbconform.conformance.BackendBroken`), and only the adapter's shutdown is tried.
    """

    adapter: Adapter
    manifest: Manifest
    seed: int
    profile: ProfileName = "quick"
    level: str = "L4"
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    _caller: Caller = field(default=None, repr=False)  # type: ignore[assignment]  # set below
    _open: list[Guarded] = field(default_factory=list, repr=False)
    #: Whether Hypothesis shrinks a failure to its shortest form (off: report the first failure
    #: found, as a mutant run does, where only the verdict matters).
    shrink: bool = True
    #: How long shrinking one failure may take, in seconds (:meth:`shrinking`).
    shrink_budget: float = DEFAULT_SHRINK_BUDGET

    def __post_init__(self) -> None:
        if self._caller is None:
            self._caller = Caller(self.call_timeout)

    @classmethod
    def start(
        cls,
        what: str,
        make: Callable[[], tuple[Adapter, Manifest]],
        *,
        seed: int,
        profile: ProfileName,
        level: str,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        start_timeout: float = 0.0,
        load_timeout: float = 0.0,
        shrink: bool = True,
        shrink_budget: float = DEFAULT_SHRINK_BUDGET,
    ) -> Run:
        """A run of the adapter ``make()`` returns with its manifest (``what`` names it in a
        deadline's message): loaded in this process (:func:`~kbconform.adapter.load_adapter`)
        or reached over harness-v1 (:func:`~kbconform.harness.connect`), as the caller chose.
        Every call has the deadline ``call_timeout``; ``start_timeout`` more is allowed for a
        call that may start the backend's process again, and ``load_timeout`` more for
        ``make()`` itself (an adapter loaded in process imports its backend's libraries)."""
        caller = Caller(call_timeout + start_timeout)
        adapter, manifest = caller.within(call_timeout + start_timeout + load_timeout, what, make)
        return cls(
            adapter,
            manifest,
            seed,
            profile,
            level,
            call_timeout,
            caller,
            shrink=shrink,
            shrink_budget=shrink_budget,
        )

    @contextmanager
    def shrinking(self) -> Iterator[list[str]]:
        """Around one test: Hypothesis stops shrinking its failure after :attr:`shrink_budget`
        seconds (the engine's ``MAX_SHRINKING_SECONDS``, which Hypothesis keeps settable for
        this), and its warning that it stopped is taken, not printed: the list yielded holds it
        once it came (the test's report says the example may not be the shortest)."""
        from hypothesis.internal.conjecture import engine
        from hypothesis.reporting import current_reporter, with_reporter

        stopped: list[str] = []
        forward = current_reporter()

        def reporter(value: object) -> None:
            if isinstance(value, str) and _SHRINK_STOPPED in value:
                stopped.append(value)
            else:
                forward(value)

        before = engine.MAX_SHRINKING_SECONDS
        engine.MAX_SHRINKING_SECONDS = self.shrink_budget  # type: ignore[assignment]  # seconds
        try:
            with with_reporter(reporter):
                yield stopped
        finally:
            engine.MAX_SHRINKING_SECONDS = before

    def open(self, options: BackendOptions | None = None) -> Backend:
        """A fresh, empty backend; closed by :meth:`close` (the fixtures do it)."""
        modes = self.manifest.spoof_modes  # none in a profile without spoof modes
        chosen = options or (BackendOptions(spoof_mode=modes[0]) if modes else BackendOptions())
        backend = self._caller.call("adapter.open()", self.adapter.open, chosen)
        guarded = Guarded(backend, self._caller)
        self._open.append(guarded)
        check_backend(backend, self.manifest)
        opened: Backend = guarded  # every facade passes through its Caller
        return opened

    def close(self, backend: Any) -> None:
        """Close a backend :meth:`open` gave (none is closed once the backend is taken as
        broken: the call would wait out its deadline too)."""
        for guarded in self._open:
            if guarded is backend:
                self._close(guarded)
                return

    def _close(self, guarded: Guarded) -> None:
        self._open.remove(guarded)
        if self.broken is None:
            self._caller.call("adapter.close()", self.adapter.close, guarded.inner)

    def shutdown(self) -> None:
        try:
            for guarded in list(self._open):
                self._close(guarded)
            self._caller.last("adapter.shutdown()", self.adapter.shutdown)
        finally:
            self._caller.close()

    @property
    def broken(self) -> str | None:
        """The call that hung, once one did: the backend is taken as broken from then on."""
        return self._caller.tripped

    def trip(self, cause: str) -> None:
        """Take the backend as broken (a call behind it overran a deadline of its own, as a
        harness's request does): ``cause`` names the call."""
        self._caller.trip(cause)

    @property
    def calls(self) -> int:
        """How many calls into the adapter and its backends the run has made so far."""
        return self._caller.calls

    def batched(self, block: Callable[[], T]) -> T:
        """``block()``, its calls into the backends made in one hand-off, each within its own
        deadline (:meth:`~kbconform.conformance.Caller.batch`): for many reads in a row."""
        return self._caller.batch(block)

    def probe(self) -> str | None:
        """After a call overran its deadline: whether the adapter still answers. A fresh backend
        is opened and closed, each call within the deadline; None when both answered (an error
        is an answer), else what did not (a hang, or a harness that broke again). A backend
        where one facade hangs answers; one that stopped answering does not, and costs at most
        this one deadline more."""
        try:
            self.close(self.open())
        except Exception:  # an answer, if not a welcome one
            return None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:  # DeadlineExceeded, a broken harness
            return str(error)
        return None

    def page_sizes(self) -> tuple[int, ...]:
        """How many items the page tests put into one call (schemas/pages.md): 1, and for each
        page size p the manifest declares (``pageSizes``; else :data:`DEFAULT_PAGE_SIZES`) p and
        p + 1, the first size whose last page is partial; at the thorough profile also p - 1 and
        2p + 1 (a second full page and a partial third). Ascending, each once."""
        sizes = {1}
        for page in self.manifest.page_sizes or DEFAULT_PAGE_SIZES:
            sizes |= {page, page + 1}
            if self.profile == "thorough":
                sizes |= {max(1, page - 1), 2 * page + 1}
        return tuple(sorted(sizes))

    def take_output(self) -> str:
        """What the adapter printed since the last take, cut to a bounded head and tail."""
        return self._caller.output.take()

    def rng(self, name: str) -> random.Random:
        """A generator seeded by the run's seed and ``name`` (a test id): reproducible per test."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _settings(self) -> hypothesis.settings:
        # No explain phase: its lines name the kit's own code (a model's line that only failing
        # examples ran), not the backend's, and it reruns the failure many times.
        skipped = {hypothesis.Phase.explain} | (set() if self.shrink else {hypothesis.Phase.shrink})
        phases = [phase for phase in hypothesis.Phase if phase not in skipped]
        return hypothesis.settings(
            PROFILES[self.profile],
            phases=phases,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )

    def given(self, *args: Any, **kwargs: Any) -> Callable[[Callable[..., None]], Callable[[], None]]:
        """``hypothesis.given`` with the run's profile and seed (a failure replays from the seed).

        The decorated property takes no arguments: Hypothesis supplies them all.
        """
        settings = self._settings()

        def decorate(test: Callable[..., None]) -> Callable[[], None]:
            @functools.wraps(test)
            def example(*drawn: Any, **named: Any) -> None:
                self.begin_example()
                test(*drawn, **named)

            checked = settings(hypothesis.given(*args, **kwargs)(example))  # type: ignore[no-untyped-call]  # given is untyped with *args
            seeded: Callable[[], None] = hypothesis.seed(self.seed)(checked)

            def run() -> None:
                with seed_only():
                    seeded()

            return run

        return decorate

    def run_machine(self, machine: type[RuleBasedStateMachine]) -> None:
        """Run a Hypothesis state machine with the run's profile and seed; a failure prints the
        shortest program Hypothesis found, and reruns from the same seed."""
        run = self

        def example(machine_self: Any) -> None:
            run.begin_example()
            machine.__init__(machine_self)

        marked = type(machine.__name__, (machine,), {"__init__": example})
        test = get_state_machine_test(marked, settings=self._settings())
        with seed_only():
            hypothesis.seed(self.seed)(test)()

    def begin_example(self) -> None:
        """A new Hypothesis example begins: a transcript the adapter records keeps only the last
        one's exchanges beside the test's set-up (the program a failure shrank to)."""
        transcript = getattr(self.adapter, "transcript", None)
        if transcript is not None:
            transcript.begin_example()
