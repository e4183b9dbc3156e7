"""harness-v1's operations as Markdown tables, generated from the harness-v1 schema and the
profile registry: which operations each isolation profile serves, and each operation's params
and result as the schema describes them.

Never edited by hand: the block between ``<!-- operations:begin -->`` and
``<!-- operations:end -->`` in ``schemas/harness-v1.md`` is :func:`markdown` of this, and
``tests/harness/test_operations_table.py`` fails when the two differ (rewrite it with
``KBCONFORM_UPDATE_DOCS=1 python -m pytest tests/harness/test_operations_table.py``; the same
text prints with ``kbconform schema harness-v1 --operations``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbconform import contract
from kbconform.harness._wire import COMMON_OPERATIONS
from kbconform.profiles import built_in

BEGIN, END = "<!-- operations:begin -->", "<!-- operations:end -->"
_LOCAL = "#/$defs/"


def _cell(text: str) -> str:
    """``text`` safe inside one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _referred(node: Mapping[str, Any]) -> str | None:
    """The local definition a property refers to (``#/$defs/<name>``), if any."""
    reference = node.get("$ref")
    if isinstance(reference, str) and reference.startswith(_LOCAL):
        return reference.removeprefix(_LOCAL)
    return None


def _what(node: Mapping[str, Any]) -> str:
    """What a property is: its own description, and the value it refers to."""
    description = str(node.get("description", ""))
    referred = _referred(node)
    return f"{description} (a **{referred}**)" if referred else description


def _summary(defs: Mapping[str, Any], op: str, kind: str) -> str:
    """``<op><kind>``'s description without its ``op's kind: {...},`` (or ``an empty object``)
    prefix, which the tables already show."""
    text = str(defs[f"{op}{kind}"].get("description", ""))
    prefix = f"{op}'s {kind.lower()}: "
    if not text.startswith(prefix):
        return text
    rest = text.removeprefix(prefix)
    shape = "{" if rest.startswith("{") else "an empty object"
    if not rest.startswith(shape):
        return rest
    rest = rest.partition("}")[2] if shape == "{" else rest.removeprefix(shape)
    return rest.removeprefix(",").strip()


def _operation(defs: Mapping[str, Any], op: str, profile: str) -> list[str]:
    """The rows of one operation: a first row naming it, what it does and its result, then one
    row per param."""
    params, result = defs[f"{op}Params"], defs[f"{op}Result"]
    returns = ", ".join(result.get("properties", {}))
    does = _summary(defs, op, "Params").replace(f" (profile {profile})", "")
    answer = _summary(defs, op, "Result")
    said = f"answers `{{{returns}}}`" + (
        f" {answer}" if answer.startswith("(") else f": {answer}" if answer else ""
    )
    rows = [f"| `{op}` | | {_cell(f'{does}; {said}' if does else said[0].upper() + said[1:])} |"]
    required = set(params.get("required", ()))
    for name, node in params.get("properties", {}).items():
        marker = "" if name in required else " (optional)"
        rows.append(f"| | `{name}`{marker} | {_cell(_what(node))} |")
    return rows


def _values(defs: Mapping[str, Any], ops: tuple[str, ...]) -> list[str]:
    """One row per value the operations' params refer to, with its description."""
    named = {
        referred
        for op in ops
        for node in defs[f"{op}Params"].get("properties", {}).values()
        if (referred := _referred(node))
    }
    rows = [f"| **{name}** | {_cell(str(defs[name].get('description', '')))} |" for name in sorted(named)]
    return ["### The values params refer to", "", "| value | what it is |", "|---|---|", *rows, ""]


def _section(defs: Mapping[str, Any], profile: str, ops: tuple[str, ...]) -> list[str]:
    title = f"`{profile}`" if profile else "Every profile"
    lines = [f"### {title}", "", "| operation | param | what it is |", "|---|---|---|"]
    for op in ops:
        lines.extend(_operation(defs, op, profile))
    return [*lines, ""]


def markdown() -> str:
    """The generated block: a table of the operations each profile serves, then one table per
    profile of its operations' params and results."""
    defs = contract.load("harness-v1")["$defs"]
    profiles = built_in()
    lines = [
        BEGIN,
        "<!-- generated from harness-v1.schema.json and the profile registry: do not edit by hand -->",
        "",
        "| profile | operations |",
        "|---|---|",
        f"| every profile | {', '.join(f'`{op}`' for op in COMMON_OPERATIONS)} |",
        *(
            f"| `{name}` | {', '.join(f'`{op}`' for op in profile.operations)} |"
            for name, profile in profiles.items()
        ),
        "",
        "A param marked optional is sent only when the manifest offers the feature it belongs to.",
        "",
        *_section(defs, "", COMMON_OPERATIONS),
        *(line for name, profile in profiles.items() for line in _section(defs, name, profile.operations)),
        *_values(
            defs, (*COMMON_OPERATIONS, *(op for profile in profiles.values() for op in profile.operations))
        ),
        END,
    ]
    return "\n".join(lines) + "\n"


def spliced(document: str) -> str:
    """``document`` with its generated block replaced by :func:`markdown`."""
    head, begin, rest = document.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the document has no {BEGIN} ... {END} block")
    return head + markdown().rstrip("\n") + tail
