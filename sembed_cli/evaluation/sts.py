"""Semantic textual similarity: correlation of predicted similarity with gold scores (`sembed eval sts`).

Each record gives its pair's similarity (`pair_similarity`; for a W_cf sweep,
its CF parts' ten dot products, `cf_sweep`), its gold score and its group; the
report is Pearson's r and Spearman's rho x100 with Fisher 95% intervals, per
group and overall (`statistics`). Two models on the same pairs are compared by
a paired bootstrap. Per record only a few numbers are kept, never the vectors.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import io
from ..errors import SembedError
from ..io import RecordSink, check_number, display_name
from ..models.model_identity import FIELD, OneModel
from . import sts_tables, tables
from .cf_sweep import CfParts, cf_cosines
from .pair_similarity import PairSimilarity
from .records import eval_source, pair_keys, read_all
from .statistics import (
    BOOTSTRAP_RESAMPLES,
    UndefinedCorrelation,
    correlation,
    grouped,
    over_seeds,
    paired_difference,
)

log = logging.getLogger(__name__)


def report(
    kept: np.ndarray,
    gold: np.ndarray,
    similarity_name: str,
    gold_name: str,
    group_by: str | None = None,
    groups: Sequence[str] | None = None,
    grid: Sequence[float] | None = None,
) -> dict:
    """The JSON object of `eval sts`: `kept` holds a similarity per pair, or with a W_cf `grid` the pair's
    ten CF dot products (`CfParts`), and the metrics are those of every W, best_cf_weight the one with
    the highest Pearson (as the paper's Table 7 ranks them). `groups`: each pair's `group_by` value."""
    head = {"task": "sts", "similarity": similarity_name, "gold": gold_name}
    if group_by is not None:
        head["group_by"] = group_by
    if grid is None:
        return {**head, **grouped(kept, gold, groups, similarity_name, gold_name)}
    sweep = [
        {"cf_weight": w, **grouped(cf_cosines(kept, w), gold, groups, f"cosine at W_cf = {w:g}", gold_name)}
        for w in grid
    ]
    best = max(sweep, key=lambda entry: entry["pearson"])
    return {**head, "n": len(gold), "cf_grid": sweep, "best_cf_weight": best["cf_weight"]}


def compare(
    similarity_a: np.ndarray,
    similarity_b: np.ndarray,
    gold: np.ndarray,
    names: tuple[str, str],
    gold_name: str,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    group_by: str | None = None,
    groups: Sequence[str] | None = None,
) -> dict:
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
                result["groups"][name] = paired_report(
                    similarity_a[mask], similarity_b[mask], gold[mask], names, gold_name, resamples, seed
                )
            except UndefinedCorrelation as e:
                result["groups"][name] = {"n": int(mask.sum()), "undefined": e.message}
    return result


def paired_report(
    similarity_a: np.ndarray,
    similarity_b: np.ndarray,
    gold: np.ndarray,
    names: tuple[str, str],
    gold_name: str,
    resamples: int,
    seed: int,
) -> dict:
    """ "a", "b" and "difference" of `compare` over one set of pairs."""
    sides = {
        side: {"similarity": name, **correlation(similarity, gold, name, gold_name).as_dict()}
        for side, name, similarity in (("a", names[0], similarity_a), ("b", names[1], similarity_b))
    }
    return {**sides, "difference": paired_difference(similarity_a, similarity_b, gold, resamples, seed)}


def undefined_groups(result: dict) -> list[str]:
    """One line for each group of a `report` whose correlation was undefined."""
    problems = []
    for entry in result.get("cf_grid", [result]):
        where = f" at W_cf = {entry['cf_weight']:g}" if "cf_weight" in entry else ""
        problems += [
            f"group '{name}'{where}: {metrics['undefined']}"
            for name, metrics in entry.get("groups", {}).items()
            if "undefined" in metrics
        ]
    return problems


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
        raise ValueError(
            f"'{spec}' is not START:STOP:STEP with STEP > 0 and STOP >= START (at most 1000 values), "
            "nor a comma-separated list of numbers"
        ) from None
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


def evaluate(
    input: str,
    text_keys: tuple[str, str] = PAIR_TEXT_KEYS,
    similarity_key: str | None = None,
    gold_key: str = "score",
    group_by: str | None = None,
    cf_grid: Sequence[float] | None = None,
    pairs: str | None = None,
    force: bool = False,
    npy: Path | None = None,
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval sts` on the records of `input`: see `report` (and `parse_grid` for `cf_grid`).

    Each record gives its similarity (`PairSimilarity`, or with `cf_grid` its parts' dot products, `CfParts`),
    gold score and `group_by` value; an unscored pair is left out of the correlation, counted under "unscored".
    `pairs`: a file (or '-') that gets every pair's record as it is read, without its vectors, with its
    similarity (not with `cf_grid`)."""
    if cf_grid is not None:
        (basic_a, basic_b), (cf_a, cf_b) = pair_keys(text_keys, "embedding_basic"), pair_keys(text_keys, "embedding_cf")
        reader: CfParts | PairSimilarity = CfParts((basic_a, cf_a), (basic_b, cf_b))
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
            sink.write(
                {
                    **{k: v for k, v in record.items() if not k.startswith("embedding") or k == FIELD},
                    "similarity": value,
                }
            )
        if gold is None:
            unscored += 1
            return None
        return value, gold, group

    with RecordSink(pairs, force=force, inputs=[input]) if pairs is not None else nullcontext() as sink:
        rows = [row for row in read_all(eval_source(input, skip_errors, "sts"), keep, models, npy) if row is not None]
    if unscored:
        log.warning(unscored_warning(unscored, gold_key))
    if not rows:
        raise no_gold(gold_key)
    kept, gold = np.array([row[0] for row in rows]), np.array([row[1] for row in rows])
    result = report(
        kept, gold, reader.name, gold_key, group_by, [row[2] for row in rows] if group_by else None, cf_grid
    )
    if unscored:
        result["unscored"] = unscored
    for problem in undefined_groups(result):
        log.warning(problem)
    return result


class VersusSide:
    """Reads one model's side of a pair for `evaluate_versus`: (the pair's texts, its gold score or None, its
    similarity). With `identity_field` the vectors are another model's in the same records (--versus-key NAME),
    whose identity `models` checks under NAME_model."""

    def __init__(
        self,
        text_keys: tuple[str, str],
        keys: tuple[str, str],
        similarity_key: str | None,
        gold_key: str,
        identity_field: str | None = None,
        models: OneModel | None = None,
        group_by: str | None = None,
    ):
        self.similarity = PairSimilarity(*keys, similarity_key)
        if identity_field is not None:  # the other model's vectors in the same records: never a similarity field
            self.similarity.decided = True
        self.text_keys, self.gold_key, self.group_by = text_keys, gold_key, group_by
        self.identity_field, self.models = identity_field, models

    def __call__(self, record: dict) -> tuple:
        if self.identity_field is not None and self.models is not None:
            self.models({FIELD: record.get(self.identity_field)})
        text_a, text_b = self.text_keys
        group = io.group(record, self.group_by) if self.group_by else None
        return (
            (record.get(text_a), record.get(text_b)),
            gold_score(record, self.gold_key),
            self.similarity(record),
            group,
        )


def evaluate_versus(
    input: str | Sequence[str],
    versus: str | Sequence[str] | None = None,
    versus_key: str | None = None,
    text_keys: tuple[str, str] = PAIR_TEXT_KEYS,
    similarity_key: str | None = None,
    gold_key: str = "score",
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
    skip_errors: bool = False,
    group_by: str | None = None,
) -> dict:
    """The report of `sembed eval sts --versus FILE | --versus-key NAME`: both models' similarity of every scored
    pair, compared (`compare`). `versus`: the other model's records of the same pairs in the same order (their
    texts and scores must agree); `versus_key`: its vectors in the same records, NAME_a and NAME_b (one of the two).
    `group_by`: also compare per value of this field, as the input's records give it.

    Several training seeds of each model: `input` and `versus` lists of files, paired by position (seed i of A
    against seed i of B; with `versus_key`, each input against the vectors it holds), all of the same pairs. The
    report then holds each seed's comparison under "seeds" and, under "over_seeds", the mean paired difference
    with its Student t interval over the seeds (`statistics.over_seeds`)."""
    if (versus is None) == (versus_key is None):
        raise ValueError("compare with one other model: give versus or versus_key")
    inputs = [input] if isinstance(input, str) else list(input)
    others: list[str | None] = [versus] if isinstance(versus, str) else list(versus or [])
    others = others or [None] * len(inputs)  # --versus-key: each input holds both models
    if len(others) != len(inputs) or not inputs:
        raise ValueError(f"{len(inputs)} input(s) against {len(others)} versus file(s): give one of each per seed")
    settings = VersusSettings(versus_key, text_keys, similarity_key, gold_key, resamples, seed, skip_errors, group_by)
    if len(inputs) == 1:
        return versus_report(*versus_pairs(inputs[0], others[0], settings), settings)
    seeds = [versus_pairs(path, other, settings) for path, other in zip(inputs, others)]  # all read before any figure
    first = [row[:2] for row in seeds[0][0]]
    for number, (path, (rows_a, *_)) in enumerate(zip(inputs, seeds), 1):
        if [row[:2] for row in rows_a] != first:
            raise SembedError(
                f"seed {number} ({display_name(path)}) holds other pairs than seed 1 ({display_name(inputs[0])}): "
                "the seeds must be of the same pairs in the same order"
            )
    reports = [{"input": display_name(path), **versus_report(*seed, settings)} for path, seed in zip(inputs, seeds)]
    head = {key: reports[0][key] for key in ("task", "gold", "group_by") if key in reports[0]}
    return {**head, "seeds": reports, "over_seeds": over_seeds([report["difference"] for report in reports])}


@dataclass(frozen=True)
class VersusSettings:
    """What `evaluate_versus` was given besides the files: the same for every seed."""

    versus_key: str | None
    text_keys: tuple[str, str]
    similarity_key: str | None
    gold_key: str
    resamples: int
    seed: int
    skip_errors: bool
    group_by: str | None


def versus_pairs(
    input: str, versus: str | None, settings: VersusSettings
) -> tuple[list, list, tuple[str, str], dict[str, OneModel]]:
    """The rows of both sides of one comparison, checked to be the same pairs; their names and models."""
    versus_key, text_keys, similarity_key = settings.versus_key, settings.text_keys, settings.similarity_key
    gold_key, skip_errors, group_by = settings.gold_key, settings.skip_errors, settings.group_by
    models = {"a": OneModel(), "b": OneModel()}
    embeddings = pair_keys(text_keys, "embedding")
    texts = pair_keys(text_keys, "text")
    side_a = VersusSide(texts, embeddings, similarity_key, gold_key, group_by=group_by)
    if versus is not None:
        side_b = VersusSide(texts, embeddings, similarity_key, gold_key)
        rows_a = read_all(eval_source(input, skip_errors, "sts"), side_a, models["a"])
        rows_b = read_all(eval_source(versus, skip_errors, "sts"), side_b, models["b"])
        names = (
            f"{display_name(input)}: {side_a.similarity.name}",
            f"{display_name(versus)}: {side_b.similarity.name}",
        )
        if len(rows_a) != len(rows_b):
            raise SembedError(
                f"{display_name(input)} has {len(rows_a)} pairs, {display_name(versus)} "
                f"{len(rows_b)}: --versus needs the same pairs in the same order"
            )
        for number, (row_a, row_b) in enumerate(zip(rows_a, rows_b), 1):
            if row_a[:2] != row_b[:2]:
                raise SembedError(
                    f"pair {number} differs between the two files ({row_a[0]}, score {row_a[1]} "
                    f"against {row_b[0]}, score {row_b[1]}): --versus needs the same pairs in the "
                    "same order"
                )
    else:
        assert versus_key is not None  # one of the two, checked above
        side_b = VersusSide(texts, pair_keys(text_keys, versus_key), None, gold_key, f"{versus_key}_model", models["b"])
        rows = read_all(eval_source(input, skip_errors, "sts"), lambda r: (side_a(r), side_b(r)), models["a"])
        rows_a, rows_b = [row[0] for row in rows], [row[1] for row in rows]
        names = (side_a.similarity.name, side_b.similarity.name)
    return rows_a, rows_b, names, models


def versus_report(
    rows_a: list, rows_b: list, names: tuple[str, str], models: dict[str, OneModel], settings: VersusSettings
) -> dict:
    """`compare` over the scored pairs of `versus_pairs`, with each side's model and the warnings."""
    gold_key, resamples, seed, group_by = settings.gold_key, settings.resamples, settings.seed, settings.group_by
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
        log.warning(
            f"{undefined} of {resamples} bootstrap resamples left out: a correlation was undefined in them "
            "(a column that did not vary)"
        )
    for name, entry in result.get("groups", {}).items():
        if "undefined" in entry:
            log.warning(f"group '{name}': {entry['undefined']}")
    return result


def print_report(result: dict) -> None:
    """The report of `evaluate` or `evaluate_versus` as a table on stderr (none with -q); over seeds, each seed's
    table, then the mean difference over them."""
    if "seeds" in result:
        for report in result["seeds"]:
            tables.show(sts_tables.versus_table(report))
        tables.show(sts_tables.seeds_table(result))
        return
    tables.show(sts_tables.versus_table(result) if "difference" in result else sts_tables.correlation_table(result))
