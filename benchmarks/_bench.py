"""What the benchmarks share: the state machine's suite loaded as a module, and their figures
printed under a title, one per line, and written as JSON where ``--json`` asks (the scripts
import this module from their own folder, which Python puts first on ``sys.path`` when it runs a
script)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

#: The tenant-namespace state machine's suite (state-01).
SUITE = Path(__file__).resolve().parent.parent / "suites" / "tenant_namespace" / "test_stateful.py"


def module_at(name: str, path: Path) -> ModuleType:
    """The Python file at ``path`` loaded as module ``name``, registered in ``sys.modules``
    (dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def state_suite(name: str, path: Path = SUITE) -> ModuleType:
    """The state machine's suite at ``path`` loaded as module ``name``."""
    return module_at(name, path)


def shown(value: Any) -> str:
    """A figure as printed: a float in its shortest form (``%g``), anything else as it is."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def report(figures: dict[str, Any], json_path: Path | None, title: str | None = None) -> dict[str, Any]:
    """Print ``figures`` (under ``title``), write them to ``json_path`` when given; return them."""
    if title is not None:
        print(title)
    for name, value in figures.items():
        print(f"  {name}: {shown(value)}")
    return write(figures, json_path)


def write(figures: dict[str, Any], json_path: Path | None) -> dict[str, Any]:
    """Write ``figures`` to ``json_path`` as indented JSON when given; return them."""
    if json_path is not None:
        json_path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures
