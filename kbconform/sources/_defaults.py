"""The default sources, in their fixed order, and the parsers they use.

A file belongs to the first source, in registry order, whose paths own it; so decision records
come before the general Markdown source, which would otherwise take them as plain documents.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbconform.registry import Paths
from kbconform.sources._markdown import DecisionRecordParser, MarkdownSectionsParser
from kbconform.sources._python import PythonAstParser

_DECISION_RECORDS = Paths(include=("docs/adr/**/*.md", "docs/decisions/**/*.md", "adr/**/*.md"))
_MARKDOWN_DOCS = Paths(include=("*.md", "docs/**/*.md"))
_PYTHON_MODULES = Paths(
    include=("**/*.py",),
    exclude=("**/__pycache__/**", "**/node_modules/**", "**/site-packages/**", "**/venv/**"),
)


@dataclass(frozen=True, slots=True)
class DecisionRecordsSource:
    """Architecture decision records (an ADR folder), read by ``decision-record``."""

    parser_id: str = "decision-record"
    paths: Paths = _DECISION_RECORDS


@dataclass(frozen=True, slots=True)
class MarkdownDocsSource:
    """Markdown documents at the top level and under ``docs/``, read by ``markdown-sections``."""

    parser_id: str = "markdown-sections"
    paths: Paths = _MARKDOWN_DOCS


@dataclass(frozen=True, slots=True)
class PythonModulesSource:
    """Python modules anywhere in the workspace, read by ``python-ast``."""

    parser_id: str = "python-ast"
    paths: Paths = _PYTHON_MODULES


def default_sources() -> tuple[object, ...]:
    """The default sources, in order (``use_default_sources = true``)."""
    return (DecisionRecordsSource(), MarkdownDocsSource(), PythonModulesSource())


def default_parsers() -> tuple[object, ...]:
    """The default parsers (``use_default_parsers = true``)."""
    return (DecisionRecordParser(), MarkdownSectionsParser(), PythonAstParser())
