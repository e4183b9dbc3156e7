"""The errors kbconform raises, and that adapters map their backend's errors onto.

Every error is a frozen record with a stable ``code``; ``str()`` says what was expected,
what was got, and a hint where one helps.

Which stage raises what:

* reading JSON, validating against a schema, building ids or principals from bad input:
  :class:`ContractViolation` (its ``code`` names the contract, ``KB_CONTRACT_VIOLATION``
  unless a more specific code applies, such as ``KB_TOMBSTONE_INVALID``);
* ingest in reject mode, when a record claims another identity: :class:`SpoofRejected`;
* a read or delete without an authenticated principal: :class:`Unauthenticated`;
* an operation the principal's role does not allow (a member writing into the shared
  namespace, a member exporting): :class:`Forbidden`;
* an id that is missing, or belongs to another tenant (the two are indistinguishable):
  :class:`NotFound`;
* a backend that cannot answer (store down): :class:`BackendUnavailable`; a deletion signal's
  revision boundary that cannot be resolved: :class:`RevisionBoundaryUnavailable`.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

__all__ = [
    "BackendUnavailable",
    "ContractViolation",
    "Forbidden",
    "KbconformError",
    "NotFound",
    "Problem",
    "RevisionBoundaryUnavailable",
    "SpoofRejected",
    "Unauthenticated",
    "error_texts",
]


class KbconformError(Exception):
    """The base of every kbconform error; ``code`` is stable and machine-readable."""

    code: ClassVar[str] = "KB_ERROR"


@attrs.frozen
class Problem:
    """One reason an instance broke a contract.

    ``pointer`` is an RFC 6901 JSON pointer into the instance ("" is the whole instance),
    ``keyword`` the schema keyword (or a kbconform rule name) that failed.
    """

    pointer: str
    keyword: str
    expected: str
    got: str

    def __str__(self) -> str:
        return f"{self.pointer or '(root)'}: expected {self.expected}; got {self.got} [{self.keyword}]"


@attrs.frozen
class ContractViolation(KbconformError):
    """An instance does not satisfy a kbconform contract; ``problems`` lists every reason."""

    contract: str
    problems: tuple[Problem, ...]
    code: str = "KB_CONTRACT_VIOLATION"  # type: ignore[misc]

    def __str__(self) -> str:
        what = "strict JSON" if self.contract == "json" else f"a valid {self.contract}"
        head = f"{self.code}: not {what}"
        return head + "".join(f"\n  {problem}" for problem in self.problems)


@attrs.frozen
class SpoofRejected(KbconformError):
    """A record claimed an identity the server does not grant, and the policy is ``reject``.

    Raised before anything is read or written; ``fields`` names every guarded field that
    differed, as ``(record index, field, client value, server value)``.
    """

    code: ClassVar[str] = "KB_TENANT_SPOOF_REJECTED"
    tenant: str
    fields: tuple[tuple[int, str, object, object], ...]

    def __str__(self) -> str:
        shown = ", ".join(
            f"record {index}: {field}={client!r} (server: {server!r})"
            for index, field, client, server in self.fields[:5]
        )
        more = f" and {len(self.fields) - 5} more" if len(self.fields) > 5 else ""
        return (
            f"{self.code}: the batch claims an identity the server does not grant to tenant "
            f"{self.tenant!r}: {shown}{more}; nothing was written. Hint: drop the guarded "
            "fields or send the server's values."
        )


@attrs.frozen
class Unauthenticated(KbconformError):
    """No authenticated principal: the operation is refused, never run unfiltered."""

    code: ClassVar[str] = "KB_UNAUTHENTICATED"
    operation: str

    def __str__(self) -> str:
        return (
            f"{self.code}: {self.operation} needs an authenticated principal; got none. "
            "kbconform fails closed: no identity is never read as 'no filter'."
        )


@attrs.frozen
class Forbidden(KbconformError):
    """The principal is authenticated but its role does not allow the operation."""

    code: ClassVar[str] = "KB_FORBIDDEN"
    operation: str
    reason: str

    def __str__(self) -> str:
        return f"{self.code}: {self.operation} is not allowed: {self.reason}"


@attrs.frozen
class NotFound(KbconformError):
    """No such id for this principal. A foreign id and a missing id raise the same error."""

    code: ClassVar[str] = "KB_NOT_FOUND"
    id: str

    def __str__(self) -> str:
        return f"{self.code}: no chunk with id {self.id!r}"


@attrs.frozen
class BackendUnavailable(KbconformError):
    """The backend (store, resolver, server) could not answer; nothing was returned instead."""

    code: ClassVar[str] = "KB_BACKEND_UNAVAILABLE"
    operation: str
    reason: str

    def __str__(self) -> str:
        return f"{self.code}: {self.operation} failed: {self.reason}"


@attrs.frozen
class RevisionBoundaryUnavailable(BackendUnavailable):
    """A deletion signal's revision boundary cannot be resolved (no resolver, unknown commits)."""

    code: ClassVar[str] = "KB_REVISION_BOUNDARY_UNAVAILABLE"


def error_texts(error: BaseException) -> list[str]:
    """Everything ``error`` carries, as text: its message, repr, args, fields (attrs records
    keep them in slots) and notes, then its cause's (or context's), and so on down the chain.

    The one place the kit asks what an error could tell: a suite checks that none of it names
    another tenant's data, and harness-v1 sends it beside the message (``carried``).
    """
    texts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), *map(repr, current.args)]
        texts += [repr(v) for v in getattr(current, "__dict__", {}).values()]
        fields = getattr(type(current), "__attrs_attrs__", ())
        texts += [repr(getattr(current, f.name, None)) for f in fields]
        texts += [str(note) for note in getattr(current, "__notes__", ())]
        current = current.__cause__ or current.__context__
    return texts
