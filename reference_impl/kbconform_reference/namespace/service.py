"""The reference knowledge base: every facade takes the principal explicitly.

Write side: validate (parsed-chunk-v1), refuse or overwrite spoofs, compute tenant-aware ids and
embeddings server-side, stamp, write the batch. Read side: one filter built from the principal
(``read_filter``), a final in-scope check on every hit, and exact search when the allowed set is
small. Lifecycle: deletion signals scoped to the tenant; export and restore for operators. No
principal is an error, never an unfiltered read; a store error is an error, never a fallback.

All or nothing: ingest, restore and deletion signals write and delete in pages of the store's
``max_batch`` rows, one store call a page, so a store can fail after some pages landed. Before
the first write, one ``get`` captures every row the call touches (document, metadata,
embedding): the undo log. A store failure part-way rolls back (the ids that were new are
deleted, the prior rows written back) and raises ``BackendUnavailable``. When the rollback
fails too (the store is still down), the undo log stays pending on the instance, and every
facade, reads included, first replays it and raises ``BackendUnavailable`` while it cannot: no
later call reads or writes over a half-written batch. Writes on one instance are serialized.

Limits: the undo log lives in this process. A crash or kill in the middle of a write, or the
process ending while a rollback is pending, leaves whatever pages landed in the store; another
process (or another instance) on the same collection does not see the pending log; and a read
running at the same time as a write may see part of it (only later calls are covered).
"""

from kbconform_reference.namespace._core import Core, _Undo
from kbconform_reference.namespace._lifecycle import Lifecycle
from kbconform_reference.namespace._reads import Reads
from kbconform_reference.namespace._writes import Writes
from kbconform_reference.namespace.records import (
    MAINTENANCE,
    Answer,
    DeletionResult,
    Hit,
    IngestResult,
    Settings,
    Stats,
    SyncResult,
    Visibility,
)

__all__ = [
    "MAINTENANCE",
    "Answer",
    "Core",
    "DeletionResult",
    "Hit",
    "IngestResult",
    "KnowledgeBase",
    "Settings",
    "Stats",
    "SyncResult",
    "Visibility",
    "_Undo",
]


class KnowledgeBase(Writes, Reads, Lifecycle):
    """The service. ``store`` is any :class:`VectorStore`; everything else has a safe default.

    Its facades come in three parts, each over :class:`Core` (the parts, the guards, the undo
    log): :class:`Writes` (ingest, sync, maintain, scan), :class:`Reads` (query, get, list,
    count, ask) and :class:`Lifecycle` (deletion signals, export, restore).
    """
