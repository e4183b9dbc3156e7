"""Strict JSON reading: what JSON allows but no contract wants is a contract violation.

Refused, each with its line number: duplicate keys; ``NaN``, ``Infinity`` and numbers too
large for a double (``1e400``); integers longer than :data:`MAX_INTEGER_DIGITS` digits; lone
surrogates (``"\\ud800"``); more than :data:`MAX_DEPTH` arrays and objects nested in one
another; bytes that are not UTF-8. Records stream from JSON Lines or a JSON array in memory
bounded by the largest record, not the file.

A binary stream is decoded line by line: a bad byte spoils only its own JSONL line (or ends an
array, which cannot be resynchronised), and is reported at its exact line.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import IO, Any

import attrs

from kbconform.contract._json import MAX_DEPTH
from kbconform.errors import ContractViolation, Problem

__all__ = ["MAX_DEPTH", "MAX_INTEGER_DIGITS", "MAX_RECORD_BYTES", "Item", "iter_records", "loads"]

#: The largest single record a stream may hold; a larger one is an error, not a memory blow-up.
MAX_RECORD_BYTES = 64 * 1024 * 1024
#: The longest integer read (Python converts longer ones in quadratic time; no contract needs one).
MAX_INTEGER_DIGITS = 1000
_CHUNK = 1 << 16
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_WHITESPACE = " \t\r\n"


def _violation(keyword: str, expected: str, got: str) -> ContractViolation:
    return ContractViolation(contract="json", problems=(Problem("", keyword, expected, got),))


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        duplicate = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise _violation("duplicate-key", "unique object keys", f"key {duplicate!r} twice")
    return result


def _too_long(error: ValueError) -> ContractViolation:
    return _violation("number", f"an integer of at most {MAX_INTEGER_DIGITS} digits", str(error)[:80])


def _no_constant(name: str) -> Any:
    raise _violation("number", "a finite JSON number", name)


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise _violation(
            "number", f"an integer of at most {MAX_INTEGER_DIGITS} digits", f"{len(text)} digits"
        )
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _violation(
            "number", "a number a double can hold", text if len(text) <= 40 else text[:37] + "..."
        )
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_int=_integer, parse_float=_finite
)


def _depth_violation() -> ContractViolation:
    return _violation("depth", f"at most {MAX_DEPTH} nested arrays and objects", "deeper nesting")


def _check_depth(text: str) -> None:
    """Refuse ``text`` if it nests arrays and objects deeper than :data:`MAX_DEPTH`."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # brackets inside strings only add to the count
        return
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _depth_violation()
        elif char in "]}":
            depth -= 1


def _decode(text: str, start: int) -> tuple[Any, int]:
    """``raw_decode`` with the strict rules; raises ContractViolation or JSONDecodeError."""
    try:
        return _DECODER.raw_decode(text, start)
    except RecursionError:  # deeper than the interpreter's limit, hence than MAX_DEPTH
        raise _depth_violation() from None
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        raise _too_long(error) from None  # an integer longer than Python converts


def _check_surrogates(text: str, value: Any) -> None:
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                raise _violation(
                    "string", "Unicode text (paired surrogates only)", "a lone surrogate"
                ) from None
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def loads(text: str) -> Any:
    """Parse one JSON text strictly; raise :class:`ContractViolation` (contract ``json``)."""
    _check_depth(text)
    try:
        value, end = _decode(text, _skip(text, 0))
    except json.JSONDecodeError as error:
        raise _violation("syntax", "JSON text", f"{error.msg} at column {error.colno}") from None
    if _skip(text, end) != len(text):
        raise _violation("syntax", "one JSON value", f"extra data at offset {end}")
    _check_surrogates(text, value)
    return value


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


@attrs.frozen
class Item:
    """One record read from a stream: its 1-based line, and the value or the reason it failed."""

    line: int
    value: Any = None
    error: ContractViolation | None = None


def _encoding(error: UnicodeDecodeError) -> ContractViolation:
    byte = error.object[error.start] if error.start < len(error.object) else None
    got = f"byte {byte:#04x}" if byte is not None else "a truncated character"
    return _violation("encoding", "UTF-8 text", got)


def iter_records(stream: IO[bytes] | IO[str] | IO[Any]) -> Iterator[Item]:
    """Yield the records of a JSONL stream, or of a stream holding one JSON array, or one JSON
    object written over several lines (its first line a lone ``{``).

    A bad record is yielded with its error and reading goes on (JSONL), or stops (a broken
    array cannot be resynchronised). Blank JSONL lines are skipped. A binary stream is read as
    UTF-8 line by line: a JSONL line that is not UTF-8 is one bad record, at its own line.
    """
    head: Any = stream.read(_CHUNK)
    if not isinstance(head, bytes):
        if head.lstrip(_WHITESPACE)[:1] == "[":
            yield from _iter_array(_Chunks(stream, head).read)
        elif _one_object(head):
            yield from _iter_array(_Enclosed(_Chunks(stream, head).read).read)
        else:
            yield from _iter_lines(stream, head)
    elif head.lstrip(_WHITESPACE.encode())[:1] == b"[":
        yield from _iter_array(_Utf8(stream, head).read)
    elif _one_object(head):
        yield from _iter_array(_Enclosed(_Utf8(stream, head).read).read)
    else:
        yield from _iter_lines(stream, head)


def _one_object(head: str | bytes) -> bool:
    """Whether the input is one JSON object written over several lines (a manifest as an editor
    saves it): its first line is a lone ``{``, which no JSON Lines record can be."""
    text = head.decode("utf-8", "replace") if isinstance(head, bytes) else head
    return text.lstrip(_WHITESPACE).split("\n", 1)[0].strip() == "{"


class _Enclosed:
    """A stream of one JSON value read as a one-element array: ``[`` before it, ``]`` after."""

    def __init__(self, read: Callable[[int], str]) -> None:
        self.inner, self.state = read, "before"

    def read(self, size: int) -> str:
        if self.state == "before":
            self.state = "inside"
            return "[" + self.inner(size)
        text = self.inner(size)
        if text or self.state == "after":
            return text
        self.state = "after"
        return "]"


def _iter_lines(stream: IO[Any], head: Any) -> Iterator[Item]:
    newline, empty = (b"\n", b"") if isinstance(head, bytes) else ("\n", "")
    partial: list[Any] = []  # the line being read, in pieces (joined once, when it ends)
    size = number = 0
    chunk = head
    while chunk:
        *lines, rest = chunk.split(newline)
        if lines:
            lines[0] = empty.join([*partial, lines[0]])
            partial, size = [], 0
            for line in lines:
                number += 1
                if line.strip():
                    yield _item(number, line)
        partial.append(rest)
        size += len(rest)
        if size > MAX_RECORD_BYTES:
            yield Item(
                number + 1, error=_violation("size", f"a record under {MAX_RECORD_BYTES} bytes", "more")
            )
            return
        chunk = stream.read(_CHUNK)
    last = empty.join(partial)
    if last.strip():
        yield _item(number + 1, last)


def _item(number: int, line: str | bytes) -> Item:
    try:
        return Item(number, value=loads(line.decode("utf-8") if isinstance(line, bytes) else line))
    except UnicodeDecodeError as error:
        return Item(number, error=_encoding(error))
    except ContractViolation as error:
        return Item(number, error=error)


class _BadBytes(Exception):
    """Bytes that are not UTF-8, on ``line``."""

    def __init__(self, line: int, error: UnicodeDecodeError) -> None:
        super().__init__(line)
        self.line = line
        self.error = error


class _Chunks:
    """A text stream read in chunks, the first one already read."""

    def __init__(self, stream: IO[Any], head: str) -> None:
        self.stream, self.head = stream, head

    def read(self, size: int) -> str:
        head, self.head = self.head, ""
        return head or self.stream.read(size)


class _Utf8:
    """A binary stream decoded as UTF-8 chunk by chunk.

    At a bad byte, the text before it comes first; the next read raises :class:`_BadBytes`.
    """

    def __init__(self, stream: IO[Any], head: bytes) -> None:
        self.stream, self.head = stream, head
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.line = 1  # the line of the next character decoded
        self.bad: _BadBytes | None = None

    def read(self, size: int) -> str:
        if self.bad is not None:
            raise self.bad
        data, self.head = self.head or self.stream.read(size), b""
        try:
            text: str = self.decoder.decode(data, final=not data)
        except UnicodeDecodeError as error:
            undecoded = self.decoder.getstate()[0] + data  # what error.start counts in
            text = undecoded[: error.start].decode("utf-8")
            self.bad = _BadBytes(self.line + text.count("\n"), error)
            if not text:
                raise self.bad from None
        self.line += text.count("\n")
        return text


def _iter_array(read: Callable[[int], str]) -> Iterator[Item]:
    try:
        yield from _array_items(read)
    except _BadBytes as bad:
        yield Item(bad.line, error=_encoding(bad.error))


def _array_items(read: Callable[[int], str]) -> Iterator[Item]:
    buffer = read(_CHUNK)
    index = _skip(buffer, 0) + 1  # past '['
    line = 1 + buffer.count("\n", 0, index)
    expect_value = True  # after '[' or ','
    first = True
    eof = False
    while True:
        index = _skip(buffer, index)
        if index >= len(buffer) and not eof:
            line += buffer.count("\n", 0, index)
            buffer, index = read(_CHUNK), 0
            eof = not buffer
            continue
        if index >= len(buffer):
            yield Item(line, error=_violation("syntax", "']' closing the array", "end of input"))
            return
        char = buffer[index]
        if char == "]" and (not expect_value or first):
            if _skip(buffer, index + 1) < len(buffer) or read(1).strip():
                yield Item(line, error=_violation("syntax", "nothing after the array", "extra data"))
            return
        if not expect_value:
            if char != ",":
                yield Item(
                    line + buffer.count("\n", 0, index), error=_violation("syntax", "',' or ']'", repr(char))
                )
                return
            index += 1
            expect_value = True
            continue
        line += buffer.count("\n", 0, index)
        buffer, index = buffer[index:], 0
        while True:
            try:
                value, end = _decode(buffer, 0)
                if end < len(buffer) or eof:
                    break
                more = read(_CHUNK)  # a number may go on in the next chunk
                eof = not more
                buffer += more
            except ContractViolation as error:
                yield Item(line, error=error)
                return
            except json.JSONDecodeError as error:
                more = "" if eof else read(max(_CHUNK, len(buffer)))
                if not more:
                    yield Item(
                        line,
                        error=_violation(
                            "syntax", "JSON text", f"{error.msg} at line {line + error.lineno - 1}"
                        ),
                    )
                    return
                if len(buffer) > MAX_RECORD_BYTES:
                    yield Item(
                        line, error=_violation("size", f"a record under {MAX_RECORD_BYTES} bytes", "more")
                    )
                    return
                buffer += more
        try:
            _check_depth(buffer[:end])
            _check_surrogates(buffer[:end], value)
        except ContractViolation as error:
            yield Item(line, error=error)
            return
        yield Item(line, value=value)
        line += buffer.count("\n", 0, end)
        buffer, index = buffer[end:], 0
        expect_value = False
        first = False
