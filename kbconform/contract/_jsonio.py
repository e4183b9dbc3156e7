"""Strict JSON reading: duplicate keys, NaN, Infinity and lone surrogates are contract
violations, never silently accepted. Records stream from JSONL or a JSON array in memory
bounded by the largest record, not the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any

import attrs

from kbconform.errors import ContractViolation, Problem

#: The largest single record a stream may hold; a larger one is an error, not a memory blow-up.
MAX_RECORD_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 16
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_WHITESPACE = " \t\r\n"


class _Strict(json.JSONDecoder):
    def __init__(self) -> None:
        super().__init__(object_pairs_hook=_no_duplicates, parse_constant=_no_constant, strict=True)


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
    return _violation("number", "a number Python can convert (at most 4300 digits)", str(error)[:80])


def _no_constant(name: str) -> Any:
    raise _violation("number", "a finite JSON number", name)


_DECODER = _Strict()


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
    try:
        value, end = _DECODER.raw_decode(text, _skip(text, 0))
    except json.JSONDecodeError as error:
        raise _violation("syntax", "JSON text", f"{error.msg} at column {error.colno}") from None
    except ValueError as error:  # an integer longer than Python converts
        raise _too_long(error) from None
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


def iter_records(stream: IO[str]) -> Iterator[Item]:
    """Yield the records of a JSONL stream, or of a stream holding one JSON array.

    A bad record is yielded with its error and reading goes on (JSONL), or stops (a broken
    array cannot be resynchronised). Blank JSONL lines are skipped.
    """
    head = stream.read(_CHUNK)
    start = _skip(head, 0)
    if start < len(head) and head[start] == "[":
        yield from _iter_array(stream, head, start + 1)
    else:
        yield from _iter_lines(stream, head)


def _iter_lines(stream: IO[str], head: str) -> Iterator[Item]:
    pending = head
    number = 0
    while True:
        while "\n" in pending:
            line, pending = pending.split("\n", 1)
            number += 1
            if line.strip():
                yield _item(number, line)
        more = stream.read(_CHUNK)
        if not more:
            break
        if len(pending) > MAX_RECORD_BYTES:
            number += 1
            yield Item(number, error=_violation("size", f"a record under {MAX_RECORD_BYTES} bytes", "more"))
            return
        pending += more
    if pending.strip():
        yield _item(number + 1, pending)


def _item(number: int, text: str) -> Item:
    try:
        return Item(number, value=loads(text))
    except ContractViolation as error:
        return Item(number, error=error)


def _iter_array(stream: IO[str], buffer: str, index: int) -> Iterator[Item]:
    line = 1 + buffer.count("\n", 0, index)
    expect_value = True  # after '[' or ','
    first = True
    eof = False
    while True:
        index = _skip(buffer, index)
        if index >= len(buffer) and not eof:
            line += buffer.count("\n", 0, index)
            buffer, index = stream.read(_CHUNK), 0
            eof = not buffer
            continue
        if index >= len(buffer):
            yield Item(line, error=_violation("syntax", "']' closing the array", "end of input"))
            return
        char = buffer[index]
        if char == "]" and (not expect_value or first):
            if _skip(buffer, index + 1) < len(buffer) or stream.read(1).strip():
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
                value, end = _DECODER.raw_decode(buffer, 0)
                if end < len(buffer) or eof:
                    break
                more = stream.read(_CHUNK)  # a number may go on in the next chunk
                eof = not more
                buffer += more
            except ContractViolation as error:
                yield Item(line, error=error)
                return
            except json.JSONDecodeError as error:
                more = "" if eof else stream.read(max(_CHUNK, len(buffer)))
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
            except ValueError as error:
                yield Item(line, error=_too_long(error))
                return
        try:
            _check_surrogates(buffer[:end], value)
        except ContractViolation as error:
            yield Item(line, error=error)
            return
        yield Item(line, value=value)
        line += buffer.count("\n", 0, end)
        buffer, index = buffer[end:], 0
        expect_value = False
        first = False
