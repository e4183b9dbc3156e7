"""The notes profile's harness-v1 operations: the tenant crosses as sent (any JSON value)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kbconform.harness import HarnessBackend, WireTable, done

_BACKEND = {"type": "string"}
_CALLER = {"description": "a tenant id, or any other JSON value (no identity)"}


@dataclass(frozen=True, slots=True)
class Note:
    id: str
    text: str


def _caller(tenant: object) -> object:
    return tenant if isinstance(tenant, str | int | float | bool) or tenant is None else None


class NotesHarnessBackend(HarnessBackend):
    """A notes backend behind a harness."""

    def create_tenant(self, tenant: str, /) -> None:
        self._request("createNoteTenant", {"backend": self.handle, "tenant": tenant})

    def add_note(self, tenant: object, text: str, /) -> str:
        result = self._request("addNote", {"backend": self.handle, "tenant": _caller(tenant), "text": text})
        return str(result["id"])

    def notes(self, tenant: object, /) -> list[Note]:
        result = self._request("readNotes", {"backend": self.handle, "tenant": _caller(tenant)})
        return [Note(note["id"], note["text"]) for note in result["notes"]]


def _params(**properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["backend", *properties],
        "properties": {"backend": _BACKEND, **properties},
    }


_NOTE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "text"],
    "properties": {"id": {"type": "string"}, "text": {"type": "string"}},
}


def _read(backend: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"notes": [{"id": note.id, "text": note.text} for note in backend.notes(params["tenant"])]}


WIRE = WireTable(
    handlers={
        "createNoteTenant": lambda s, a: done(s.backend.create_tenant(a["tenant"])),
        "addNote": lambda s, a: {"id": s.backend.add_note(a["tenant"], a["text"])},
        "readNotes": lambda s, a: _read(s.backend, a),
    },
    backend=NotesHarnessBackend,
    schemas={
        "createNoteTenant": {"params": _params(tenant={"type": "string"}), "result": {"const": {}}},
        "addNote": {
            "params": _params(tenant=_CALLER, text={"type": "string"}),
            "result": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        },
        "readNotes": {
            "params": _params(tenant=_CALLER),
            "result": {
                "type": "object",
                "required": ["notes"],
                "properties": {"notes": {"type": "array", "items": _NOTE}},
            },
        },
    },
)
