"""The reference knowledge bases that every kbconform suite is first held to: one package per
isolation profile, and what they share.

``namespace`` (tenant-namespace), ``pool`` (project-pool), ``grant`` (kb-grant) and ``memory``
(memory-scope) each hold a profile's reference, its adapter and its ``mutants`` package. Shared:
``embedding`` (HashingEmbedding), ``_vectors`` (rows, matches, exact ranking), ``_sqlite``,
``_store_calls``, ``_arguments``, ``_adapter`` (what adapters share) and ``_mutant_base`` (what
mutant sets share). The tenant-namespace reference's names are exported here:
``KnowledgeBase(store)`` over a :class:`~kbconform_reference.namespace.stores.VectorStore`. The
modules ``adapter``, ``mutants`` and ``stores`` keep its earlier import paths.
"""

from kbconform.adapter import RevisionResolver
from kbconform_reference.embedding import HashingEmbedding
from kbconform_reference.namespace.deletion import GitResolver
from kbconform_reference.namespace.service import (
    Answer,
    DeletionResult,
    Hit,
    IngestResult,
    KnowledgeBase,
    Settings,
    Stats,
)
from kbconform_reference.namespace.stamping import SpoofWarning

__all__ = [
    "Answer",
    "DeletionResult",
    "GitResolver",
    "HashingEmbedding",
    "Hit",
    "IngestResult",
    "KnowledgeBase",
    "RevisionResolver",
    "Settings",
    "SpoofWarning",
    "Stats",
]
