"""Client where clauses: the kit's checker, the schema and the vectors give one verdict.

``schemas/vectors/client-where-v1.json`` is run by ``test_vectors.py`` against the schema's
validators; here the same cases run against :func:`kbconform.adapter.check_where`, and the
reserved keys and operators of the schema and of ``schemas/client-where.md`` are held to the
kit's lists.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from kbconform._resources import data_dir
from kbconform.adapter import WHERE_OPERATORS, check_where
from kbconform.contract import load
from kbconform.errors import ContractViolation
from kbconform.identity import RESERVED_FIELDS

_GROUPS = json.loads((data_dir("schemas") / "vectors" / "client-where-v1.json").read_text(encoding="utf-8"))
CASES = [
    pytest.param(test, id=f"{group['description']}: {test['description']}")
    for group in _GROUPS
    for test in group["tests"]
]


def _verdict(check: Callable[[object], object], data: object) -> tuple[bool, str | None, str | None]:
    """(accepted, the first problem's pointer, "contract code") of one call."""
    try:
        check(data)
    except ContractViolation as error:
        pointer = error.problems[0].pointer if error.problems else None
        return False, pointer, f"{error.contract} {error.code}"
    return True, None, None


@pytest.mark.parametrize("case", CASES)
def test_check_where_gives_each_vector_its_verdict_and_pointer(case: dict[str, Any]) -> None:
    """A valid case is accepted; an invalid one raises ContractViolation (contract where) at its pointer."""
    refused = None if case["valid"] else "where KB_CONTRACT_VIOLATION"
    assert _verdict(check_where, case["data"]) == (case["valid"], case.get("pointer"), refused)


def _shallow(where: object) -> object:
    """A checker that looks at the top level only: the bug leak-03 catches in a backend."""
    if not isinstance(where, dict) or not where or any(key in RESERVED_FIELDS for key in where):
        raise ContractViolation(contract="where", problems=())
    return where


def test_the_vectors_catch_a_checker_that_looks_at_the_top_level_only() -> None:
    """Control: a shallow checker and one that accepts everything each get some verdicts wrong."""
    for broken in (_shallow, lambda where: where):
        wrong = [
            case.id
            for case in CASES
            if _verdict(broken, case.values[0]["data"])[0] is not case.values[0]["valid"]
        ]
        assert wrong, f"no vector tells {broken} from the real checker"


def test_every_reserved_key_is_refused_at_the_top_level_and_below() -> None:
    """Each reserved field has a rejected vector at the top level and one nested in $and/$or."""
    rejected = [json.dumps(case.values[0]["data"]) for case in CASES if not case.values[0]["valid"]]
    for key in RESERVED_FIELDS:
        assert any(text.startswith(f'{{"{key}"') for text in rejected), key
        assert any(text.startswith('{"$') and f'"{key}"' in text for text in rejected), key


def test_the_schema_names_the_kits_reserved_keys_and_operators() -> None:
    """The schema's reserved keys are kbconform.identity.RESERVED_FIELDS, its operators WHERE_OPERATORS."""
    defs = load("client-where-v1")["$defs"]
    assert set(defs["clause"]["propertyNames"]["not"]["enum"]) == RESERVED_FIELDS
    operators = defs["condition"]["anyOf"][1]["properties"]
    assert set(operators) == set(WHERE_OPERATORS)


def test_the_grammar_document_lists_the_kits_reserved_keys_and_operators() -> None:
    """schemas/client-where.md states the same lists (its 'Reserved keys:' and 'Operators:' lines)."""
    text = (data_dir("schemas") / "client-where.md").read_text(encoding="utf-8")

    def listed(label: str) -> set[str]:
        [line] = [line for line in text.splitlines() if line.startswith(f"{label}:")]
        return set(re.findall(r"`([^`]+)`", line))

    assert listed("Reserved keys") == RESERVED_FIELDS
    assert listed("Operators") == set(WHERE_OPERATORS)
