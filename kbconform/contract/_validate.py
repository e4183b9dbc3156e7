"""Validation against the contract.

The accept decision uses a compiled validator (jsonschema-rs), built once per schema, behind
the JSON rule of ``_json`` (what a Python value must be to count as JSON; ``_accept`` applies
it where the compiled validator does not). python-jsonschema, with the ``referencing``
registry, runs only to explain a rejection.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

import jsonschema
import jsonschema_rs

from kbconform.contract import _accept, _json, _schemas
from kbconform.errors import ContractViolation, Problem

_GOT_LIMIT = 80

#: ``is_valid`` per schema name, filled on first use (the hot path is one dictionary look-up).
_ACCEPTORS: dict[str, Callable[[object], bool]] = {}


@cache
def _compiled(name: str) -> Any:
    resources = [(_schemas.uri(other), dict(_schemas.load(other))) for other in _schemas.schema_names()]
    return jsonschema_rs.validator_for(dict(_schemas.load(name)), registry=jsonschema_rs.Registry(resources))


@cache
def _explainer(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schemas.load(name), registry=_schemas.registry())


def _acceptor(schema: str) -> Callable[[object], bool]:
    name = _schemas.check_name(schema)
    accepts = _ACCEPTORS.get(name)
    if accepts is None:
        accepts = _ACCEPTORS[name] = _accept.acceptor(name, _compiled(name).is_valid)
    return accepts


def is_valid(instance: object, schema: str) -> bool:
    """Whether ``instance`` satisfies the contract named ``schema`` (such as ``parsed-chunk-v1``).

    A value that is not JSON (see the rule in ``kbconform.contract._json``) is never valid.
    """
    try:
        accepts = _ACCEPTORS[schema]
    except (KeyError, TypeError):
        accepts = _acceptor(schema)
    return accepts(instance)


def validate(instance: object, schema: str) -> None:
    """Return ``None`` if ``instance`` satisfies ``schema``, else raise :class:`ContractViolation`.

    The error lists every problem (JSON pointer, keyword, what was expected, what was got).
    """
    try:
        accepts = _ACCEPTORS[schema]
    except (KeyError, TypeError):
        accepts = _acceptor(schema)
    if not accepts(instance):
        raise ContractViolation(contract=schema, problems=explain(instance, schema))


def explain(instance: object, schema: str) -> tuple[Problem, ...]:
    """Every problem that makes ``instance`` break ``schema``; empty when it is valid.

    A value that is not JSON gets only the problems that say where it stops being JSON.
    """
    name = _schemas.check_name(schema)
    if not _json.is_plain(instance):
        not_json = _json.problems(instance)
        if not_json:
            return not_json
        instance = _json.plain(instance)  # enum members read as their values
    try:
        problems = {
            problem for error in _explainer(name).iter_errors(instance) for problem in _problems(error)
        }
    except RecursionError:  # nesting the compiled validator takes but Python's recursion limit does not
        problems = set()
    if not problems and not _acceptor(name)(instance):
        # The explainer found nothing the compiled validator objects to (a disagreement, or
        # nesting too deep for it): report the compiled validator's own errors, never "valid".
        problems = {
            Problem(
                _pointer(error.instance_path), _keyword(error.schema_path), "a valid value", error.message
            )
            for error in _compiled(name).iter_errors(instance)
        } or {Problem("", "json", "a JSON value", _show(instance))}
    # A pattern and its anchor-free guard often fail together: report such a value once.
    unique: dict[tuple[str, str, str], Problem] = {}
    for problem in sorted(problems, key=lambda problem: (problem.pointer, problem.keyword)):
        unique.setdefault((problem.pointer, problem.expected, problem.got), problem)
    return tuple(unique.values())


def _keyword(schema_path: Iterable[object]) -> str:
    path = list(schema_path)
    return str(path[-1]) if path else "schema"


def _pointer(path: Iterable[object]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _show(value: object) -> str:
    try:
        shown = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= _GOT_LIMIT else shown[: _GOT_LIMIT - 3] + "..."


def _problems(error: jsonschema.ValidationError) -> list[Problem]:
    if error.validator == "required":
        required: list[str] = list(error.validator_value)  # type: ignore[arg-type]
        instance: Any = error.instance
        subschema = error.schema if isinstance(error.schema, Mapping) else {}
        expected = str(subschema.get("description", "a required property"))
        return [
            Problem(_pointer([*error.absolute_path, name]), "required", expected, "nothing")
            for name in required
            if name not in instance
        ]
    return [_problem(error)]


def _problem(error: jsonschema.ValidationError) -> Problem:
    pointer = _pointer(error.absolute_path)
    keyword = str(error.validator)
    subschema = error.schema if isinstance(error.schema, Mapping) else {}
    description = subschema.get("description")
    instance: Any = error.instance
    value: Any = error.validator_value
    if keyword == "additionalProperties":
        allowed = sorted(subschema.get("properties", {}))
        extra = sorted(key for key in instance if key not in allowed)
        expected = "only the properties " + ", ".join(allowed) if allowed else "an empty object"
        return Problem(pointer, keyword, expected, "unexpected " + ", ".join(extra))
    if keyword == "const":
        return Problem(pointer, keyword, json.dumps(value), _show(instance))
    if keyword == "type":
        types = value if isinstance(value, list) else [value]
        return Problem(pointer, keyword, "a JSON " + " or ".join(types), _show(instance))
    if keyword == "dependentRequired":
        return Problem(pointer, keyword, error.message, "an incomplete object")
    return Problem(pointer, keyword, description or error.message, _show(instance))
