"""Markdown sections and decision records, read with a CommonMark parser."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kbconform.registry import Chunk
from kbconform.sources import DecisionRecordParser, MarkdownSectionsParser

SECTIONS = MarkdownSectionsParser()
DECISIONS = DecisionRecordParser()


def sections(text: str, path: str = "docs/page.md") -> list[Chunk]:
    return list(SECTIONS.parse(path, text))


def test_each_top_level_heading_starts_a_section_with_its_lines() -> None:
    """ATX and setext headings split; line numbers are 1-based and trailing blank lines are cut."""
    text = "# One\n\nfirst\n\n\nTwo\n---\nsecond\n"
    chunks = sections(text)
    assert [(c.name, c.line_start, c.line_end, c.content) for c in chunks] == [
        ("One", 1, 3, "# One\n\nfirst\n"),
        ("Two", 6, 8, "Two\n---\nsecond\n"),
    ]
    assert {c.kind for c in chunks} == {"doc-section"}


def test_hashes_in_code_quotes_and_lists_are_not_headings() -> None:
    """A regular expression would split these; the CommonMark parser does not (control: real heading)."""
    text = "# Real\n\n```\n# in a fence\n```\n\n> # in a quote\n\n- # in a list\n\n    # indented code\n"
    chunks = sections(text)
    assert [c.name for c in chunks] == ["Real"]
    assert chunks[0].content == text.rstrip("\n") + "\n"


def test_text_before_the_first_heading_is_a_section_named_after_the_file() -> None:
    """A preamble is kept under the file's name; an empty preamble is not a chunk."""
    assert [c.name for c in sections("intro\n\n# A\n", "docs/guide.md")] == ["guide", "A"]
    assert [c.name for c in sections("\n\n# A\n")] == ["A"]
    assert [c.name for c in sections("no headings at all\n", "notes.md")] == ["notes"]
    assert sections("") == []


def test_heading_paths_follow_the_nesting() -> None:
    """customMeta holds the level and the titles of the enclosing headings."""
    text = "# A\n## B\n### C\n## D\n# E\n### F\n"
    meta = [(c.name, c.custom_meta) for c in sections(text)]
    assert meta == [
        ("A", {"level": 1, "headingPath": []}),
        ("B", {"level": 2, "headingPath": ["A"]}),
        ("C", {"level": 3, "headingPath": ["A", "B"]}),
        ("D", {"level": 2, "headingPath": ["A"]}),
        ("E", {"level": 1, "headingPath": []}),
        ("F", {"level": 3, "headingPath": ["E"]}),
    ]


def test_names_are_plain_single_line_text_the_contract_accepts() -> None:
    """Markup is unwrapped, forbidden characters dropped, long names cut, empty ones fall back."""
    text = "# *Bold* `code` [link](x)\n\n# a\u200bb\u202ec\n\n#\n\n# " + "x" * 2000 + "\n"
    names = [c.name for c in sections(text, "docs/Fallback Name.md")]
    assert names[:3] == ["Bold code link", "a b c", "Fallback Name"]
    assert names[3] == "x" * 1024


@given(
    st.lists(
        st.sampled_from(["# H", "## Sub", "text", "", "```", "> # q", "Setext", "---", "- item"]), max_size=25
    )
)
def test_sections_are_ordered_disjoint_and_cover_only_the_file(lines: list[str]) -> None:
    """For any document: sections are in order, never overlap, and their lines come from the file."""
    text = "\n".join(lines) + "\n"
    file_lines = text.splitlines(keepends=True)
    previous_end = 0
    for chunk in sections(text):
        assert chunk.line_start is not None
        assert chunk.line_end is not None
        assert previous_end < chunk.line_start <= chunk.line_end <= len(file_lines)
        assert chunk.content == "".join(file_lines[chunk.line_start - 1 : chunk.line_end])
        previous_end = chunk.line_end


def test_a_decision_record_is_one_chunk_with_its_number_and_status() -> None:
    """Title from the first level-1 heading, number from the file name, status from a Status section."""
    text = "# 7. Use queues\n\n## Status\n\nAccepted\n\n## Context\n\nStatus: not this one\n"
    [chunk] = DECISIONS.parse("docs/adr/0007-use-queues.md", text)
    assert (chunk.kind, chunk.name, chunk.content) == ("decision-record", "7. Use queues", text)
    assert (chunk.line_start, chunk.line_end) == (1, 9)
    assert chunk.custom_meta == {"number": "0007", "status": "Accepted"}


def test_a_status_line_and_missing_parts_are_handled() -> None:
    """A "Status:" line counts; without a title or number the record still gets a valid name."""
    [madr] = DECISIONS.parse("adr/use-x.md", "# Use X\n\n* Status: proposed\n")
    assert madr.custom_meta == {"status": "proposed"}
    [bare] = DECISIONS.parse("adr/0012_bare.md", "Just text.\n")
    assert (bare.name, bare.custom_meta) == ("0012_bare", {"number": "0012"})
    [sub] = DECISIONS.parse("adr/x.md", "## Only a level two\n\n## Status\n")
    assert sub.name == "x"
    assert sub.custom_meta == {}
