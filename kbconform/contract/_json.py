"""Which Python values are JSON, and where a value stops being JSON.

The rule, for every value handed to ``validate``, ``is_valid`` and ``explain``:

* an object is a ``dict`` (or a subclass) whose keys are ``str``; an array is a ``list`` or a
  ``tuple`` (or a subclass); a string is a ``str``, a number an ``int`` or a finite ``float``,
  and ``True``, ``False`` and ``None`` are themselves: strings and numbers of exactly these
  types;
* a member of an :class:`enum.Enum` is read as its ``value``, and a key may be a member of a
  ``str`` enum (as jsonschema-rs, the accept path, reads them);
* anything else is not JSON: ``NaN`` and infinities, ``Decimal``, sets, bytes, subclasses of
  ``str``, ``int`` and ``float`` that are not enum members (``numpy.str_``,
  ``numpy.float64``), other objects, keys that are not strings, a string or key holding a
  lone surrogate, a container inside itself, and more than :data:`MAX_DEPTH` arrays and
  objects nested in one another (a record is one level, its ``customMeta`` two, ...).

:func:`is_plain` answers quickly for the common case; :func:`problems` says where and why.
"""

from __future__ import annotations

import enum
import math
import re
from typing import Any

from kbconform.errors import Problem

#: The most arrays and objects nested in one another that a JSON value may hold.
MAX_DEPTH = 256

KEYWORD = "json"
SURROGATE = re.compile("[\ud800-\udfff]")
_TYPES = "a JSON value: dict (str keys), list, str, int, float, bool or None"


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (a ``str`` decoded from UTF-8 never does)."""
    return not text.isascii() and SURROGATE.search(text) is not None


_EXACT = frozenset({int, bool, type(None)})  # what is JSON by its type alone


def is_plain(value: Any, depth: int = 1) -> bool:
    """True when ``value`` is JSON made of exact ``dict``, ``list`` and scalar types only.

    False means "not certainly": :func:`problems` decides. ``depth`` is the nesting level of
    ``value`` itself (1 for a record).
    """
    kind = type(value)
    if kind is dict:
        if depth > MAX_DEPTH:
            return False
        for key in value:
            if type(key) is not str or (not key.isascii() and SURROGATE.search(key) is not None):
                return False
        items: Any = value.values()
    elif kind is list:
        if depth > MAX_DEPTH:
            return False
        items = value
    elif kind is str:
        return value.isascii() or SURROGATE.search(value) is None
    elif kind is float:
        return math.isfinite(value)
    else:
        return kind in _EXACT
    for item in items:
        kind = type(item)
        if kind is str:
            if not item.isascii() and SURROGATE.search(item) is not None:
                return False
        elif kind not in _EXACT and not is_plain(item, depth + 1):
            return False
    return True


def token(key: object) -> str:
    """``key`` as an RFC 6901 reference token (a lone surrogate shown as ``\\udXXX``)."""
    text = key if isinstance(key, str) else str(key)
    if has_surrogate(text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("~", "~0").replace("/", "~1")


def problems(value: Any, pointer: str = "", depth: int = 1) -> tuple[Problem, ...]:
    """Every place where ``value`` is not JSON, as problems with keyword ``json``; () if it is."""
    found: list[Problem] = []
    _walk(value, pointer, depth, set(), found)
    return tuple(found)


def _walk(value: Any, pointer: str, depth: int, path: set[int], found: list[Problem]) -> None:
    while isinstance(value, enum.Enum):
        value = value.value
    kind = type(value)
    if kind is str:
        if has_surrogate(value):
            found.append(_problem(pointer, "Unicode text (no lone surrogates)", "a lone surrogate"))
    elif kind is float:
        if not math.isfinite(value):
            found.append(_problem(pointer, "a finite number", repr(value)))
    elif isinstance(value, (dict, list, tuple)):
        if id(value) in path:
            found.append(
                _problem(pointer, "a tree (no array or object inside itself)", "an enclosing container")
            )
        elif depth > MAX_DEPTH:
            found.append(
                _problem(pointer, f"at most {MAX_DEPTH} nested arrays and objects", "deeper nesting")
            )
        else:
            path.add(id(value))
            if isinstance(value, dict):
                for key, item in value.items():
                    _walk(item, f"{pointer}/{_key(key, pointer, found)}", depth + 1, path, found)
            else:
                for index, item in enumerate(value):
                    _walk(item, f"{pointer}/{index}", depth + 1, path, found)
            path.discard(id(value))
    elif not (kind is int or kind is bool or value is None):
        found.append(_problem(pointer, _TYPES, describe(value)))


def _key(key: Any, pointer: str, found: list[Problem]) -> str:
    """The reference token of ``key``, noting a problem when it is not a JSON key."""
    text = key.value if isinstance(key, str) and isinstance(key, enum.Enum) else key
    if type(text) is not str:
        found.append(_problem(f"{pointer}/{token(key)}", "a string key", f"the key {describe(key)}"))
    elif has_surrogate(text):
        found.append(_problem(f"{pointer}/{token(text)}", "a key of Unicode text", "a lone surrogate"))
    return token(text)


def describe(value: object) -> str:
    """A short account of a value that is not JSON: its type and, briefly, the value."""
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    try:
        shown = repr(value)
    except Exception:  # a broken __repr__ must not hide the problem being reported
        shown = "?"
    return f"{name} {shown if len(shown) <= 40 else shown[:37] + '...'}"


def _problem(pointer: str, expected: str, got: str) -> Problem:
    return Problem(pointer, KEYWORD, expected, got)


def plain(value: Any) -> Any:
    """``value`` as the JSON the rule reads it as: plain dicts and lists, enum members' values.

    Only for a value :func:`problems` accepts (no cycles, bounded depth).
    """
    while isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, dict):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
