"""What the tenant-namespace reference is configured with and answers: its settings, a read's
hits, the results of writes and deletions, an answer, and the counters it keeps."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kbconform.identity import Profile
from kbconform_reference.namespace.stamping import SpoofWarning
from kbconform_reference.namespace.stores import Match, Rows

Visibility = Literal["team", "private", "public"]


@dataclass(frozen=True, slots=True)
class Settings:
    """Server configuration (never from a request)."""

    shared_namespaces: frozenset[str] = frozenset({"neo-shared"})
    #: Who reads the shared namespaces: those granted them, or every tenant.
    shared_readers: Literal["granted", "every-tenant"] = "granted"
    spoof_mode: Literal["overwrite", "reject"] = "overwrite"
    escalation_threshold: int = 20
    escalation_window: float = 60.0
    visibility: Visibility = "team"
    config_version: str = "1"
    id_profile: Profile = "kbconform-v1"
    exact_search_limit: int = 2000


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk as a read returns it: id, stored text, stored metadata, similarity (1 - distance)."""

    id: str
    document: str | None
    metadata: Mapping[str, Any]
    score: float | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What ingest (and sync, which also reports the stale chunks it deleted) returns."""

    ids: tuple[str, ...]
    written: int
    unchanged: int
    warnings: tuple[SpoofWarning, ...] = ()
    deleted_ids: tuple[str, ...] = ()


SyncResult = IngestResult
#: The maintenance operations (feature ``maintenance``): every embedding computed again.
MAINTENANCE = ("reembed",)


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    text: str
    sources: tuple[Hit, ...]


@dataclass(frozen=True, slots=True)
class DeletionResult:
    deleted_ids: tuple[str, ...]
    paths: tuple[tuple[str, str], ...]


@dataclass
class Stats:
    """Counters a test or an operator can read; ``dropped`` counts hits the final check removed."""

    dropped: int = 0
    escalations: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def as_hit(match: Match) -> Hit:
    """A store's match as a hit, its score the cosine similarity."""
    return Hit(match.id, match.document, dict(match.metadata), 1.0 - match.distance)


def as_hits(rows: Rows) -> list[Hit]:
    """Stored rows as hits, in their order."""
    return [Hit(i, d, dict(m)) for i, d, m in zip(rows.ids, rows.documents, rows.metadatas, strict=True)]
