"""What the reference adapters share: the backends they have open, and installed versions."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from typing import TypeVar

B = TypeVar("B")


def version(distribution: str) -> str:
    """The installed version of ``distribution`` ("unknown" when it is not installed)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class OpenBackends:
    """The backends an adapter has opened and not closed, by ``id()``, each with what releases it.

    :meth:`close` releases a backend once: closing one that is not open here (never opened, or
    closed already) does nothing. :meth:`shutdown` releases every backend still open, in the
    order they were opened.
    """

    def __init__(self) -> None:
        self._open: dict[int, Callable[[], None] | None] = {}

    def _opened(self, backend: B, release: Callable[[], None] | None) -> B:
        """Keep ``backend`` open until it is closed (``release``: None when nothing is to be
        released); return it."""
        self._open[id(backend)] = release
        return backend

    def close(self, backend: object, /) -> None:
        self._release(id(backend))

    def shutdown(self) -> None:
        for key in list(self._open):
            self._release(key)

    def _release(self, key: int) -> None:
        release = self._open.pop(key, None)
        if release is not None:
            release()
