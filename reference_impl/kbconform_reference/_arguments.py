"""Argument checks the project-pool and kb-grant services share, each raising its profile's error."""

from __future__ import annotations

from collections.abc import Callable

from kbconform.errors import KbconformError

#: A profile's error for a malformed call: (the argument, what it must be, what it was).
Invalid = Callable[[str, str, str], KbconformError]


def describe(value: object) -> str:
    """A value as an error quotes it: its repr, cut to 80 characters."""
    return repr(value)[:80]


def checked_name(value: object, what: str, invalid: Invalid) -> str:
    """A non-empty string argument (a name or an id), else ``invalid``'s error for ``what``."""
    if type(value) is not str or not value:
        raise invalid(what, "a non-empty string", describe(value))
    return value
