"""Typed, immutable pydantic v2 models of the contract, for code that prefers objects to dicts.

The models take every string rule (length, pattern, forbidden characters) from the schemas
themselves, so there is one source of truth; a differential test proves that models and
schemas accept exactly the same instances. Field names are snake_case; the JSON names are
the aliases (``ParsedChunk.model_validate(record)``, ``chunk.model_dump(by_alias=True)``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kbconform.contract import _schemas

__all__ = ["BackupRecord", "DeletionSignal", "IdentityTuple", "ParsedChunk", "PathRef"]


def _string_rule(definition: Mapping[str, Any]) -> Callable[[str], str]:
    """A check equal to a schema's string definition: lengths, whole-string pattern, guards."""
    low, high = definition.get("minLength", 0), definition.get("maxLength")
    pattern = re.compile(definition["pattern"]) if "pattern" in definition else None
    guard = definition.get("not", {})
    forbidden = [re.compile(item["pattern"]) for item in guard.get("anyOf", [guard]) if "pattern" in item]
    expected = definition.get("description", "a valid string")

    def check(value: str) -> str:
        ok = low <= len(value) and (high is None or len(value) <= high)
        ok = ok and (pattern is None or pattern.fullmatch(value) is not None)
        ok = ok and not any(item.search(value) for item in forbidden)
        if not ok:
            raise ValueError(f"expected {expected}")
        return value

    return check


#: One compiled check per identity-tuple-v1 string definition (tenantId, repoSlug, ...).
IDENTITY_RULES: Mapping[str, Callable[[str], str]] = {
    name: _string_rule(definition)
    for name, definition in _schemas.load("identity-tuple-v1")["$defs"].items()
    if definition.get("type") == "string"
}


def _identity_rule(name: str) -> AfterValidator:
    return AfterValidator(IDENTITY_RULES[name])


def _integral(value: Any) -> Any:
    # JSON Schema counts 1.0 as an integer; so must the model.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _as_tuple(value: Any) -> Any:
    # JSON arrays arrive as lists; the frozen models hold tuples.
    return tuple(value) if isinstance(value, list) else value


def _unique(values: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(values)) != len(values):
        raise ValueError("expected distinct items")
    return values


TenantId = Annotated[str, _identity_rule("tenantId")]
RepoSlug = Annotated[str, _identity_rule("repoSlug")]
SourcePath = Annotated[str, _identity_rule("sourcePath")]
Token = Annotated[str, _identity_rule("token")]
SemVer = Annotated[str, _identity_rule("semver")]
Text = Annotated[str, _identity_rule("text")]
RootKind = Literal["neo-workspace", "bare-repo", "external-source"]
LineNumber = Annotated[int, BeforeValidator(_integral), Field(ge=1)]
_chunk_props = _schemas.load("parsed-chunk-v1")["properties"]
FieldName = Annotated[str, AfterValidator(_string_rule(_chunk_props["hashInputs"]["items"]))]
_backup_props = _schemas.load("backup-record-v1")["properties"]
ChunkId = Annotated[str, AfterValidator(_string_rule(_backup_props["id"]))]
_signal_defs = _schemas.load("deletion-signal-v1")["$defs"]
Revision = Annotated[str, AfterValidator(_string_rule(_signal_defs["revision"]))]


class _Contract(BaseModel):
    """Frozen, strict, no unknown fields; optional fields may be absent but never null."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=False)
    _optional_not_null: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _no_null_optionals(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key in cls._optional_not_null:
                if key in data and data[key] is None:
                    raise ValueError(f"{key} may be absent but not null")
        return data


class IdentityTuple(_Contract):
    """identity-tuple-v1: where a stored chunk comes from."""

    tenant_id: TenantId = Field(alias="tenantId")
    repo_slug: RepoSlug = Field(alias="repoSlug")
    root_kind: RootKind = Field(alias="rootKind")
    source_path: SourcePath = Field(alias="sourcePath")


class ParsedChunk(_Contract):
    """parsed-chunk-v1: one chunk on the ingest path (never with an embedding)."""

    _optional_not_null = frozenset({"line_start", "line_end", "className", "extends", "customMeta"})

    schema_version: Literal["1.0.0"] = Field(alias="schemaVersion")
    tenant_id: TenantId = Field(alias="tenantId")
    repo_slug: RepoSlug = Field(alias="repoSlug")
    root_kind: RootKind = Field(alias="rootKind")
    source_path: SourcePath = Field(alias="sourcePath")
    content: str
    hash_inputs: Annotated[
        tuple[FieldName, ...], BeforeValidator(_as_tuple), Field(min_length=1), AfterValidator(_unique)
    ] = Field(alias="hashInputs")
    parser_id: Token = Field(alias="parserId")
    parser_version: SemVer = Field(alias="parserVersion")
    kind: Token
    name: Text
    line_start: LineNumber | None = None
    line_end: LineNumber | None = None
    class_name: str | None = Field(None, alias="className")
    extends: str | None = None
    custom_meta: dict[str, Any] | None = Field(None, alias="customMeta")


class BackupRecord(_Contract):
    """backup-record-v1: one stored chunk on the restore path."""

    id: ChunkId
    embedding: Annotated[tuple[float, ...], BeforeValidator(_as_tuple), Field(min_length=1)]
    metadata: dict[str, Any]
    document: str | None

    @model_validator(mode="after")
    def _identity_keys(self) -> BackupRecord:
        for key in ("tenantId", "repoSlug", "sourcePath"):
            if key in self.metadata:
                value = self.metadata[key]
                if not isinstance(value, str):
                    raise ValueError(f"metadata.{key}: expected a string")
                IDENTITY_RULES[key](value)
        if "rootKind" in self.metadata and self.metadata["rootKind"] not in (
            "neo-workspace",
            "bare-repo",
            "external-source",
        ):
            raise ValueError("metadata.rootKind: expected a root kind")
        return self


class PathRef(_Contract):
    """A tombstone or a written path: ``{sourcePath, repoSlug?}``."""

    _optional_not_null = frozenset({"repoSlug"})

    source_path: SourcePath = Field(alias="sourcePath")
    repo_slug: RepoSlug | None = Field(None, alias="repoSlug")


class ManifestSnapshot(_Contract):
    """Every path of ``repoSlug`` after the push; the rest is deleted."""

    repo_slug: RepoSlug = Field(alias="repoSlug")
    paths_after_push: Annotated[
        tuple[SourcePath, ...], BeforeValidator(_as_tuple), AfterValidator(_unique)
    ] = Field(alias="pathsAfterPush")


class DeletionSignal(_Contract):
    """deletion-signal-v1: tombstones, manifest snapshot and revision boundary."""

    _optional_not_null = frozenset(
        {"deleted", "manifestSnapshot", "baseRevision", "headRevision", "repoSlug", "files"}
    )

    deleted: Annotated[tuple[PathRef, ...], BeforeValidator(_as_tuple), Field(min_length=1)] | None = None
    manifest_snapshot: ManifestSnapshot | None = Field(None, alias="manifestSnapshot")
    base_revision: Revision | None = Field(None, alias="baseRevision")
    head_revision: Revision | None = Field(None, alias="headRevision")
    repo_slug: RepoSlug | None = Field(None, alias="repoSlug")
    files: Annotated[tuple[PathRef, ...], BeforeValidator(_as_tuple)] | None = None

    @model_validator(mode="after")
    def _mechanisms(self) -> DeletionSignal:
        if (self.base_revision is None) != (self.head_revision is None):
            raise ValueError("baseRevision and headRevision go together")
        if self.deleted is None and self.manifest_snapshot is None and self.base_revision is None:
            raise ValueError("expected at least one deletion mechanism")
        return self
