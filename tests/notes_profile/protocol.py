"""The notes profile's backend protocol and manifest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from kbconform.adapter import Manifest
from kbconform.errors import ContractViolation, Problem


class NoteView(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


@runtime_checkable
class NotesBackend(Protocol):
    """A store of tenants' notes (every facade required)."""

    def create_tenant(self, tenant: str, /) -> None:
        """Make ``tenant`` known (the operator's call: no caller)."""
        ...

    def add_note(self, tenant: object, text: str, /) -> str:
        """Store a note of ``tenant``; its id. Unauthenticated for no identity."""
        ...

    def notes(self, tenant: object, /) -> list[NoteView]:
        """Exactly ``tenant``'s notes. Unauthenticated for no identity."""
        ...


def check_manifest(data: object) -> None:
    """A notes manifest: ``isolationProfile: notes``, the adapter and backend named, the read
    facade ``notes``, and ``features`` with ``fault-injection`` (true or a reason)."""
    problems = []
    if not isinstance(data, Mapping):
        raise ContractViolation(
            contract="adapter-manifest-v1", problems=(Problem("", "type", "an object", repr(data)),)
        )
    for key in ("adapter", "backend"):
        if not isinstance(data.get(key), Mapping) or {"name", "version"} - set(data[key]):
            problems.append(Problem(f"/{key}", "required", "{name, version}", repr(data.get(key))))
    if data.get("readFacades") != ["notes"]:
        problems.append(Problem("/readFacades", "const", '["notes"]', repr(data.get("readFacades"))))
    flag = (
        data.get("features", {}).get("fault-injection") if isinstance(data.get("features"), Mapping) else None
    )
    if flag is not True and not (isinstance(flag, str) and flag):
        problems.append(Problem("/features/fault-injection", "type", "true or a reason", repr(flag)))
    if problems:
        raise ContractViolation(contract="adapter-manifest-v1", problems=tuple(problems))


def facades(manifest: Manifest) -> list[tuple[str, Any]]:
    return [("NotesBackend", NotesBackend)]
