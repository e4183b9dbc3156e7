"""What the references' stores share: stored rows and matches, exact cosine ranking, and the
rows of a Chroma query's answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Metadata = Mapping[str, str | int | float | bool]


@dataclass(frozen=True, slots=True)
class Rows:
    """Stored rows, in one order: ids, documents (may be None), metadata, embeddings (optional)."""

    ids: tuple[str, ...]
    documents: tuple[str | None, ...]
    metadatas: tuple[Metadata, ...]
    embeddings: npt.NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """A query result: a row and its cosine distance to the query."""

    id: str
    document: str | None
    metadata: Metadata
    distance: float


def exact_top_k(rows: Rows, embedding: npt.NDArray[np.float32], n_results: int) -> list[Match]:
    """Brute-force cosine top-k over ``rows`` (which must carry embeddings); ties broken by id."""
    if not rows.ids or n_results <= 0:
        return []
    assert rows.embeddings is not None
    matrix = rows.embeddings.astype(np.float64)
    query = np.asarray(embedding, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    distances = 1.0 - (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(rows.ids)), key=lambda i: (distances[i], rows.ids[i]))[:n_results]
    return [Match(rows.ids[i], rows.documents[i], rows.metadatas[i], float(distances[i])) for i in order]


def query_rows(result: Any) -> Iterator[tuple[Any, Any, Any, Any]]:
    """The rows Chroma answered a query of one embedding with, nearest first: each its id,
    document, metadata and distance."""
    return zip(
        result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0], strict=True
    )
