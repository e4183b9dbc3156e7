"""Registry configuration: defaults, custom entries, source paths, and errors that name the entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbconform.errors import ContractViolation
from kbconform.registry import Paths
from kbconform.sources import MarkdownDocsSource, PythonModulesSource
from kbconform.sources.examples import GlossaryParser, GlossarySource
from kbconform.workspace import Config, load_config, read_config

DEFAULT_SOURCES = ("decision-records", "markdown-docs", "python-modules")
DEFAULT_PARSERS = ("decision-record", "markdown-sections", "python-ast")
GLOSSARY = "kbconform.sources.examples:GlossarySource"
GLOSSARY_PARSER = "kbconform.sources.examples:GlossaryParser"


class NeedsArguments:
    parser_id = "x"
    paths = Paths(("*",))

    def __init__(self, required: str) -> None:
        self.required = required


class NotASource:
    pass


class Broken:
    def __init__(self) -> None:
        raise RuntimeError("cannot start")


NOT_A_CLASS = object()


def test_the_defaults_are_the_default_sources_and_parsers_in_order() -> None:
    """An empty configuration is use_default_sources and use_default_parsers, nothing else."""
    config = Config.default()
    assert config.registry.source_names() == DEFAULT_SOURCES
    assert config.registry.parser_ids() == DEFAULT_PARSERS
    assert config.paths["python-modules"] == PythonModulesSource().paths
    assert load_config({"use_default_sources": True, "use_default_parsers": True}) == config


def test_defaults_can_be_switched_off() -> None:
    """Without defaults the registry holds only what the configuration names."""
    config = load_config(
        {
            "use_default_sources": False,
            "use_default_parsers": False,
            "custom_sources": [GLOSSARY],
            "custom_parsers": [GLOSSARY_PARSER],
        }
    )
    assert config.registry.source_names() == ("glossary",)
    assert config.registry.parser_ids() == ("glossary",)
    assert isinstance(config.registry.sources["glossary"], GlossarySource)
    assert isinstance(config.registry.parsers["glossary"], GlossaryParser)
    assert load_config({"use_default_sources": False}).registry.source_names() == ()


def test_custom_entries_come_after_the_defaults_and_a_known_name_replaces_in_place() -> None:
    """Strings and tables both register; a table's name overrides the derived one."""
    config = load_config(
        {
            "custom_sources": [GLOSSARY, {"class": GLOSSARY, "name": "markdown-docs"}],
            "custom_parsers": [{"class": GLOSSARY_PARSER}],
        }
    )
    assert config.registry.source_names() == (*DEFAULT_SOURCES, "glossary")
    assert isinstance(config.registry.sources["markdown-docs"], GlossarySource)
    assert config.registry.parser_ids() == (*DEFAULT_PARSERS, "glossary")


def test_source_paths_accept_scalar_list_and_map_values_with_fallbacks() -> None:
    """A scalar or list replaces the include globs; a map replaces only the keys it names."""
    python = PythonModulesSource().paths
    config = load_config(
        {
            "source_paths": {
                "markdown-docs": "handbook/**/*.md",
                "decision-records": ["adr/*.md", "decisions/*.md"],
                "python-modules": {"include": "src/**/*.py"},
            }
        }
    )
    assert config.paths["markdown-docs"] == Paths(("handbook/**/*.md",))
    assert config.paths["decision-records"] == Paths(("adr/*.md", "decisions/*.md"))
    assert config.paths["python-modules"] == Paths(("src/**/*.py",), python.exclude)
    only_exclude = load_config({"source_paths": {"python-modules": {"exclude": []}}})
    assert only_exclude.paths["python-modules"] == Paths(python.include, ())
    untouched = load_config({"source_paths": {"python-modules": "x/*.py"}})
    assert untouched.paths["markdown-docs"] == MarkdownDocsSource().paths


MALFORMED: list[tuple[str, dict[str, Any], str, str]] = [
    ("unknown top-level key", {"useDefaultSources": True}, "/useDefaultSources", "unknown-key"),
    ("flag that is not a boolean", {"use_default_sources": "yes"}, "/use_default_sources", "type"),
    ("custom_sources that is not a list", {"custom_sources": GLOSSARY}, "/custom_sources", "type"),
    ("entry without a class", {"custom_sources": [{"name": "x"}]}, "/custom_sources/0", "required"),
    ("entry that is not module:Class", {"custom_sources": ["kbconform"]}, "/custom_sources/0", "class"),
    ("entry with an empty part", {"custom_sources": [":Class"]}, "/custom_sources/0", "class"),
    ("entry that is a number", {"custom_parsers": [GLOSSARY_PARSER, 7]}, "/custom_parsers/1", "class"),
    ("module that does not exist", {"custom_sources": ["no_such_module_x:A"]}, "/custom_sources/0", "class"),
    (
        "class that does not exist",
        {"custom_sources": [{"class": "kbconform.sources:Nope"}]},
        "/custom_sources/0/class",
        "class",
    ),
    (
        "attribute that is not a class",
        {"custom_sources": [f"{__name__}:NOT_A_CLASS"]},
        "/custom_sources/0",
        "class",
    ),
    (
        "class that needs arguments",
        {"custom_sources": [f"{__name__}:NeedsArguments"]},
        "/custom_sources/0",
        "class",
    ),
    (
        "class whose constructor fails",
        {"custom_parsers": [f"{__name__}:Broken"]},
        "/custom_parsers/0",
        "class",
    ),
    (
        "source without the protocol",
        {"custom_sources": [f"{__name__}:NotASource"]},
        "/custom_sources/0",
        "protocol",
    ),
    ("parser without the protocol", {"custom_parsers": [GLOSSARY]}, "/custom_parsers/0", "protocol"),
    (
        "table with an unknown key",
        {"custom_sources": [{"class": GLOSSARY, "x": 1}]},
        "/custom_sources/0/x",
        "unknown-key",
    ),
    (
        "parser table with a name",
        {"custom_parsers": [{"class": GLOSSARY_PARSER, "name": "g"}]},
        "/custom_parsers/0/name",
        "unknown-key",
    ),
    ("empty name", {"custom_sources": [{"class": GLOSSARY, "name": ""}]}, "/custom_sources/0/name", "type"),
    ("source_paths that is not a table", {"source_paths": ["docs"]}, "/source_paths", "type"),
    ("paths for an unknown source", {"source_paths": {"docs": "*.md"}}, "/source_paths/docs", "source"),
    (
        "an absolute glob",
        {"source_paths": {"markdown-docs": "/etc/*.md"}},
        "/source_paths/markdown-docs",
        "glob",
    ),
    (
        "a glob leaving the workspace",
        {"source_paths": {"markdown-docs": ["../*.md"]}},
        "/source_paths/markdown-docs",
        "glob",
    ),
    (
        "a backslash glob",
        {"source_paths": {"markdown-docs": "docs\\*.md"}},
        "/source_paths/markdown-docs",
        "glob",
    ),
    ("an empty glob", {"source_paths": {"markdown-docs": ""}}, "/source_paths/markdown-docs", "glob"),
    ("no include glob", {"source_paths": {"markdown-docs": []}}, "/source_paths/markdown-docs", "minItems"),
    (
        "a glob that is not a string",
        {"source_paths": {"markdown-docs": [1]}},
        "/source_paths/markdown-docs",
        "type",
    ),
    (
        "a map with an unknown key",
        {"source_paths": {"markdown-docs": {"includes": "a"}}},
        "/source_paths/markdown-docs/includes",
        "unknown-key",
    ),
    (
        "a map with a bad exclude",
        {"source_paths": {"markdown-docs": {"exclude": 3}}},
        "/source_paths/markdown-docs/exclude",
        "type",
    ),
    ("a source whose parser is missing", {"use_default_parsers": False}, "/custom_parsers", "parser"),
]


@pytest.mark.parametrize(
    ("data", "pointer", "keyword"), [case[1:] for case in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_a_malformed_entry_is_an_error_naming_the_entry(
    data: dict[str, Any], pointer: str, keyword: str
) -> None:
    """Never a silent skip: the error's pointer names the entry and its message says what was expected."""
    with pytest.raises(ContractViolation) as caught:
        load_config(data)
    error = caught.value
    assert error.contract == "registry-config"
    assert [(p.pointer, p.keyword) for p in error.problems] == [(pointer, keyword)]
    assert pointer in str(error)
    assert error.problems[0].expected


def test_a_pointer_escapes_slashes_in_names() -> None:
    """A key with '/' stays one JSON-pointer token."""
    with pytest.raises(ContractViolation) as caught:
        load_config({"source_paths": {"a/b": "x"}})
    assert caught.value.problems[0].pointer == "/source_paths/a~1b"


def test_a_configuration_that_is_not_a_table_is_an_error() -> None:
    """The top level must be a mapping."""
    with pytest.raises(ContractViolation) as caught:
        load_config(["custom_sources"])  # type: ignore[arg-type]
    assert caught.value.problems[0].pointer == ""


def test_a_toml_file_is_read_and_a_broken_one_is_an_error(tmp_path: Path) -> None:
    """read_config loads TOML; syntax errors and non-UTF-8 bytes are errors, not tracebacks."""
    good = tmp_path / "kbconform.toml"
    good.write_text(
        f'custom_sources = ["{GLOSSARY}"]\ncustom_parsers = ["{GLOSSARY_PARSER}"]\n', encoding="utf-8"
    )
    assert read_config(good).registry.source_names() == (*DEFAULT_SOURCES, "glossary")
    broken = tmp_path / "broken.toml"
    broken.write_text("custom_sources = [\n", encoding="utf-8")
    with pytest.raises(ContractViolation) as caught:
        read_config(broken)
    assert caught.value.problems[0].keyword == "toml"
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b"# caf\xe9\n")
    with pytest.raises(ContractViolation) as caught:
        read_config(latin)
    assert caught.value.problems[0].keyword == "encoding"
