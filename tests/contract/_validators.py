"""Every validator kbconform ships, behind one signature, for tests that hold them to agree."""

from __future__ import annotations

from collections.abc import Callable

import pydantic

from kbconform.contract import explain, is_valid
from kbconform.contract.models import BackupRecord, DeletionSignal, IdentityTuple, ParsedChunk

MODELS: dict[str, type[pydantic.BaseModel]] = {
    "parsed-chunk-v1": ParsedChunk,
    "backup-record-v1": BackupRecord,
    "deletion-signal-v1": DeletionSignal,
    "identity-tuple-v1": IdentityTuple,
}


def _compiled(instance: object, schema: str) -> bool:
    return is_valid(instance, schema)


def _explainer(instance: object, schema: str) -> bool:
    return explain(instance, schema) == ()


def _model(instance: object, schema: str) -> bool:
    try:
        MODELS[schema].model_validate(instance)
    except pydantic.ValidationError:
        return False
    return True


VALIDATORS: dict[str, Callable[[object, str], bool]] = {
    "jsonschema-rs": _compiled,
    "python-jsonschema": _explainer,
    "pydantic": _model,
}


def covers(validator: str, schema: str) -> bool:
    """Whether ``validator`` speaks for ``schema`` (the pydantic models cover the data contracts only)."""
    return validator != "pydantic" or schema in MODELS


def verdicts(instance: object, schema: str) -> dict[str, bool]:
    """Each validator's accept decision for ``instance``."""
    return {name: check(instance, schema) for name, check in VALIDATORS.items() if covers(name, schema)}
