"""Python modules as module, class, function and method chunks (ast)."""

from __future__ import annotations

import pytest

from kbconform.errors import ContractViolation
from kbconform.registry import DEFAULT_HASH_INPUTS
from kbconform.sources import PythonAstParser
from kbconform.sources._python import module_name

PARSER = PythonAstParser()

SOURCE = '''"""Doc."""
import os


@decorator
class Child(Base, mixins.Mixin):
    """A class."""

    x = 1

    class Inner:
        def deep(self):
            return 2

    def method(self):
        def helper():
            return 1
        return helper()

    async def later(self):
        return 3


def top(a, b):
    return a + b
'''


def chunks(text: str = SOURCE, path: str = "pkg/mod.py") -> list[tuple]:
    return [
        (c.kind, c.name, c.class_name, c.extends, c.line_start, c.line_end) for c in PARSER.parse(path, text)
    ]


def test_a_module_becomes_module_class_function_and_method_chunks() -> None:
    """Document order; decorators belong to their definition; nested classes are chunks of their own."""
    assert chunks() == [
        ("module", "pkg.mod", None, None, 1, 25),
        ("class", "Child", None, "Base, mixins.Mixin", 5, 21),
        ("class", "Inner", "Child", None, 11, 13),
        ("method", "deep", "Child.Inner", None, 12, 13),
        ("method", "method", "Child", None, 15, 18),
        ("method", "later", "Child", None, 20, 21),
        ("function", "top", None, None, 24, 25),
    ]


def test_chunk_contents_do_not_repeat_members_that_have_their_own_chunk() -> None:
    """The class chunk holds its header and attributes; inner functions stay in their function."""
    parsed = {(c.kind, c.name): c for c in PARSER.parse("pkg/mod.py", SOURCE)}
    assert parsed["module", "pkg.mod"].content == '"""Doc."""\nimport os\n'
    assert (
        parsed["class", "Child"].content
        == '@decorator\nclass Child(Base, mixins.Mixin):\n    """A class."""\n\n    x = 1\n'
    )
    assert "def helper" in parsed["method", "method"].content
    assert parsed["function", "top"].content == "def top(a, b):\n    return a + b\n"


def test_members_hash_their_class_so_equal_methods_of_two_classes_differ() -> None:
    """Methods and nested classes add className to hashInputs; module-level chunks use the default."""
    text = "class A:\n    def f(self):\n        return 0\n\n\nclass B:\n    def f(self):\n        return 0\n"
    parsed = list(PARSER.parse("m.py", text))
    methods = [c for c in parsed if c.kind == "method"]
    first, second = (m.content for m in methods)
    assert first == second
    assert all("className" in m.hash_inputs for m in methods)
    assert all(c.hash_inputs == DEFAULT_HASH_INPUTS for c in parsed if c.kind == "class")


def test_a_module_of_only_definitions_has_no_module_chunk_and_an_empty_file_has_none() -> None:
    """Only blank lines left means no module chunk (control: a comment keeps it)."""
    assert [c[0] for c in chunks("def f():\n    pass\n")] == ["function"]
    assert [c[0] for c in chunks("# note\ndef f():\n    pass\n")] == ["module", "function"]
    assert chunks("") == []


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("pkg/mod.py", "pkg.mod"),
        ("pkg/__init__.py", "pkg"),
        ("src/pkg/sub/mod.py", "pkg.sub.mod"),
        ("__init__.py", "__init__"),
        ("src.py", "src"),
    ],
)
def test_module_names_are_dotted_paths(path: str, name: str) -> None:
    """The src layout and package __init__ files are named as Python imports them."""
    assert module_name(path) == name


@pytest.mark.parametrize(
    ("text", "pointer"),
    [("def broken(:\n", "bad.py:1"), ("x = 1\n\nclass\n", "bad.py:3"), ("x = '\x00'\n", "bad.py")],
)
def test_a_file_that_does_not_parse_is_an_error_naming_the_file(text: str, pointer: str) -> None:
    """A syntax error is never skipped; the problem names the file and line."""
    with pytest.raises(ContractViolation) as caught:
        list(PARSER.parse("bad.py", text))
    assert caught.value.contract == "workspace"
    assert caught.value.problems[0].pointer.startswith(pointer)
    assert caught.value.problems[0].keyword == "syntax"
