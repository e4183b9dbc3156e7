"""The Milvus Lite recipe (``milvus_namespace.py``: tenant-namespace, the tenant as partition
key) on the real store, the server of the ``milvus-lite`` wheel on a local file.

Milvus Lite takes no filter templates, so every value reaches a filter as a literal: the quick
tests hold ``milvus_literal`` to the store's own parser on hostile strings (a naive quoting lets
a value widen the filter: the control). The suites' run is in process and only the tests the
recipe's design answers for, because a whole run costs more than the LanceDB backend's (every
read a round trip to the store: the 210 tests outside the concurrency suite took 671 s on two
loaded cores when opening a backend still waited half a second for its index, the concurrency
suite's readers at once about 40 s a test, page-01 and atomic-02 to
atomic-04 a minute or two each): the read filter on every facade (iso, leak, fail-closed),
escaped ids and paths (leak, deletion) and a write undone by hand (atomic-01). The whole run is
the nightly command of ``tests/README.md``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("milvus_lite", reason="the Milvus Lite recipe needs the milvus extra")

from pymilvus import DataType, MilvusClient

from kbconform import report as reports
from kbconform import runner
from tests.independent import milvus_namespace
from tests.independent.milvus_namespace import milvus_literal

#: Strings a filter must read back exactly: quotes of both kinds, backslashes before either,
#: escapes Milvus does not read, a value that closes its literal, and non-ASCII letters.
HOSTILE = [
    'a"b',
    "a'b",
    "a\\b",
    'a\\"b',
    "a\\",
    "a\nb",
    "tab\there",
    "cr\rlf",
    "a\\u0041",
    "\\x41",
    'x" || path != "',
    "x' || path != '",
    "é/ü/ß",
    "",
]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusClient]:
    client = MilvusClient(str(Path(tmp_path_factory.mktemp("milvus")) / "kb.db"))
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=16)
    schema.add_field("tenant", DataType.VARCHAR, max_length=64, is_partition_key=True)
    schema.add_field("path", DataType.VARCHAR, max_length=256)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("embedding", index_type="FLAT", metric_type="COSINE")
    client.create_collection("rows", schema=schema, index_params=index, consistency_level="Strong")
    client.insert(
        "rows",
        [
            {"id": str(n), "tenant": "acme", "path": path, "embedding": [1.0, 0.0]}
            for n, path in enumerate(HOSTILE)
        ],
    )
    yield client
    client.close()


def _ids(client: MilvusClient, where: str) -> list[str]:
    found: list[Any] = client.query("rows", filter=where, output_fields=["id"])
    return sorted(row["id"] for row in found)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_literal_selects_exactly_the_row_holding_its_value(rows: MilvusClient, value: str) -> None:
    """Milvus's parser reads each literal back as its value: one row, the one holding it."""
    assert _ids(rows, f"tenant == {milvus_literal('acme')} and path == {milvus_literal(value)}") == [
        str(HOSTILE.index(value))
    ]


def test_a_value_quoted_naively_widens_the_filter_and_one_with_no_spelling_is_refused(
    rows: MilvusClient,
) -> None:
    """The control: the same value inside bare quotes closes its literal and reads every row;
    a control character Milvus cannot spell is refused before it reaches a filter."""
    value = HOSTILE.index('x" || path != "')
    assert len(_ids(rows, f'path == "{HOSTILE[value]}"')) == len(HOSTILE) - 1  # all but the empty path
    assert _ids(rows, f"path == {milvus_literal(HOSTILE[value])}") == [str(value)]
    with pytest.raises(ValueError, match="no Milvus string literal"):
        milvus_literal("a\x01b")


#: The tests the recipe's design answers for (the module's docstring says why not every test).
DESIGN = [
    "iso-*",
    "leak-*",
    "closed-02",
    "closed-03",
    *(f"delete-0{n}" for n in range(1, 6)),
    "atomic-01*",
]


@pytest.mark.slow
def test_the_milvus_lite_recipe_passes_the_tests_of_its_design() -> None:
    """In process at a fixed seed: every test its design answers for passes or is declined by
    its manifest (none is), and the backend is the one the manifest names."""
    chosen = sorted(
        entry["id"]
        for entry in reports.catalogue()
        if entry.get("profile", "tenant-namespace") == "tenant-namespace"
        and any(fnmatch.fnmatchcase(entry["id"], pattern) for pattern in DESIGN)
    )
    outcome = runner.run_suites(
        "tests.independent.milvus_namespace:make", transport="in-process", seed=11, select=chosen
    )
    assert outcome.problems == ()
    assert outcome.report, outcome.output[-4000:]  # a run refused before it began writes none
    assert outcome.failed == [], outcome.output[-4000:]
    tests = outcome.report["tests"]
    assert {t["status"] for t in tests} == {"pass"}, [t["id"] for t in tests if t["status"] != "pass"]
    assert len(tests) == len(chosen) > 40, len(tests)
    assert outcome.report["manifest"]["isolationModel"] == "partition-key"
    assert milvus_namespace.MANIFEST["features"]["client-where"] is True
