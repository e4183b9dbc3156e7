"""What a source and a parser are: two small protocols and the values they exchange.

A *source* says which files of a workspace it owns (glob patterns) and which parser reads them.
A *parser* turns the text of one file into chunks. The workspace scanner (``kbconform.workspace``)
does the rest: walking, decoding, wrapping chunks into parsed-chunk-v1 records, validating.
Both are plain objects: no base class to inherit, no global state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

#: What a chunk's id is computed from unless its parser says otherwise.
DEFAULT_HASH_INPUTS: tuple[str, ...] = ("sourcePath", "kind", "name", "content")


@dataclass(frozen=True, slots=True)
class Paths:
    """The files a source owns: globs relative to the workspace root (``**`` spans directories).

    A path is owned when it matches an ``include`` pattern and no ``exclude`` pattern. ``*`` and
    ``**`` do not match names that start with a dot.
    """

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as a parser produces it; the scanner adds identity, path and parser fields."""

    kind: str
    name: str
    content: str
    line_start: int | None = None
    line_end: int | None = None
    class_name: str | None = None
    extends: str | None = None
    custom_meta: Mapping[str, Any] | None = None
    hash_inputs: tuple[str, ...] = field(default=DEFAULT_HASH_INPUTS)


@runtime_checkable
class Source(Protocol):
    """Which files of a workspace a source owns, and which parser reads them.

    ``name`` is optional: without it the registry derives one from the class name
    (``DecisionRecordsSource`` -> ``decision-records``).
    """

    #: The id of the registered parser that reads this source's files.
    parser_id: str
    #: The default paths; configuration (``source_paths``) may replace them.
    paths: Paths


@runtime_checkable
class Parser(Protocol):
    """Turns one file's text into chunks, deterministically."""

    #: The parserId written into every record (a lower-case token).
    parser_id: str
    #: The parserVersion written into every record (a semantic version).
    version: str

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        """The chunks of the file at ``source_path`` (relative, '/'-separated), in document order.

        ``text`` is the file decoded as UTF-8 with its line endings normalized to ``\\n``. Raise
        :class:`kbconform.errors.ContractViolation` (contract ``"workspace"``) for a file that
        cannot be parsed; never skip it silently.
        """
        ...
