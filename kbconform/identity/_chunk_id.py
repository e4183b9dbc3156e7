"""Tenant-aware chunk ids.

Two profiles:

``kbconform-v1`` (the default)
    ``sha256(JCS(["kbconform-v1", tenantId, repoSlug, [[field, value], ...]]))`` over the fields
    that ``hashInputs`` names, in order, with JCS the RFC 8785 canonical JSON. Tenant and repo
    come from the server, never from the record. For the configured default namespace (shared
    namespace + default repo) the id is the legacy, pre-tenancy id
    ``sha256(JCS(["kbconform-v0", [[field, value], ...]]))``, so existing shared corpora keep
    their ids; every other namespace hashes a different structure, so no tenant can produce an
    id in the legacy domain.

``neo-compat``
    Neo's three derivations byte for byte (lower-case hex SHA-256 of JavaScript
    ``JSON.stringify``): the content hash, the stored id and the ingest hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import rfc8785

from kbconform import contract
from kbconform.contract import load
from kbconform.errors import ContractViolation, Problem
from kbconform.identity._jsjson import UNDEFINED, stringify

Profile = Literal["kbconform-v1", "neo-compat"]
PROFILES: tuple[Profile, ...] = ("kbconform-v1", "neo-compat")

#: Fields that name who wrote a chunk or that the server stamps: never hash inputs.
RESERVED_FIELDS = frozenset(
    {"tenantId", "repoSlug", "visibility", "originAgentIdentity", "ingestedAt", "tenantConfigVersion"}
)


@dataclass(frozen=True, slots=True)
class Namespace:
    """The configured default namespace: the shared tenant and its repository."""

    tenant_id: str = "neo-shared"
    repo_slug: str = "neo"


DEFAULT_NAMESPACE = Namespace()


def _violation(pointer: str, keyword: str, expected: str, got: str) -> ContractViolation:
    return ContractViolation(contract="chunk-id", problems=(Problem(pointer, keyword, expected, got),))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _i_json() -> tuple[int, str]:
    rule = load("parsed-chunk-v1")["$defs"]["iJson"]
    return int(rule["maximum"]), str(rule["description"])


_I_JSON_MAX, _I_JSON = _i_json()


def _hashable(pointer: str, value: Any) -> None:
    """Refuse a hashed value that is not JSON, or holds a number RFC 8785 cannot write exactly."""
    problems = list(contract.problems(value, pointer, depth=2))
    stack = [] if problems else [(pointer, contract.plain(value))]
    while stack:
        where, node = stack.pop()
        if isinstance(node, dict):
            stack.extend((f"{where}/{contract.token(key)}", item) for key, item in node.items())
        elif isinstance(node, list):
            stack.extend((f"{where}/{index}", item) for index, item in enumerate(node))
        elif isinstance(node, (int, float)) and not isinstance(node, bool) and abs(node) > _I_JSON_MAX:
            problems.append(Problem(where, "maximum" if node > 0 else "minimum", _I_JSON, str(node)[:40]))
    if problems:
        raise ContractViolation(contract="chunk-id", problems=tuple(sorted(problems, key=str)))


def hash_pairs(record: Mapping[str, Any]) -> list[list[Any]]:
    """The ``[field, value]`` pairs that ``hashInputs`` names, checked for the kbconform-v1 profile.

    Values are read as the JSON rule of ``kbconform.validate`` reads them (enum members as
    their values); a value that is not JSON, or holds a number beyond +/-(2**53-1), is refused
    with a pointer to it, as ``validate`` refuses it.
    """
    named = record.get("hashInputs")
    inputs = None if contract.problems(named) else contract.plain(named)
    if not isinstance(inputs, list) or not inputs:
        raise _violation("/hashInputs", "hashInputs", "a non-empty list of field names", repr(inputs))
    pairs = []
    for index, field in enumerate(inputs):
        if not isinstance(field, str):
            raise _violation(f"/hashInputs/{index}", "type", "a field name", repr(field))
        if field in RESERVED_FIELDS:
            raise _violation(
                f"/hashInputs/{index}",
                "reserved",
                "a content field; identity and stamped fields come from the server",
                repr(field),
            )
        if field not in record:
            raise _violation(f"/hashInputs/{index}", "missing", "a field this record has", repr(field))
        _hashable(f"/{contract.token(field)}", record[field])
        pairs.append([field, contract.plain(record[field])])
    return pairs


def _canonical(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as error:
        raise _violation(
            "", "canonical-json", "values RFC 8785 can encode (I-JSON numbers)", str(error)
        ) from None


def legacy_id(record: Mapping[str, Any]) -> str:
    """The pre-tenancy id of a record: no tenant, no repository."""
    return _sha256(_canonical(["kbconform-v0", hash_pairs(record)]))


def kbconform_v1_id(
    record: Mapping[str, Any], tenant_id: str, repo_slug: str, default: Namespace = DEFAULT_NAMESPACE
) -> str:
    """The id of ``record`` stored by the server for ``(tenant_id, repo_slug)``."""
    if (tenant_id, repo_slug) == (default.tenant_id, default.repo_slug):
        return legacy_id(record)
    return _sha256(_canonical(["kbconform-v1", tenant_id, repo_slug, hash_pairs(record)]))


# -- neo-compat ---------------------------------------------------------------------------------

_CONTENT_FIELDS = ("type", "name", "description", "content", "extends", "configType", "params", "returns")


def _present(value: Any) -> bool:
    return value is not None and value is not UNDEFINED


def neo_content_hash(chunk: Mapping[str, Any], default: Namespace = DEFAULT_NAMESPACE) -> str:
    """Neo's content hash: tenantId/repoSlug default (JS ``??``) to the default namespace."""
    tenant = chunk.get("tenantId", UNDEFINED)
    repo = chunk.get("repoSlug", UNDEFINED)
    values: dict[str, Any] = {
        "tenantId": tenant if _present(tenant) else default.tenant_id,
        "repoSlug": repo if _present(repo) else default.repo_slug,
    }
    values.update({field: chunk.get(field, UNDEFINED) for field in _CONTENT_FIELDS})
    return _sha256(stringify(values).encode("utf-8"))


def neo_stored_id(chunk: Mapping[str, Any], tenant_id: str, repo_slug: str) -> str:
    """Neo's stored id: the server stamp, the content hash and the chunk's type, name, source."""
    values = {
        "tenantId": tenant_id,
        "repoSlug": repo_slug,
        "hash": chunk.get("hash", UNDEFINED),
        "type": chunk.get("type", UNDEFINED),
        "name": chunk.get("name", UNDEFINED),
        "source": chunk.get("source", UNDEFINED),
    }
    return _sha256(stringify(values).encode("utf-8"))


def neo_ingest_hash(record: Mapping[str, Any], tenant_id: str, repo_slug: str) -> str:
    """Neo's ingest hash of a parsed chunk (hashInputs may overwrite tenantId/repoSlug: Neo's flaw)."""
    repo = record.get("repoSlug", UNDEFINED)
    values: dict[str, Any] = {"tenantId": tenant_id, "repoSlug": repo if _present(repo) else repo_slug}
    for field in record.get("hashInputs", ()):
        if field in record:
            values[field] = record[field]
    return _sha256(stringify(values).encode("utf-8"))


def neo_compat_id(record: Mapping[str, Any], tenant_id: str, repo_slug: str) -> str:
    """The stored id Neo gives a parsed-chunk-v1 record under server context (tenant, repo)."""
    stored = {
        "hash": neo_ingest_hash(record, tenant_id, repo_slug),
        "type": record.get("kind", UNDEFINED),
        "name": record.get("name", UNDEFINED),
        "source": record.get("sourcePath", UNDEFINED),
    }
    return neo_stored_id(stored, tenant_id, repo_slug)


def chunk_id(
    record: Mapping[str, Any], tenant_id: str, repo_slug: str, profile: Profile = "kbconform-v1"
) -> str:
    """The id the server gives ``record`` when stamping it ``(tenant_id, repo_slug)``."""
    if profile == "kbconform-v1":
        return kbconform_v1_id(record, tenant_id, repo_slug)
    if profile == "neo-compat":
        return neo_compat_id(record, tenant_id, repo_slug)
    raise LookupError(f"unknown chunk-id profile {profile!r}; expected one of {', '.join(PROFILES)}")
