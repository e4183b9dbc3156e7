"""The reference knowledge base that every kbconform suite is first held to.

``KnowledgeBase(store)`` over a :class:`~kbconform_reference.stores.VectorStore`: the exact
in-memory store, Chroma embedded, or a Chroma server (``kbconform_reference.stores.chroma``), or
PostgreSQL whose row-level security enforces the read filter itself
(``kbconform_reference.stores.postgres``).
"""

from kbconform.adapter import RevisionResolver
from kbconform_reference.deletion import GitResolver
from kbconform_reference.embedding import HashingEmbedding
from kbconform_reference.service import (
    Answer,
    DeletionResult,
    Hit,
    IngestResult,
    KnowledgeBase,
    Settings,
    Stats,
)
from kbconform_reference.stamping import SpoofWarning

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
