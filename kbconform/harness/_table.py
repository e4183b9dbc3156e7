"""A profile's part of harness-v1: how a served backend answers each of its operations, and the
class of backend a harness client opens. Each profile has one (``Profile.wire``); the
dispatcher and :class:`~kbconform.harness.HarnessAdapter` know no profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from kbconform.adapter import FaultSwitch, RevisionMap

if TYPE_CHECKING:
    from kbconform.harness._client import HarnessBackend


class Served(NamedTuple):
    """A backend a dispatcher opened, with the fault switch and revision map it was opened with."""

    backend: Any
    switch: FaultSwitch | None
    resolver: RevisionMap | None


#: How a served backend answers one operation: from the request's params, its result object.
Handler = Callable[[Served, Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class WireTable:
    """One profile's harness-v1 operations: ``handlers`` answer them for a served Python backend
    (every operation of the profile, and only those); ``backend`` is the client's class of a
    backend a harness opened, whose facades are requests."""

    handlers: Mapping[str, Handler]
    backend: type[HarnessBackend]


def done(_: object) -> dict[str, Any]:
    """An operation's result that carries nothing: an empty object, whatever the backend returned."""
    return {}
