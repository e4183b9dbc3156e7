"""One conformance run: the adapter, its manifest, the seed, the Hypothesis profile, the level."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import hypothesis
from hypothesis import HealthCheck

from kbconform.adapter import Adapter, Backend, BackendOptions, Manifest, check_backend, load_adapter

ProfileName = Literal["quick", "thorough"]
PROFILES: dict[str, hypothesis.settings] = {
    # quick: for every CI run; thorough: for a nightly job.
    "quick": hypothesis.settings(max_examples=8, stateful_step_count=10),
    "thorough": hypothesis.settings(max_examples=100, stateful_step_count=40),
}
T = TypeVar("T", bound=Callable[..., Any])


@dataclass
class Run:
    """Shared by every suite test of one pytest session."""

    adapter: Adapter
    manifest: Manifest
    seed: int
    profile: ProfileName = "quick"
    level: str = "L4"
    _open: list[Backend] = field(default_factory=list, repr=False)

    @classmethod
    def load(cls, spec: str, *, seed: int, profile: ProfileName, level: str) -> Run:
        adapter, manifest = load_adapter(spec)
        return cls(adapter, manifest, seed, profile, level)

    def open(self, options: BackendOptions | None = None) -> Backend:
        """A fresh, empty backend; closed by :meth:`close` (the fixtures do it)."""
        backend = self.adapter.open(options or BackendOptions(spoof_mode=self.manifest.spoof_modes[0]))
        self._open.append(backend)
        check_backend(backend, self.manifest)
        return backend

    def close(self, backend: Backend) -> None:
        if backend in self._open:
            self._open.remove(backend)
            self.adapter.close(backend)

    def shutdown(self) -> None:
        for backend in list(self._open):
            self.close(backend)
        self.adapter.shutdown()

    def rng(self, name: str) -> random.Random:
        """A generator seeded by the run's seed and ``name`` (a test id): reproducible per test."""
        digest = hashlib.sha256(f"{self.seed}:{name}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def given(self, *args: Any, **kwargs: Any) -> Callable[[T], T]:
        """``hypothesis.given`` with the run's profile and seed (a failure replays from the seed)."""
        settings = hypothesis.settings(
            PROFILES[self.profile],
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )

        def decorate(test: T) -> T:
            checked = settings(hypothesis.given(*args, **kwargs)(test))  # type: ignore[no-untyped-call]  # given is untyped with *args
            seeded: T = hypothesis.seed(self.seed)(checked)
            return seeded

        return decorate
