"""harness-v1 on the wire, for every profile: the operations, a value's JSON form, errors, and
the schema checks of messages (each profile's own values cross by its wire table, in its
package)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Any

from kbconform.errors import (
    BackendUnavailable,
    ContractViolation,
    Forbidden,
    KbconformError,
    NotFound,
    Problem,
    RevisionBoundaryUnavailable,
    SpoofRejected,
    Unauthenticated,
    error_texts,
)
from kbconform.profiles import built_in, names, profile

PROTOCOL = "harness-v1"
#: The operations every harness serves, whatever its isolation profile.
COMMON_OPERATIONS = ("hello", "open", "close", "fault", "shutdown")
#: The operations of harness-v1, in the order the spec lists them: the common ones, each
#: built-in profile's (``Profile.operations``), then shutdown.
OPERATIONS = (
    *COMMON_OPERATIONS[:-1],
    *(op for declared in built_in().values() for op in declared.operations),
    COMMON_OPERATIONS[-1],
)


def serves(name: str, op: str) -> bool:
    """Whether a harness whose manifest declares the profile ``name`` serves the operation ``op``."""
    return op in COMMON_OPERATIONS or op in profile(name).operations


INTERNAL = "KB_HARNESS_INTERNAL"
#: An operation the harness does not implement yet; in process, a facade raising
#: ``NotImplementedError``. Every test that calls it ends at once, counted by operation.
NOT_IMPLEMENTED = "KB_NOT_IMPLEMENTED"
REQUEST_INVALID = "KB_HARNESS_REQUEST_INVALID"
BROKEN = "KB_HARNESS_BROKEN"


class HarnessBroken(BaseException):  # named for what it reports, like DeadlineExceeded
    """The harness broke the protocol during a call: it exited, hung past the deadline,
    answered another request, or wrote something that is not a harness-v1 response.

    A ``BaseException``, as :class:`~kbconform.conformance.DeadlineExceeded` is: no
    ``pytest.raises(KbconformError)`` in a suite can take a broken harness for an answer.
    """

    code = BROKEN

    def __init__(self, call: str, what: str, log: str = "", *, deadline: float | None = None) -> None:
        super().__init__(call, what)
        self.call, self.what, self.log = call, what, log
        #: The deadline the call overran, in seconds (None: the harness broke otherwise).
        self.deadline = deadline

    def __str__(self) -> str:
        tail = f"\nthe harness's log ends with:\n{self.log}" if self.log else ""
        return f"{self.code}: {self.call}: {self.what}{tail}"


class RemoteError(Exception):
    """A harness answered a call with an error that is none of kbconform's (an unexpected
    failure of the backend, as any other exception escaping an adapter in process)."""

    def __init__(self, call: str, code: str, message: str) -> None:
        super().__init__(call, code, message)
        self.call, self.code, self.message = call, code, message

    def __str__(self) -> str:
        return f"{self.call} failed with {self.code}: {self.message}"

    @property
    def raised(self) -> str:
        """The error the backend raised behind the harness: the type the runtimes name first in
        the message of ``KB_HARNESS_INTERNAL`` (``TypeError: ...``), else the code."""
        named = _RAISED.match(self.message) if self.code == "KB_HARNESS_INTERNAL" else None
        return named[1] if named else self.code


#: The type a harness runtime names at the start of an internal error's message.
_RAISED = re.compile(r"([A-Za-z_$][\w$.]{0,99}): ")


def json_form(value: object) -> Any:
    """``value``'s JSON form, or ``None`` when it has none (an object, bytes, NaN): how a
    caller that is not a principal crosses harness-v1, so that a backend behind a harness meets
    it as data."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None


# -- errors -----------------------------------------------------------------------------------

#: Codes of ContractViolation: the generic one and the specific ones (``KB_TOMBSTONE_INVALID``,
#: ...); never a harness's own (``KB_HARNESS_REQUEST_INVALID`` is the kit's fault, not the backend's).
_CONTRACT_CODE = re.compile(r"KB_CONTRACT_VIOLATION|KB_MODEL_MISMATCH|KB_(?!HARNESS_)[A-Z_]+_INVALID")


@cache
def _contract(op: str) -> str:
    """The contract a ContractViolation of the operation ``op`` names: its profile's
    (``Profile.contract``: ``KB_GRANT_INVALID`` and ``KB_MODEL_MISMATCH`` are the kb-grant
    contract's, as in process), else the operation's own name."""
    for name in names():
        declared = profile(name)
        if op in declared.operations and declared.contract is not None:
            return declared.contract
    return op


def error_to_wire(error: BaseException) -> dict[str, Any]:
    """A kbconform error as its code, its text and, in ``carried``, what else it holds (its
    fields, notes and causes, as text); ``NotImplementedError`` as ``KB_NOT_IMPLEMENTED``;
    anything else as ``KB_HARNESS_INTERNAL``."""
    if isinstance(error, NotImplementedError):
        return {"code": NOT_IMPLEMENTED, "message": str(error) or "NotImplementedError"}
    if not isinstance(error, KbconformError):
        return {"code": INTERNAL, "message": f"{type(error).__name__}: {error}"}
    return {
        "code": str(error.code),
        "message": str(error),
        "carried": error_texts(error)[1:],
    }  # all but the message


def _remote(base: type[KbconformError]) -> type[KbconformError]:
    """``base`` whose text is the harness's message, as the backend wrote it."""

    def __str__(self: Any) -> str:
        return str(self.__dict__["message"])

    return type(f"Remote{base.__name__}", (base,), {"__str__": __str__, "__module__": __name__})


_REMOTE: dict[type[KbconformError], Any] = {
    cls: _remote(cls)
    for cls in (
        ContractViolation,
        SpoofRejected,
        Unauthenticated,
        Forbidden,
        NotFound,
        BackendUnavailable,
        RevisionBoundaryUnavailable,
    )
}


def error_from_wire(
    op: str, params: Mapping[str, Any], error: Mapping[str, Any], named: Mapping[str, str] | None = None
) -> Exception:
    """The exception a call raises for a harness's error answer: the kbconform error of its
    code (its text the harness's message), ``NotImplementedError`` for ``KB_NOT_IMPLEMENTED``,
    else :class:`RemoteError`. A NotFound names the param ``named`` gives for ``op`` (its
    profile's ``WireTable.named``), else ``id``."""
    code, message = str(error["code"]), str(error["message"])
    if code == NOT_IMPLEMENTED:
        return NotImplementedError(message)
    built: KbconformError
    if code == Unauthenticated.code:
        built = _REMOTE[Unauthenticated](op)
    elif code == Forbidden.code:
        built = _REMOTE[Forbidden](op, message)
    elif code == NotFound.code:
        built = _REMOTE[NotFound](str(params.get((named or {}).get(op, "id"), "")))
    elif code == RevisionBoundaryUnavailable.code:
        built = _REMOTE[RevisionBoundaryUnavailable](op, message)
    elif code == BackendUnavailable.code:
        built = _REMOTE[BackendUnavailable](op, message)
    elif code == SpoofRejected.code:
        tenant = (params.get("principal") or {}).get("tenantId", "")
        built = _REMOTE[SpoofRejected](tenant, ())
    elif _CONTRACT_CODE.fullmatch(code):
        problem = Problem("", "harness", "a valid request", message)
        built = _REMOTE[ContractViolation](contract=_contract(op), problems=(problem,), code=code)
    else:
        return RemoteError(op, code, message)
    object.__setattr__(built, "message", message)
    object.__setattr__(built, "carried", list(error.get("carried", ())))
    return built


# -- encoding and schema checks ---------------------------------------------------------------


def dumps(message: Mapping[str, Any]) -> bytes:
    """One message as a line of strict JSON (no NaN, no newline inside)."""
    text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_plain)
    return text.encode("utf-8") + b"\n"


def _plain(value: Any) -> Any:
    """Values a Python backend may hand back that JSON has a plain form for."""
    if isinstance(value, (tuple, frozenset, set)):
        return sorted(value) if isinstance(value, (set, frozenset)) else list(value)
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays
    if callable(tolist):
        return tolist()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


@cache
def _validator(definition: str) -> Any:
    import jsonschema_rs

    from kbconform.contract import bundled

    schema = bundled(PROTOCOL)
    fragment = {key: value for key, value in schema.items() if key in ("$schema", "$id", "$defs")}
    fragment["$ref"] = f"#/$defs/{definition}"
    return jsonschema_rs.validator_for(fragment)


def schema_problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Why ``value`` is not valid by the JSON Schema ``schema`` (empty when it is), as
    :func:`problems` says it."""
    return _found(_compiled(json.dumps(schema, sort_keys=True)), value)


@lru_cache(maxsize=256)
def _compiled(schema: str) -> Any:
    """A validator of the JSON Schema ``schema`` (its canonical JSON text), compiled once."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(json.loads(schema))


def problems(definition: str, value: Any) -> list[str]:
    """Why ``value`` is not a valid harness-v1 ``$defs/<definition>`` (empty when it is)."""
    return _found(_validator(definition), value)


def _found(validator: Any, value: Any) -> list[str]:
    """The first five errors ``validator`` finds in ``value``; a valid value (almost every
    message) is only checked, which costs half of collecting its errors."""
    if validator.is_valid(value):
        return []
    return [f"{error.instance_path or '/'}: {error.message}"[:300] for error in validator.iter_errors(value)][
        :5
    ]


class Received(dict[str, Any]):
    """A response message as read, with :attr:`raw`, the bytes it was read from: a snapshot of
    what the harness answered that no later change to the message reaches (a transcript keeps
    it, and encodes it only when it is written)."""

    __slots__ = ("raw",)

    def __init__(self, message: Mapping[str, Any], raw: bytes) -> None:
        super().__init__(message)
        self.raw = raw


def read_response(call: str, raw: bytes, request_id: int, log: str) -> Received:
    """The harness-v1 response ``raw`` to the request ``request_id`` (``call``, in messages);
    anything else breaks the call (:class:`HarnessBroken`, with the harness's ``log``)."""
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise HarnessBroken(call, f"answered with something that is not JSON: {raw[:200]!r}", log) from None
    found = problems("response", parsed)
    if found:
        raise HarnessBroken(
            call, "answered with something that is not a harness-v1 response: " + "; ".join(found), log
        )
    if parsed["id"] != request_id:
        raise HarnessBroken(
            call, f"answered request {parsed['id']} when request {request_id} was in flight", log
        )
    return Received(parsed, bytes(raw))
