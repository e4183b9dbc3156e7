"""The notes profile's world for the shared isolation suite: tenants with notes (one with none),
and the model of who reads what (a tenant reads exactly its own notes)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbconform.adapter import BackendOptions, Manifest
from kbconform.conformance import Reader, Reading
from kbconform.errors import error_texts

FACADE = "notes"


@dataclass
class NotesWorld:
    """The notes each tenant wrote, by id: the model."""

    written: dict[str, dict[str, str]]
    readers: tuple[Reader, ...]

    def size(self, facade: str) -> int:
        return sum(len(notes) for notes in self.written.values())

    def read(self, backend: Any, facade: str, reader: Reader) -> Reading:
        shown = list(backend.notes(reader.identity))
        return Reading({note.id: note.text for note in shown}, len(shown))

    def expected(self, facade: str, reader: Reader) -> Reading:
        own = self.written[reader.identity]
        return Reading(dict(own), len(own))

    def read_once(self, backend: Any, facade: str, identity: object) -> object:
        return backend.notes(identity)

    def no_identities(self) -> dict[str, object]:
        return {"None": None, "an unknown tenant": "nobody", "the empty string": "", "a number": 7}

    def writers(self) -> tuple[Reader, ...]:
        return self.readers[:2]

    def write(self, backend: Any, facade: str, identity: object, mark: str) -> object:
        return backend.add_note(identity, f"{mark} written at once")

    def wrote(self, facade: str, writer: Reader, mark: str, answer: object) -> list[str]:
        own = self.written[writer.identity]
        if not isinstance(answer, str) or answer in own:
            return [f"add_note returned {answer!r}, not a new id"]
        own[answer] = f"{mark} written at once"
        return []

    def carried(self, error: BaseException) -> list[str]:
        text = "\n".join(error_texts(error))
        marks = {note.split()[0] for notes in self.written.values() for note in notes.values()}
        return sorted(mark for mark in marks if mark in text)


@dataclass(frozen=True)
class NotesIsolation:
    """Tenants acme (two notes), beta (one) and loner (none)."""

    manifest: Manifest

    def seed(self, backend: Any, rng: random.Random) -> NotesWorld:
        plan = {"acme": 2, "beta": 1, "loner": 0}
        written: dict[str, dict[str, str]] = {}
        for tenant, count in plan.items():
            backend.create_tenant(tenant)
            written[tenant] = {}
            for n in range(count):
                text = f"kbn{rng.getrandbits(48):012x} {tenant}'s note {n}"
                note = backend.add_note(tenant, text)
                assert isinstance(note, str), f"add_note returned {note!r}, not an id"
                assert note not in written[tenant], f"add_note gave the id {note} twice"
                written[tenant][note] = text
        return NotesWorld(written, tuple(Reader(tenant, tenant) for tenant in plan))

    def options(self, store_fails: Callable[..., bool]) -> BackendOptions:
        return BackendOptions(store_fails=store_fails)
