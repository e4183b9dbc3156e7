"""One call to a reference's store, behind the suites' fault switch (what the references share:
the tenant-namespace one, whose store consults the switch itself, passes none)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kbconform.errors import BackendUnavailable, KbconformError


@contextmanager
def store_call(fails: Callable[[], bool] | None, operation: str) -> Iterator[None]:
    """One store call of ``operation``: the switch ``fails`` (None: none) is consulted first,
    and while it says True the call raises BackendUnavailable before the store is touched; any
    error of the store is BackendUnavailable too (kbconform errors raised inside pass through)."""
    if fails is not None and fails():
        raise BackendUnavailable(operation, "the store is unavailable (fault injected)")
    try:
        yield
    except KbconformError:
        raise
    except Exception as error:
        raise BackendUnavailable(operation, f"{type(error).__name__}: {error}") from error
