"""What the tenant-namespace mutants share: their record, why some run in process only, reading
stored rows as hits, and the test ids many of them name."""

from __future__ import annotations

import builtins
from typing import Any

from kbconform_reference import _mutant_base
from kbconform_reference.namespace.records import Hit, as_hits
from kbconform_reference.namespace.service import KnowledgeBase


class Mutant(_mutant_base.Mutant[Any]):
    """A broken backend of the tenant-namespace reference, served by the package's ``by_name``."""

    __slots__ = ()
    served_by = "kbconform_reference.namespace.mutants"


#: Why a mutant that accepts a Python object posing as a Principal cannot be reached behind
#: harness-v1: a principal crosses it as data, a JSON value or a principal's fields, so the
#: backend gets a Principal built from valid fields, None, or the malformed data itself
#: (schemas/harness-v1.md), never the object.
PRINCIPAL_AS_DATA = (
    "a principal crosses harness-v1 as data: a Python object posing as a Principal reaches the "
    "backend as its fields or as no identity"
)


def all_hits(
    kb: KnowledgeBase, limit: int | None = None, offset: int = 0, where: Any = None
) -> builtins.list[Hit]:
    """The rows of ``kb``'s store (matching ``where``, one page of them), read past every check."""
    return as_hits(kb.store.get(where=where, limit=limit, offset=offset))


#: The read facades, one test id each in the suites that parametrize over them.
FACADES = ("query", "get", "list", "count", "ask")

#: The operations closed-01 calls without an authenticated principal, one test id each.
WRITES = ("ingest", "apply_deletion_signal", "export", "restore")

#: The optional operations that write or delete every tenant's rows (features sync, maintenance).
MAINTENANCE = ("sync", "maintain")


def closed(identity: str) -> tuple[str, ...]:
    """The ids of every write, export, restore, sync and maintenance called with ``identity``
    (a label of not_principals): closed-01's, sync-05's and maint-03's."""
    return (
        *(f"closed-01[{operation} by {identity}]" for operation in WRITES),
        f"sync-05[{identity}]",
        f"maint-03[{identity}]",
    )
