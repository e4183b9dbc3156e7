"""Strict JSON reading and streaming."""

from __future__ import annotations

import io

import pytest

from kbconform.contract import iter_records, loads
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
