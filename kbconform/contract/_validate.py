"""Validation against the contract.

The accept decision uses a compiled validator (jsonschema-rs), built once per schema.
python-jsonschema, with the ``referencing`` registry, runs only to explain a rejection.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import jsonschema
import jsonschema_rs

from kbconform.contract import _schemas
from kbconform.errors import ContractViolation, Problem

_GOT_LIMIT = 80


@cache
def _compiled(name: str) -> Any:
    resources = [(_schemas.uri(other), dict(_schemas.load(other))) for other in _schemas.schema_names()]
    return jsonschema_rs.validator_for(dict(_schemas.load(name)), registry=jsonschema_rs.Registry(resources))


@cache
def _explainer(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schemas.load(name), registry=_schemas.registry())


def is_valid(instance: object, schema: str) -> bool:
    """Whether ``instance`` satisfies the contract named ``schema`` (such as ``parsed-chunk-v1``)."""
    validator = _compiled(_schemas.check_name(schema))
    try:
        return bool(validator.is_valid(instance))
    except (ValueError, TypeError, OverflowError):  # not a JSON value at all
        return False


def validate(instance: object, schema: str) -> None:
    """Return ``None`` if ``instance`` satisfies ``schema``, else raise :class:`ContractViolation`.

    The error lists every problem (JSON pointer, keyword, what was expected, what was got).
    """
    if not is_valid(instance, schema):
        raise ContractViolation(contract=schema, problems=explain(instance, schema))


def explain(instance: object, schema: str) -> tuple[Problem, ...]:
    """Every problem that makes ``instance`` break ``schema``; empty when it is valid."""
    name = _schemas.check_name(schema)
    try:
        errors = list(_explainer(name).iter_errors(instance))
    except (TypeError, ValueError) as error:
        return (Problem("", "json", "a JSON value", f"{type(instance).__name__} ({error})"),)
    problems = {problem for error in errors for problem in _problems(error)}
    if not problems and not is_valid(instance, name):
        # The explainer found nothing the compiled validator objects to: a value that is not
        # JSON (a tuple, a set, a lone surrogate) or a disagreement; never report "valid".
        problems = {
            Problem(_pointer(error.instance_path), "json", "a JSON value", error.message)
            for error in _compiled(name).iter_errors(instance)
        } or {Problem("", "json", "a JSON value", _show(instance))}
    # A pattern and its anchor-free guard often fail together: report such a value once.
    unique: dict[tuple[str, str, str], Problem] = {}
    for problem in sorted(problems, key=lambda problem: (problem.pointer, problem.keyword)):
        unique.setdefault((problem.pointer, problem.expected, problem.got), problem)
    return tuple(unique.values())


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
        return [
            Problem(_pointer([*error.absolute_path, name]), "required", "a required property", "nothing")
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
        return Problem(
            pointer, keyword, "only the properties " + ", ".join(allowed), "unexpected " + ", ".join(extra)
        )
    if keyword == "const":
        return Problem(pointer, keyword, json.dumps(value), _show(instance))
    if keyword == "type":
        types = value if isinstance(value, list) else [value]
        return Problem(pointer, keyword, "a JSON " + " or ".join(types), _show(instance))
    if keyword == "dependentRequired":
        return Problem(pointer, keyword, error.message, "an incomplete object")
    return Problem(pointer, keyword, description or error.message, _show(instance))
