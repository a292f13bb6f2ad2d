"""sembed eval poi: precision, recall and F0.5 of POI decisions, and the threshold tuned on a split."""

from __future__ import annotations

from typing import Annotated

import typer

from ...options import Force, Input, Output, Quiet, SkipErrors, Threads, Verbose, finite
from .options import write_report

PoiGoldKey = Annotated[
    str | None,
    typer.Option(
        "--gold-key",
        metavar="KEY",
        show_default=False,
        help="The gold label field (true for a POI). Default: is_poi_gold (where `sembed taste` keeps the input's "
        "is_poi) when the record has it, else is_poi.",
    ),
]
ScoreKey = Annotated[
    str, typer.Option("--score-key", metavar="KEY", help="The score field (a POI when >= the threshold).")
]
PoiThreshold = Annotated[
    float, typer.Option("--threshold", metavar="T", callback=finite, help="The threshold (the paper: 0.5).")
]
TuneSplit = Annotated[
    str | None,
    typer.Option(
        "--tune-split",
        metavar="NAME",
        show_default=False,
        help="Also pick the threshold with the highest F0.5 on the records whose split is NAME (e.g. dev) and report "
        "the others at it too.",
    ),
]
TestSplit = Annotated[
    str | None,
    typer.Option(
        "--test-split",
        metavar="NAME",
        show_default=False,
        help="Report only the records whose split is NAME (e.g. test). Default: all records (but --tune-split's).",
    ),
]
SplitKey = Annotated[str, typer.Option("--split-key", metavar="KEY", help="The field naming a record's split.")]


def poi_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    score_key: ScoreKey = "taste_score",
    gold_key: PoiGoldKey = None,
    threshold: PoiThreshold = 0.5,
    tune_split: TuneSplit = None,
    test_split: TestSplit = None,
    split_key: SplitKey = "split",
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """POI identification: precision, recall and F0.5 of score >= threshold against the gold label.

    Reads every record and keeps its score (taste_score, from `sembed
    taste`), gold label (is_poi_gold or is_poi: true for a POI) and, with
    --tune-split or --test-split, its split. The POI is the positive class;
    F0.5 = 1.25 P R / (0.25 P + R), the POI paper's measure (Zhang et al.,
    section 5: 0.84 for the masked-LM, 0.89 with the triplet loss). Writes
    one JSON object: n, threshold, tp, fp, fn, tn, precision, recall, f0_5,
    accuracy at --threshold; with --tune-split NAME also tuned_threshold
    (the observed score with the highest F0.5 on that split), "tuning" (its
    metrics there) and "at_tuned_threshold" (the reported records at it).

    \b
    Example:
        sembed convert --from gazetteer | sembed taste -m poi-model \\
          | sembed eval poi --tune-split dev --test-split test
    """
    from ...evaluation import poi

    report = poi.evaluate(input, score_key, gold_key, threshold, tune_split, test_split, split_key, skip_errors)
    write_report(report, output, force, input)
    poi.print_report(report)
