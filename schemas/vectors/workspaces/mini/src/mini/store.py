"""A note store: classes, methods, nested classes, decorators and async functions."""

from __future__ import annotations

import dataclasses

LIMIT = 10


class Base:
    """The base of every store."""

    def size(self) -> int:
        return 0


@dataclasses.dataclass
class NoteStore(Base, dict):
    """Notes by title."""

    limit: int = LIMIT

    class Entry:
        """One note."""

        title: str

        def size(self) -> int:
            return 0

    @property
    def full(self) -> bool:
        return len(self) >= self.limit

    def size(self) -> int:
        return len(self)

    async def fetch(self, title: str) -> str:
        def clean(text: str) -> str:
            return text.strip()

        return clean(self[title])


def open_store(limit: int = LIMIT) -> NoteStore:
    """Open an empty store."""
    return NoteStore(limit=limit)


# A trailing comment belongs to the module chunk.
