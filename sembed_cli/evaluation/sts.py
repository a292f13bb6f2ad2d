"""Semantic textual similarity: correlation of predicted similarity with gold scores.

Pearson's r (NWS paper, Samardzhiev et al., eq. 10) and Spearman's rho (the
Pearson correlation of the average ranks, as scipy.stats.spearmanr), both x100,
each with a 95% confidence interval from the Fisher transformation (NWS eq.
11-12). The interval is written for Pearson's r; it is applied to rho the same
way, the usual approximation.

Per record only a few numbers are kept, never the vectors: one similarity (or,
for a W_cf sweep, the ten dot products that give the cosine for every W), the
gold score and the group.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import SembedError
from ..io import RecordSink, RecordSource, check_number, display_name
from ..models.model_identity import FIELD, OneModel
from .. import io
from . import tables
from .records import pair_keys, read_all

log = logging.getLogger(__name__)

FISHER_Z95 = 1.96  # the two-sided 95% normal quantile of NWS eq. 12


class UndefinedCorrelation(SembedError):
    """Fewer than two pairs, or a column that does not vary."""


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """NWS eq. 10: sum((x - mean x)(y - mean y)) / (sqrt(sum (x - mean x)^2) sqrt(sum (y - mean y)^2))."""
    dx, dy = x - x.mean(), y - y.mean()
    dx, dy = io.unit_scaled(dx), io.unit_scaled(dy)  # the same r, without overflow in the sums of squares
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

        return {"n": self.n, "pearson": scaled(self.pearson), "pearson_ci": interval(self.pearson_ci),
                "spearman": scaled(self.spearman), "spearman_ci": interval(self.spearman_ci)}


def correlation(similarity: np.ndarray, gold: np.ndarray, similarity_name: str = "similarity",
                gold_name: str = "gold score") -> Correlation:
    """Pearson and Spearman between two equally long columns; `UndefinedCorrelation` when they cannot be."""
    similarity, gold = np.asarray(similarity, dtype=np.float64), np.asarray(gold, dtype=np.float64)
    n = len(gold)
    if n < 2:
        raise UndefinedCorrelation(f"correlation undefined: {n} pair(s), at least 2 needed")
    for column, name in ((gold, gold_name), (similarity, similarity_name)):
        if np.ptp(column) == 0:
            raise UndefinedCorrelation(f"correlation undefined: every {name} is {column[0]:g} "
                                       f"(a constant column over {n} pairs)")
    r, rho = pearson(similarity, gold), spearman(similarity, gold)
    return Correlation(n, r, rho, fisher_interval(r, n), fisher_interval(rho, n))


def grouped(similarity: np.ndarray, gold: np.ndarray, groups: Sequence[str] | None,
            similarity_name: str = "similarity", gold_name: str = "gold score") -> dict:
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
                result["groups"][name] = {"n": int(mask.sum()), "pearson": None, "pearson_ci": None,
                                          "spearman": None, "spearman_ci": None, "undefined": e.message}
    return result


def report(kept: np.ndarray, gold: np.ndarray, similarity_name: str, gold_name: str, group_by: str | None = None,
           groups: Sequence[str] | None = None, grid: Sequence[float] | None = None) -> dict:
    """The JSON object of `eval sts`: `kept` holds a similarity per pair, or with a W_cf `grid` the pair's
    ten CF dot products (`CfParts`), and the metrics are those of every W, best_cf_weight the one with
    the highest Pearson (as the paper's Table 7 ranks them). `groups`: each pair's `group_by` value."""
    head = {"task": "sts", "similarity": similarity_name, "gold": gold_name}
    if group_by is not None:
        head["group_by"] = group_by
    if grid is None:
        return {**head, **grouped(kept, gold, groups, similarity_name, gold_name)}
    sweep = [{"cf_weight": w, **grouped(cf_cosines(kept, w), gold, groups, f"cosine at W_cf = {w:g}", gold_name)}
             for w in grid]
    best = max(sweep, key=lambda entry: entry["pearson"])
    return {**head, "n": len(gold), "cf_grid": sweep, "best_cf_weight": best["cf_weight"]}


# --- two models on the same pairs ------------------------------------------------------------------------

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


def paired_difference(similarity_a: np.ndarray, similarity_b: np.ndarray, gold: np.ndarray,
                      resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict:
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

    similarity_a, similarity_b, gold = (np.asarray(column, dtype=np.float64)
                                        for column in (similarity_a, similarity_b, gold))
    a, b = correlation(similarity_a, gold), correlation(similarity_b, gold)
    draws = np.random.default_rng(seed).integers(0, len(gold), (resamples, len(gold)))
    differences: dict[str, list[np.ndarray]] = {"pearson": [], "spearman": []}
    for start in range(0, resamples, BOOTSTRAP_CHUNK):
        rows = draws[start:start + BOOTSTRAP_CHUNK]
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


def compare(similarity_a: np.ndarray, similarity_b: np.ndarray, gold: np.ndarray, names: tuple[str, str],
            gold_name: str, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, group_by: str | None = None,
            groups: Sequence[str] | None = None) -> dict:
    """The JSON object of `eval sts --versus`: each model's metrics (`a`, `b`, as `report` writes them) and
    their paired difference a - b (`paired_difference`). `names`: what gives each side's similarity. With
    `groups` (each pair's `group_by` value) the same per group, first-seen order, under "groups"; a group where a
    correlation is undefined gets its n and the reason under "undefined", so the other groups still count."""
    head = {"task": "sts", "gold": gold_name, **({"group_by": group_by} if group_by is not None else {})}
    result = {**head, **paired_report(similarity_a, similarity_b, gold, names, gold_name, resamples, seed)}
    if groups is not None:
        labels = np.asarray(groups, dtype=object)
        result["groups"] = {}
        for name in dict.fromkeys(groups):
            mask = labels == name
            try:
                result["groups"][name] = paired_report(similarity_a[mask], similarity_b[mask], gold[mask], names,
                                                       gold_name, resamples, seed)
            except UndefinedCorrelation as e:
                result["groups"][name] = {"n": int(mask.sum()), "undefined": e.message}
    return result


def paired_report(similarity_a: np.ndarray, similarity_b: np.ndarray, gold: np.ndarray, names: tuple[str, str],
                  gold_name: str, resamples: int, seed: int) -> dict:
    """"a", "b" and "difference" of `compare` over one set of pairs."""
    sides = {side: {"similarity": name, **correlation(similarity, gold, name, gold_name).as_dict()}
             for side, name, similarity in (("a", names[0], similarity_a), ("b", names[1], similarity_b))}
    return {**sides, "difference": paired_difference(similarity_a, similarity_b, gold, resamples, seed)}


def undefined_groups(result: dict) -> list[str]:
    """One line for each group of a `report` whose correlation was undefined."""
    problems = []
    for entry in result.get("cf_grid", [result]):
        where = f" at W_cf = {entry['cf_weight']:g}" if "cf_weight" in entry else ""
        problems += [f"group '{name}'{where}: {metrics['undefined']}"
                     for name, metrics in entry.get("groups", {}).items() if "undefined" in metrics]
    return problems


# --- what one record keeps -------------------------------------------------------------------------


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


# The ten dot products of one pair's CF parts (a, c: side A's basic and cf parts; b, d: side B's), from
# which the cosine of u = a + W c and v = b + W d follows for any W (CF-BERT eq. 1).
AA, AC, CC, BB, BD, DD, AB, AD, CB, CD = range(10)


class CfParts:
    """Reads one record's kept CF parts and keeps their ten dot products, not the vectors."""

    def __init__(self, keys_a: tuple[str, str] = ("embedding_basic_a", "embedding_cf_a"),
                 keys_b: tuple[str, str] = ("embedding_basic_b", "embedding_cf_b")):
        self.keys = (*keys_a, *keys_b)
        self.dimension = io.Dimension()

    @property
    def name(self) -> str:
        basic_a, cf_a, basic_b, cf_b = self.keys
        return f"cosine({basic_a} + W * {cf_a}, {basic_b} + W * {cf_b})"

    def __call__(self, record: dict) -> np.ndarray:
        hint = "run sembed embed --keep-parts first"
        vectors = {key: io.vector(record, key, hint) for key in self.keys}
        self.dimension.check(vectors)
        for key, v in vectors.items():
            io.nonzero(key, float(np.max(np.abs(v))))
        a, c, b, d = vectors.values()
        # the cosine of a + W c and b + W d is the same with each side's parts scaled by one factor: scale them so
        # that the dot products cannot overflow
        peak_a, peak_b = max(np.max(np.abs(a)), np.max(np.abs(c))), max(np.max(np.abs(b)), np.max(np.abs(d)))
        low, high = io.SAFE_MAGNITUDES
        if not (low <= peak_a <= high and low <= peak_b <= high):
            a, c, b, d = a / peak_a, c / peak_a, b / peak_b, d / peak_b
        return np.array([a @ a, a @ c, c @ c, b @ b, b @ d, d @ d, a @ b, a @ d, c @ b, c @ d])


def cf_cosines(dots: np.ndarray, weight: float) -> np.ndarray:
    """cos(a + W c, b + W d) for every row of dots (n x 10), CF-BERT eq. 1 expanded:
    u.v = a.b + W (a.d + c.b) + W^2 c.d;  |u|^2 = a.a + 2W a.c + W^2 c.c;  |v|^2 likewise."""
    w = weight
    uv = dots[:, AB] + w * (dots[:, AD] + dots[:, CB]) + w * w * dots[:, CD]
    uu = dots[:, AA] + 2 * w * dots[:, AC] + w * w * dots[:, CC]
    vv = dots[:, BB] + 2 * w * dots[:, BD] + w * w * dots[:, DD]
    # a + W c can vanish only when the parts point in opposite directions: then the cosine is undefined
    scale = np.minimum(dots[:, AA] + w * w * dots[:, CC], dots[:, BB] + w * w * dots[:, DD])
    degenerate = np.minimum(uu, vv) <= 1e-12 * scale
    if degenerate.any():
        n = int(np.argmax(degenerate)) + 1
        raise SembedError(f"cosine undefined at W_cf = {weight:g}: basic + W * cf is a zero vector in record {n}")
    return uv / np.sqrt(uu * vv)


def parse_grid(spec: str) -> list[float]:
    """W_cf values: START:STOP:STEP (STOP included, e.g. 0:1:0.1 gives 11) or a comma list (0,0.2,2)."""
    try:
        if ":" in spec:
            start, stop, step = (float(part) for part in spec.split(":"))
            if step <= 0 or stop < start:
                raise ValueError
            count = math.floor((stop - start) / step + 1e-9) + 1
            if count > 1000:
                raise ValueError
            values = [round(start + i * step, 10) for i in range(count)]
        else:
            values = [float(part) for part in spec.split(",")]
    except ValueError:
        raise ValueError(f"'{spec}' is not START:STOP:STEP with STEP > 0 and STOP >= START (at most 1000 values), "
                         "nor a comma-separated list of numbers") from None
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"'{spec}' has a value that is not a finite number")
    return values


# --- eval sts: the whole task ----------------------------------------------------------------------------

PAIR_TEXT_KEYS = ("text_a", "text_b")


def gold_score(record: dict, gold_key: str) -> float | None:
    """The pair's gold similarity; None for an unscored pair (no field, or null)."""
    return None if record.get(gold_key) is None else check_number(record, gold_key, "the gold similarity score")


def no_gold(gold_key: str) -> SembedError:
    return SembedError(f"no pair has a gold score ('{gold_key}')", "give the score field with --gold-key")


def unscored_warning(count: int, gold_key: str) -> str:
    return f"{count} pair(s) have no gold score ('{gold_key}'): left out of the correlation"


def evaluate(input: str, text_keys: tuple[str, str] = PAIR_TEXT_KEYS, similarity_key: str | None = None,
             gold_key: str = "score", group_by: str | None = None, cf_grid: Sequence[float] | None = None,
             pairs: str | None = None, force: bool = False, npy: Path | None = None,
             skip_errors: bool = False) -> dict:
    """The report of `sembed eval sts` on the records of `input`: see `report` (and `parse_grid` for `cf_grid`).

    Each record gives its similarity (`PairSimilarity`, or with `cf_grid` its parts' dot products, `CfParts`),
    gold score and `group_by` value; an unscored pair is left out of the correlation, counted under "unscored".
    `pairs`: a file (or '-') that gets every pair's record as it is read, without its vectors, with its
    similarity (not with `cf_grid`)."""
    if cf_grid is not None:
        (basic_a, basic_b), (cf_a, cf_b) = pair_keys(text_keys, "embedding_basic"), pair_keys(text_keys, "embedding_cf")
        reader = CfParts((basic_a, cf_a), (basic_b, cf_b))
    else:
        reader = PairSimilarity(*pair_keys(text_keys, "embedding"), similarity_key)
    models = OneModel(ignore=("cf",) if cf_grid is not None else ())  # the parts are the same for every W_cf
    unscored = 0

    def keep(record: dict) -> tuple | None:
        nonlocal unscored
        value = reader(record)
        group = io.group(record, group_by) if group_by else None
        gold = gold_score(record, gold_key)
        if sink is not None:
            sink.write({**{k: v for k, v in record.items() if not k.startswith("embedding") or k == FIELD},
                        "similarity": value})
        if gold is None:
            unscored += 1
            return None
        return value, gold, group

    with RecordSink(pairs, force=force, inputs=[input]) if pairs is not None else nullcontext() as sink:
        rows = [row for row in read_all(RecordSource(input, skip_errors=skip_errors), keep, models, npy)
                if row is not None]
    if unscored:
        log.warning(unscored_warning(unscored, gold_key))
    if not rows:
        raise no_gold(gold_key)
    kept, gold = np.array([row[0] for row in rows]), np.array([row[1] for row in rows])
    result = report(kept, gold, reader.name, gold_key, group_by, [row[2] for row in rows] if group_by else None,
                    cf_grid)
    if unscored:
        result["unscored"] = unscored
    for problem in undefined_groups(result):
        log.warning(problem)
    return result


class VersusSide:
    """Reads one model's side of a pair for `evaluate_versus`: (the pair's texts, its gold score or None, its
    similarity). With `identity_field` the vectors are another model's in the same records (--versus-key NAME),
    whose identity `models` checks under NAME_model."""

    def __init__(self, text_keys: tuple[str, str], keys: tuple[str, str], similarity_key: str | None, gold_key: str,
                 identity_field: str | None = None, models: OneModel | None = None, group_by: str | None = None):
        self.similarity = PairSimilarity(*keys, similarity_key)
        if identity_field is not None:  # the other model's vectors in the same records: never a similarity field
            self.similarity.decided = True
        self.text_keys, self.gold_key, self.group_by = text_keys, gold_key, group_by
        self.identity_field, self.models = identity_field, models

    def __call__(self, record: dict) -> tuple:
        if self.identity_field is not None:
            self.models({FIELD: record.get(self.identity_field)})
        text_a, text_b = self.text_keys
        group = io.group(record, self.group_by) if self.group_by else None
        return ((record.get(text_a), record.get(text_b)), gold_score(record, self.gold_key), self.similarity(record),
                group)


def evaluate_versus(input: str, versus: str | None = None, versus_key: str | None = None,
                    text_keys: tuple[str, str] = PAIR_TEXT_KEYS, similarity_key: str | None = None,
                    gold_key: str = "score", resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                    skip_errors: bool = False, group_by: str | None = None) -> dict:
    """The report of `sembed eval sts --versus FILE | --versus-key NAME`: both models' similarity of every scored
    pair, compared (`compare`). `versus`: the other model's records of the same pairs in the same order (their
    texts and scores must agree); `versus_key`: its vectors in the same records, NAME_a and NAME_b (one of the two).
    `group_by`: also compare per value of this field, as the input's records give it."""
    if (versus is None) == (versus_key is None):
        raise ValueError("compare with one other model: give versus or versus_key")
    models = {"a": OneModel(), "b": OneModel()}
    embeddings = pair_keys(text_keys, "embedding")
    texts = pair_keys(text_keys, "text")
    side_a = VersusSide(texts, embeddings, similarity_key, gold_key, group_by=group_by)
    if versus is not None:
        side_b = VersusSide(texts, embeddings, similarity_key, gold_key)
        rows_a = read_all(RecordSource(input, skip_errors=skip_errors), side_a, models["a"])
        rows_b = read_all(RecordSource(versus, skip_errors=skip_errors), side_b, models["b"])
        names = (f"{display_name(input)}: {side_a.similarity.name}",
                 f"{display_name(versus)}: {side_b.similarity.name}")
        if len(rows_a) != len(rows_b):
            raise SembedError(f"{display_name(input)} has {len(rows_a)} pairs, {display_name(versus)} "
                              f"{len(rows_b)}: --versus needs the same pairs in the same order")
        for number, (row_a, row_b) in enumerate(zip(rows_a, rows_b), 1):
            if row_a[:2] != row_b[:2]:
                raise SembedError(f"pair {number} differs between the two files ({row_a[0]}, score {row_a[1]} "
                                  f"against {row_b[0]}, score {row_b[1]}): --versus needs the same pairs in the "
                                  "same order")
    else:
        side_b = VersusSide(texts, pair_keys(text_keys, versus_key), None, gold_key, f"{versus_key}_model",
                            models["b"])
        rows = read_all(RecordSource(input, skip_errors=skip_errors), lambda r: (side_a(r), side_b(r)), models["a"])
        rows_a, rows_b = [row[0] for row in rows], [row[1] for row in rows]
        names = (side_a.similarity.name, side_b.similarity.name)
    scored = [(a[1], a[2], b[2], a[3]) for a, b in zip(rows_a, rows_b) if a[1] is not None]
    if len(scored) < len(rows_a):
        log.warning(unscored_warning(len(rows_a) - len(scored), gold_key))
    if not scored:
        raise no_gold(gold_key)
    gold, similarity_a, similarity_b = (np.array(column) for column in list(zip(*scored))[:3])
    groups = [row[3] for row in scored] if group_by is not None else None
    result = compare(similarity_a, similarity_b, gold, names, gold_key, resamples, seed, group_by, groups)
    for side in ("a", "b"):
        identity = models[side].identity
        for entry in (result, *result.get("groups", {}).values()):
            if side in entry:
                entry[side][FIELD] = None if identity is None else str(identity)
    if len(scored) < len(rows_a):
        result["unscored"] = len(rows_a) - len(scored)
    undefined = result["difference"].get("undefined_resamples")
    if undefined:
        log.warning(f"{undefined} of {resamples} bootstrap resamples left out: a correlation was undefined in them "
                     "(a column that did not vary)")
    for name, entry in result.get("groups", {}).items():
        if "undefined" in entry:
            log.warning(f"group '{name}': {entry['undefined']}")
    return result


def print_report(result: dict) -> None:
    """The report of `evaluate` or `evaluate_versus` as a table on stderr (none with -q)."""
    tables.show(versus_table(result) if "difference" in result else correlation_table(result))


def correlation_table(result: dict):
    """One row per group (and 'all'), one block of rows per W_cf of a sweep."""
    from rich.table import Table

    grid = result.get("cf_grid")
    table = Table(title=f"STS: {result['similarity']} vs {result['gold']} (x100, Fisher 95% CI)", title_justify="left")
    if grid is not None:
        table.add_column("W_cf", justify="right")
    if "groups" in (grid[0] if grid else result):
        table.add_column("group")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right")
    for entry in grid or [result]:
        lead = [f"{entry['cf_weight']:g}"] if grid is not None else []
        rows = [*entry.get("groups", {}).items(), ("all", entry)] if "groups" in entry else [(None, entry)]
        for position, (name, m) in enumerate(rows):
            # a rule above each 'all' row, and below it when several W_cf blocks follow
            table.add_row(*lead, *([name] if name is not None else []), *tables.correlation_cells(m),
                          end_section=len(rows) > 1 and (position == len(rows) - 2 or (grid is not None and name == "all")))
    return table


def versus_table(result: dict):
    """a, b and a - b, one row each; with groups, those three rows per group, then over all pairs."""
    from rich.table import Table

    difference = result["difference"]
    grouped_rows = "groups" in result
    table = Table(title=f"STS: two models vs {result['gold']} (x100; a, b: Fisher 95% CI; a - b: "
                        f"{difference['interval']}, {difference['resamples']} resamples)", title_justify="left")
    table.add_column("", no_wrap=True)
    if grouped_rows:
        tables.add_name_column(table, "group")
    tables.add_name_column(table, "model")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right", no_wrap=True)
    blocks = [*result.get("groups", {}).items(), ("all", result)] if grouped_rows else [(None, result)]
    for name, entry in blocks:
        group = [name] if grouped_rows else []
        if "undefined" in entry:
            table.add_row("", *group, entry["undefined"], str(entry["n"]), "-", "-", "-", "-",
                          end_section=True)
            continue
        for position, side in enumerate(("a", "b")):
            m = entry[side]
            table.add_row(side, *(group if position == 0 else [""] * len(group)),
                          m.get("embedding_model") or m["similarity"], *tables.correlation_cells(m))
        change = entry["difference"]
        table.add_row("a - b", *[""] * len(group), "", str(change["n"]), f"{change['pearson']:+.2f}",
                      tables.interval(change["pearson_ci"]), f"{change['spearman']:+.2f}",
                      tables.interval(change["spearman_ci"]), end_section=grouped_rows)
    return table
