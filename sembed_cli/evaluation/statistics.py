"""Correlations and their intervals: Pearson, Spearman, the Fisher interval, and a paired bootstrap of two models.

Pearson's r (NWS paper, Samardzhiev et al., eq. 10) and Spearman's rho (the
Pearson correlation of the average ranks, as scipy.stats.spearmanr), both x100
in reports, each with a 95% confidence interval from the Fisher transformation
(NWS eq. 11-12). The interval is written for Pearson's r; it is applied to rho
the same way, the usual approximation. Two models scored on the same pairs are
compared by a paired bootstrap (Efron & Tibshirani 1993); the same comparison
repeated over training seeds by the Student t interval of the mean paired
difference (`t_interval`, `over_seeds`), which the reproductions' reports
(examples/verdict.py) use too.

`eval sts` reports these; `eval salience` correlates with human norms and
`eval poi` resamples its records the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import SembedError
from ..io import unit_scaled

FISHER_Z95 = 1.96  # the two-sided 95% normal quantile of NWS eq. 12


class UndefinedCorrelation(SembedError):
    """Fewer than two pairs, or a column that does not vary."""


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """NWS eq. 10: sum((x - mean x)(y - mean y)) / (sqrt(sum (x - mean x)^2) sqrt(sum (y - mean y)^2))."""
    dx, dy = x - x.mean(), y - y.mean()
    dx, dy = unit_scaled(dx), unit_scaled(dy)  # the same r, without overflow in the sums of squares
    r = float(dx @ dy / math.sqrt(float(dx @ dx) * float(dy @ dy)))
    return max(-1.0, min(1.0, r))  # rounding can step past +-1, where eq. 11 is undefined


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: Pearson's r of the ranks, tied values sharing their average rank."""
    from scipy.stats import rankdata

    return pearson(rankdata(x), rankdata(y))


def fisher_interval(r: float, n: int) -> tuple[float, float] | None:
    """The 95% confidence interval of a correlation r over n pairs, NWS eq. 11-12.

    eq. 11: F(r) = 1/2 log((1 + r) / (1 - r));  eq. 12: tanh(F(r) +- 1.96 / sqrt(n - 3)).
    None when n <= 3, where eq. 12 is undefined; [r, r] for a perfect correlation.
    """
    if n <= 3:
        return None
    if abs(r) >= 1.0:
        return (r, r)
    f = 0.5 * math.log((1 + r) / (1 - r))  # eq. 11
    half = FISHER_Z95 / math.sqrt(n - 3)  # eq. 12
    return (math.tanh(f - half), math.tanh(f + half))


@dataclass(frozen=True)
class Correlation:
    """Pearson's r and Spearman's rho (as fractions, not x100) with their eq. 12 intervals."""

    n: int
    pearson: float
    spearman: float
    pearson_ci: tuple[float, float] | None
    spearman_ci: tuple[float, float] | None

    def as_dict(self, digits: int = 4) -> dict:
        """The JSON form: correlations and intervals x100, as STS results are reported."""

        def scaled(value: float) -> float:
            return round(100 * value, digits)

        def interval(ci: tuple[float, float] | None) -> list[float] | None:
            return None if ci is None else [scaled(ci[0]), scaled(ci[1])]

        return {
            "n": self.n,
            "pearson": scaled(self.pearson),
            "pearson_ci": interval(self.pearson_ci),
            "spearman": scaled(self.spearman),
            "spearman_ci": interval(self.spearman_ci),
        }


def correlation(
    similarity: np.ndarray, gold: np.ndarray, similarity_name: str = "similarity", gold_name: str = "gold score"
) -> Correlation:
    """Pearson and Spearman between two equally long columns; `UndefinedCorrelation` when they cannot be."""
    similarity, gold = np.asarray(similarity, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    n = len(gold)
    if n < 2:
        raise UndefinedCorrelation(f"correlation undefined: {n} pair(s), at least 2 needed")
    for column, name in ((gold, gold_name), (similarity, similarity_name)):
        if np.ptp(column) == 0:
            raise UndefinedCorrelation(
                f"correlation undefined: every {name} is {column[0]:g} (a constant column over {n} pairs)"
            )
    r, rho = pearson(similarity, gold), spearman(similarity, gold)
    return Correlation(n, r, rho, fisher_interval(r, n), fisher_interval(rho, n))


def grouped(
    similarity: np.ndarray,
    gold: np.ndarray,
    groups: Sequence[str] | None,
    similarity_name: str = "similarity",
    gold_name: str = "gold score",
) -> dict:
    """Metrics over all pairs, and with `groups` per group (first-seen order) under "groups".

    Over all pairs an undefined correlation is an error; in one group it gives
    null metrics and the reason under "undefined", so the other groups still count.
    """
    result = correlation(similarity, gold, similarity_name, gold_name).as_dict()
    if groups is not None:
        names = np.asarray(groups, dtype=object)
        result["groups"] = {}
        for name in dict.fromkeys(groups):
            mask = names == name
            try:
                result["groups"][name] = correlation(similarity[mask], gold[mask], similarity_name, gold_name).as_dict()
            except UndefinedCorrelation as e:
                result["groups"][name] = {
                    "n": int(mask.sum()),
                    "pearson": None,
                    "pearson_ci": None,
                    "spearman": None,
                    "spearman_ci": None,
                    "undefined": e.message,
                }
    return result


BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_CHUNK = 100  # resamples ranked at a time: a few MB per array even for SICK's 4,927 pairs
INTERVAL = "paired bootstrap over the test pairs, 95% percentile interval"


def rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r (NWS eq. 10) of every row of x with the same row of y; NaN where a row does not vary."""
    dx, dy = x - x.mean(axis=1, keepdims=True), y - y.mean(axis=1, keepdims=True)
    for d in (dx, dy):  # one scale per row, as `pearson`: the same r, without overflow in the sums of squares
        peak = np.max(np.abs(d), axis=1, keepdims=True)
        np.divide(d, peak, out=d, where=peak > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.einsum("ij,ij->i", dx, dy) / np.sqrt(np.einsum("ij,ij->i", dx, dx) * np.einsum("ij,ij->i", dy, dy))
    return np.clip(r, -1.0, 1.0)


def paired_difference(
    similarity_a: np.ndarray,
    similarity_b: np.ndarray,
    gold: np.ndarray,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> dict:
    """Pearson and Spearman of A minus those of B over the same pairs (x100), each with a paired bootstrap 95%
    interval (Efron & Tibshirani 1993, the percentile interval).

    The resamples are the rows of `numpy.random.default_rng(seed).integers(0, n, (resamples, n))`: n pairs
    drawn with replacement, the same draw for both models, so each resample compares them on one set of pairs
    and what the pairs share (how hard they are) cancels. The interval is the 2.5th and 97.5th percentile
    (numpy's linear interpolation) of the resampled differences; the point figure is the difference over all
    pairs. A resample where either correlation is undefined (a column that does not vary, likely only with a
    handful of pairs) is left out and counted under "undefined_resamples"; the interval is null when all are.
    """
    from scipy.stats import rankdata

    similarity_a, similarity_b, gold = (
        np.asarray(column, dtype=np.float64) for column in (similarity_a, similarity_b, gold)
    )
    a, b = correlation(similarity_a, gold), correlation(similarity_b, gold)
    draws = np.random.default_rng(seed).integers(0, len(gold), (resamples, len(gold)))
    differences: dict[str, list[np.ndarray]] = {"pearson": [], "spearman": []}
    for start in range(0, resamples, BOOTSTRAP_CHUNK):
        rows = draws[start : start + BOOTSTRAP_CHUNK]
        x_a, x_b, y = similarity_a[rows], similarity_b[rows], gold[rows]
        differences["pearson"].append(rowwise_pearson(x_a, y) - rowwise_pearson(x_b, y))
        x_a, x_b, y = (rankdata(column, axis=1) for column in (x_a, x_b, y))
        differences["spearman"].append(rowwise_pearson(x_a, y) - rowwise_pearson(x_b, y))
    result = {"n": len(gold), "of": "a - b"}
    undefined = 0
    for name, point in (("pearson", a.pearson - b.pearson), ("spearman", a.spearman - b.spearman)):
        spread = np.concatenate(differences[name])
        defined = spread[~np.isnan(spread)]
        undefined = max(undefined, len(spread) - len(defined))
        ci = None if not len(defined) else [round(100 * float(q), 4) for q in np.percentile(defined, [2.5, 97.5])]
        result[name], result[f"{name}_ci"] = round(100 * point, 4), ci
    result.update({"interval": INTERVAL, "resamples": resamples, "seed": seed})
    if undefined:
        result["undefined_resamples"] = undefined
    return result


T_INTERVAL = "95% t interval over seeds (mean ± t(0.975, k − 1) · sd / √k, k seeds; differences paired by seed)"


def t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% Student t interval of the mean of `values` (k - 1 degrees of freedom); None for fewer than 2."""
    import statistics

    from scipy.stats import t

    if len(values) < 2:
        return None
    mean = statistics.mean(values)
    half = float(t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half


def over_seeds(differences: Sequence[dict]) -> dict:
    """The mean paired difference over seeds, Pearson and Spearman (x100), each with its `t_interval`: from each
    seed's `paired_difference` (the same pairs, seed i of one model against seed i of the other), as reported."""
    result: dict = {"seeds": len(differences), "of": differences[0]["of"] if differences else "a - b"}
    for name in ("pearson", "spearman"):
        values = [float(difference[name]) for difference in differences]
        interval = t_interval(values)
        result[name] = round(sum(values) / len(values), 4)
        result[f"{name}_ci"] = None if interval is None else [round(bound, 4) for bound in interval]
        result[f"{name}_by_seed"] = values
    result["interval"] = T_INTERVAL
    return result
