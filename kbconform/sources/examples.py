"""A custom source and parser, as a workspace registers them through configuration.

``kbconform.toml``::

    custom_sources = ["kbconform.sources.examples:GlossarySource"]
    custom_parsers = ["kbconform.sources.examples:GlossaryParser"]

A glossary file holds one ``term: definition`` per line; blank lines and lines starting with
``#`` are ignored. Each term becomes a ``glossary-term`` chunk.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kbconform.registry import Chunk, Paths
from kbconform.sources._common import parse_error, single_line

_GLOSSARY = Paths(include=("glossary/**/*.txt",))


@dataclass(frozen=True, slots=True)
class GlossarySource:
    """Glossary files (``glossary/*.txt``), read by ``glossary``."""

    parser_id: str = "glossary"
    paths: Paths = _GLOSSARY


@dataclass(frozen=True, slots=True)
class GlossaryParser:
    """``term: definition`` lines as ``glossary-term`` chunks."""

    parser_id: str = "glossary"
    version: str = "1.0.0"

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            term, colon, definition = line.partition(":")
            if not colon or not term.strip():
                raise parse_error(
                    f"{source_path}:{number}", "glossary", "a 'term: definition' line", repr(line)
                )
            yield Chunk("glossary-term", single_line(term, "term"), definition.strip(), number, number)
