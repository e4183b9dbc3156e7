"""harnesses/mem0/harness.py on the mem0 release installed; on mem0 1.x, three calls as 1.x
spells them, and nothing else changed.

    python release_harness.py

Every operation, the error mapping and the manifest are the mem0 harness's own (it is loaded as
a module), and on 2.x and later it runs as it is. mem0 2.0 changed how three calls are made,
and on a 1.x release each is made the 1.x way, with the same values:

- ``search`` and ``get_all`` take the scope as keyword arguments (``user_id=...``; 2.x takes it
  only inside ``filters`` and refuses a top-level id, 1.x refuses a read without one), the where
  clause as ``filters`` (mem0 merges the two by the same rule, the scope's ids written over the
  filters, ``_build_filters_and_metadata``), and the limit as ``limit`` (2.x: ``top_k``);
- ``update`` takes the new text as ``data`` (2.x: ``text``) and no metadata, so the manifest
  declines ``update-metadata``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[2]


def _harness() -> Any:
    """harnesses/mem0/harness.py as a module (its ``__main__`` block does not run)."""
    path = ROOT / "harnesses" / "mem0" / "harness.py"
    spec = importlib.util.spec_from_file_location("mem0_harness", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def release_1(h: Any) -> Any:
    """The harness's class, its reads and update made as mem0 1.x takes them."""

    class Mem0Harness1(h.Mem0Harness):
        manifest: ClassVar[dict[str, Any]] = {
            **h.MANIFEST,
            "features": {**h.MANIFEST["features"], "update-metadata": "mem0 1.x's update takes no metadata"},
        }

        def searchMemories(self, backend: Any, params: Any) -> Any:
            where = params["where"]
            result = h._call(
                h._memory(backend).search,
                params["text"],
                scope=h.scope_items(params["scope"]),
                limit=params["limit"],
                filters=dict(h.mem0_where(where)) if isinstance(where, dict) else None,
            )
            return {"hits": [h.hit(item) for item in result["results"]]}

        def listMemories(self, backend: Any, params: Any) -> Any:
            result = h._call(
                h._memory(backend).get_all, scope=h.scope_items(params["scope"]), limit=h.LIST_LIMIT
            )
            return {"hits": [h.hit(item) for item in result["results"]]}

        def updateMemory(self, backend: Any, params: Any) -> Any:
            given = {"metadata": params["metadata"]} if "metadata" in params else {}
            h._call(h._memory(backend).update, params["id"], data=params["text"], **given)
            return {}

    return Mem0Harness1


def main() -> int:
    h = _harness()
    chosen = release_1(h) if h.mem0.__version__.startswith("1.") else h.Mem0Harness
    return int(h.kbharness.serve(chosen(), name="mem0-harness"))


if __name__ == "__main__":
    sys.exit(main())
