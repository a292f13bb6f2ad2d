"""POI identification metrics: precision, recall and F0.5 of "is a POI" predictions, and the best threshold.

The POI paper (Zhang et al., "BERT has a Mouth, and it can Taste", section 5)
reports F0.5 (precision weighted over recall: a wrong POI is worse than a
missed one) with a taste threshold of 0.5. F_beta = (1 + beta^2) P R /
(beta^2 P + R), beta = 0.5; the POI is the positive class.
"""

from __future__ import annotations

import numpy as np

from ..errors import BadRecord
from ..io import check_number, json_type

BETA = 0.5


def gold_label(record: dict, key: str) -> bool:
    if key not in record:
        raise BadRecord(f"missing key '{key}' (the gold label)")
    value = record[key]
    if not isinstance(value, bool):
        raise BadRecord(f"'{key}' must be true or false, got {json_type(value)}")
    return value


def score(record: dict, key: str) -> float:
    return check_number(record, key, "run sembed taste first")


def metrics(scores: np.ndarray, gold: np.ndarray, threshold: float) -> dict:
    """Counts, precision, recall, F0.5 and accuracy of `scores >= threshold` against `gold`."""
    predicted = scores >= threshold
    tp = int((predicted & gold).sum())
    fp = int((predicted & ~gold).sum())
    fn = int((~predicted & gold).sum())
    tn = int((~predicted & ~gold).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    denominator = BETA ** 2 * precision + recall
    f_beta = (1 + BETA ** 2) * precision * recall / denominator if denominator else 0.0
    return {"threshold": round(float(threshold), 6), "n": len(gold), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": round(precision, 4), "recall": round(recall, 4), "f0_5": round(f_beta, 4),
            "accuracy": round((tp + tn) / len(gold), 4) if len(gold) else 0.0}


def best_threshold(scores: np.ndarray, gold: np.ndarray) -> float:
    """The threshold among the observed scores with the highest F0.5 (the lowest such on a tie)."""
    best, best_f = 0.0, -1.0
    for candidate in np.unique(scores):
        f = metrics(scores, gold, float(candidate))["f0_5"]
        if f > best_f:
            best, best_f = float(candidate), f
    return best
