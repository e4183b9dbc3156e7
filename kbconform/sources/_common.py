"""Helpers the default parsers share: names fit for the contract, and parse errors."""

from __future__ import annotations

import re

from kbconform.contract import load
from kbconform.errors import ContractViolation, Problem

_TEXT = load("identity-tuple-v1")["$defs"]["text"]
# The characters the contract forbids in a name, read from the schema itself.
_FORBIDDEN = re.compile(_TEXT["not"]["pattern"])
_MAX_NAME = int(_TEXT["maxLength"])


def single_line(text: str, fallback: str) -> str:
    """``text`` as a contract-valid name: forbidden characters dropped, whitespace collapsed.

    Falls back to ``fallback`` (which must itself be valid) when nothing printable is left.
    """
    name = " ".join(_FORBIDDEN.sub(" ", text).split())[:_MAX_NAME].rstrip()
    return name or fallback


def parse_error(source_path: str, keyword: str, expected: str, got: str) -> ContractViolation:
    """A file a parser cannot read; for the ``workspace`` contract the pointer is the file's path."""
    return ContractViolation(contract="workspace", problems=(Problem(source_path, keyword, expected, got),))


def line_count(text: str) -> int:
    """How many lines ``text`` has (a final line without ``\\n`` counts)."""
    return len(text.splitlines()) or 1
