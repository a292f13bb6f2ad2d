"""sembed eval sts: correlation of predicted with gold similarity, also of two models on the same pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from ...options import INPUT_HELP, Force, Only, Output, Quiet, Seed, SkipErrors, TextKeys, Threads, Verbose, check_only
from .options import NpyVectors, pair_text_keys, write_report


def _grid(value: str | None) -> str | None:
    if value is not None:
        from ...evaluation.sts import parse_grid

        try:
            parse_grid(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


SimilarityKey = Annotated[
    str | None,
    typer.Option(
        "--similarity-key",
        metavar="KEY",
        show_default=False,
        help="Take the predicted similarity from this field instead of a cosine. Default: the cosine of the "
        "embeddings when the first record has them, otherwise its 'similarity' field.",
    ),
]
GoldKey = Annotated[str, typer.Option("--gold-key", metavar="KEY", help="The gold similarity score field.")]
GroupBy = Annotated[
    str | None,
    typer.Option(
        "--group-by",
        metavar="FIELD",
        show_default=False,
        help="Also report each value of this field on its own (e.g. genre), then all pairs; with --versus, each "
        "value's paired comparison.",
    ),
]
CfGrid = Annotated[
    str | None,
    typer.Option(
        "--cf-grid",
        metavar="START:STOP:STEP",
        callback=_grid,
        show_default=False,
        help="Sweep W_cf (STOP included, or a list: 0,0.2,2) over the parts `embed --keep-parts` wrote: "
        "embedding_basic_a + W * embedding_cf_a against the same for _b (CF-BERT section 5, Table 7).",
    ),
]
PairsFile = Annotated[
    str | None,
    typer.Option(
        "--pairs",
        metavar="FILE",
        show_default=False,
        help="Also write each pair's record to FILE as it is read (JSONL; '-': stdout, the metrics then need -o), "
        "without its vectors, with its similarity; unscored pairs too.",
    ),
]


Inputs = Annotated[
    list[str] | None,
    typer.Argument(
        help=INPUT_HELP + " Several: one a training seed, with --versus (as many) or --versus-key.",
        show_default=False,
        metavar="INPUT",
    ),
]
Versus = Annotated[
    list[str] | None,
    typer.Option(
        "--versus",
        metavar="FILE",
        show_default=False,
        help="Compare with another model: FILE holds the same pairs in the same order, embedded by it (read like the "
        "input); adds their paired difference (input - FILE) with a bootstrap interval. Seeds: one FILE per INPUT, "
        "paired by position (--versus B1 B2 B3 after A1 A2 A3), adding the mean difference with a t interval.",
    ),
]


def spread_versus(params: Sequence[Any], args: list[str]) -> list[str]:
    """`A1 A2 A3 --versus B1 B2 B3` as `A1 A2 A3 --versus B1 --versus B2 --versus B3`: after --versus, as many files
    as INPUTs came before it (so `--versus B A`, B against the input A, reads as it always has)."""
    takes_value = {
        name
        for param in params
        if getattr(param, "param_type_name", None) == "option" and not getattr(param, "is_flag", False)
        for name in param.opts
    }
    spread: list[str] = []
    inputs, i = 0, 0
    while i < len(args):
        arg = args[i]
        if arg == "--versus" and i + 1 < len(args):
            spread += [arg, args[i + 1]]
            i += 2
            while inputs > 1 and i < len(args) and not args[i].startswith("-") and spread.count("--versus") < inputs:
                spread += ["--versus", args[i]]
                i += 1
            continue
        spread.append(arg)
        if arg in takes_value:
            spread += args[i + 1 : i + 2]
            i += 2
            continue
        if arg == "-" or not arg.startswith("-"):
            inputs += 1
        i += 1
    return spread


VersusKey = Annotated[
    str | None,
    typer.Option(
        "--versus-key",
        metavar="NAME",
        show_default=False,
        help="Compare with another model whose vectors the same records hold under NAME_a and NAME_b (as --text-key "
        "derives them), its identity under NAME_model when known.",
    ),
]
Resamples = Annotated[
    int,
    typer.Option(
        "--resamples", min=1, metavar="N", help="Bootstrap resamples of the test pairs for --versus / --versus-key."
    ),
]

# Two models compared over all pairs, and the CF grid's similarity per W, leave no room for these.
ONLY = tuple(
    Only(
        name,
        without=versus,
        message=f"--{versus.replace('_', '-')} compares two models over all pairs; "
        f"leave out --{name.replace('_', '-')}",
    )
    for versus in ("versus", "versus_key")
    for name in ("cf_grid", "pairs", "npy")
) + (
    Only(
        "similarity_key",
        without="cf_grid",
        hint="cf_grid",
        message="--cf-grid sweeps embedding parts; it cannot use --similarity-key",
    ),
    Only("pairs", without="cf_grid", message="--cf-grid gives each pair a similarity per W_cf; leave out --pairs"),
)


def sts_command(
    ctx: typer.Context,
    inputs: Inputs = None,
    output: Output = "-",
    force: Force = False,
    text_keys: TextKeys = None,
    similarity_key: SimilarityKey = None,
    gold_key: GoldKey = "score",
    group_by: GroupBy = None,
    cf_grid: CfGrid = None,
    pairs: PairsFile = None,
    npy: NpyVectors = None,
    versus: Versus = None,
    versus_key: VersusKey = None,
    resamples: Resamples = 1000,
    seed: Seed = 0,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Correlation of predicted with gold similarity: Pearson and Spearman x100.

    Reads every record (the correlation needs them all) and keeps per pair
    only its similarity, gold score and group: the cosine of embedding_a and
    embedding_b (those of --text-key A --text-key B), or a similarity field
    (--similarity-key), against score (--gold-key). Writes one JSON object:
    n, pearson, spearman and their 95% confidence intervals pearson_ci and
    spearman_ci, from the Fisher transformation (NWS paper eq. 11-12:
    tanh(F(r) +- 1.96 / sqrt(n - 3)), applied to rho the same way; null
    when n <= 3). --group-by adds "groups" (per value, in first-seen order);
    a group whose correlation is undefined gets nulls and a warning.

    --cf-grid keeps the ten dot products of each pair's four parts and
    writes "cf_grid" (the metrics for every W_cf) and best_cf_weight (by
    Pearson, as the paper's Table 7), without embedding again.

    A pair without a gold score (no score field, or null: SemEval 2015 and
    2016 leave some pairs unscored, and `sembed convert` writes them without
    one) is left out of the correlation and counted on stderr and under
    "unscored". --pairs FILE writes every pair's record as it is read,
    without its vectors (the embedding... fields but embedding_model), with
    "similarity" (the cosine, or the --similarity-key value), scored or
    not: stdout keeps the one metrics object unless --pairs is '-', which
    writes the pairs there instead and needs -o for the metrics. Not with
    --cf-grid (a similarity per W).

    A vector whose largest absolute value is far from 1 (past 1e100 or
    below 1e-100) is divided by it before its cosine, so no magnitude
    overflows; --npy FILE reads the vectors of `sembed embed --npy FILE`
    (records with embedding_row_a, ...).

    Two models on the same pairs: --versus FILE (the other model's records
    of the same pairs, in the same order: their text and score must agree)
    or --versus-key NAME (its vectors in the same records, NAME_a and
    NAME_b) writes "a" (the input's metrics, as above, with its
    embedding_model), "b" (the other's) and "difference": Pearson and
    Spearman of a minus b, x100, each with a paired bootstrap 95% interval
    (--resamples draws of the test pairs with replacement, the same draw for
    both models, seeded by --seed; the 2.5th and 97.5th percentiles). Each
    side must be of one model, as always; the two may differ, that being
    the point. With --group-by, "groups" holds the same three per value
    of that field (the input's), each group resampled on its own. Not with
    --cf-grid, --pairs or --npy.

    Several training seeds of each model: INPUT A1 A2 A3 --versus B1 B2 B3
    (or --versus once per file; with --versus-key, each INPUT holds both),
    paired by position, all of the same pairs: "seeds" holds each seed's
    report as above (with its "input"), and "over_seeds" the mean of the
    seeds' differences with the 95% Student t interval over them (k - 1
    degrees of freedom), beside each seed's bootstrap interval, and the
    differences themselves (pearson_by_seed, spearman_by_seed).

    Fewer than two pairs, or a constant similarity or score column, leaves
    the correlation undefined: an error.

    \b
    Example:
        sembed convert --from stsb sts-test.csv | sembed embed | sembed eval sts --group-by genre
        sembed convert --from sick SICK_test_annotated.txt | sembed spo \\
          | sembed embed --cf-weight 0.2 --keep-parts | sembed eval sts --cf-grid 0:1:0.1
        sembed convert --from semeval-sts STS.input.answers-forums.txt \\
          | sembed embed --npy forums.npy -o forums.rows.jsonl
        sembed eval sts forums.rows.jsonl --npy forums.npy --pairs forums-pairs.jsonl
        sembed convert --from stsb sts-test.csv | sembed spo -o test.jsonl
        sembed embed test.jsonl --cf-weight 0.2 > cf.jsonl; sembed embed test.jsonl > plain.jsonl
        sembed eval sts cf.jsonl --versus plain.jsonl --resamples 2000
        sembed eval sts cf.1.jsonl cf.2.jsonl cf.3.jsonl --versus sbert.1.jsonl sbert.2.jsonl sbert.3.jsonl
    """
    from ...evaluation import sts

    inputs = inputs or ["-"]
    input = inputs[0]
    if len(inputs) > 1 and not versus and versus_key is None:
        raise typer.BadParameter(
            f"{len(inputs)} INPUTs are seeds of one model: compare them with --versus (one FILE each) or --versus-key",
            param_hint="'INPUT'",
        )
    if versus and len(versus) != len(inputs):
        raise typer.BadParameter(
            f"{len(inputs)} INPUT(s) and {len(versus)} --versus FILE(s): give one of each per seed, paired by position",
            param_hint="'--versus'",
        )
    versus = versus or None
    if versus is not None and versus_key is not None:
        raise typer.BadParameter(
            "give the other model once: --versus FILE or --versus-key NAME", param_hint="'--versus-key'"
        )
    check_only(ctx, ONLY)
    if versus is not None or versus_key is not None:
        if versus is not None and set(versus) & set(inputs):
            raise typer.BadParameter(
                "--versus names the input itself: give the other model's records", param_hint="'--versus'"
            )
        report = sts.evaluate_versus(
            inputs,
            versus,
            versus_key,
            pair_text_keys(text_keys),
            similarity_key,
            gold_key,
            resamples,
            seed,
            skip_errors,
            group_by,
        )
    else:
        if pairs == "-" and output == "-":
            raise typer.BadParameter(
                "--pairs - writes the pairs to stdout: give the metrics a file with -o", param_hint="'--pairs'"
            )
        report = sts.evaluate(
            input,
            pair_text_keys(text_keys),
            similarity_key,
            gold_key,
            group_by,
            sts.parse_grid(cf_grid) if cf_grid is not None else None,
            pairs,
            force,
            npy,
            skip_errors,
        )
    write_report(report, output, force, [*inputs, *(versus or [])])
    sts.print_report(report)
