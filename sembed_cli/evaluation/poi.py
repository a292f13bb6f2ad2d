"""POI identification metrics: precision, recall and F0.5 of "is a POI" predictions, and the best threshold.

The POI paper (Zhang et al., "BERT has a Mouth, and it can Taste", section 5)
reports F0.5 (precision weighted over recall: a wrong POI is worse than a
missed one) with a taste threshold of 0.5. F_beta = (1 + beta^2) P R /
(beta^2 P + R), beta = 0.5; the POI is the positive class.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_number, json_type
from . import tables
from .records import read_all
from .statistics import BOOTSTRAP_CHUNK, BOOTSTRAP_RESAMPLES

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
    f_beta = float(f_beta_of_counts(tp, fp, fn))
    return {
        "threshold": round(float(threshold), 6),
        "n": len(gold),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f0_5": round(f_beta, 4),
        "accuracy": round((tp + tn) / len(gold), 4) if len(gold) else 0.0,
    }


def best_threshold(scores: np.ndarray, gold: np.ndarray) -> float:
    """The threshold among the observed scores with the highest F0.5 (the lowest such on a tie)."""
    best, best_f = 0.0, -1.0
    for candidate in np.unique(scores):
        f = metrics(scores, gold, float(candidate))["f0_5"]
        if f > best_f:
            best, best_f = float(candidate), f
    return best


def f_beta_of_counts(tp: ArrayLike, fp: ArrayLike, fn: ArrayLike) -> np.ndarray:
    """F0.5 from counts (numbers, or arrays of them: one per resample), 0 where precision and recall are both 0."""
    tp, fp, fn = (np.asarray(x, dtype=np.float64) for x in (tp, fp, fn))
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=tp + fp > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=tp + fn > 0)
    denominator = BETA**2 * precision + recall
    return np.divide((1 + BETA**2) * precision * recall, denominator, out=np.zeros_like(tp), where=denominator > 0)


def f_beta_of(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """F0.5 of boolean predictions against gold along the last axis (a row per resample, or one set of records)."""
    return f_beta_of_counts((predicted & gold).sum(-1), (predicted & ~gold).sum(-1), (~predicted & gold).sum(-1))


def paired_f_difference(
    predicted_a: np.ndarray,
    predicted_b: np.ndarray,
    gold: np.ndarray,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> dict:
    """F0.5 of predictions A minus that of predictions B on the same records, with a paired bootstrap 95% interval
    (the percentile interval, as evaluation.statistics.paired_difference: the records drawn with replacement by
    `numpy.random.default_rng(seed)`, the same draw for both)."""
    predicted_a, predicted_b, gold = (np.asarray(x, dtype=bool) for x in (predicted_a, predicted_b, gold))
    draws = np.random.default_rng(seed).integers(0, len(gold), (resamples, len(gold)))
    spread = np.concatenate(
        [
            f_beta_of(predicted_a[rows], gold[rows]) - f_beta_of(predicted_b[rows], gold[rows])
            for rows in np.array_split(draws, range(BOOTSTRAP_CHUNK, resamples, BOOTSTRAP_CHUNK))
        ]
    )
    point = f_beta_of(predicted_a, gold) - f_beta_of(predicted_b, gold)
    low, high = np.percentile(spread, [2.5, 97.5])
    return {
        "n": len(gold),
        "of": "a - b",
        "f0_5": round(float(point), 4),
        "f0_5_ci": [round(float(low), 4), round(float(high), 4)],
        "interval": "paired bootstrap over the test records, 95% percentile interval",
        "resamples": resamples,
        "seed": seed,
    }


# --- eval poi: the whole task ------------------------------------------------------------------------------


def report(
    rows: Sequence[tuple[float, bool, object]],
    score_key: str = "taste_score",
    threshold: float = 0.5,
    tune_split: str | None = None,
    test_split: str | None = None,
) -> dict:
    """The report of `sembed eval poi` from each record's (score, gold label, split): `metrics` at `threshold` over
    the records of `test_split` (all records but `tune_split`'s without one); with `tune_split` also the threshold
    with the best F0.5 on that split's records (`best_threshold`), its metrics there ("tuning") and the reported
    records' at it ("at_tuned_threshold")."""

    def columns(chosen: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
        return np.array([r[0] for r in chosen], dtype=float), np.array([r[1] for r in chosen], dtype=bool)

    reported = [
        r for r in rows if (test_split is None or r[2] == test_split) and (tune_split is None or r[2] != tune_split)
    ]
    if not reported:
        raise SembedError(f"no records of split '{test_split}' to report" if test_split else "no records to report")
    scores, gold = columns(reported)
    result = {"score": score_key, **metrics(scores, gold, threshold)}
    if test_split:
        result["split"] = test_split
    if tune_split:
        tuning = [r for r in rows if r[2] == tune_split]
        if not tuning:
            raise SembedError(f"no records of split '{tune_split}' to tune the threshold on")
        tune_scores, tune_gold = columns(tuning)
        best = best_threshold(tune_scores, tune_gold)
        result.update(
            {
                "tune_split": tune_split,
                "tuned_threshold": round(best, 6),
                "tuning": metrics(tune_scores, tune_gold, best),
                "at_tuned_threshold": metrics(scores, gold, best),
            }
        )
    return result


def evaluate(
    input: str,
    score_key: str = "taste_score",
    gold_key: str | None = None,
    threshold: float = 0.5,
    tune_split: str | None = None,
    test_split: str | None = None,
    split_key: str = "split",
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval poi` on the records of `input` (`report`). `gold_key`: the gold label's field;
    None: is_poi_gold (where `sembed taste` keeps the input's is_poi) when the record has it, else is_poi."""

    def keep(record: dict) -> tuple:
        key = gold_key or ("is_poi_gold" if "is_poi_gold" in record else "is_poi")
        split = record.get(split_key) if (tune_split or test_split) else None
        return score(record, score_key), gold_label(record, key), split

    rows = read_all(RecordSource(input, skip_errors=skip_errors), keep)
    return report(rows, score_key, threshold, tune_split, test_split)


def print_report(result: dict) -> None:
    """The metrics at the threshold (and at the tuned one, and on the tuning split) as a table on stderr."""
    from rich.table import Table

    table = Table(title=f"POI identification: {result['score']} >= threshold (POI = positive)", title_justify="left")
    for column in ("records", "threshold", "n", "precision", "recall", "F0.5", "accuracy"):
        table.add_column(column, justify="right")
    rows = [(result.get("split", "all"), result)]
    if "tuned_threshold" in result:
        rows += [
            (f"{result['tune_split']} (tuning)", result["tuning"]),
            (result.get("split", "all"), result["at_tuned_threshold"]),
        ]
    for name, m in rows:
        table.add_row(
            name,
            f"{m['threshold']:g}",
            str(m["n"]),
            tables.number(m["precision"], 3),
            tables.number(m["recall"], 3),
            tables.number(m["f0_5"], 3),
            tables.number(m["accuracy"], 3),
        )
    tables.show(table)
