"""A client ``where`` clause evaluated, and rendered for SQL stores (``schemas/client-where.md``).

One meaning, three forms: :func:`where_matches` decides it for one row's metadata in Python;
:func:`where_sql` renders it as a predicate with bound parameters over a JSON metadata column
(PostgreSQL ``jsonb``, DuckDB ``JSON``); :func:`where_literal` renders it as a predicate with
escaped literals over typed columns, for stores whose filter strings take no parameters
(LanceDB). Every form checks the clause first (:func:`check_where`): a clause outside the
grammar is a :class:`~kbconform.errors.ContractViolation` and nothing is rendered.

How a clause matches (``client-where.md``, Matching): values compare by JSON type, exactly; a
string equals only a string, a boolean only a boolean, a number only a number (``1`` equals
``1.0``); a key the row lacks equals nothing, so ``$eq``, ``$in`` and the order operators are
false there and ``$ne``/``$nin`` true; ``$gt``, ``$gte``, ``$lt`` and ``$lte`` compare numbers
only (a string or boolean operand matches no row). Every rendered predicate is two-valued: no
SQL ``NULL`` reaches a ``NOT``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from kbconform.adapter._helpers import check_where
from kbconform.errors import ContractViolation, Problem

Kind = Literal["string", "number", "boolean"]
Dialect = Literal["postgres", "duckdb"]
ParamStyle = Literal["format", "qmark", "numeric"]

#: The order operators and their SQL; they compare numbers only.
_ORDER = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_PYTHON_ORDER: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
_MISSING = object()
#: A placeholder no rendered text holds otherwise (a column name may not contain it).
_MARK = "\x00"


def _kind(value: object) -> Kind | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else None


def _checked(where: object) -> list[dict[str, Any]]:
    """The clause's parts (:func:`check_where`), refusing a number JSON cannot hold."""
    clauses = check_where(where)

    def finite(node: object, pointer: str) -> None:
        if isinstance(node, float) and not math.isfinite(node):
            raise ContractViolation(
                contract="where", problems=(Problem(pointer, "type", "a finite number", repr(node)),)
            )
        if isinstance(node, Mapping):
            for key, value in node.items():
                finite(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                finite(value, f"{pointer}/{i}")

    finite(where, "")
    return clauses


# -- in Python -----------------------------------------------------------------------------------


def where_matches(metadata: Mapping[str, Any], where: object) -> bool:
    """Whether one row's ``metadata`` satisfies the client clause ``where`` (``None``: every row).

    Raises :class:`~kbconform.errors.ContractViolation` for a clause outside the grammar."""
    if where is None:
        return True
    return all(_holds(metadata, part) for part in _checked(where))


def _holds(metadata: Mapping[str, Any], clause: Mapping[str, Any]) -> bool:
    [(key, condition)] = clause.items()
    if key == "$and":
        return all(_holds(metadata, part) for part in condition)
    if key == "$or":
        return any(_holds(metadata, part) for part in condition)
    [(operator, operand)] = condition.items() if isinstance(condition, Mapping) else [("$eq", condition)]
    value = metadata.get(key, _MISSING)
    if operator in _PYTHON_ORDER:
        numbers = _kind(value) == "number" and _kind(operand) == "number"
        return numbers and _PYTHON_ORDER[operator](value, operand)
    found = any(
        _kind(value) == _kind(o) and value == o
        for o in (operand if operator in ("$in", "$nin") else [operand])
    )
    return found if operator in ("$eq", "$in") else not found


# -- rendered --------------------------------------------------------------------------------------

#: How a target reads a key as a value of one kind (None: it never holds one), and an operand.
_Value = Callable[[str, Kind], "tuple[str, list[Any]] | None"]
_Operand = Callable[[Any], "tuple[str, list[Any]]"]


def _render(clause: Mapping[str, Any], value: _Value, operand: _Operand) -> tuple[str, list[Any]]:
    [(key, condition)] = clause.items()
    if key in ("$and", "$or"):
        parts = [_render(part, value, operand) for part in condition]
        joined = f" {key[1:].upper()} ".join(sql for sql, _ in parts)
        return f"({joined})", [p for _, params in parts for p in params]
    [(operator, given)] = condition.items() if isinstance(condition, Mapping) else [("$eq", condition)]
    if operator in _ORDER:
        read = value(key, "number") if _kind(given) == "number" else None
        if read is None:
            return "FALSE", []
        right = operand(given)
        return f"coalesce({read[0]} {_ORDER[operator]} {right[0]}, FALSE)", [*read[1], *right[1]]
    terms: list[str] = []
    params: list[Any] = []
    for one in given if operator in ("$in", "$nin") else [given]:
        kind = _kind(one)
        read = value(key, kind) if kind is not None else None
        if read is not None:
            right = operand(one)
            terms.append(f"coalesce({read[0]} = {right[0]}, FALSE)")
            params += [*read[1], *right[1]]
    found = f"({' OR '.join(terms)})" if terms else "FALSE"
    return (found if operator in ("$eq", "$in") else f"(NOT {found})"), params


def _joined(clauses: Sequence[Mapping[str, Any]], value: _Value, operand: _Operand) -> tuple[str, list[Any]]:
    parts = [_render(part, value, operand) for part in clauses]
    return "(" + " AND ".join(sql for sql, _ in parts) + ")", [p for _, params in parts for p in params]


def _identifier(name: str, quote: str) -> str:
    """``name`` quoted; a double quote doubles inside, a backtick is refused (LanceDB cannot
    address such a column at all)."""
    if not isinstance(name, str) or not name or _MARK in name or (quote == "`" and "`" in name):
        expected = "a column name: a non-empty string" + (" without a backtick" if quote == "`" else "")
        raise ContractViolation(contract="where", problems=(Problem("", "type", expected, repr(name)),))
    return quote + name.replace(quote, quote * 2) + quote


def where_sql(
    where: object,
    *,
    dialect: Dialect,
    column: str = "metadata",
    paramstyle: ParamStyle | None = None,
) -> tuple[str, list[Any]]:
    """The client clause ``where`` as a SQL predicate over the JSON metadata ``column``, and its
    parameters, for ``dialect``: ``"postgres"`` (a ``jsonb`` column; pgvector tables) or
    ``"duckdb"`` (a ``JSON`` column). AND it with your scope: ``f"{scope} AND {predicate}"``.

    Every key and value is a parameter, never text of the statement. ``paramstyle`` is the
    driver's placeholder: ``"format"`` (``%s``, psycopg; PostgreSQL's default), ``"qmark"``
    (``?``, DuckDB's default), ``"numeric"`` (``$1``, ``$2``, ..., asyncpg). DuckDB compares
    numbers as double precision (integers beyond 2**53 compare as their nearest double);
    PostgreSQL compares them exactly (``numeric``). Raises ``ContractViolation`` (``where``)
    for a clause outside the grammar or a non-finite number."""
    if dialect not in ("postgres", "duckdb"):
        raise ContractViolation(
            contract="where",
            problems=(Problem("", "enum", "a dialect: 'postgres' or 'duckdb'", repr(dialect)),),
        )
    style = paramstyle or ("format" if dialect == "postgres" else "qmark")
    if style not in ("format", "qmark", "numeric"):
        raise ContractViolation(
            contract="where",
            problems=(Problem("", "enum", "a paramstyle: 'format', 'qmark' or 'numeric'", repr(style)),),
        )
    clauses = _checked(where)
    col = _identifier(column, '"').replace("%", "%%" if style == "format" else "%")
    mark = _MARK  # each becomes the style's placeholder, in order, once the text is whole

    def postgres(key: str, kind: Kind) -> tuple[str, list[Any]]:
        typed = {
            "string": ("string", ""),
            "number": ("number", "::numeric"),
            "boolean": ("boolean", "::boolean"),
        }
        name, cast = typed[kind]
        return (
            f"(CASE WHEN jsonb_typeof({col} -> {mark}) = '{name}' THEN ({col} ->> {mark}){cast} END)",
            [key, key],
        )

    def duckdb(key: str, kind: Kind) -> tuple[str, list[Any]]:
        path = "/" + key.replace("~", "~0").replace("/", "~1")
        typed = {
            "string": ("= 'VARCHAR'", f"json_extract_string({col}, {mark})"),
            "number": (
                "IN ('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')",
                f"CAST(json_extract({col}, {mark}) AS DOUBLE)",
            ),
            "boolean": ("= 'BOOLEAN'", f"CAST(json_extract({col}, {mark}) AS BOOLEAN)"),
        }
        test, read = typed[kind]
        return f"(CASE WHEN json_type({col}, {mark}) {test} THEN {read} END)", [path, path]

    def operand(given: Any) -> tuple[str, list[Any]]:
        if dialect == "postgres" and _kind(given) == "number":
            return f"CAST({mark} AS numeric)", [json.dumps(given)]
        if dialect == "duckdb" and _kind(given) == "number":
            return f"CAST({mark} AS DOUBLE)", [given]
        return mark, [given]

    sql, params = _joined(clauses, postgres if dialect == "postgres" else duckdb, operand)
    pieces = sql.split(_MARK)
    if style == "numeric":
        return pieces[0] + "".join(f"${n}{piece}" for n, piece in enumerate(pieces[1:], start=1)), params
    return ("%s" if style == "format" else "?").join(pieces), params


def where_literal(where: object, *, columns: Mapping[str, Kind]) -> str:
    """The client clause ``where`` as a SQL predicate with escaped literals, for stores whose
    filter strings take no parameters (LanceDB's ``.where(...)``, DataFusion SQL).

    ``columns`` names the metadata keys stored as their own columns and the kind each holds
    (``{"sourcePath": "string", "line_start": "number"}``); a row's ``NULL`` is a key it
    lacks, and a key not in ``columns`` is lacked by every row. Columns are quoted with
    backticks, strings with single quotes (each doubled inside), numbers written in full. AND it
    with your scope. Raises ``ContractViolation`` (``where``) for a clause outside the grammar,
    a non-finite number or a kind that is not ``string``, ``number`` or ``boolean``."""
    for key, kind in columns.items():
        if kind not in ("string", "number", "boolean"):
            raise ContractViolation(
                contract="where",
                problems=(
                    Problem(f"/{key}", "enum", "a column kind: string, number or boolean", repr(kind)),
                ),
            )
    quoted = {key: _identifier(key, "`") for key in columns}
    clauses = _checked(where)

    def value(key: str, kind: Kind) -> tuple[str, list[Any]] | None:
        return (quoted[key], []) if columns.get(key) == kind else None

    return _joined(clauses, value, lambda given: (sql_literal(given), []))[0]


def sql_literal(value: object) -> str:
    """One string, number or boolean as a SQL literal: ``'it''s'``, ``1e+100``, ``TRUE``; for a
    filter string without parameters (a scope's tenant in a LanceDB ``where``). Raises
    ``ContractViolation`` (``where``) for anything else or a non-finite number."""
    kind = _kind(value)
    if kind is None or (isinstance(value, float) and not math.isfinite(value)):
        raise ContractViolation(
            contract="where",
            problems=(Problem("", "type", "a string, a finite number or a boolean", repr(value)),),
        )
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value) if isinstance(value, float) else str(int(value))  # type: ignore[call-overload]
