"""The predicted similarity of one pair record: the cosine of its two embeddings, or its similarity field.

Only the number is kept, never the vectors, so `eval sts` holds a few numbers per pair.
"""

from __future__ import annotations

import numpy as np

from .. import io
from ..io import check_number


def cosine(a: np.ndarray, b: np.ndarray, key_a: str, key_b: str) -> float:
    """The cosine of two finite vectors, each scaled by its largest absolute value first, so vectors of any
    magnitude (1e200, 1e-200) give the cosine their directions have."""
    a, b = io.unit_scaled(a), io.unit_scaled(b)
    norm_a, norm_b = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    io.nonzero(key_a, norm_a)
    io.nonzero(key_b, norm_b)
    return max(-1.0, min(1.0, float(a @ b) / (norm_a * norm_b)))


class PairSimilarity:
    """Reads one record's predicted similarity: the cosine of two embeddings, or a similarity field.

    Without `similarity_key` the first record decides: its embeddings when it
    has either, else its SIMILARITY_FIELD; every later record must match.
    """

    SIMILARITY_FIELD = "similarity"

    def __init__(self, key_a: str = "embedding_a", key_b: str = "embedding_b", similarity_key: str | None = None):
        self.key_a, self.key_b, self.similarity_key = key_a, key_b, similarity_key
        self.decided = similarity_key is not None
        self.dimension = io.Dimension()

    @property
    def name(self) -> str:
        return self.similarity_key or f"cosine({self.key_a}, {self.key_b})"

    def __call__(self, record: dict) -> float:
        if not self.decided:
            self.decided = True
            if self.key_a not in record and self.key_b not in record and self.SIMILARITY_FIELD in record:
                self.similarity_key = self.SIMILARITY_FIELD
        if self.similarity_key is not None:
            return check_number(record, self.similarity_key, "the predicted similarity")
        a, b = io.vector(record, self.key_a), io.vector(record, self.key_b)
        self.dimension.check({self.key_a: a, self.key_b: b})
        return cosine(a, b, self.key_a, self.key_b)
