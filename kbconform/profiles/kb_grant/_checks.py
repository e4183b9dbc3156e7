"""What a kb-grant manifest and backend must be."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform.adapter import Manifest, check_schema
from kbconform.errors import ContractViolation, Problem
from kbconform.profiles.kb_grant.protocol import KbGrantBackend


def _repeated(values: list[Any]) -> list[tuple[int, Any]]:
    """Each value listed before, with its index."""
    return [(index, value) for index, value in enumerate(values) if value in values[:index]]


def check_manifest(data: object) -> None:
    """``data`` is a kb-grant adapter-manifest-v1 whose store ids and model names are each
    unique (which the schema cannot say: it refuses only identical entries), or ContractViolation."""
    check_schema(data)
    assert isinstance(data, Mapping)
    problems = [
        Problem(f"/{field}/{index}/{key}", "uniqueItems", f"{noun} not listed before", repr(value))
        for field, key, noun in (("stores", "id", "a store id"), ("models", "name", "a model name"))
        for index, value in _repeated([entry[key] for entry in data[field]])
    ]
    if problems:
        raise ContractViolation(contract="adapter-manifest-v1", problems=tuple(problems))


def facades(manifest: Manifest) -> list[tuple[str, Any]]:
    """:class:`~kbconform.adapter.KbGrantBackend`: its facades are all required."""
    return [("KbGrantBackend", KbGrantBackend)]
