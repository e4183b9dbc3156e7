"""The accept path: the compiled validator, and the JSON checks it does not make itself.

jsonschema-rs reads a Python value lazily, only where the schema looks. Where it reads a value
it applies most of the JSON rule (``_json``) itself: it refuses sets, bytes, other objects,
subclasses of ``str``, ``int`` and ``float`` (enum members aside, read as their value, as the
rule reads them), keys that are not strings, and lone surrogates in the strings it reads. It
does not see ``NaN`` (it reads null), ``Decimal`` (it reads a number), lone surrogates in a
string it only types, nor anything where the schema does not look. A full walk of every record
would cost more than the validation itself, so the schema decides, property by property, what
is left to check:

* a string the schema reads (``pattern``, ``const``, ``enum``, or a ``not`` guard made of
  patterns, which a valid string passes only once every pattern was tried), a boolean, or an
  array of such: nothing (lengths do not count: a string short enough in bytes is not read);
* a string it only types (``{"type": "string"}``): an exact ``str`` without lone surrogates;
* a number: an exact ``int`` or ``float`` (a ``NaN`` reads as null and fails the type);
* anything else (objects, nullable or untyped values, recursive schemas): the whole rule,
  before the compiled validator runs, since it has no depth bound of its own there.

A quick check that fails refuses nothing by itself: the full rule (``_json.problems``) decides.
A schema whose root is not an object with ``additionalProperties: false`` (so that every key
is read) gets the whole rule on every instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import referencing._core

from kbconform.contract import _json, _schemas

#: What the compiled validator raises for a value it cannot read (the JSON rule refuses it first).
_ERRORS = (ValueError, TypeError, OverflowError)
_ANY = frozenset({"null", "boolean", "object", "array", "number", "string"})
_READS = ("pattern", "const", "enum")  # not the lengths: a string short enough in bytes is not read
# What is left to check for a property: nothing, an unread string, a number, the whole rule.
_READ, _STRING, _NUMBER, _VALUE = "read", "string", "number", "value"


@attrs.frozen
class Plan:
    """What the accept path checks before the compiled validator, for one schema."""

    keyed: bool
    strings: tuple[str, ...] = ()
    numbers: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    required: frozenset[str] = frozenset()


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _facts(
    node: Any, resolver: referencing._core.Resolver[Any], depth: int = 0
) -> tuple[frozenset[str], bool]:
    """The JSON types a value valid against ``node`` may have, and whether its strings are read.

    Only keywords every valid value passes through are used (``type``, ``const``, ``enum``,
    the reading ones, ``not: {}``, ``$ref``, ``allOf``); the others can only narrow further.
    """
    if node is False:
        return frozenset(), False
    if not isinstance(node, Mapping) or depth > 16:
        return _ANY, False
    types = _ANY
    if "type" in node:
        named = node["type"] if isinstance(node["type"], list) else [node["type"]]
        types &= {"number" if name == "integer" else name for name in named}
    if "const" in node:
        types &= {_json_type(node["const"])}
    if "enum" in node:
        types &= {_json_type(value) for value in node["enum"]}
    if node.get("not") in ({}, True):
        types = frozenset()
    reads = any(keyword in node for keyword in _READS) or _patterns_only(node.get("not"))
    if isinstance(node.get("$ref"), str):
        resolved = resolver.lookup(node["$ref"])
        more, read = _facts(resolved.contents, resolved.resolver, depth + 1)
        types, reads = types & more, reads or read
    for part in node.get("allOf", ()):
        more, read = _facts(part, resolver, depth + 1)
        types, reads = types & more, reads or read
    return types, reads


def _patterns_only(guard: Any) -> bool:
    """Whether ``guard`` (under ``not``) is patterns alone: a string fails it only after each was tried."""
    if not isinstance(guard, Mapping) or guard.get("type", "string") != "string":
        return False
    rest = set(guard) - {"type", "description"}
    if rest == {"pattern"}:
        return True
    return rest == {"anyOf"} and all(
        isinstance(branch, Mapping) and set(branch) - {"description"} == {"pattern"}
        for branch in guard["anyOf"]
    )


def _classify(node: Any, resolver: referencing._core.Resolver[Any]) -> str:
    types, reads = _facts(node, resolver)
    if types <= {"boolean"} or (types <= {"string"} and reads):
        return _READ
    if types <= {"string"}:
        return _STRING
    if types <= {"number"}:
        return _NUMBER
    if types <= {"array"} and isinstance(node, Mapping) and "prefixItems" not in node:
        items = node.get("items", True)
        recursive = isinstance(items, Mapping) and str(items.get("$ref", "")).startswith("#")
        if not recursive and _classify(items, resolver) == _READ:
            return _READ
    return _VALUE


def plan(name: str) -> Plan:
    """The checks the compiled validator of schema ``name`` leaves to the accept path."""
    schema = _schemas.load(name)
    resolver = _schemas.registry().resolver(base_uri=_schemas.uri(name))
    types, _ = _facts(schema, resolver)
    if types != {"object"} or schema.get("additionalProperties") is not False:
        return Plan(keyed=False)
    classes: dict[str, list[str]] = {_READ: [], _STRING: [], _NUMBER: [], _VALUE: []}
    for key, node in schema.get("properties", {}).items():
        classes[_classify(node, resolver)].append(key)
    return Plan(
        keyed=True,
        strings=tuple(classes[_STRING]),
        numbers=tuple(classes[_NUMBER]),
        values=tuple(classes[_VALUE]),
        required=frozenset(schema.get("required", ())),
    )


def source(rule: Plan) -> str:
    """The Python source of the accept function for ``rule``: the checks unrolled, key by key.

    Straight-line code, because the checks must cost a small fraction of the compiled
    validator's time (benchmarks/validation.py): a loop over the plan costs twice as much.
    A required property is read directly (missing, the record is invalid: the full rule and
    the compiled validator say so); an optional one only when it is there.
    """
    slow = "return not problems(instance) and decide(instance)"
    checks = [
        *(
            (key, "type(value) is not str or not value.isascii() and search(value) is not None")
            for key in rule.strings
        ),
        *((key, "type(value) is not int and type(value) is not float") for key in rule.numbers),
        *((key, "value is not None and not is_plain(value, 2)") for key in rule.values),
    ]
    lines = ["def accepts(instance):"]
    if rule.keyed:
        lines.append("    if type(instance) is dict:")
        required = [(key, failed) for key, failed in checks if key in rule.required]
        for key, failed in required:
            lines.append("        try:")
            lines.append(f"            value = instance[{key!r}]")
            lines.append("        except KeyError:")
            lines.append(f"            {slow}")
            lines.append(f"        if {failed}:")
            lines.append(f"            {slow}")
        optional = [(key, failed) for key, failed in checks if key not in rule.required]
        scalars = [(key, failed) for key, failed in optional if key not in rule.values]
        if scalars:  # only when an optional property is there (else the record is invalid anyway)
            lines.append(f"        if len(instance) > {len(rule.required)}:")
        for key, failed in optional:
            indent = "    " if (key, failed) in scalars else ""
            lines.append(f"{indent}        if {key!r} in instance:")
            lines.append(f"{indent}            value = instance[{key!r}]")
            lines.append(f"{indent}            if {failed}:")
            lines.append(f"{indent}                {slow}")
        lines.append("        try:")
        lines.append("            return compiled(instance)")
        lines.append("        except ERRORS:  # a value the JSON rule let through: not expected")
        lines.append("            return False")
    lines.append("    return (is_plain(instance) or not problems(instance)) and decide(instance)")
    return "\n".join(lines) + "\n"


def acceptor(name: str, compiled: Callable[[Any], bool]) -> Callable[[object], bool]:
    """``is_valid`` for schema ``name``: the JSON rule where ``compiled`` does not apply it, then it."""

    def decide(instance: object) -> bool:
        try:
            return compiled(instance)
        except _ERRORS:
            return False

    namespace: dict[str, Any] = {
        "compiled": compiled,
        "decide": decide,
        "ERRORS": _ERRORS,
        "is_plain": _json.is_plain,
        "problems": _json.problems,
        "search": _json.SURROGATE.search,
    }
    exec(source(plan(name)), namespace)  # our own source, naming our own schema's properties
    accepts: Callable[[object], bool] = namespace["accepts"]
    return accepts
