"""JavaScript ``JSON.stringify`` byte for byte, for the ``neo-compat`` chunk-id profile.

Keys keep insertion order (array-index keys such as ``"2"`` first, ascending, as JavaScript
orders them); :data:`UNDEFINED` values are dropped from objects (``null`` is kept);
numbers are written as a JavaScript number would hold and print them (``1.0`` -> ``1``,
``1e21``, ``1e-7``, ``-0`` -> ``0``, integers past 2**53 rounded to a double); strings are
escaped as ECMAScript 2019 does (non-ASCII raw, lone surrogates as ``\\udXXX``).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Final


class _Undefined:
    def __repr__(self) -> str:
        return "UNDEFINED"


#: JavaScript's ``undefined``: dropped from objects, ``null`` in arrays.
UNDEFINED: Final = _Undefined()

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` with no replacer and no indentation."""
    if value is None or value is UNDEFINED:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(stringify(item) for item in value) + "]"
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items() if v is not UNDEFINED]
        # JavaScript objects list array-index keys first, ascending, then the rest in insertion order.
        indices = sorted((item for item in items if _is_index(item[0])), key=lambda item: int(item[0]))
        rest = [item for item in items if not _is_index(item[0])]
        return "{" + ",".join(f"{_string(k)}:{stringify(v)}" for k, v in indices + rest) + "}"
    raise TypeError(f"JSON.stringify has no encoding for {type(value).__name__}")


def number(value: int | float) -> str:
    """``String(Number(value))`` as JSON.stringify writes it (non-finite numbers are ``null``)."""
    try:
        x = float(value)
    except OverflowError:
        return "null"
    if not math.isfinite(x):
        return "null"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digits_tuple, exponent = Decimal(repr(abs(x))).normalize().as_tuple()
    digits = "".join(map(str, digits_tuple))
    k = len(digits)
    n = k + int(exponent)  # the decimal point sits after n digits
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    power = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _is_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def _string(text: str) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def utf8(text: str) -> bytes:
    """UTF-8 bytes of a stringified text (lone surrogates were escaped, so this cannot fail)."""
    return text.encode("utf-8")
