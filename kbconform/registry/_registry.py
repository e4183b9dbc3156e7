"""The source/parser registry: an immutable, insertion-ordered value.

Keyed by source name and parser id. ``with_*`` returns a new registry; re-registering a name
replaces the entry in place (its position is kept); ``without_*`` of an absent name returns
the registry unchanged (test with ``has_*``). A name not given is derived from the class
(``MarkdownDocsSource`` -> ``markdown-docs``); an underivable name is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kbconform.errors import ContractViolation, Problem

_SUFFIXES = ("Source", "Parser")


def derive_name(obj: object) -> str:
    """The registry name of ``obj``: its ``name`` attribute, else its class name in kebab case."""
    given = getattr(obj, "name", None)
    if isinstance(given, str) and given:
        return given
    cls = obj if isinstance(obj, type) else type(obj)
    stem = cls.__name__
    for suffix in _SUFFIXES:
        stem = stem.removesuffix(suffix)
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", stem).lower().strip("-_")
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", name):
        raise ContractViolation(
            contract="registry",
            problems=(
                Problem(
                    "/name", "derive", "a name, or a class name other than 'Source'/'Parser'", cls.__name__
                ),
            ),
        )
    return name


def _with(entries: Mapping[str, Any], name: str, value: Any) -> Mapping[str, Any]:
    updated = dict(entries)
    updated[name] = value  # an existing key keeps its position
    return MappingProxyType(updated)


@dataclass(frozen=True, slots=True)
class Registry:
    """Sources and parsers by name, in registration order."""

    sources: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    parsers: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def with_source(self, source: Any, name: str | None = None) -> Registry:
        return Registry(_with(self.sources, name or derive_name(source), source), self.parsers)

    def with_parser(self, parser: Any, parser_id: str | None = None) -> Registry:
        key = parser_id or getattr(parser, "parser_id", None) or derive_name(parser)
        return Registry(self.sources, _with(self.parsers, key, parser))

    def without_source(self, name: str) -> Registry:
        if name not in self.sources:
            return self
        return Registry(MappingProxyType({k: v for k, v in self.sources.items() if k != name}), self.parsers)

    def without_parser(self, parser_id: str) -> Registry:
        if parser_id not in self.parsers:
            return self
        return Registry(
            self.sources, MappingProxyType({k: v for k, v in self.parsers.items() if k != parser_id})
        )

    def has_source(self, name: str) -> bool:
        return name in self.sources

    def has_parser(self, parser_id: str) -> bool:
        return parser_id in self.parsers

    def source_names(self) -> tuple[str, ...]:
        return tuple(self.sources)

    def parser_ids(self) -> tuple[str, ...]:
        return tuple(self.parsers)

    def cleared(self) -> Registry:
        return Registry()
