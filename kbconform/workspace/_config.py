"""Registry configuration: which sources and parsers a workspace uses, and where they look.

Keys (TOML, or any mapping)::

    use_default_sources = true      # the default sources, in their fixed order
    use_default_parsers = true      # the default parsers
    custom_sources = ["pkg.mod:MySource", {class = "pkg.mod:Other", name = "other"}]
    custom_parsers = ["pkg.mod:MyParser"]

    max_file_bytes = 16777216       # the largest file a parser reads (default 16 MiB)

    [source_paths]
    markdown-docs = "handbook/**/*.md"                       # scalar: the include globs
    python-modules = ["src/**/*.py", "tools/**/*.py"]         # list: the include globs
    decision-records = {include = "adr/*.md", exclude = []}   # map: per key

Custom entries are registered after the defaults; one with a registered name replaces it in
place. A path setting replaces only what it names; everything else falls back to the source's
default. Every malformed entry is an error naming the entry (the ``pointer`` of its problem),
never a silent skip; configuration imports the classes it names and instantiates them with no
arguments.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from kbconform.errors import ContractViolation, Problem
from kbconform.registry import Parser, Paths, Registry, Source
from kbconform.sources import default_parsers, default_sources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

_KEYS = (
    "use_default_sources",
    "use_default_parsers",
    "custom_sources",
    "custom_parsers",
    "source_paths",
    "max_file_bytes",
)
#: The largest file a parser is given unless the configuration says otherwise (16 MiB): a
#: larger one is refused, naming the file and the limit, before it is read.
MAX_FILE_BYTES = 16 * 1024 * 1024
_CONTRACT = "registry-config"


def _error(pointer: str, keyword: str, expected: str, got: object) -> ContractViolation:
    shown = got if isinstance(got, str) else repr(got)
    return ContractViolation(contract=_CONTRACT, problems=(Problem(pointer, keyword, expected, shown),))


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


@dataclass(frozen=True, slots=True)
class Config:
    """A resolved configuration: the registry, the paths of every registered source, and the
    largest file a parser is given (``max_file_bytes``)."""

    registry: Registry
    paths: Mapping[str, Paths]
    max_file_bytes: int = MAX_FILE_BYTES

    @classmethod
    def default(cls) -> Config:
        """``use_default_sources`` and ``use_default_parsers``, nothing else."""
        return load_config({})


def _flag(data: Mapping[str, Any], key: str) -> bool:
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise _error(f"/{key}", "type", "true or false", value)
    return value


def _import(pointer: str, spec: object) -> object:
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise _error(pointer, "class", "'module:Class', an importable module and a class in it", spec)
    module_name, attribute = spec.split(":")
    try:
        target: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise _error(
            pointer, "class", "'module:Class', an importable module and a class in it", str(error)
        ) from None
    if not isinstance(target, type):
        raise _error(pointer, "class", "a class (instantiated with no arguments)", f"{spec} is not a class")
    try:
        return target()
    except Exception as error:  # a user class failing in __init__: say which entry
        raise _error(
            pointer, "class", f"{spec}() to construct without arguments", f"{type(error).__name__}: {error}"
        ) from None


def _entries(
    data: Mapping[str, Any], key: str, allowed: frozenset[str]
) -> list[tuple[str, object, str | None]]:
    """``(pointer, instance, name)`` for each entry of ``custom_sources`` / ``custom_parsers``."""
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise _error(f"/{key}", "type", "a list of 'module:Class' strings or {class = ...} tables", entries)
    resolved = []
    for index, entry in enumerate(entries):
        pointer = f"/{key}/{index}"
        name = None
        if isinstance(entry, Mapping):
            unknown = sorted(set(entry) - allowed)
            if unknown:
                raise _error(
                    f"{pointer}/{_escape(unknown[0])}", "unknown-key", f"one of {sorted(allowed)}", unknown[0]
                )
            if "class" not in entry:
                raise _error(pointer, "required", "a 'class' key naming 'module:Class'", dict(entry))
            name = entry.get("name")
            if name is not None and (not isinstance(name, str) or not name):
                raise _error(f"{pointer}/name", "type", "a non-empty string", name)
            entry = entry["class"]
            pointer += "/class"
        resolved.append((pointer, _import(pointer, entry), name))
    return resolved


def _globs(pointer: str, value: object) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise _error(pointer, "type", "a glob or a list of globs", value)
    for glob in values:
        segments = glob.split("/")
        if not glob or glob.startswith("/") or "\\" in glob or ".." in segments:
            raise _error(
                pointer, "glob", "a glob relative to the workspace root (no leading '/', '\\' or '..')", glob
            )
    return tuple(values)


def _paths(pointer: str, value: object, default: Paths) -> Paths:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"include", "exclude"})
        if unknown:
            raise _error(
                f"{pointer}/{_escape(unknown[0])}", "unknown-key", "'include' or 'exclude'", unknown[0]
            )
        include = _globs(f"{pointer}/include", value["include"]) if "include" in value else default.include
        exclude = _globs(f"{pointer}/exclude", value["exclude"]) if "exclude" in value else default.exclude
    else:
        include, exclude = _globs(pointer, value), default.exclude
    if not include:
        raise _error(pointer, "minItems", "at least one include glob", [])
    return Paths(include, exclude)


def load_config(data: Mapping[str, Any]) -> Config:
    """Resolve a configuration mapping; raise :class:`ContractViolation` naming a bad entry."""
    if not isinstance(data, Mapping):
        raise _error("", "type", "a table of registry settings", data)
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise _error(f"/{_escape(unknown[0])}", "unknown-key", f"one of {', '.join(_KEYS)}", unknown[0])
    registry = Registry()
    if _flag(data, "use_default_sources"):
        for source in default_sources():
            registry = registry.with_source(source)
    if _flag(data, "use_default_parsers"):
        for parser in default_parsers():
            registry = registry.with_parser(parser)
    for pointer, source, name in _entries(data, "custom_sources", frozenset({"class", "name"})):
        if not isinstance(source, Source) or not isinstance(source.paths, Paths):
            raise _error(
                pointer, "protocol", "a source: 'parser_id' (str) and 'paths' (Paths)", type(source).__name__
            )
        registry = registry.with_source(source, name)
    for pointer, parser, _ in _entries(data, "custom_parsers", frozenset({"class"})):
        if not isinstance(parser, Parser) or not isinstance(parser.parser_id, str):
            raise _error(
                pointer,
                "protocol",
                "a parser: 'parser_id', 'version' and parse(path, text)",
                type(parser).__name__,
            )
        registry = registry.with_parser(parser)

    settings = data.get("source_paths", {})
    if not isinstance(settings, Mapping):
        raise _error("/source_paths", "type", "a table of source name = paths", settings)
    for name in settings:
        if name not in registry.sources:
            known = ", ".join(registry.source_names()) or "none"
            raise _error(f"/source_paths/{_escape(name)}", "source", f"a registered source ({known})", name)
    paths = {
        name: _paths(f"/source_paths/{_escape(name)}", settings[name], source.paths)
        if name in settings
        else source.paths
        for name, source in registry.sources.items()
    }
    for name, source in registry.sources.items():
        if source.parser_id not in registry.parsers:
            known = ", ".join(registry.parser_ids()) or "none"
            raise _error(
                "/custom_parsers",
                "parser",
                f"parser {source.parser_id!r}, which source {name!r} reads with, registered (have: {known})",
                "not registered",
            )
    limit = data.get("max_file_bytes", MAX_FILE_BYTES)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise _error("/max_file_bytes", "type", "a positive whole number of bytes", limit)
    return Config(registry, MappingProxyType(paths), limit)


def read_config(path: str | Path) -> Config:
    """Load a TOML configuration file (``kbconform.toml``)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise _error("", "toml", "a TOML file", f"{path}: {error}") from None
    except UnicodeDecodeError as error:
        raise _error("", "encoding", "a UTF-8 file", f"{path}: {error}") from None
    return load_config(data)
