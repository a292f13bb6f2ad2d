"""Entailment classification of sentence pairs from their two embeddings (SICK-E).

CF-BERT section 4.4 / Table 6: from the embeddings u, v of a pair, the feature
|u - v| (element-wise), a logistic regression, 10-fold cross-validation,
accuracy. SentEval's SICK-E features (|u - v|, u * v) are the alternative.
The classifier and folds are those of `classify.cross_validate`.
"""

from __future__ import annotations

import numpy as np

from .. import io

FEATURES = {
    "abs-diff": "|{u} - {v}|",
    "senteval": "(|{u} - {v}|, {u} * {v})",
}


def pair_features(u: np.ndarray, v: np.ndarray, kind: str = "abs-diff") -> np.ndarray:
    """The classifier's input for one pair (float32: only these are kept per record, never u and v)."""
    with np.errstate(over="ignore"):  # huge vectors give infinite features: cross_validate refuses them, clearly
        if kind == "abs-diff":
            return np.abs(u - v).astype(np.float32)
        if kind == "senteval":
            return np.concatenate([np.abs(u - v), u * v]).astype(np.float32)
    raise ValueError(f"unknown features '{kind}': {', '.join(FEATURES)}")


class PairFeatures:
    """Reads one record's two embeddings and label; keeps the pair features and the label."""

    def __init__(self, key_a: str = "embedding_a", key_b: str = "embedding_b", label_key: str = "label",
                 kind: str = "abs-diff"):
        if kind not in FEATURES:
            raise ValueError(f"unknown features '{kind}': {', '.join(FEATURES)}")
        self.key_a, self.key_b, self.label_key, self.kind = key_a, key_b, label_key, kind
        self.dimension = io.Dimension()

    @property
    def name(self) -> str:
        return FEATURES[self.kind].format(u=self.key_a, v=self.key_b)

    def __call__(self, record: dict) -> tuple[np.ndarray, str]:
        u, v = io.vector(record, self.key_a), io.vector(record, self.key_b)
        self.dimension.check({self.key_a: u, self.key_b: v})
        return pair_features(u, v, self.kind), io.label(record, self.label_key)
