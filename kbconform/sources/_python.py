"""Python modules as module, class, function and method chunks, read with :mod:`ast`."""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from kbconform.registry import DEFAULT_HASH_INPUTS, Chunk
from kbconform.sources._common import parse_error

_Definition = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_MEMBER_HASH_INPUTS = ("sourcePath", "kind", "className", "name", "content")


def module_name(source_path: str) -> str:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod``; a package's ``__init__.py`` is the package.

    A leading ``src/`` (the src layout) is not part of the name.
    """
    parts = posixpath.splitext(source_path)[0].split("/")
    if parts[0] == "src" and len(parts) > 1:
        parts.pop(0)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _span(node: ast.stmt) -> tuple[int, int]:
    """0-based ``[start, end)`` lines of a definition, decorators included."""
    decorators: Sequence[ast.expr] = getattr(node, "decorator_list", ())
    start = min([node.lineno, *(d.lineno for d in decorators)]) - 1
    return start, node.end_lineno or node.lineno


def _text(lines: Sequence[str], start: int, end: int, holes: Iterable[tuple[int, int]]) -> str:
    """Lines ``[start, end)`` minus the ``holes`` (members with chunks of their own), trailing blanks cut."""
    skipped = {index for hole_start, hole_end in holes for index in range(hole_start, hole_end)}
    kept = [lines[index] for index in range(start, end) if index not in skipped]
    while kept and not kept[-1].strip():
        kept.pop()
    return "".join(kept)


def _definitions(body: Sequence[ast.stmt]) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in body if isinstance(node, _Definition)]


@dataclass(frozen=True, slots=True)
class PythonAstParser:
    """A Python module as chunks (``ast``; nothing is imported or run).

    * ``module``: the module's own lines (docstring, imports, constants), named by its dotted
      path; left out when only definitions are left;
    * ``class``: the class without its methods and nested classes, ``extends`` its bases;
    * ``function`` (module level) and ``method`` (in a class, with ``className``).

    Nested classes are chunks too (``className`` is the enclosing class's dotted name); functions
    inside functions stay in their enclosing chunk. Members hash ``className`` as well, so equal
    methods of two classes get two ids.
    """

    parser_id: str = "python-ast"
    version: str = "1.0.0"

    def parse(self, source_path: str, text: str) -> Iterable[Chunk]:
        try:
            tree = ast.parse(text, filename=source_path)
        except SyntaxError as error:
            where = f"{source_path}:{error.lineno}" if error.lineno else source_path
            raise parse_error(
                where, "syntax", "Python source that the ast module parses", error.msg
            ) from None
        except ValueError as error:  # for example a NUL byte
            raise parse_error(
                source_path, "syntax", "Python source that the ast module parses", str(error)
            ) from None
        lines = text.splitlines(keepends=True)
        top = _definitions(tree.body)
        module = _text(lines, 0, len(lines), (_span(node) for node in top))
        if module.strip():
            yield Chunk("module", module_name(source_path), module, 1, max(len(lines), 1))
        for node in top:
            yield from self._definition(lines, node, None)

    def _definition(
        self,
        lines: Sequence[str],
        node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef,
        owner: str | None,
    ) -> Iterator[Chunk]:
        start, end = _span(node)
        hash_inputs = _MEMBER_HASH_INPUTS if owner else DEFAULT_HASH_INPUTS
        if not isinstance(node, ast.ClassDef):
            kind = "method" if owner else "function"
            yield Chunk(
                kind, node.name, _text(lines, start, end, ()), start + 1, end, owner, hash_inputs=hash_inputs
            )
            return
        members = _definitions(node.body)
        bases = ", ".join(ast.unparse(base) for base in node.bases) or None
        content = _text(lines, start, end, (_span(member) for member in members))
        yield Chunk("class", node.name, content, start + 1, end, owner, bases, hash_inputs=hash_inputs)
        qualified = f"{owner}.{node.name}" if owner else node.name
        for member in members:
            yield from self._definition(lines, member, qualified)
