"""Where kbconform's data files live: inside the wheel, or beside the package in a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The directory ``name`` (``schemas`` or ``suites``) shipped with this installation.

    A wheel carries it inside the package (``kbconform/<name>``); a source checkout keeps it
    at the repository top level, beside the package.
    """
    for candidate in (_PACKAGE / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"kbconform's {name!r} directory is missing: looked in {_PACKAGE / name} and "
        f"{_PACKAGE.parent / name}. The installation is incomplete; reinstall kbconform."
    )
