"""The memory-scope profile's harness-v1 operations (``schemas/harness-v1.md``): the scope
crosses as sent (a JSON object of strings, or any other JSON value, which names no scope), and
so do the values a backend must check itself (text, metadata, limit, where, a memory's id)."""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kbconform.harness import HarnessBackend, WireTable, done
from kbconform.profiles.memory_scope.protocol import MemoryHit


def plain(value: object, depth: int = 0) -> object:
    """``value`` as the JSON value it crosses as: None for one with no JSON form (bytes, an
    object, NaN, a mapping with a key that is not a string), containers element by element."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth > 8:
        return None
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            return None
        return {key: plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [plain(item, depth + 1) for item in value]
    return None


def _hit(found: Mapping[str, Any]) -> MemoryHit:
    return MemoryHit(str(found["id"]), str(found["text"]))


class ScopeHarnessBackend(HarnessBackend):
    """A memory-scope backend behind a harness."""

    def _as(self, op: str, scope: object, **params: Any) -> Mapping[str, Any]:
        return self._request(op, {"backend": self.handle, "scope": plain(scope), **params})

    def add(self, scope: object, text: object, metadata: object, /) -> str:
        return str(self._as("addMemory", scope, text=plain(text), metadata=plain(metadata))["id"])

    def search(
        self, scope: object, text: object, limit: object, where: object, /
    ) -> builtins.list[MemoryHit]:
        found = self._as("searchMemories", scope, text=plain(text), limit=plain(limit), where=plain(where))
        return [_hit(hit) for hit in found["hits"]]

    def list(self, scope: object, /) -> builtins.list[MemoryHit]:
        return [_hit(hit) for hit in self._as("listMemories", scope)["hits"]]

    def get(self, scope: object, memory: object, /) -> MemoryHit:
        return _hit(self._as("getMemory", scope, id=plain(memory))["hit"])

    def update(self, scope: object, memory: object, text: object, metadata: object = None, /) -> None:
        given = {} if metadata is None else {"metadata": plain(metadata)}  # absent when none given
        self._as("updateMemory", scope, id=plain(memory), text=plain(text), **given)

    def delete(self, scope: object, memory: object, /) -> None:
        self._as("deleteMemory", scope, id=plain(memory))

    def delete_all(self, scope: object, /) -> None:
        self._as("deleteMemories", scope)


def _hits(found: Any) -> dict[str, Any]:
    return {"hits": [{"id": hit.id, "text": hit.text} for hit in found]}


def _got(found: Any) -> dict[str, Any]:
    return {"hit": {"id": found.id, "text": found.text}}


WIRE = WireTable(
    handlers={
        "addMemory": lambda s, a: {"id": s.backend.add(a["scope"], a["text"], a["metadata"])},
        "searchMemories": lambda s, a: _hits(s.backend.search(a["scope"], a["text"], a["limit"], a["where"])),
        "listMemories": lambda s, a: _hits(s.backend.list(a["scope"])),
        "getMemory": lambda s, a: _got(s.backend.get(a["scope"], a["id"])),
        "updateMemory": lambda s, a: done(
            s.backend.update(a["scope"], a["id"], a["text"], *([a["metadata"]] if "metadata" in a else []))
        ),
        "deleteMemory": lambda s, a: done(s.backend.delete(a["scope"], a["id"])),
        "deleteMemories": lambda s, a: done(s.backend.delete_all(a["scope"])),
    },
    backend=ScopeHarnessBackend,
)
