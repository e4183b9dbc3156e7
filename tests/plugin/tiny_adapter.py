"""A tiny adapter, as an adapter author would write one: the reference service over memory.

Its manifest offers only the required facades, one spoof mode and no optional feature, so a run
shows which suite tests an adapter can decline, and why. ``leaky`` and ``oracle`` are broken on
purpose: the suites must fail them.
"""

from __future__ import annotations

from typing import Any

from kbconform.errors import Forbidden, NotFound
from kbconform_reference import Hit, KnowledgeBase, Settings
from kbconform_reference.stores import MemoryStore

MANIFEST = {
    "manifestVersion": "1",
    "adapter": {"name": "tiny", "version": "0.0.1"},
    "backend": {"name": "reference in memory", "version": "test"},
    "readFacades": ["query", "get", "list"],
    "isolationModel": "metadata-filter",
    "spoofModes": ["overwrite"],
    "sharedNamespace": "neo-shared",
    "idProfile": "kbconform-v1",
    "features": {
        "client-where": "the tiny adapter passes no where clauses",
        "revision-boundary": "no repositories here",
        "fault-injection": "the store cannot be switched off",
        "escalation": "not configured",
        "workspace-scan": "parsing happens elsewhere",
    },
}


class Tiny:
    manifest = MANIFEST

    def open(self, options: Any) -> Any:
        return KnowledgeBase(MemoryStore(), settings=Settings(spoof_mode=options.spoof_mode))

    def close(self, backend: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass


class LeakyList(KnowledgeBase):
    """list reads the whole store: every tenant's rows."""

    def list(self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None) -> Any:
        self._authenticated(principal, "list")
        rows = self.store.get(limit=limit, offset=offset)
        return [Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)]


class Oracle(KnowledgeBase):
    """get tells a foreign id from a missing one (Forbidden vs NotFound)."""

    def get(self, principal: Any, chunk_id: str) -> Any:
        try:
            return super().get(principal, chunk_id)
        except NotFound:
            if self.store.get(ids=[chunk_id]).ids:
                raise Forbidden("get", "that chunk belongs to another tenant") from None
            raise


class Unfinished(KnowledgeBase):
    """list and get are not written yet."""

    def list(self, principal: Any, limit: int = 100, offset: int = 0, where: Any = None) -> Any:
        raise NotImplementedError("list: to do")

    def get(self, principal: Any, chunk_id: str) -> Any:
        raise NotImplementedError


class Broken(Tiny):
    def __init__(self, kind: type[KnowledgeBase]) -> None:
        self.kind = kind

    def open(self, options: Any) -> Any:
        return self.kind(MemoryStore(), settings=Settings(spoof_mode=options.spoof_mode))


def make() -> Tiny:
    return Tiny()


def leaky() -> Broken:
    return Broken(LeakyList)


def oracle() -> Broken:
    return Broken(Oracle)


def unfinished() -> Broken:
    return Broken(Unfinished)
