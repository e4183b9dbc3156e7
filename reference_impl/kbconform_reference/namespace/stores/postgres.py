"""A store on PostgreSQL with pgvector whose isolation the database enforces: row-level security.

Every collection is a schema of its own: a table of chunks (the stamps ``tenantId``,
``visibility`` and ``originAgentIdentity`` in columns generated from the metadata, the
embedding as ``vector(256)`` with an HNSW index), a view the reads go through and a
function that orders rows nearest first for a query. The
application connects through a connection pool as ``kb_app``, a role that is no superuser,
cannot bypass row-level security and owns nothing; the tables belong to ``kb_owner``.

Each store call is one transaction that first sets whom it is made for (the :data:`ACTING` of
the facade call, :mod:`kbconform_reference.namespace.stores._protocol`) with ``set_config(..., true)``:
transaction-local, so nothing of one principal is left on a pooled connection for the next.
The policies read those settings:

- ``read``: the read filter of ``schemas/read-filter.md`` (the readable tenants, team and
  public chunks, private ones of the principal's agent only). The knowledge base sends this
  store no scope clause (:func:`scopes_reads`): the policy is the only one.
- ``write``: every row of the principal's own tenant; a row is written (USING and WITH CHECK)
  and deleted only in that tenant (``schemas/stamping.md``). Whether an agent may write over
  another agent's private row stays the application's rule: a rollback writes such rows back.
  A write naming an id another tenant holds is refused before any row is written
  (``held_elsewhere``, the one function that reads past the policies, and answers only which
  of the ids it is given are held elsewhere).
- ``operator``: every row (export, restore, maintenance), and only as the role ``kb_operator``,
  which the call takes for its transaction (``SET LOCAL ROLE``): ``kb_app`` may take it and
  does not inherit it, so no setting alone widens a member's reach.

The members' policies are plain conditions on the tenant column (the tenants a reach names,
``kb_scope()``), so the tenant index serves them: a small tenant's read is an index scan, not a
scan of every tenant's rows. A query whose scope holds at most
:attr:`PostgresStore.exact_scopes` rows is sorted exactly in that one store call (the knowledge
base then asks nothing else); a larger scope's goes through the HNSW index with the policy as
its filter. A call made for nobody is refused by the store, and a row that policies do not name
is invisible: a missing setting matches nothing. Every statement is bounded
(``statement_timeout``), and so is waiting for a pooled connection.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kbconform.errors import Forbidden
from kbconform_reference.namespace.stores._protocol import (
    ACTING,
    Acting,
    Match,
    Metadata,
    Rows,
    Where,
    upserted_vectors,
)

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

    from kbconform_reference.namespace.stores.postgres_server import PostgresServer

#: The embedding width of the reference's hashing embedding.
DIMENSIONS = 256
#: The application's role and the role that owns every table.
APP_ROLE = "kb_app"
OWNER_ROLE = "kb_owner"
#: The role an operator's calls take for their transaction (``SET LOCAL ROLE``): its policy
#: reaches every row. The application's role may take it and does not inherit it.
OPERATOR_ROLE = "kb_operator"
#: Every statement's bound, in milliseconds, and the wait for a pooled connection, in seconds.
STATEMENT_TIMEOUT_MS = 30_000
POOL_TIMEOUT = 30.0

_COMPARE = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


class Database:
    """One PostgreSQL server as the reference's store: roles, functions, the application's pool.

    The class attributes are the deployment choices a mistake would change (the mutants of
    ``kbconform_reference.namespace.mutants.postgres`` each change one; ``benchmarks/recall_by_tenant.py``
    turns ``iterative_scan`` off, which no facade can tell: a scope small enough for the index
    to miss its rows is sorted exactly).
    """

    #: How the application's role is created.
    app_role_options = "LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"
    #: Whom the application's pool connects as.
    app_user = APP_ROLE
    #: ``set_config``'s ``is_local``: the principal lives for one transaction.
    local_settings = True
    #: The read view runs with the caller's rights (its policies apply to the caller).
    view_options = "WITH (security_invoker = true)"
    #: The nearest-first search function runs with the caller's rights too (and, a plain SQL
    #: function, is inlined into the query, so the index orders it and the policy filters it).
    search_security = "SECURITY INVOKER"
    #: How the policies compare a row's tenant with the principal's tenants.
    tenant_match = "tenant_id = ANY (kb_scope())"
    #: pgvector's iterative index scans: a filtered HNSW search goes on until it has k rows.
    iterative_scan = "strict_order"
    #: Connections in the pool: one, so every principal's calls share it and whatever a call
    #: leaves on the connection meets the next principal, where the suites can see it.
    pool_size = 1

    def __init__(self, server: PostgresServer) -> None:
        import psycopg
        import psycopg_pool
        from pgvector.psycopg import register_vector

        self.server = server
        self._names = itertools.count(1)
        self._admin = psycopg.connect(server.conninfo(), autocommit=True)
        self._admin.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        self._admin.execute("CREATE EXTENSION IF NOT EXISTS vector")
        self._admin.execute(f"CREATE ROLE {OWNER_ROLE} LOGIN NOSUPERUSER")
        self._admin.execute(f"CREATE ROLE {APP_ROLE} {self.app_role_options}")
        self._admin.execute(f"CREATE ROLE {OPERATOR_ROLE} NOLOGIN NOSUPERUSER NOBYPASSRLS")
        self._admin.execute(f"GRANT {OPERATOR_ROLE} TO {APP_ROLE} WITH INHERIT FALSE, SET TRUE")
        self._admin.execute(f"ALTER ROLE {APP_ROLE} SET hnsw.iterative_scan = '{self.iterative_scan}'")
        self._admin.execute(f"ALTER ROLE {OWNER_ROLE} SET hnsw.iterative_scan = '{self.iterative_scan}'")
        self._admin.execute(f"ALTER DATABASE postgres SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        self._admin.execute(f"GRANT CREATE ON DATABASE postgres TO {OWNER_ROLE}")
        self._admin.execute(_FUNCTIONS)

        def configure(connection: psycopg.Connection[Any]) -> None:
            register_vector(connection)
            connection.commit()

        self.pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            server.conninfo(self.app_user),
            min_size=1,
            max_size=self.pool_size,
            timeout=POOL_TIMEOUT,
            configure=configure,
            open=False,
        )
        self.pool.open(wait=True, timeout=POOL_TIMEOUT)

    @property
    def description(self) -> str:
        return f"postgres {self._admin.info.server_version // 10000} + pgvector (row-level security)"

    def collection(self) -> PostgresStore:
        """A fresh, empty collection (a schema of its own)."""
        schema = f"kb_{next(self._names)}"
        statements = _COLLECTION.format(
            schema=schema,
            app=APP_ROLE,
            owner=OWNER_ROLE,
            operator=OPERATOR_ROLE,
            dimensions=DIMENSIONS,
            tenant_match=self.tenant_match,
            view_options=self.view_options,
            search_security=self.search_security,
        )
        with self._admin.transaction():
            self._admin.execute(f"SET LOCAL ROLE {OWNER_ROLE}")
            self._admin.execute(statements)
        return PostgresStore(self, schema)

    def drop(self, schema: str) -> None:
        self._admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")

    def analyze(self, schema: str) -> None:
        """Refresh the planner's statistics of a collection, as autovacuum does after a load."""
        self._admin.execute(f"ANALYZE {schema}.chunks")

    def close(self) -> None:
        self.pool.close(timeout=POOL_TIMEOUT)
        self._admin.close()

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """One transaction on a pooled connection, made for the :data:`ACTING` principal."""
        acts = ACTING.get()
        if acts is None:
            raise PermissionError("a store call made for nobody is refused (no principal acts)")
        with self.pool.connection(timeout=POOL_TIMEOUT) as connection, connection.transaction():
            settings = [(name, value) for name, value in _settings(acts) if value is not None]
            if acts.reach == "operator":
                settings.append(("role", OPERATOR_ROLE))
            connection.execute(
                "SELECT " + ", ".join("set_config(%s, %s, %s)" for _ in settings),
                [part for name, value in settings for part in (name, value, self.local_settings)],
            )
            yield connection


def _settings(acts: Acting) -> list[tuple[str, str | None]]:
    principal = acts.principal
    return [
        ("kb.reach", acts.reach),
        ("kb.tenant", principal.tenant_id),
        ("kb.tenants", json.dumps(sorted(principal.readable_tenants))),
        ("kb.agent", principal.agent_identity),
    ]


class PostgresStore:
    """One collection of a :class:`Database` (its own schema), as a :class:`VectorStore`."""

    scopes_reads = True
    #: The largest scope :meth:`query` ranks exactly (the knowledge base's exact-search limit).
    exact_scopes = 2000
    max_batch = 64  # the adapter declares it as its page size (the memory store's too)

    def __init__(self, database: Database, schema: str) -> None:
        self._database = database
        self.schema = schema
        self.description = database.description

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.NDArray[np.float32],
        documents: Sequence[str | None],
        metadatas: Sequence[Metadata],
    ) -> None:
        from psycopg.types.json import Jsonb

        vectors = upserted_vectors(ids, embeddings, documents, metadatas)
        with self._database.transaction() as connection, connection.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {self.schema}.chunks (id, embedding, document, metadata) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding, "
                "document = EXCLUDED.document, metadata = EXCLUDED.metadata",
                [
                    (row_id, vectors[i], documents[i], Jsonb(dict(metadatas[i])))
                    for i, row_id in enumerate(ids)
                ],
            )

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Where | None = None,
        limit: int | None = None,
        offset: int = 0,
        embeddings: bool = False,
    ) -> Rows:
        clause, params = _where_sql(where)
        if ids is not None:
            clause, params = f"id = ANY(%s) AND {clause}", [list(ids), *params]
        page = "" if limit is None else f" LIMIT {int(limit)}"
        columns = "id, document, metadata" + (", embedding" if embeddings else "")
        sql = (
            f"SELECT {columns} FROM {self.schema}.readable WHERE {clause} "
            f"ORDER BY seq{page} OFFSET {int(offset)}"
        )
        with self._database.transaction() as connection:
            acts = ACTING.get()
            if ids and acts is not None and acts.reach == "write":
                taken = connection.execute(
                    f"SELECT {self.schema}.held_elsewhere(%s)", (list(ids),)
                ).fetchone()
                if taken is not None and taken[0]:
                    raise Forbidden(acts.operation, f"chunk id {taken[0][0]} is taken; nothing was written")
            found = connection.execute(sql, params).fetchall()
        vectors = (
            np.asarray([row[3].to_numpy() for row in found], dtype=np.float32).reshape(len(found), DIMENSIONS)
            if embeddings
            else None
        )
        return Rows(
            tuple(row[0] for row in found),
            tuple(row[1] for row in found),
            tuple(row[2] for row in found),
            vectors,
        )

    def ids(self, *, where: Where | None = None, limit: int | None = None) -> tuple[str, ...]:
        """The ids of the rows matching ``where`` (at most ``limit``), as :meth:`get` orders them."""
        clause, params = _where_sql(where)
        page = "" if limit is None else f" LIMIT {int(limit)}"
        sql = f"SELECT id FROM {self.schema}.readable WHERE {clause} ORDER BY seq{page}"
        with self._database.transaction() as connection:
            found = connection.execute(sql, params).fetchall()
        return tuple(row[0] for row in found)

    def query(self, embedding: npt.NDArray[np.float32], n_results: int, where: Where | None) -> list[Match]:
        """Nearest first: a scope of at most :attr:`exact_scopes` rows sorted exactly (its rows
        found through the tenant index the policy's condition uses, every distance computed),
        a larger one through the HNSW index (``nearest``), both in one transaction."""
        clause, params = _where_sql(where)
        vector = np.asarray(embedding, dtype=np.float32)
        counted = (
            f"SELECT count(*) FROM (SELECT 1 FROM {self.schema}.readable WHERE {clause} "
            f"LIMIT {self.exact_scopes + 1}) AS scope"
        )
        # ``+ 0`` orders by a value the HNSW index cannot give: the planner sorts every row
        exact = (
            f"SELECT id, document, metadata, embedding <=> %s FROM {self.schema}.readable "
            f"WHERE {clause} ORDER BY (embedding <=> %s) + 0, id LIMIT {int(n_results)}"
        )
        approximate = (
            f"SELECT id, document, metadata, embedding <=> %s FROM {self.schema}.nearest(%s) "
            f"WHERE {clause} LIMIT {int(n_results)}"
        )
        with self._database.transaction() as connection:
            size = connection.execute(counted, params).fetchone()
            if size is not None and size[0] <= self.exact_scopes:
                found = connection.execute(exact, [vector, *params, vector]).fetchall()
            else:
                found = connection.execute(approximate, [vector, vector, *params]).fetchall()
        return [Match(row[0], row[1], row[2], float(row[3])) for row in found]

    def delete(self, ids: Sequence[str]) -> None:
        with self._database.transaction() as connection:
            connection.execute(f"DELETE FROM {self.schema}.chunks WHERE id = ANY(%s)", (list(ids),))

    def drop(self) -> None:
        self._database.drop(self.schema)

    def analyze(self) -> None:
        self._database.analyze(self.schema)


def _where_sql(where: Where | None) -> tuple[str, list[Any]]:
    """A Chroma-dialect clause (``_protocol``) as SQL over the ``metadata`` column, with its
    parameters: values are always parameters, compared as JSON values (never a pattern)."""
    if not where:
        return "TRUE", []
    parts: list[str] = []
    params: list[Any] = []
    for key, condition in where.items():
        if key in ("$and", "$or"):
            joined = [_where_sql(part) for part in condition]
            parts.append("(" + f" {key[1:].upper()} ".join(sql for sql, _ in joined) + ")")
            params.extend(p for _, sub in joined for p in sub)
        else:
            sql, sub = _field_sql(key, condition)
            parts.append(sql)
            params.extend(sub)
    return "(" + " AND ".join(parts) + ")", params


def _field_sql(key: str, condition: Any) -> tuple[str, list[Any]]:
    from psycopg.types.json import Jsonb

    if not isinstance(condition, Mapping):
        condition = {"$eq": condition}
    parts: list[str] = []
    params: list[Any] = []
    for operator, operand in condition.items():
        if operator == "$eq":
            parts.append("(metadata -> %s) = %s")
            params += [key, Jsonb(operand)]
        elif operator == "$ne":
            parts.append("(metadata -> %s) IS DISTINCT FROM %s")
            params += [key, Jsonb(operand)]
        elif operator in ("$in", "$nin"):
            test = "coalesce((metadata -> %s) = ANY(%s::jsonb[]), false)"
            parts.append(test if operator == "$in" else f"NOT {test}")
            params += [key, [Jsonb(value) for value in operand]]
        elif operator in _COMPARE:
            parts.append(
                f"(jsonb_typeof(metadata -> %s) = 'number' AND (metadata -> %s) {_COMPARE[operator]} %s)"
            )
            params += [key, key, Jsonb(operand)]
        else:
            raise ValueError(f"unsupported where operator {operator!r}")
    return "(" + " AND ".join(parts) + ")", params


#: Functions the policies call, created once per server (by the superuser, run as the caller).
_FUNCTIONS = """
CREATE FUNCTION public.kb_setting(name text) RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting(name, true), '') $$;
CREATE FUNCTION public.kb_scope() RETURNS text[] LANGUAGE sql STABLE
    AS $$ SELECT CASE kb_setting('kb.reach')
        WHEN 'read' THEN ARRAY(SELECT jsonb_array_elements_text(kb_setting('kb.tenants')::jsonb))
        WHEN 'write' THEN ARRAY[kb_setting('kb.tenant')]
    END $$;
"""

#: One collection: its schema, table, index, view, policies and the id check writes make.
_COLLECTION = """
CREATE SCHEMA {schema};
GRANT USAGE ON SCHEMA {schema} TO {app}, {operator};
CREATE TABLE {schema}.chunks (
    id text PRIMARY KEY,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    embedding vector({dimensions}) NOT NULL,
    document text,
    metadata jsonb NOT NULL,
    tenant_id text GENERATED ALWAYS AS (metadata ->> 'tenantId') STORED,
    visibility text GENERATED ALWAYS AS (metadata ->> 'visibility') STORED,
    origin_agent text GENERATED ALWAYS AS (metadata ->> 'originAgentIdentity') STORED
);
CREATE INDEX ON {schema}.chunks USING hnsw (embedding vector_cosine_ops);
CREATE INDEX ON {schema}.chunks (tenant_id);
ALTER TABLE {schema}.chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY reads ON {schema}.chunks FOR SELECT TO {app} USING (
    {tenant_match} AND (
        kb_setting('kb.reach') = 'write'
        OR visibility IN ('team', 'public')
        OR (visibility = 'private' AND origin_agent = kb_setting('kb.agent'))));
CREATE POLICY inserts ON {schema}.chunks FOR INSERT TO {app} WITH CHECK (
    kb_setting('kb.reach') = 'write' AND tenant_id = kb_setting('kb.tenant'));
CREATE POLICY updates ON {schema}.chunks FOR UPDATE TO {app}
    USING (kb_setting('kb.reach') = 'write' AND tenant_id = kb_setting('kb.tenant'))
    WITH CHECK (kb_setting('kb.reach') = 'write' AND tenant_id = kb_setting('kb.tenant'));
CREATE POLICY deletes ON {schema}.chunks FOR DELETE TO {app}
    USING (kb_setting('kb.reach') = 'write' AND tenant_id = kb_setting('kb.tenant'));
CREATE POLICY operator ON {schema}.chunks FOR ALL TO {operator} USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.chunks TO {app}, {operator};
CREATE VIEW {schema}.readable {view_options} AS SELECT * FROM {schema}.chunks;
GRANT SELECT ON {schema}.readable TO {app}, {operator};
CREATE FUNCTION {schema}.nearest(q vector) RETURNS SETOF {schema}.chunks
    LANGUAGE sql STABLE {search_security}
    AS $$ SELECT * FROM {schema}.chunks ORDER BY embedding <=> q $$;
REVOKE ALL ON FUNCTION {schema}.nearest(vector) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {schema}.nearest(vector) TO {app}, {operator};
CREATE FUNCTION {schema}.held_elsewhere(ids text[]) RETURNS text[]
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
    AS $$ SELECT coalesce(array_agg(id ORDER BY id), '{{}}') FROM {schema}.chunks
          WHERE id = ANY(ids) AND kb_setting('kb.reach') = 'write'
            AND tenant_id IS DISTINCT FROM kb_setting('kb.tenant') $$;
REVOKE ALL ON FUNCTION {schema}.held_elsewhere(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION {schema}.held_elsewhere(text[]) TO {app};
"""
