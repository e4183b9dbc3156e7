"""The benchmark scripts (``benchmarks/``) loaded as modules by the tests that run them: one
loader, which puts their folder first on ``sys.path`` as Python does when it runs a script (they
import ``_bench`` beside them, whose ``module_at`` loads each)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def benchmark(script: str) -> ModuleType:
    """``benchmarks/<script>`` loaded as the module ``benchmark_<its stem>``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    from _bench import module_at

    return module_at(f"benchmark_{Path(script).stem}", BENCHMARKS / script)
