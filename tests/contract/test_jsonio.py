"""Strict JSON reading and streaming."""

from __future__ import annotations

import io
from typing import Any

import pytest

from kbconform.contract import iter_records, loads
from kbconform.contract._jsonio import MAX_DEPTH, MAX_INTEGER_DIGITS
from kbconform.errors import ContractViolation


@pytest.mark.parametrize(
    ("text", "keyword"),
    [
        ('{"a": 1, "a": 2}', "duplicate-key"),
        ('{"a": {"b": 1, "b": 1}}', "duplicate-key"),
        ("NaN", "number"),
        ('{"x": Infinity}', "number"),
        ("[-Infinity]", "number"),
        ('"\\ud800"', "string"),
        ('{"\\udfff": 1}', "string"),
        ("{", "syntax"),
        ("[1] [2]", "syntax"),
    ],
)
def test_strict_parsing_rejects_what_lenient_json_accepts(text: str, keyword: str) -> None:
    """Duplicate keys, non-finite numbers and lone surrogates are contract violations."""
    with pytest.raises(ContractViolation) as caught:
        loads(text)
    assert caught.value.contract == "json"
    assert [problem.keyword for problem in caught.value.problems] == [keyword]


def test_strict_parsing_keeps_what_json_allows() -> None:
    """Positive control: paired surrogates, escapes and big integers parse as usual."""
    assert loads('{"emoji": "\\ud83d\\ude00", "n": 12345678901234567890, "t": "a\\nb"}') == {
        "emoji": "\U0001f600",
        "n": 12345678901234567890,
        "t": "a\nb",
    }


def _lines(text: str) -> list[tuple[int, object, str | None]]:
    return [
        (item.line, item.value, item.error.problems[0].keyword if item.error else None)
        for item in iter_records(io.StringIO(text))
    ]


def test_jsonl_reports_each_bad_line_and_goes_on() -> None:
    """A bad line is an error with its line number; later lines are still read."""
    assert _lines('{"a": 1}\n\n{"a": NaN}\n{"a"\n{"b": 2}') == [
        (1, {"a": 1}, None),
        (3, None, "number"),
        (4, None, "syntax"),
        (5, {"b": 2}, None),
    ]


def test_a_json_array_yields_its_elements_with_their_lines() -> None:
    """Each element is reported with the line it starts on."""
    assert _lines('[\n  {"a": 1},\n  {"b": 2}\n]\n') == [(2, {"a": 1}, None), (3, {"b": 2}, None)]


@pytest.mark.parametrize(("text", "expected"), [("[]", []), ("  [ \n ]  ", [])])
def test_an_empty_array_has_no_records(text: str, expected: list[object]) -> None:
    """An empty array is zero records, not an error."""
    assert _lines(text) == expected


@pytest.mark.parametrize(
    ("text", "keyword"),
    [("[1 2]", "syntax"), ('[{"a": 1, "a": 1}]', "duplicate-key"), ("[1,", "syntax"), ("[1] x", "syntax")],
)
def test_a_broken_array_ends_with_an_error(text: str, keyword: str) -> None:
    """A malformed array cannot be resynchronised: the last item is the error."""
    assert _lines(text)[-1][2] == keyword


class _CountingStream(io.StringIO):
    """A stream that records how far it has been read."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.consumed = 0

    def read(self, size: int | None = -1) -> str:
        chunk = super().read(size)
        self.consumed += len(chunk)
        return chunk


@pytest.mark.parametrize("opening", ["", "["])
def test_records_stream_without_reading_the_whole_input(opening: str) -> None:
    """The first record arrives after a bounded read, whatever the input's size (JSONL or array)."""
    record = '{"content": "' + "x" * 100 + '"}'
    separator = "," if opening else "\n"
    text = opening + separator.join([record] * 50_000) + ("]" if opening else "")
    stream = _CountingStream(text)
    records = iter_records(stream)
    assert next(records).value == {"content": "x" * 100}
    assert stream.consumed < 300_000 < len(text)
    assert sum(1 for _ in records) == 49_999


def test_a_number_split_across_reads_is_read_whole() -> None:
    """A number cut by a chunk boundary is not mistaken for a shorter one."""
    number = "0." + "7" * 70_000  # longer than one read
    assert _lines(f"[{number}, 1]") == [(1, float(number), None), (1, 1, None)]


@pytest.mark.parametrize("text", ["[" + "9" * 5000 + "]", "9" * 5000])
def test_an_integer_too_long_to_convert_is_an_error_not_a_crash(text: str) -> None:
    """Python refuses to convert very long integers; kbconform reports it as a bad number."""
    assert _lines(text)[-1][2] == "number"


def test_nesting_deeper_than_the_limit_is_a_depth_error_never_a_recursion_error() -> None:
    """A 4 KB line of 2,000 nested arrays is refused by the explicit bound; the limit itself reads."""
    deep = "[" * 2_000 + "]" * 2_000
    with pytest.raises(ContractViolation) as caught:
        loads(deep)
    assert [problem.keyword for problem in caught.value.problems] == ["depth"]
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) == _nested_empty(MAX_DEPTH)
    with pytest.raises(ContractViolation):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert _lines(f"{deep}\n{{}}") == [(1, None, "depth")]  # an array: the whole input
    assert _lines(f'{{"a": {deep}}}\n{{}}') == [(1, None, "depth"), (2, {}, None)]
    assert _lines(f"[{deep}]") == [(1, None, "depth")]


def _nested_empty(depth: int) -> object:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_brackets_inside_strings_do_not_count_as_nesting() -> None:
    """Positive control: a string full of brackets is not deep."""
    text = '{"a": "' + "[{" * 1_000 + '"}'
    assert loads(text) == {"a": "[{" * 1_000}


@pytest.mark.parametrize("text", ["1e400", "[-1e400]", '{"x": 1.8e308}'])
def test_a_number_beyond_a_double_is_refused_not_read_as_infinity(text: str) -> None:
    """json reads 1e400 as inf; the strict reader refuses it like Infinity."""
    with pytest.raises(ContractViolation) as caught:
        loads(text)
    assert [problem.keyword for problem in caught.value.problems] == ["number"]
    assert loads("1.7976931348623157e308") == 1.7976931348623157e308


def test_integers_longer_than_the_limit_are_refused() -> None:
    """A 4,000-digit integer is refused (Python would read it, slowly); the limit itself reads."""
    with pytest.raises(ContractViolation) as caught:
        loads("4" * 4_000)
    assert caught.value.problems[0].keyword == "number"
    assert loads("-" + "9" * MAX_INTEGER_DIGITS) == -int("9" * MAX_INTEGER_DIGITS)
    with pytest.raises(ContractViolation):
        loads("9" * (MAX_INTEGER_DIGITS + 1))


def _byte_lines(data: bytes) -> list[tuple[int, object, str | None]]:
    return [
        (item.line, item.value, item.error.problems[0].keyword if item.error else None)
        for item in iter_records(io.BytesIO(data))
    ]


def test_a_bad_byte_spoils_only_its_own_jsonl_line_reported_at_its_line() -> None:
    """Line 2,001 of 3,000 holds a byte that is not UTF-8: that line is the error, every other reads."""
    lines = [b'{"n": %d}' % number for number in range(1, 3_001)]
    lines[2_000] = b'{"n": "\xff"}'
    read = _byte_lines(b"\n".join(lines) + b"\n")
    assert [(line, keyword) for line, _, keyword in read if keyword] == [(2_001, "encoding")]
    assert [value["n"] for _, value, keyword in read if not keyword] == [  # type: ignore[index]
        number for number in range(1, 3_001) if number != 2_001
    ]


def test_valid_utf8_in_bytes_reads_like_text() -> None:
    """Positive control: multi-byte characters and CRLF line ends read from bytes as from text."""
    data = '{"a": "é"}\r\n{"b": "\U0001f600"}\r\n'.encode()
    assert _byte_lines(data) == [(1, {"a": "é"}, None), (2, {"b": "\U0001f600"}, None)]


def test_a_bad_byte_ends_an_array_at_its_own_line_after_the_elements_before_it() -> None:
    """An array cannot be resynchronised: elements before the byte are read, then the error."""
    elements = [b'{"n": %d}' % number for number in range(1, 3_001)]
    elements[2_000] = b'{"n": "\xc3("}'
    read = _byte_lines(b"[\n" + b",\n".join(elements) + b"\n]\n")
    assert read[-1] == (2_002, None, "encoding")
    assert len(read) == 2_001
    assert read[-2] == (2_001, {"n": 2_000}, None)


def test_a_multibyte_character_split_across_reads_is_not_a_bad_byte() -> None:
    """The array reader decodes incrementally: a character cut by a chunk boundary reads whole."""
    padding = "x" * (65_536 - 7)  # the first byte of "é" is the last byte of the first read
    data = f'["{padding}", "é"]'.encode()
    assert _byte_lines(data) == [(1, padding, None), (1, "é", None)]


@pytest.mark.parametrize("wrap", [io.StringIO, lambda text: io.BytesIO(text.encode("utf-8"))])
def test_one_object_over_several_lines_is_one_record_and_a_json_lines_record_is_not(wrap: Any) -> None:
    """A manifest as an editor saves it (its first line a lone ``{``) is one record, read as
    strictly as any (a key twice is its error); one object per line is still JSON Lines (control)."""
    pretty = '{\n  "a": 1,\n  "b": [\n    2\n  ]\n}\n'
    items = list(iter_records(wrap(pretty)))
    assert [(item.line, item.value, item.error) for item in items] == [(1, {"a": 1, "b": [2]}, None)]
    twice = list(iter_records(wrap('{\n "a": 1,\n "a": 2\n}\n')))
    assert len(twice) == 1
    assert twice[0].error is not None
    assert twice[0].error.problems[0].keyword == "duplicate-key"
    lines = list(iter_records(wrap('{"a": 1}\n{"a": 2}\n')))
    assert [item.value for item in lines] == [{"a": 1}, {"a": 2}]
