"""The registry's behaviour: ordered, immutable, replace in place, name derivation."""

from __future__ import annotations

import pytest

from kbconform.errors import ContractViolation
from kbconform.registry import Registry, derive_name


class MarkdownDocsSource:
    pass


class PythonSource:
    pass


class Source:
    pass


class NamedThing:
    name = "custom-name"


def test_registration_order_is_kept_and_re_registering_replaces_in_place() -> None:
    """A replaced entry keeps its position; the original registry is untouched."""
    first, second, replacement = MarkdownDocsSource(), PythonSource(), MarkdownDocsSource()
    empty = Registry()
    registry = empty.with_source(first).with_source(second)
    replaced = registry.with_source(replacement)
    assert registry.source_names() == ("markdown-docs", "python")
    assert replaced.source_names() == ("markdown-docs", "python")
    assert replaced.sources["markdown-docs"] is replacement
    assert registry.sources["markdown-docs"] is first
    assert empty.source_names() == ()


def test_without_and_has_report_presence() -> None:
    """Removing a present name drops it; removing an absent one changes nothing."""
    registry = Registry().with_source(PythonSource()).with_parser(object(), "python-ast")
    assert registry.has_source("python")
    assert not registry.without_source("python").has_source("python")
    assert registry.without_source("missing") is registry
    assert registry.has_parser("python-ast")
    assert registry.without_parser("python-ast").parser_ids() == ()
    assert registry.cleared() == Registry()


@pytest.mark.parametrize(
    ("obj", "expected"),
    [(MarkdownDocsSource(), "markdown-docs"), (PythonSource, "python"), (NamedThing(), "custom-name")],
)
def test_a_name_is_derived_from_the_class_or_taken_from_the_object(obj: object, expected: str) -> None:
    """Class names lose their Source/Parser suffix and become kebab case."""
    assert derive_name(obj) == expected


def test_an_underivable_name_is_an_error() -> None:
    """A bare 'Source' class has no name to derive."""
    with pytest.raises(ContractViolation, match="Source"):
        Registry().with_source(Source())


def test_a_registry_is_immutable() -> None:
    """Its mappings cannot be written through."""
    registry = Registry().with_source(PythonSource())
    with pytest.raises(TypeError):
        registry.sources["x"] = 1  # type: ignore[index]
