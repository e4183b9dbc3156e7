"""Markdown documents: sections for guides, one chunk per decision record.

Both parsers read Markdown with markdown-it-py (CommonMark), so a ``#`` inside a code fence, a
block quote or a list is text, not a heading, and setext headings count.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from kbconform.registry import Chunk
from kbconform.sources._common import line_count, single_line

_MARKDOWN = MarkdownIt("commonmark")


def plain_text(inline: Token) -> str:
    """The visible text of an inline token: emphasis and links unwrapped, code kept, breaks as spaces."""
    parts: list[str] = []
    for child in inline.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(plain_text(child))
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class _Heading:
    line: int  # 0-based first line of the heading
    level: int
    text: str


def _headings(tokens: Sequence[Token]) -> Iterator[_Heading]:
    """Top-level headings only: a heading inside a quote or list does not start a section."""
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map is not None:
            yield _Heading(token.map[0], int(token.tag[1:]), plain_text(tokens[index + 1]))


def _block(lines: Sequence[str], start: int, end: int) -> tuple[str, int]:
    """Lines ``[start, end)`` without trailing blank lines, and the (1-based) last line kept."""
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[start:end]), end


def _stem(source_path: str) -> str:
    return posixpath.splitext(posixpath.basename(source_path))[0] or posixpath.basename(source_path)


@dataclass(frozen=True, slots=True)
class MarkdownSectionsParser:
    """A Markdown document as sections: each top-level heading starts one (``kind: doc-section``).

    Text before the first heading is a section named after the file. ``customMeta`` holds the
    heading ``level`` and the ``headingPath`` (the titles of the enclosing headings).
    """

    parser_id: str = "markdown-sections"
    version: str = "1.0.0"
    kind: str = "doc-section"

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        lines = text.splitlines(keepends=True)
        headings = list(_headings(_MARKDOWN.parse(text)))
        starts = [h.line for h in headings] + [len(lines)]
        fallback = single_line(_stem(source_path), "document")
        if starts[0] > 0:
            content, last = _block(lines, 0, starts[0])
            if content.strip():
                yield Chunk(
                    self.kind, fallback, content, 1, last, custom_meta={"level": 0, "headingPath": []}
                )
        trail: list[tuple[int, str]] = []
        for heading, end in zip(headings, starts[1:], strict=True):
            name = single_line(heading.text, fallback)
            trail = [(level, title) for level, title in trail if level < heading.level]
            path = [title for _, title in trail]
            trail.append((heading.level, name))
            content, last = _block(lines, heading.line, end)
            yield Chunk(
                self.kind,
                name,
                content,
                heading.line + 1,
                max(last, heading.line + 1),
                custom_meta={"level": heading.level, "headingPath": path},
            )


_NUMBER = re.compile(r"([0-9]+)(?=[-_. ])")
_STATUS_LINE = re.compile(r"\s*status\s*:\s*(\S.*)", re.IGNORECASE)


def _status(tokens: Sequence[Token]) -> str | None:
    """A decision record's status: the paragraph under a "Status" heading, or a "Status: X" line."""
    after_heading = False
    for index, token in enumerate(tokens):
        if token.type != "inline":
            continue
        text = plain_text(token)
        if tokens[index - 1].type == "heading_open":
            after_heading = text.strip().casefold() == "status"
            continue
        if after_heading:
            return single_line(text.splitlines()[0] if text else "", "") or None
        for line in token.content.splitlines():
            found = _STATUS_LINE.fullmatch(line)
            if found:
                return single_line(found.group(1), "") or None
    return None


@dataclass(frozen=True, slots=True)
class DecisionRecordParser:
    """An architecture decision record as one chunk (``kind: decision-record``).

    The name is the first level-1 heading (else the file name); ``customMeta`` holds the record
    ``number`` (the file name's leading digits) and its ``status`` when the record states one.
    """

    parser_id: str = "decision-record"
    version: str = "1.0.0"
    kind: str = "decision-record"

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        tokens = _MARKDOWN.parse(text)
        fallback = single_line(_stem(source_path), "decision")
        title = next((h.text for h in _headings(tokens) if h.level == 1), "")
        meta: dict[str, str] = {}
        number = _NUMBER.match(posixpath.basename(source_path))
        if number:
            meta["number"] = number.group(1)
        status = _status(tokens)
        if status:
            meta["status"] = status
        yield Chunk(self.kind, single_line(title, fallback), text, 1, line_count(text), custom_meta=meta)
