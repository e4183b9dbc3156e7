"""Fixtures of the plugin's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the tiny and hostile adapters, as the working directory."""
    for name in ("tiny_adapter.py", "hostile_adapter.py"):
        shutil.copy(HERE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path
