"""A profile's part of harness-v1: how a served backend answers each of its operations, and the
class of backend a harness client opens. Each profile has one (``Profile.wire``); the
dispatcher and :class:`~kbconform.harness.HarnessAdapter` know no profile."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from kbconform.adapter import FaultSwitch, RevisionMap
from kbconform.harness._wire import problems, schema_problems

if TYPE_CHECKING:
    from kbconform.harness._client import HarnessBackend


class Served(NamedTuple):
    """A backend a dispatcher opened, with the fault switch and revision map it was opened with."""

    backend: Any
    switch: FaultSwitch | None
    resolver: RevisionMap | None


#: How a served backend answers one operation: from the request's params, its result object.
Handler = Callable[[Served, Mapping[str, Any]], dict[str, Any]]


#: A request of an operation harness-v1's schema does not define: its envelope, as harness-v1's.
_ENVELOPE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "op", "params"],
    "properties": {
        "id": {"type": "integer", "minimum": 0},
        "op": {"type": "string"},
        "params": {"type": "object", "required": ["backend"], "properties": {"backend": {"type": "string"}}},
    },
}


@dataclass(frozen=True, slots=True)
class WireTable:
    """One profile's harness-v1 operations: ``handlers`` answer them for a served Python backend
    (every operation of the profile, and only those); ``backend`` is the client's class of a
    backend a harness opened, whose facades are requests."""

    handlers: Mapping[str, Handler]
    backend: type[HarnessBackend]
    #: The JSON Schemas of operations harness-v1's own schema does not define (a plug-in
    #: profile's): per operation, its ``params`` and its ``result``. The envelope of a request
    #: is still harness-v1's.
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: What a NotFound of an operation names when it is not a chunk (``id``): the name of the
    #: request's param that holds it (a project-pool ``startSession``: its ``project``).
    named: Mapping[str, str] = field(default_factory=dict)

    def request_problems(self, message: object) -> list[str]:
        """Why ``message`` is not a valid request of this profile (empty when it is)."""
        op = message.get("op") if isinstance(message, dict) else None
        if not isinstance(op, str) or op not in self.schemas:
            return problems("request", message)
        assert isinstance(message, dict)
        found = schema_problems(_ENVELOPE, message)
        return found or schema_problems(self.schemas[op]["params"], message["params"])

    def result_problems(self, op: str, result: object) -> list[str]:
        """Why ``result`` is not a valid result of ``op`` (empty when it is)."""
        if op in self.schemas:
            return schema_problems(self.schemas[op]["result"], result)
        return problems(f"{op}Result", result)


def done(_: object) -> dict[str, Any]:
    """An operation's result that carries nothing: an empty object, whatever the backend returned."""
    return {}
