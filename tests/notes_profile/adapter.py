"""A notes backend in memory, as its author would write one (``make``), and one that shows
every tenant every note (``leaky``: the suites must fail it)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import BackendOptions
from kbconform.errors import BackendUnavailable, Unauthenticated

MANIFEST = {
    "manifestVersion": "1",
    "isolationProfile": "notes",
    "adapter": {"name": "kbconform notes double", "version": "0.1.0"},
    "backend": {"name": "memory", "version": "0.1.0"},
    "readFacades": ["notes"],
    "features": {"fault-injection": True},
}


@dataclass(frozen=True, slots=True)
class Note:
    id: str
    text: str


class MemoryNotes:
    def __init__(self, store_fails: Callable[[], bool] | None) -> None:
        self.tenants: set[str] = set()
        self.stored: list[tuple[str, Note]] = []
        self.ids = itertools.count(1)
        self.store_fails = store_fails

    def _tenant(self, tenant: object) -> str:
        if not isinstance(tenant, str) or tenant not in self.tenants:
            raise Unauthenticated("notes")
        return tenant

    def _store(self) -> None:
        if self.store_fails is not None and self.store_fails():
            raise BackendUnavailable("notes", "the note store failed")

    def create_tenant(self, tenant: str, /) -> None:
        self.tenants.add(tenant)

    def add_note(self, tenant: object, text: str, /) -> str:
        owner = self._tenant(tenant)
        self._store()
        note = Note(f"note-{next(self.ids)}", text)
        self.stored.append((owner, note))
        return note.id

    def notes(self, tenant: object, /) -> list[Note]:
        owner = self._tenant(tenant)
        self._store()
        return [note for who, note in self.stored if who == owner]


class LeakyNotes(MemoryNotes):
    def notes(self, tenant: object, /) -> list[Note]:
        self._tenant(tenant)
        self._store()
        return [note for _, note in self.stored]


class Notes:
    manifest = MANIFEST

    def __init__(self, kind: type[MemoryNotes] = MemoryNotes) -> None:
        self.kind = kind

    def open(self, options: BackendOptions) -> Any:
        return self.kind(options.store_fails)

    def close(self, backend: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass


def make() -> Notes:
    return Notes()


def leaky() -> Notes:
    return Notes(LeakyNotes)
