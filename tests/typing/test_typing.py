"""A type checker proves that the reference implements the adapter protocol."""

from __future__ import annotations

from pathlib import Path

from mypy import api

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _mypy(path: Path, cache: Path) -> tuple[str, int]:
    stdout, _, status = api.run(
        ["--strict", "--cache-dir", str(cache), "--config-file", str(ROOT / "pyproject.toml"), str(path)]
    )
    return stdout, status


def test_the_reference_satisfies_the_backend_and_adapter_protocols(mypy_cache: Path) -> None:
    """mypy --strict accepts KnowledgeBase as Backend, SupportsCount, SupportsAsk and SupportsScan,
    and ReferenceAdapter as Adapter; a backend whose get lacks the principal is rejected (control)."""
    output, status = _mypy(HERE / "reference_satisfies_protocol.py", mypy_cache)
    assert status == 0, output
    output, status = _mypy(HERE / "not_a_backend.py", mypy_cache)
    assert status == 1
    assert (
        'Incompatible types in assignment (expression has type "Unscoped", variable has type "Backend")'
        in output
    )
