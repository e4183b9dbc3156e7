"""harness-v1 values on the wire: principals, sessions and tenants, the kb-grant arguments,
hits and knowledge bases, errors, and the schema checks of messages."""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from kbconform.adapter import GrantHit, KbInfo
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
from kbconform.identity import Principal
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

    def __init__(self, call: str, what: str, log: str = "") -> None:
        super().__init__(call, what)
        self.call, self.what, self.log = call, what, log

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


# -- principals -------------------------------------------------------------------------------


def principal_to_wire(principal: object) -> Any:
    """The principal as harness-v1 data. A real Principal that is valid by its own rules
    crosses as its four fields. Anything else crosses as the identity it claims, so that a
    backend behind a harness meets it as data: a JSON value as itself (a tenant id string, a
    dict with a principal's keys misspelt), an object with a principal's fields (one changed in
    place to an invalid tenant id included) as those fields. A claim the wire cannot tell from
    a valid principal (a subclass, a look-alike whose fields are valid) and a value with no
    JSON form cross as no identity (``None``)."""
    plain = principal is None or isinstance(principal, (str, int, float, bool, list, dict))
    claimed = _json(principal) if plain else _fields(principal)
    if isinstance(principal_from_wire(claimed), Principal) and not _valid(principal):
        return None
    return claimed


def _valid(principal: object) -> bool:
    """Whether ``principal`` is a real Principal still valid by its own rules (a frozen one
    can be changed in place: it is built again from its fields)."""
    if type(principal) is not Principal:
        return False
    try:
        Principal(
            principal.tenant_id, principal.agent_identity, principal.readable_namespaces, principal.role
        )
    except ContractViolation:
        return False
    return True


def _json(value: object) -> Any:
    """``value``'s JSON form, or ``None`` when it has none."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        return None


def _fields(principal: object) -> Any:
    """The identity an object with a principal's attributes claims, as harness-v1 data, or
    ``None`` when it lacks one of them."""
    try:
        namespaces = principal.readable_namespaces  # type: ignore[attr-defined]
        claimed = {
            "tenantId": principal.tenant_id,  # type: ignore[attr-defined]
            "agentIdentity": principal.agent_identity,  # type: ignore[attr-defined]
            "role": principal.role,  # type: ignore[attr-defined]
            "readableNamespaces": sorted(namespaces)
            if isinstance(namespaces, (set, frozenset))
            else namespaces,
        }
    except (AttributeError, TypeError):
        return None
    return _json(claimed)


def principal_from_wire(data: Any) -> object:
    """The caller a harness-v1 principal names: ``None`` for null, the :class:`Principal` a
    valid one describes, and for any other value the value itself, a malformed principal the
    backend must refuse as no identity (``KB_UNAUTHENTICATED``)."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"tenantId", "agentIdentity", "role", "readableNamespaces"}:
        return data
    namespaces = data["readableNamespaces"]
    try:
        if not isinstance(namespaces, list) or namespaces != sorted(set(namespaces)):
            return data
        return Principal(data["tenantId"], data["agentIdentity"], frozenset(namespaces), data["role"])
    except (ContractViolation, TypeError):
        return data


# -- sessions ---------------------------------------------------------------------------------


def session_to_wire(session: object) -> Any:
    """The caller of a project-pool read or write, or of a kb-grant facade (a tenant), as
    harness-v1 data: its JSON form, so that the backend sees what it would see in process (a
    ``str`` as its plain value, the empty string included; a number, a list as themselves: no
    identity, which the backend refuses); a value with no JSON form (an object, bytes, NaN) as
    ``None``, no identity too."""
    return _json(session)


#: A kb-grant caller crosses exactly as a project-pool session does.
caller_to_wire = session_to_wire


def name_to_wire(what: str, name: object, *, optional: bool = False) -> str | None:
    """A session or project name a membership operation takes (the operator's, not a caller):
    a ``str`` crosses as its plain value (None too, where ``optional``); anything else has no
    harness-v1 form."""
    if isinstance(name, str):
        return str.__str__(name)
    if optional and name is None:
        return None
    allowed = "a str or None" if optional else "a str"
    raise TypeError(f"behind harness-v1 a {what} is {allowed}; got {type(name).__name__}")


# -- kb-grant arguments ------------------------------------------------------------------------
# Each argument crosses as a value of its kind (a string, an array of strings, a vector, an
# integer), the invalid ones the suites send on purpose included, or as null when it is not of
# that kind: null is as malformed as the value it stands for, so the backend refuses it, after
# the caller, with the same error it gives that value in process.


def text_or_null(value: object) -> str | None:
    """A knowledge base id, a store id, a model name or a tenant id: a ``str`` as its plain value
    (a subclass's too), anything else as null."""
    return str.__str__(value) if isinstance(value, str) else None


def _sequence(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def texts_or_null(value: object) -> list[str] | None:
    """The knowledge bases of a search: a sequence of ``str`` as a list of plain strings (empty
    and repeated ones included), anything else (a ``str`` itself, a list holding a number) as
    null."""
    if not _sequence(value) or not all(isinstance(item, str) for item in value):  # type: ignore[attr-defined]
        return None
    return [str.__str__(item) for item in value]  # type: ignore[attr-defined]


def _number(value: object) -> bool:
    """A real number (a numpy scalar too) that is finite as a double; never a bool."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond a double
        return False


def vector_or_null(value: object) -> list[float] | None:
    """A vector: a sequence of finite numbers (any length, zeros included: the backend checks
    the model's dimension) as a list of them; anything else (a NaN, a bool, a string) as null."""
    if not _sequence(value) or not all(_number(item) for item in value):  # type: ignore[attr-defined]
        return None
    return [int(item) if isinstance(item, int) else float(item) for item in value]  # type: ignore[attr-defined]


def integer_or_null(value: object) -> int | None:
    """A limit: an ``int`` (any, the out-of-range ones included) as itself; anything else (a bool,
    a float, a string) as null."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def documents_or_null(value: object) -> list[Any] | None:
    """A batch to ingest: a sequence of documents, each as its JSON form (malformed ones
    included), null for one with no JSON form (a vector holding NaN); anything else as null."""
    if not _sequence(value):
        return None
    return [session_to_wire(document) for document in value]  # type: ignore[attr-defined]


# -- results ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    document: str | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SpoofWarning:
    field: str
    chunk_id: str


@dataclass(frozen=True, slots=True)
class IngestResult:
    ids: Sequence[str]
    warnings: Sequence[SpoofWarning] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    ids: Sequence[str]
    warnings: Sequence[SpoofWarning] = ()
    deleted_ids: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class DeletionResult:
    deleted_ids: Sequence[str]
    resolver_calls: Sequence[tuple[str, str, str]] = field(default=())


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    sources: Sequence[Hit]


@dataclass(frozen=True, slots=True)
class PoolHit:
    """An episode or an entity as a project-pool search returns it."""

    id: str
    text: str


def pool_hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "text": hit.text}


def pool_hit_from_wire(data: Mapping[str, Any]) -> PoolHit:
    return PoolHit(data["id"], data["text"])


def grant_hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "kb": hit.kb, "text": hit.text, "score": hit.score}


def grant_hit_from_wire(data: Mapping[str, Any]) -> GrantHit:
    return GrantHit(data["id"], data["kb"], data["text"], float(data["score"]))


def kb_to_wire(kb: Any) -> dict[str, Any]:
    return {"id": kb.id, "owner": kb.owner, "store": kb.store, "model": kb.model, "documents": kb.documents}


def kb_from_wire(data: Mapping[str, Any]) -> KbInfo:
    return KbInfo(data["id"], data["owner"], data["store"], data["model"], data["documents"])


def hit_to_wire(hit: Any) -> dict[str, Any]:
    return {"id": hit.id, "document": hit.document, "metadata": dict(hit.metadata)}


def hit_from_wire(data: Mapping[str, Any]) -> Hit:
    return Hit(data["id"], data["document"], data["metadata"])


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


#: What a NotFound names, by operation, when it is not a chunk (``id``): the project
#: ``startSession`` names, or the session of the other membership operations; the knowledge
#: base of a kb-grant operation (``kbs`` for a search: the knowledge bases it named).
_NAMED = {
    "startSession": "project",
    "assignSession": "session",
    "removeSession": "session",
    **dict.fromkeys(("shareKb", "revokeKb", "ingestDocuments", "getKb", "deleteKb", "moveKb"), "kb"),
    "copyKb": "source",
    "searchKbs": "kbs",
}


def error_from_wire(op: str, params: Mapping[str, Any], error: Mapping[str, Any]) -> Exception:
    """The exception a call raises for a harness's error answer: the kbconform error of its
    code (its text the harness's message), ``NotImplementedError`` for ``KB_NOT_IMPLEMENTED``,
    else :class:`RemoteError`."""
    code, message = str(error["code"]), str(error["message"])
    if code == NOT_IMPLEMENTED:
        return NotImplementedError(message)
    built: KbconformError
    if code == Unauthenticated.code:
        built = _REMOTE[Unauthenticated](op)
    elif code == Forbidden.code:
        built = _REMOTE[Forbidden](op, message)
    elif code == NotFound.code:
        built = _REMOTE[NotFound](str(params.get(_NAMED.get(op, "id"), "")))
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

    from kbconform.contract._schemas import bundled

    schema = bundled(PROTOCOL)
    fragment = {key: value for key, value in schema.items() if key in ("$schema", "$id", "$defs")}
    fragment["$ref"] = f"#/$defs/{definition}"
    return jsonschema_rs.validator_for(fragment)


def schema_problems(schema: Mapping[str, Any], value: Any) -> list[str]:
    """Why ``value`` is not valid by the JSON Schema ``schema`` (empty when it is), as
    :func:`problems` says it."""
    validator = _compiled(json.dumps(schema, sort_keys=True))
    return [f"{error.instance_path or '/'}: {error.message}"[:300] for error in validator.iter_errors(value)][
        :5
    ]


@lru_cache(maxsize=256)
def _compiled(schema: str) -> Any:
    """A validator of the JSON Schema ``schema`` (its canonical JSON text), compiled once."""
    import jsonschema_rs

    return jsonschema_rs.validator_for(json.loads(schema))


def problems(definition: str, value: Any) -> list[str]:
    """Why ``value`` is not a valid harness-v1 ``$defs/<definition>`` (empty when it is)."""
    return [
        f"{error.instance_path or '/'}: {error.message}"[:300]
        for error in _validator(definition).iter_errors(value)
    ][:5]
