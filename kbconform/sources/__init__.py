"""The default sources and parsers: decision records, Markdown sections, Python modules."""

from kbconform.sources._defaults import (
    DecisionRecordsSource,
    MarkdownDocsSource,
    PythonModulesSource,
    default_parsers,
    default_sources,
)
from kbconform.sources._markdown import DecisionRecordParser, MarkdownSectionsParser
from kbconform.sources._python import PythonAstParser

__all__ = [
    "DecisionRecordParser",
    "DecisionRecordsSource",
    "MarkdownDocsSource",
    "MarkdownSectionsParser",
    "PythonAstParser",
    "PythonModulesSource",
    "default_parsers",
    "default_sources",
]
