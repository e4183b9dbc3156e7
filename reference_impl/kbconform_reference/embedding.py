"""A deterministic, offline embedding: feature hashing of word tokens, L2-normalized float32.

No model, no download, the same vector on every machine. A query that shares words with a chunk
is closer to it than to chunks it shares nothing with; that is all retrieval tests need.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_TOKEN = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class HashingEmbedding:
    """``dimensions`` buckets; each lower-cased token adds +-1 to the bucket its BLAKE2b hash picks."""

    dimensions: int = 256

    @property
    def name(self) -> str:
        return f"hashing-{self.dimensions}"

    def __call__(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _TOKEN.findall(text.casefold()):
                digest = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "big")
                matrix[row, digest % self.dimensions] += 1.0 if digest >> 63 else -1.0
            if not matrix[row].any():  # no tokens: a fixed unit vector, never a zero one
                matrix[row, 0] = 1.0
        normalized: npt.NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        return normalized
