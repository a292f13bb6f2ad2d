"""Entailment classification of sentence pairs from their two embeddings (SICK-E).

CF-BERT section 4.4 / Table 6: from the embeddings u, v of a pair, the feature
|u - v| (element-wise), a logistic regression, 10-fold cross-validation,
accuracy. SentEval's SICK-E features (|u - v|, u * v) are the alternative.
The classifier and folds are those of `classify.cross_validate`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import io
from ..models.model_identity import OneModel
from . import classify
from .records import eval_source, pair_keys, read_all

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

    def __init__(
        self, key_a: str = "embedding_a", key_b: str = "embedding_b", label_key: str = "label", kind: str = "abs-diff"
    ):
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


def evaluate(
    input: str,
    text_keys: tuple[str, str] = ("text_a", "text_b"),
    kind: str = "abs-diff",
    label_key: str = "label",
    folds: int = classify.DEFAULT_FOLDS,
    seed: int = 0,
    c: float | None = classify.DEFAULT_C,
    npy: Path | None = None,
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval entailment` on the records of `input`: the `kind` features of each pair's
    embeddings (those of `text_keys`) and its label, classified by `classify.report`."""
    reader = PairFeatures(*pair_keys(text_keys, "embedding"), label_key, kind)
    rows = read_all(eval_source(input, skip_errors, "entailment"), reader, OneModel(), npy)
    return classify.report("entailment", rows, reader.name, label_key, folds, seed, c)


print_report = classify.print_report  # one table for both classification tasks
