"""A memory-scope harness on the kit's runtime that gives every memory a fresh random id, as
mem0 does: a replay can reach a memory only through the id it was given now. Its one bug: a
by-id read checks no scope (any caller reads any memory). With the first argument ``no-store``
every ``open`` fails, as a backend whose store will not start."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kbconform" / "_harness_runtime"))

import kbharness

kbharness.claim_stdout()


class Harness:
    manifest: ClassVar[dict[str, Any]] = {
        "manifestVersion": "1",
        "isolationProfile": "memory-scope",
        "adapter": {"name": "uuid memory", "version": "0"},
        "backend": {"name": "a dict", "version": "0"},
        "scopeKeys": ["user_id"],
        "scopeMatch": "keys",
        "byIdScope": "checked",
        "readFacades": ["search"],
        "features": {
            "get": True,
            "update": "not offered",
            "delete": "not offered",
            "delete-all": "not offered",
            "filter": "not offered",
            "fault-injection": "not offered",
        },
    }

    def open(self, params: dict[str, Any], handle: str) -> dict[str, Any]:
        if sys.argv[1:] == ["no-store"]:
            raise kbharness.HarnessError("KB_BACKEND_UNAVAILABLE", "the store did not start")
        return {}

    def close(self, backend: dict[str, Any]) -> None:
        backend.clear()

    def addMemory(self, backend: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        memory = str(uuid.uuid4())
        backend[memory] = (params["scope"], params["text"])
        return {"id": memory}

    def getMemory(self, backend: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        if params["id"] not in backend:
            raise kbharness.HarnessError("KB_NOT_FOUND", "no such memory")
        return {"hit": {"id": params["id"], "text": backend[params["id"]][1]}}


if __name__ == "__main__":
    kbharness.serve(Harness())
