"""Rules a Python backend reuses instead of writing them again: the same code the reference runs.

* Client ``where`` clauses (feature ``client-where``; ``schemas/client-where.md``):
  :func:`check_where` refuses a clause that names a reserved key
  (:data:`kbconform.identity.RESERVED_FIELDS`) at any depth or could widen scope, and returns
  the clauses to AND with the backend's own scope.
* Deletion signals (``schemas/deletion-signaling.md``): :func:`check_deletion_signal` validates
  one and raises the :class:`~kbconform.errors.ContractViolation` whose ``code`` names the broken
  mechanism (:func:`deletion_code` says which code wins when problems are mixed);
  :func:`signal_paths` and :func:`boundary_repo` apply the repository defaults (a principal has
  no repository), and :func:`deletion_invalid` builds any other deletion error with its code.
* Syncs (feature ``sync``; ``schemas/maintenance.md``): :func:`check_sync` refuses a repository
  that is no repoSlug and a record of another repository, before any record is read further.
* Request envelopes (feature ``envelope``; ``schemas/stamping.md``): :func:`envelope_claims`
  lists each request-level field a write claims otherwise than the server would stamp it.
* Server stamps (``schemas/stamping.md``): :func:`server_stamps` gives the guarded fields the
  server writes for a record, :func:`spoofed_fields` each one the record claims otherwise.

Each error is a :class:`~kbconform.errors.ContractViolation`; ``contract`` is ``"where"`` for a
client clause, ``"deletion-signal-v1"`` for a deletion signal and ``"sync"`` for a sync.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kbconform.contract import IDENTITY_RULES, explain, is_valid
from kbconform.errors import ContractViolation, Problem
from kbconform.identity import RESERVED_FIELDS, Principal

#: The operators a client ``where`` condition may use (``schemas/client-where.md``).
WHERE_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin")
#: The deletion error codes, most specific first (``schemas/deletion-signaling.md``).
DELETION_CODES = (
    "KB_REVISION_BOUNDARY_INVALID",
    "KB_TOMBSTONE_INVALID",
    "KB_MANIFEST_INVALID",
    "KB_DELETE_SIGNAL_INVALID",
)

_SCALARS = (str, int, float, bool)
_SIGNAL = "deletion-signal-v1"


# -- syncs -------------------------------------------------------------------------------------


def check_sync(repo_slug: object, records: object) -> None:
    """``repo_slug`` is a repoSlug of identity-tuple-v1 and every record (an object) that names
    a ``repoSlug`` names that one; else :class:`~kbconform.errors.ContractViolation` (contract
    ``sync``) listing each problem. Records are not validated further: ingest's checks do that."""
    problems = []
    if not _repo_slug(repo_slug):
        problems.append(Problem("/repoSlug", "format", "a repoSlug of identity-tuple-v1", repr(repo_slug)))
    if not isinstance(records, list | tuple):
        problems.append(Problem("/records", "type", "an array of parsed-chunk-v1 records", repr(records)))
        records = ()
    for index, record in enumerate(records):
        claimed = record.get("repoSlug", repo_slug) if isinstance(record, Mapping) else repo_slug
        if claimed != repo_slug:
            problems.append(
                Problem(
                    f"/records/{index}/repoSlug",
                    "const",
                    f"the synced repository {repo_slug!r}",
                    repr(claimed),
                )
            )
    if problems:
        raise ContractViolation(contract="sync", problems=tuple(problems))


def _repo_slug(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        IDENTITY_RULES["repoSlug"](value)
    except ValueError:
        return False
    return True


#: The request-level fields a write may carry beside its records (feature ``envelope``).
ENVELOPE_FIELDS = ("tenantId", "repoSlug", "visibility", "originAgentIdentity")


def envelope_claims(
    principal: Principal, envelope: object, records: Iterable[Mapping[str, Any]], visibility: str = "team"
) -> list[tuple[str, object, object]]:
    """Each field of ``envelope`` (the request-level fields a write carries) that claims other
    than the server stamps, as ``(field, claimed, server)``: a tenant other than the principal's,
    an agent other than its agent, a visibility other than ``visibility`` (the server's), a
    repository other than a record's. A field equal to the server's value claims nothing.
    An envelope that is not an object raises :class:`~kbconform.errors.ContractViolation`
    (contract ``envelope``)."""
    if not isinstance(envelope, Mapping):
        raise ContractViolation(
            contract="envelope",
            problems=(Problem("", "type", "an object of request-level fields", repr(envelope)),),
        )
    repos = {record.get("repoSlug") for record in records if isinstance(record, Mapping)}
    server: dict[str, object] = {
        "tenantId": principal.tenant_id,
        "visibility": visibility,
        "originAgentIdentity": principal.agent_identity,
    }
    claims: list[tuple[str, object, object]] = []
    for name in ENVELOPE_FIELDS:
        if name not in envelope:
            continue
        claimed = envelope[name]
        if name == "repoSlug":
            if any(repo != claimed for repo in repos):
                claims.append((name, claimed, sorted(str(r) for r in repos)))
        elif claimed != server[name]:
            claims.append((name, claimed, server[name]))
    return claims


# -- client where clauses ------------------------------------------------------------------------


def _where_invalid(pointer: str, keyword: str, expected: str, got: object) -> ContractViolation:
    return ContractViolation(contract="where", problems=(Problem(pointer, keyword, expected, repr(got)),))


def check_where(where: object, pointer: str = "") -> list[dict[str, Any]]:
    """The client clause as a list of clauses to AND with the scope, each a one-key dict.

    Raises :class:`~kbconform.errors.ContractViolation` (contract ``where``, code
    ``KB_CONTRACT_VIOLATION``) for anything but a non-empty object; an empty ``$and`` or ``$or``;
    a key that is a reserved field, at any depth; an operator other than ``$and``/``$or`` as a
    key (``$not`` included); a condition other than a string, number or boolean, or one
    ``{operator: operand}`` of :data:`WHERE_OPERATORS`, with ``$in``/``$nin`` taking a non-empty
    list of those. The problem's pointer names the offending place under ``pointer``.
    """
    if not isinstance(where, Mapping) or not where:
        raise _where_invalid(pointer, "type", "a non-empty where clause (or none at all)", where)
    clauses: list[dict[str, Any]] = []
    for key, value in where.items():
        at = f"{pointer}/{key}"
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise _where_invalid(at, "minItems", f"a non-empty list of clauses under {key}", value)
            parts = [_combine(check_where(part, f"{at}/{i}")) for i, part in enumerate(value)]
            clauses.append(parts[0] if len(parts) == 1 else {key: parts})
        elif not isinstance(key, str) or key.startswith("$"):
            raise _where_invalid(at, "operator", "a metadata key, '$and' or '$or'", key)
        elif key in RESERVED_FIELDS:
            raise _where_invalid(
                at, "reserved", "no identity or stamped key: the server scopes every read itself", key
            )
        else:
            clauses.append({key: _condition(at, value)})
    return clauses


def _condition(pointer: str, value: object) -> object:
    if isinstance(value, _SCALARS):
        return value
    if not isinstance(value, Mapping) or len(value) != 1:
        raise _where_invalid(pointer, "type", "a scalar, or one {operator: operand}", value)
    [(operator, operand)] = value.items()
    if operator not in WHERE_OPERATORS:
        raise _where_invalid(
            f"{pointer}/{operator}", "operator", f"one of {', '.join(sorted(WHERE_OPERATORS))}", operator
        )
    if operator in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand or not all(isinstance(v, _SCALARS) for v in operand):
            raise _where_invalid(f"{pointer}/{operator}", "minItems", "a non-empty list of scalars", operand)
    elif not isinstance(operand, _SCALARS):
        raise _where_invalid(f"{pointer}/{operator}", "type", "a string, number or boolean", operand)
    return {operator: operand}


def _combine(clauses: list[dict[str, Any]]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


# -- deletion signals ----------------------------------------------------------------------------


def deletion_invalid(code: str, pointer: str, keyword: str, expected: str, got: object) -> ContractViolation:
    """A deletion-signal error with ``code`` (one of :data:`DELETION_CODES`) and one problem."""
    if code not in DELETION_CODES:
        raise ValueError(f"{code!r} is not a deletion code; expected one of {', '.join(DELETION_CODES)}")
    return ContractViolation(
        contract=_SIGNAL, problems=(Problem(pointer, keyword, expected, repr(got)),), code=code
    )


def deletion_code(problems: Iterable[Problem]) -> str:
    """The code of a signal refused for ``problems`` (pointers into the signal).

    Any problem with the revision boundary (``/baseRevision``, ``/headRevision``, or one without
    the other) makes it ``KB_REVISION_BOUNDARY_INVALID``; else problems all under ``/deleted``
    ``KB_TOMBSTONE_INVALID``, all under ``/manifestSnapshot`` ``KB_MANIFEST_INVALID``; anything
    else (no mechanism, an unknown field, problems in two mechanisms) ``KB_DELETE_SIGNAL_INVALID``.
    """
    problems = list(problems)
    pointers = [p.pointer for p in problems]
    if any(
        p.pointer.startswith(("/baseRevision", "/headRevision")) or p.keyword == "dependentRequired"
        for p in problems
    ):
        return "KB_REVISION_BOUNDARY_INVALID"
    if pointers and all(p.startswith("/deleted") for p in pointers):
        return "KB_TOMBSTONE_INVALID"
    if pointers and all(p.startswith("/manifestSnapshot") for p in pointers):
        return "KB_MANIFEST_INVALID"
    return "KB_DELETE_SIGNAL_INVALID"


def check_deletion_signal(signal: object) -> Mapping[str, Any]:
    """``signal`` if it is a valid deletion-signal-v1, else the error :func:`deletion_code` names."""
    if is_valid(signal, _SIGNAL):
        assert isinstance(signal, Mapping)
        return signal
    problems = explain(signal, _SIGNAL)
    raise ContractViolation(contract=_SIGNAL, problems=problems, code=deletion_code(problems))


def signal_paths(signal: Mapping[str, Any]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """``(tombstoned, written)``: the ``deleted`` and ``files`` entries as (repoSlug, sourcePath).

    An entry's repository is its own ``repoSlug``, else the signal's. A principal has no
    repository, so an entry with neither is refused: ``KB_TOMBSTONE_INVALID`` in ``deleted``,
    ``KB_DELETE_SIGNAL_INVALID`` in ``files``; so is a path both tombstoned and written
    (``KB_DELETE_SIGNAL_INVALID``). ``signal`` is a valid deletion-signal-v1.
    """
    default = signal.get("repoSlug")

    def pairs(key: str, code: str) -> set[tuple[str, str]]:
        found = set()
        for index, entry in enumerate(signal.get(key, [])):
            repo = entry.get("repoSlug", default)
            if repo is None:
                raise deletion_invalid(
                    code, f"/{key}/{index}", "repoSlug", "a repoSlug on the entry or on the signal", entry
                )
            found.add((repo, entry["sourcePath"]))
        return found

    tombstoned = pairs("deleted", "KB_TOMBSTONE_INVALID")
    written = pairs("files", "KB_DELETE_SIGNAL_INVALID")
    both = sorted(tombstoned & written)
    if both:
        raise deletion_invalid(
            "KB_DELETE_SIGNAL_INVALID", "/files", "conflict", "no path both written and deleted", both[0]
        )
    return tombstoned, written


def boundary_repo(signal: Mapping[str, Any]) -> str:
    """The repository a revision boundary is about: the signal's ``repoSlug``, else the manifest
    snapshot's; with neither, ``KB_REVISION_BOUNDARY_INVALID``. ``signal`` is a valid one."""
    repo = signal.get("repoSlug") or (signal.get("manifestSnapshot") or {}).get("repoSlug")
    if repo is None:
        expected = "a repoSlug for the revision boundary"
        raise deletion_invalid("KB_REVISION_BOUNDARY_INVALID", "/repoSlug", "required", expected, None)
    return str(repo)


# -- server stamps -------------------------------------------------------------------------------


def server_stamps(
    principal: Principal, record: Mapping[str, Any], *, visibility: str = "team", config_version: str
) -> dict[str, Any]:
    """The guarded fields the server writes for a parsed-chunk-v1 ``record`` (``ingestedAt`` is
    the time of the first write, set by the caller): the principal's tenant, the record's
    repository, ``visibility`` (``team`` unless configured: the suites expect it), the tenant
    configuration version, and the principal's agent only when it has one."""
    stamps: dict[str, Any] = {
        "tenantId": principal.tenant_id,
        "repoSlug": record["repoSlug"],
        "visibility": visibility,
        "tenantConfigVersion": config_version,
    }
    if principal.agent_identity is not None:
        stamps["originAgentIdentity"] = principal.agent_identity
    return stamps


def spoofed_fields(record: Mapping[str, Any], stamps: Mapping[str, Any]) -> list[tuple[str, object, object]]:
    """``(field, client value, server value)`` for each guarded field ``record`` claims otherwise
    than ``stamps`` (:func:`server_stamps`): ``tenantId``, and ``customMeta.<name>`` for every
    reserved name in ``customMeta`` whose value differs (``customMeta.ingestedAt`` always: the
    server's time is not the client's to give): ``tenantId`` first, then the names in sorted
    order; empty for a clean record."""
    found: list[tuple[str, object, object]] = []
    if record["tenantId"] != stamps["tenantId"]:
        found.append(("tenantId", record["tenantId"], stamps["tenantId"]))
    custom = record.get("customMeta") or {}
    for field in sorted(RESERVED_FIELDS & set(custom)):
        if field == "ingestedAt" or custom[field] != stamps.get(field):
            found.append((f"customMeta.{field}", custom[field], stamps.get(field)))
    return found
