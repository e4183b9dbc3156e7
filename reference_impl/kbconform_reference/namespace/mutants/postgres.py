"""Mutants of the PostgreSQL reference: each the deployment of
:mod:`kbconform_reference.namespace.stores.postgres` with one choice made as real deployments get it
wrong, the application and its SQL otherwise unchanged. ``MUTANTS`` is registered as the mutant
set ``reference-postgres``.

Each breaks what the row-level security policies alone enforce: the knowledge base sends this
store no scope clause, so only its final check on hits stands behind the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbconform_reference import _mutant_base
from kbconform_reference._mutant_base import ServesMutant, factories
from kbconform_reference.namespace.adapter import ReferenceAdapter
from kbconform_reference.namespace.stores.postgres import OWNER_ROLE, Database


class SessionSettings(Database):
    local_settings = False  # set_config(..., false): the principal outlives its transaction


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
