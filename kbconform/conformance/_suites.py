"""Where the suites are: the shipped ones (the shared suite at the top, a folder per built-in
profile, ``catalogue.json``), and a profile's catalogue entries read from a catalogue file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbconform._resources import data_dir


def shipped_suites() -> Path:
    """The directory of the suites shipped with this installation."""
    return data_dir("suites")


def catalogue_entries(path: Path, profile: str) -> list[dict[str, Any]]:
    """The entries of the catalogue file ``path`` (``{"tests": [...]}``) whose tests are the
    isolation profile ``profile``'s: those naming it, or naming none for the default profile."""
    from kbconform.profiles import DEFAULT

    tests = json.loads(path.read_text(encoding="utf-8"))["tests"]
    return [entry for entry in tests if entry.get("profile", DEFAULT) == profile]
