"""Fixtures of the plugin's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _stock(folder: Path) -> Path:
    """``folder`` with the tiny and hostile adapters in it."""
    for name in ("tiny_adapter.py", "hostile_adapter.py"):
        shutil.copy(HERE / name, folder / name)
    return folder


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory holding the tiny and hostile adapters, as the working directory."""
    monkeypatch.chdir(_stock(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def module_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the tiny and hostile adapters for a module's tests at once (a run
    several tests judge); not the working directory: what runs there changes to it."""
    return _stock(tmp_path_factory.mktemp("project"))
