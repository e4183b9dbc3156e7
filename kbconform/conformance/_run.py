"""One conformance run: the adapter, its manifest, the seed, the Hypothesis profile, the level."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import hypothesis
from hypothesis import HealthCheck
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test

from kbconform.adapter import Adapter, Backend, BackendOptions, Manifest, check_backend, load_adapter
from kbconform.conformance._deadline import DEFAULT_CALL_TIMEOUT, Caller, Guarded
from kbconform.errors import ContractViolation, Problem

ProfileName = Literal["quick", "thorough"]
PROFILES: dict[str, hypothesis.settings] = {
    # quick: for every CI run; thorough: for a nightly job.
    "quick": hypothesis.settings(max_examples=8, stateful_step_count=10),
    "thorough": hypothesis.settings(max_examples=100, stateful_step_count=40),
}


@dataclass
class Run:
    """Shared by every suite test of one pytest session.

    Every call into the adapter and its backends (loading, open, close, shutdown and each
    facade) has a deadline of ``call_timeout`` seconds: a hang fails the test that made the
    call, naming it (:class:`~kbconform.conformance.DeadlineExceeded`).
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

    def __post_init__(self) -> None:
        if self._caller is None:
            self._caller = Caller(self.call_timeout)

    @classmethod
    def load(
        cls,
        spec: str,
        *,
        seed: int,
        profile: ProfileName,
        level: str,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        shrink: bool = True,
    ) -> Run:
        caller = Caller(call_timeout)
        adapter, manifest = caller.call(f"loading the adapter {spec}", load_adapter, spec)
        return cls(adapter, manifest, seed, profile, level, call_timeout, caller, shrink=shrink)

    @classmethod
    def connect(
        cls,
        *,
        command: str | None = None,
        url: str | None = None,
        log: Path | None = None,
        seed: int,
        profile: ProfileName,
        level: str,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        shrink: bool = True,
    ) -> Run:
        """A run against a harness-v1 harness: started from ``command`` (stdio; its stderr goes
        to ``log``), or served at ``url``. Raises ContractViolation (``KB_ADAPTER_INVALID``) for
        an invalid manifest, HarnessBroken when the harness does not answer ``hello``."""
        from kbconform.harness import HarnessAdapter, HttpTransport, StdioTransport, Transport
        from kbconform.harness._client import START_TIMEOUT

        # Each request has the call deadline in the transport, which names the call and stops
        # the harness; the caller's own deadline covers a restart (a harness's start) besides.
        caller = Caller(call_timeout + START_TIMEOUT)

        def start() -> tuple[Adapter, Manifest]:
            if url is not None:
                try:
                    transport: Transport = HttpTransport(url)
                except ValueError as error:
                    raise ContractViolation(
                        contract="harness-v1",
                        problems=(Problem("", "url", "http://127.0.0.1:PORT", repr(url)),),
                        code="KB_ADAPTER_INVALID",
                    ) from error
            else:
                assert command is not None
                transport = StdioTransport(command, log)
            adapter = HarnessAdapter(transport, call_timeout)
            try:
                manifest = Manifest.from_mapping(adapter.manifest)
            except ContractViolation as error:
                adapter.transport.stop()
                raise ContractViolation(
                    contract="adapter-manifest-v1", problems=error.problems, code="KB_ADAPTER_INVALID"
                ) from None
            return adapter, manifest

        adapter, manifest = caller.call(f"starting the harness {command or url}", start)
        return cls(adapter, manifest, seed, profile, level, call_timeout, caller, shrink=shrink)

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

    def close(self, backend: Backend) -> None:
        for guarded in self._open:
            if guarded is backend:
                self._close(guarded)
                return

    def _close(self, guarded: Guarded) -> None:
        self._open.remove(guarded)
        self._caller.call("adapter.close()", self.adapter.close, guarded.inner)

    def shutdown(self) -> None:
        try:
            for guarded in list(self._open):
                self._close(guarded)
            self._caller.call("adapter.shutdown()", self.adapter.shutdown)
        finally:
            self._caller.close()

    def take_output(self) -> str:
        """What the adapter printed since the last take, cut to a bounded head and tail."""
        return self._caller.output.take()

    def rng(self, name: str) -> random.Random:
        """A generator seeded by the run's seed and ``name`` (a test id): reproducible per test."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def _settings(self) -> hypothesis.settings:
        phases = [phase for phase in hypothesis.Phase if self.shrink or phase is not hypothesis.Phase.shrink]
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
            checked = settings(hypothesis.given(*args, **kwargs)(test))  # type: ignore[no-untyped-call]  # given is untyped with *args
            seeded: Callable[[], None] = hypothesis.seed(self.seed)(checked)
            return seeded

        return decorate

    def run_machine(self, machine: type[RuleBasedStateMachine]) -> None:
        """Run a Hypothesis state machine with the run's profile and seed; a failure prints the
        shortest program Hypothesis found, and reruns from the same seed."""
        test = get_state_machine_test(machine, settings=self._settings())
        hypothesis.seed(self.seed)(test)()
