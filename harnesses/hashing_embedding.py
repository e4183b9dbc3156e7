"""kbconform's reference hashing embedding in pure Python, for the library harnesses.

Feature hashing of case-folded word tokens: each token adds +1 or -1 to one of ``dimensions``
buckets (BLAKE2b, 8-byte digest, big-endian: the digest modulo ``dimensions`` picks the bucket,
its top bit the sign); a text without tokens (or whose tokens cancel) is the unit vector on
bucket 0; the vector is L2-normalized. Deterministic, offline, no model: the same vectors as
``kbconform_reference.embedding.HashingEmbedding`` and ``harnesses/neo/embedding.mjs``, which
``tests/harness/test_hashing_embedding.py`` holds to ``schemas/vectors/hashing-embedding.json``.

Standard library only: the harnesses run in virtualenvs of their own.
"""

from __future__ import annotations

import hashlib
import math
import re

DIMENSIONS = 256
_TOKEN = re.compile(r"\w+", re.UNICODE)


def embed(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The embedding of one text."""
    row = [0.0] * dimensions
    for token in _TOKEN.findall(text.casefold()):
        digest = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
        row[digest % dimensions] += 1.0 if digest >> 63 else -1.0
    norm = math.sqrt(sum(v * v for v in row))
    if norm == 0.0:  # a fixed unit vector, never a zero one
        row = [0.0] * dimensions
        row[0] = 1.0
        return row
    return [v / norm for v in row]
