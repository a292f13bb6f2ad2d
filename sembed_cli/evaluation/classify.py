"""Transfer classification: k-fold cross-validated logistic regression on sentence features.

SentEval's protocol for MR, SUBJ and CR (Conneau & Kiela 2018), which CF-BERT
(section 4.4) also uses for SICK-E: stratified k-fold cross-validation,
shuffled with the seed, a logistic regression trained on k - 1 folds and scored
on the held-out one; the accuracy is the mean over the folds (x100), with its
standard deviation.

The classifier is scikit-learn's LogisticRegression (L-BFGS, multinomial for
more than two classes, deterministic). SentEval picks the inverse L2 strength
C in {0.25, 0.5, 1, 2, 4, 8} by an inner 10-fold search on every training
split (`c=None` does that here); the fixed DEFAULT_C = 1 (scikit-learn's own)
lands within a few tenths of a point of it at a sixtieth of the fits.
Features are not scaled, as in SentEval.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import io
from ..errors import SembedError
from ..io import derived_key
from ..models.model_identity import OneModel
from . import tables
from .records import eval_source, read_all

if TYPE_CHECKING:  # scikit-learn is imported where a classifier is fitted
    from sklearn.linear_model import LogisticRegression

log = logging.getLogger(__name__)

DEFAULT_FOLDS = 10
DEFAULT_C = 1.0
C_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # SentEval's [2**t for t in range(-2, 4)]
MAX_ITER = 2000


@dataclass
class CrossValidation:
    """The outcome of k-fold cross-validation: accuracy per fold and what it was computed on."""

    fold_accuracies: list[float]
    classes: dict[str, int]
    chosen_c: list[float]
    unconverged: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return float(np.mean(self.fold_accuracies))

    @property
    def accuracy_std(self) -> float:
        return float(np.std(self.fold_accuracies))

    def as_dict(self, digits: int = 4) -> dict:
        """The JSON form, accuracies x100."""
        return {
            "n": sum(self.classes.values()),
            "classes": self.classes,
            "folds": len(self.fold_accuracies),
            "accuracy": round(100 * self.accuracy, digits),
            "accuracy_std": round(100 * self.accuracy_std, digits),
            "fold_accuracies": [round(100 * a, digits) for a in self.fold_accuracies],
            "c": self.chosen_c[0] if len(set(self.chosen_c)) == 1 else self.chosen_c,
        }


class LabelledVector:
    """Reads one record's embedding and label; keeps both (the classifier needs the whole vector)."""

    def __init__(self, key: str = "embedding", label_key: str = "label"):
        self.key, self.label_key = key, label_key
        self.dimension = io.Dimension()

    @property
    def name(self) -> str:
        return self.key

    def __call__(self, record: dict) -> tuple[np.ndarray, str]:
        vector = io.vector(record, self.key)
        self.dimension.check({self.key: vector})
        with np.errstate(over="ignore"):  # past float32's range: cross_validate refuses the features, clearly
            return vector.astype(np.float32), io.label(record, self.label_key)


def check_labels(labels: Sequence[str], folds: int) -> tuple[dict[str, int], list[str], int]:
    """Class counts (sorted by label), notes when the data are thin, and the folds to use: fewer than asked when
    even the largest class has fewer records than folds (stratified folds cannot be made then); an error when
    k-fold classification is impossible."""
    counts = Counter(labels)
    n = len(labels)
    if n < folds:
        raise SembedError(
            f"{folds}-fold cross-validation needs at least {folds} records, got {n}",
            "give more records, or fewer folds with --folds",
        )
    if len(counts) < 2:
        only = next(iter(counts))
        raise SembedError(
            f"every one of the {n} records has the label '{only}': nothing to classify",
            "give records of at least two labels",
        )
    largest = max(counts.values())
    notes = []
    if largest < folds:
        if largest < 2:
            raise SembedError(
                f"every label has a single record: {folds}-fold cross-validation needs at least 2 of one label",
                "give more records",
            )
        notes.append(
            f"{folds}-fold cross-validation needs a label with {folds} records, the largest has {largest}: "
            f"{largest} folds instead"
        )
        folds = largest
    notes += [
        f"label '{label}' has only {count} record(s), fewer than the {folds} folds: some test folds lack it"
        for label, count in sorted(counts.items())
        if count < folds
    ]
    return dict(sorted(counts.items())), notes, folds


def cross_validate(
    features: np.ndarray, labels: Sequence[str], folds: int = DEFAULT_FOLDS, seed: int = 0, c: float | None = DEFAULT_C
) -> CrossValidation:
    """Stratified k-fold accuracy of a logistic regression on `features` (n x d) for `labels` (n).

    `c` is the inverse L2 strength; None picks it per training split from
    C_GRID by an inner k-fold search, as SentEval does.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    classes, notes, folds = check_labels(labels, folds)
    index = {label: i for i, label in enumerate(classes)}
    y = np.fromiter((index[label] for label in labels), dtype=np.int64, count=len(labels))
    x = np.asarray(features, dtype=np.float64)
    if not np.isfinite(x).all():  # u * v of huge vectors (SentEval's features) overflows float32
        raise SembedError(
            "the features overflow (a value past float32's range): the vectors are too large",
            "scale the embeddings down",
        )
    splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    accuracies: list[float] = []
    chosen: list[float] = []
    # One BLAS thread: these fits are small, and OpenBLAS threads that spin against other busy processes
    # slow a run many times over on a shared machine.
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        warnings.filterwarnings("ignore", message="The least populated class")  # said once, in notes
        for train, test in splits.split(x, y):
            fold_c = c if c is not None else inner_search(x[train], y[train], folds, seed)
            model = classifier(fold_c, seed).fit(x[train], y[train])
            accuracies.append(float(np.mean(model.predict(x[test]) == y[test])))
            chosen.append(fold_c)
    unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    return CrossValidation(accuracies, classes, chosen, unconverged, notes)


def classifier(c: float, seed: int) -> LogisticRegression:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, solver="lbfgs", max_iter=MAX_ITER, random_state=seed)


def inner_search(x: np.ndarray, y: np.ndarray, folds: int, seed: int) -> float:
    """SentEval's choice of C: the grid value with the best mean accuracy over an inner k-fold split."""
    from sklearn.model_selection import StratifiedKFold

    folds = min(folds, int(np.bincount(y).max()))  # a small training split: as many folds as its largest class
    if folds < 2:
        return DEFAULT_C
    splits = list(StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(x, y))
    scores = []
    for c in C_GRID:
        scores.append(
            np.mean([np.mean(classifier(c, seed).fit(x[tr], y[tr]).predict(x[te]) == y[te]) for tr, te in splits])
        )
    return C_GRID[int(np.argmax(scores))]  # ties go to the stronger regularisation, listed first


# --- eval classify (and eval entailment): the whole task ---------------------------------------------------


def report(
    task: str,
    rows: Sequence[tuple[np.ndarray, str]],
    features: str,
    label_key: str,
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    c: float | None = DEFAULT_C,
) -> dict:
    """The report of a classification task from its kept (features, label) rows: `cross_validate`'s accuracy,
    with what it was computed on. Its notes (thin labels) and unconverged fits are warnings on stderr."""
    x = np.stack([row[0] for row in rows])
    result = cross_validate(x, [row[1] for row in rows], folds, seed, c)
    for note in result.notes:
        log.warning(note)
    if result.unconverged:
        log.warning(f"the logistic regression did not converge in {result.unconverged} fit(s)")
    return {"task": task, "features": features, "label": label_key, **result.as_dict(), "seed": seed}


def evaluate(
    input: str,
    text_key: str = "text",
    label_key: str = "label",
    folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    c: float | None = DEFAULT_C,
    npy: Path | None = None,
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval classify` on the records of `input`: each record's embedding (that of
    `text_key`) and label, classified by `report`."""
    reader = LabelledVector(derived_key(text_key, "embedding"), label_key)
    rows = read_all(eval_source(input, skip_errors, "classify"), reader, OneModel(), npy)
    return report("classify", rows, reader.name, label_key, folds, seed, c)


def print_report(result: dict) -> None:
    """A classification report (`report`) as a table on stderr (none with -q)."""
    from rich.table import Table

    classes = ", ".join(f"{label} {count}" for label, count in result["classes"].items())
    table = Table(
        title=f"{result['task']}: logistic regression on {result['features']}, {result['folds']}-fold cross-validation",
        title_justify="left",
        caption=f"classes: {classes}",
        caption_justify="left",
    )
    for column in ("n", "C", "accuracy", "std"):
        table.add_column(column, justify="right")
    c = result["c"]
    table.add_row(
        str(result["n"]),
        f"{c:g}" if not isinstance(c, list) else "/".join(f"{v:g}" for v in c),
        tables.number(result["accuracy"]),
        tables.number(result["accuracy_std"]),
    )
    tables.show(table)
