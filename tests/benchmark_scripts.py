"""The benchmark scripts (``benchmarks/``) loaded as modules by the tests that run them: one
loader, which puts their folder first on ``sys.path`` as Python does when it runs a script (they
import ``_bench`` beside them) and registers each module (dataclasses look their module up)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def benchmark(script: str) -> ModuleType:
    """``benchmarks/<script>`` loaded as the module ``benchmark_<its stem>``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    name = f"benchmark_{Path(script).stem}"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / script)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
