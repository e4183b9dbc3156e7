"""harness-v1.md's table of operations is generated from the schema and the profile registry
(``kbconform.harness._operations``), and the shipped document holds what the generator writes
today. Rewrite it with ``KBCONFORM_UPDATE_DOCS=1 python -m pytest
tests/harness/test_operations_table.py``."""

from __future__ import annotations

import os
import re

import pytest

from kbconform import contract
from kbconform._resources import data_dir
from kbconform.cli import main
from kbconform.harness import render_operations
from kbconform.harness._operations import BEGIN, END, spliced
from kbconform.harness._wire import OPERATIONS
from kbconform.profiles import built_in

DOCUMENT = data_dir("schemas") / "harness-v1.md"


def test_the_shipped_table_is_the_generated_one() -> None:
    """schemas/harness-v1.md's operations block is what the generator writes."""
    text = DOCUMENT.read_text(encoding="utf-8")
    if os.environ.get("KBCONFORM_UPDATE_DOCS") == "1":
        text = spliced(text)
        DOCUMENT.write_text(text, encoding="utf-8")
    assert spliced(text) == text, (
        "schemas/harness-v1.md's operations table is not what kbconform.harness._operations generates; "
        "rewrite it with: KBCONFORM_UPDATE_DOCS=1 python -m pytest tests/harness/test_operations_table.py"
    )


def test_a_stale_or_missing_block_is_caught() -> None:
    """The control: a block that differs from the generator's is rewritten, and a document without
    the block is refused rather than left as it is."""
    stale = f"before\n{BEGIN}\n| `ingest` | an old row |\n{END}\nafter\n"
    assert spliced(stale) != stale
    assert spliced(stale).startswith("before\n")
    assert spliced(stale).endswith(f"{END}\nafter\n")
    with pytest.raises(ValueError, match="operations:begin"):
        spliced("no block here\n")


def test_every_operation_and_every_param_of_the_schema_is_in_the_table() -> None:
    """Each harness-v1 operation has its row under each profile serving it, with a row for every
    param its schema definition names."""
    table = render_operations()
    defs = contract.load("harness-v1")["$defs"]
    sections = re.split(r"^### ", table, flags=re.MULTILINE)
    served = [op for profile in built_in().values() for op in profile.operations]
    assert sorted([*served, "hello", "open", "close", "fault", "shutdown"]) == sorted(OPERATIONS)
    for op in OPERATIONS:
        (section,) = [part for part in sections if f"\n| `{op}` | |" in part]
        rows = section.split(f"\n| `{op}` | |", 1)[1].split("\n| `", 1)[0]
        for param in defs[f"{op}Params"].get("properties", {}):
            assert f"| `{param}`" in rows, (op, param)


def test_kbconform_schema_harness_v1_operations_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    """`kbconform schema harness-v1 --operations` prints the table; another schema has none (exit 2)."""
    assert main(["schema", "harness-v1", "--operations"]) == 0
    assert capsys.readouterr().out == render_operations()
    assert main(["schema", "parsed-chunk-v1", "--operations"]) == 2
    assert "schema harness-v1 --operations" in capsys.readouterr().err
