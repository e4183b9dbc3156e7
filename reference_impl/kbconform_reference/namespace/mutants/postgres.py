"""Mutants of the PostgreSQL reference: each the deployment of
:mod:`kbconform_reference.namespace.stores.postgres` with one choice made as real deployments get it
wrong, the application and its SQL otherwise unchanged. ``MUTANTS`` is registered as the mutant
set ``reference-postgres``.

Each breaks what the row-level security policies alone enforce: the knowledge base sends this
store no scope clause, so only its final check on hits stands behind the database.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbconform_reference import _mutant_base, _races
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.namespace.adapter import ReferenceAdapter
from kbconform_reference.namespace.stores._protocol import ACTING
from kbconform_reference.namespace.stores.postgres import OPERATOR_ROLE, OWNER_ROLE, POOL_TIMEOUT, Database


class SessionSettings(Database):
    local_settings = False  # set_config(..., false): the principal outlives its transaction


class SessionSetOnCheckout(Database):
    """The principal is set for the session (``SET``, ``set_config(..., false)``, every setting
    each time) on the connection a store call first takes from the pool, and its statements then
    run in a transaction on the connection it takes next. One caller at a time that is the
    connection it set; with two at once the pool may hand it the connection the other caller
    set last, and the policies read that caller's tenant (SET where SET LOCAL was meant)."""

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        acts = ACTING.get()
        if acts is None:
            raise PermissionError("a store call made for nobody is refused (no principal acts)")
        principal = acts.principal
        settings = [
            ("kb.reach", acts.reach),
            ("kb.tenant", principal.tenant_id),
            ("kb.tenants", json.dumps(sorted(principal.readable_tenants))),
            ("kb.agent", principal.agent_identity or ""),
        ]
        with self.pool.connection(timeout=POOL_TIMEOUT) as connection:
            connection.execute(
                "SELECT " + ", ".join("set_config(%s, %s, false)" for _ in settings),
                [part for pair in settings for part in pair],
            )
            connection.commit()
        _races.pause()  # the request's own work between (a token checked, a log line written)
        with self.pool.connection(timeout=POOL_TIMEOUT) as connection, connection.transaction():
            if acts.reach == "operator":
                connection.execute("SELECT set_config('role', %s, true)", [OPERATOR_ROLE])
            yield connection


class ConnectsAsOwner(Database):
    app_user = OWNER_ROLE  # the table's owner: row-level security does not apply to it


class BypassingRole(Database):
    app_role_options = Database.app_role_options.replace("NOBYPASSRLS", "BYPASSRLS")


class ViewAsOwner(Database):
    view_options = ""  # a view runs with its owner's rights unless it says security_invoker


class SearchAsOwner(Database):
    search_security = "SECURITY DEFINER"  # runs as the function's owner, past every policy


class TenantAsPattern(Database):
    tenant_match = "EXISTS (SELECT 1 FROM unnest(kb_scope()) AS t WHERE tenant_id LIKE t || '%')"


@dataclass(frozen=True, slots=True)
class Mutant(_mutant_base.Mutant[Database]):
    """A mutant of the PostgreSQL reference: ``kind`` is the deployment it opens."""


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "pg-principal-set-for-the-session",
        SessionSettings,
        "the principal is set with a session-level SET (set_config(..., false)), and the agent only "
        "when there is one: a pooled connection carries the last agent to the next principal",
        ("leak-11[list]", "state-01[overwrite]"),
    ),
    Mutant(
        "pg-tenant-set-on-a-pooled-connection",
        SessionSetOnCheckout,
        "the principal is set for the session on the connection a store call first takes from "
        "the pool, and the call's transaction runs on the one it takes next: requests at once "
        "run as each other (conc-03's few rounds of writes at once meet it only by chance, so it "
        "is not named)",
        ("conc-01[list]", "conc-02[list]"),
        in_process_only=_races.OVERLAP_ONLY,
    ),
    Mutant(
        "pg-app-connects-as-owner",
        ConnectsAsOwner,
        "the application connects as the table's owner, which row-level security does not apply to",
        ("iso-01[list]", "leak-01[list]", "leak-11[list]", "page-01"),
    ),
    Mutant(
        "pg-app-role-bypasses-rls",
        BypassingRole,
        "the application's role has BYPASSRLS",
        ("iso-01[list]", "leak-01[list]", "leak-11[list]", "page-01"),
    ),
    Mutant(
        "pg-read-view-runs-as-owner",
        ViewAsOwner,
        "the view the reads go through is owned by the table's owner and not security_invoker",
        ("iso-01[list]", "leak-01[list]", "leak-11[list]", "page-01"),
    ),
    Mutant(
        "pg-search-security-definer",
        SearchAsOwner,
        "the nearest-first search function is SECURITY DEFINER, owned by the table's owner: an "
        "approximate query ranks every tenant's rows",
        ("scale-01",),
    ),
    Mutant(
        "pg-tenant-matched-as-pattern",
        TenantAsPattern,
        "the policy matches a row's tenant with LIKE the principal's tenant and '%': a prefix "
        "reads every tenant it begins, and _ or % in an id match any character",
        ("leak-08[list]", "state-01[overwrite]"),
    ),
)


class MutantAdapter(ServesMutant[Mutant], ReferenceAdapter):
    """The PostgreSQL reference adapter, opening the mutant's deployment."""

    def __init__(self, mutant: Mutant) -> None:
        super().__init__(mutant, "postgres")

    @property
    def database_kind(self) -> type[Any]:
        return self.mutant.kind


#: ``kbconform_reference.namespace.mutants.postgres:by_name.<name with underscores>`` is each
#: mutant's factory.
by_name = factories(MUTANTS, MutantAdapter)
