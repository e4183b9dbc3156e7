"""Typed, immutable pydantic v2 models of the contract, for code that prefers objects to dicts.

The models take every string rule (length, pattern, forbidden characters) from the schemas
themselves, so there is one source of truth; a differential test proves that models and
schemas accept exactly the same instances. Field names are snake_case; the JSON names are
the aliases (``ParsedChunk.model_validate(record)``, ``chunk.model_dump(by_alias=True)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from kbconform.contract import _schemas
from kbconform.contract._rules import IDENTITY_RULES, string_rule

__all__ = ["BackupRecord", "DeletionSignal", "IdentityTuple", "ParsedChunk", "PathRef"]


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
_chunk = _schemas.load("parsed-chunk-v1")
_chunk_props = _chunk["properties"]
LineNumber = Annotated[int, BeforeValidator(_integral), Field(ge=1, le=_chunk_props["line_start"]["maximum"])]


def _field_name_rule(items: Mapping[str, Any]) -> Callable[[str], str]:
    """hashInputs items: the string rule, then each ``enum`` (one of) and ``not enum`` (none of)."""
    syntax = string_rule(items)
    allowed = [frozenset(part["enum"]) for part in items.get("allOf", ()) if "enum" in part]
    forbidden = [
        (frozenset(part["not"]["enum"]), part["description"])
        for part in items.get("allOf", ())
        if "enum" in part.get("not", {})
    ]

    def check(value: str) -> str:
        syntax(value)
        if not all(value in names for names in allowed):
            raise ValueError("expected a field parsed-chunk-v1 defines")
        for names, expected in forbidden:
            if value in names:
                raise ValueError(f"expected {expected}")
        return value

    return check


FieldName = Annotated[str, AfterValidator(_field_name_rule(_chunk_props["hashInputs"]["items"]))]
#: (field, what hashInputs must name for it to be required): the schema's "if hashInputs
#: contains X then X is required" rules.
_HASHED_PRESENT = tuple(
    (rule["then"]["required"][0], rule["if"]["properties"]["hashInputs"]["contains"]["const"])
    for rule in _chunk.get("allOf", ())
    if "then" in rule
)
_I_JSON = _chunk["$defs"]["iJson"]


def _i_json(value: Any) -> Any:
    """customMeta: every number, at any depth, within the schema's I-JSON bounds."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif (
            isinstance(node, (int, float))
            and not isinstance(node, bool)
            and not _I_JSON["minimum"] <= node <= _I_JSON["maximum"]
        ):
            raise ValueError(f"expected {_I_JSON['description']}")
    return value


_backup_props = _schemas.load("backup-record-v1")["properties"]
ChunkId = Annotated[str, AfterValidator(string_rule(_backup_props["id"]))]
_signal_defs = _schemas.load("deletion-signal-v1")["$defs"]
Revision = Annotated[str, AfterValidator(string_rule(_signal_defs["revision"]))]


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
    content: Annotated[str, AfterValidator(string_rule(_chunk_props["content"]))]
    hash_inputs: Annotated[
        tuple[FieldName, ...], BeforeValidator(_as_tuple), Field(min_length=1), AfterValidator(_unique)
    ] = Field(alias="hashInputs")
    parser_id: Token = Field(alias="parserId")
    parser_version: SemVer = Field(alias="parserVersion")
    kind: Token
    name: Text
    line_start: LineNumber | None = None
    line_end: LineNumber | None = None
    class_name: Text | None = Field(None, alias="className")
    extends: Text | None = None
    custom_meta: Annotated[dict[str, Any], AfterValidator(_i_json)] | None = Field(None, alias="customMeta")

    @model_validator(mode="after")
    def _hashed_fields_present(self) -> ParsedChunk:
        fields = type(self).model_fields
        present = {fields[name].alias or name for name in self.model_fields_set}
        for field, named in _HASHED_PRESENT:
            if named in self.hash_inputs and field not in present:
                raise ValueError(f"expected {field}, which hashInputs names")
        return self


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
