"""What one run of the suites is asked to be: the backend, how it is reached, and the run's
settings, as one frozen record checked when it is made."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass, replace

DEFAULT_ADAPTER = "kbconform_reference.adapter:chroma_embedded"
#: The default deadline of a whole run, in seconds.
DEFAULT_RUN_TIMEOUT = 1800.0

Transport = str  # "stdio" (the default), "http" or "in-process"
TRANSPORTS = ("stdio", "http", "in-process")


class RunError(Exception):
    """A run that cannot start: bad options, or a missing optional dependency."""


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One run of the suites in a fresh pytest process.

    The backend is the Python adapter ``adapter`` (``module:factory``), served by a child of
    that process over harness-v1 (``transport`` "stdio", or "http" on 127.0.0.1), so no adapter
    code runs where the report is written; "in-process" loads it into the pytest process, as a
    developer's own pytest run does. Or it is a harness in any language: started from the
    command ``harness``, or served at ``harness_url``. Exactly one of the three is given.

    ``level``, ``seed`` (None: a random one, drawn when the run starts), ``profile`` (the
    Hypothesis profile, quick or thorough) and ``call_timeout`` are the plugin's options of the
    same names (None: the plugin's default); ``run_timeout`` bounds the whole run in seconds;
    ``workers`` runs it on that many pytest-xdist workers. ``select`` (stable test ids) makes a
    partial run of those tests only: its report says so and earns no level. ``kbconform run``
    never selects. ``shrink=False`` reports Hypothesis's first failing example unshrunk (a
    mutant's run, where only the verdict matters); ``shrink_budget`` bounds the seconds one
    test's shrinking may take (None: the plugin's default). ``extra`` are more pytest arguments;
    ``stream`` lets pytest print to this process's output instead of keeping its tail.
    """

    adapter: str | None = None
    transport: Transport = "stdio"
    harness: str | None = None
    harness_url: str | None = None
    level: str | None = None
    seed: int | None = None
    profile: str | None = None
    call_timeout: float | None = None
    run_timeout: float = DEFAULT_RUN_TIMEOUT
    workers: int = 0
    select: Sequence[str] | None = None
    shrink: bool = True
    shrink_budget: float | None = None
    extra: Sequence[str] = ()
    stream: bool = False

    def __post_init__(self) -> None:
        if self.workers and importlib.util.find_spec("xdist") is None:
            raise RunError("--workers needs pytest-xdist: pip install 'kbconform[xdist]'")
        if self.select is not None and not self.select:
            raise RunError("a partial run needs at least one test id to select")
        if not self.run_timeout > 0:
            raise RunError(f"the run deadline must be a positive number of seconds; got {self.run_timeout!r}")
        given = [value for value in (self.adapter, self.harness, self.harness_url) if value]
        if len(given) != 1:
            raise RunError("give exactly one of an adapter, a harness command and a harness URL")
        if self.transport not in TRANSPORTS:
            raise RunError(f"the transport must be one of {', '.join(TRANSPORTS)}; got {self.transport!r}")
        # Held as tuples: the record is frozen, and a caller's list may change after. A selection
        # is held as the ids its patterns name, so a run is checked against what it ran.
        if self.select is not None:
            object.__setattr__(self, "select", _selected(self.select))
        object.__setattr__(self, "extra", tuple(self.extra))

    def with_seed(self, seed: int) -> RunRequest:
        """This run at ``seed``."""
        return replace(self, seed=seed)


def _selected(patterns: Sequence[str]) -> tuple[str, ...]:
    """The catalogue ids ``patterns`` (ids or globs) name; RunError for one that names none."""
    from kbconform.errors import ContractViolation
    from kbconform.report import matching

    try:
        return tuple(matching(patterns))
    except ContractViolation as error:
        unmatched = ", ".join(problem.got for problem in error.problems)
        raise RunError(f"{error.code}: not a test id or glob of the catalogue: {unmatched}") from None
