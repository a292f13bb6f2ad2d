"""sembed eval: metrics over a whole record stream: one JSON object on stdout, a table on stderr."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from contextlib import nullcontext
from typing import Annotated, Optional, TypeVar

import typer

from .. import console
from ..errors import SembedError
from ..io import RecordSink, RecordSource, check_number, derived_key, display_name
from ..options import Force, Input, Output, Quiet, Seed, SkipErrors, TextKeys, Threads, Verbose

T = TypeVar("T")

eval_app = typer.Typer(
    help="Evaluate: STS correlation, entailment and transfer classification of embeddings; POI taste decisions; "
         "salience tables against word ratings; structure in word vectors.\n\n"
         "Each command reads every record (a metric needs them all, so nothing streams out) but keeps only what "
         "it needs, and writes one JSON object of metrics to stdout and a table to stderr (-q: no table).",
    no_args_is_help=True, rich_markup_mode=None)

EVAL_EPILOG = ("Bad records stop with 'error: FILE:LINE: what is wrong' and exit 1 "
               "(--skip-errors: leave them out, counted on stderr).")
VECTORS_EPILOG = (EVAL_EPILOG + " Vectors of two models are never compared: every record's embedding_model (which "
                  "`sembed embed` writes) must name the same model, and a record with one after records without "
                  "(or the reverse) is refused; records none of which has the field (older files, vectors from "
                  "elsewhere) are accepted as they are.")


# --- command-specific options ------------------------------------------------------------------------

def _grid(value: Optional[str]) -> Optional[str]:
    if value is not None:
        from ..evaluation.sts import parse_grid

        try:
            parse_grid(value)
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
    return value


def _inverse_strength(value: str) -> str:
    if value != "auto":
        try:
            if not float(value) > 0:
                raise ValueError
        except ValueError:
            raise typer.BadParameter(f"'{value}' is neither a positive number nor 'auto'") from None
    return value


SimilarityKey = Annotated[Optional[str], typer.Option(
    "--similarity-key", metavar="KEY", show_default=False,
    help="Take the predicted similarity from this field instead of a cosine. Default: the cosine of the "
         "embeddings when the first record has them, otherwise its 'similarity' field.")]
GoldKey = Annotated[str, typer.Option("--gold-key", metavar="KEY", help="The gold similarity score field.")]
GroupBy = Annotated[Optional[str], typer.Option(
    "--group-by", metavar="FIELD", show_default=False,
    help="Also report each value of this field on its own (e.g. genre), then all pairs.")]
CfGrid = Annotated[Optional[str], typer.Option(
    "--cf-grid", metavar="START:STOP:STEP", callback=_grid, show_default=False,
    help="Sweep W_cf (STOP included, or a list: 0,0.2,2) over the parts `embed --keep-parts` wrote: "
         "embedding_basic_a + W * embedding_cf_a against the same for _b (CF-BERT section 5, Table 7).")]
LabelKey = Annotated[str, typer.Option("--label-key", metavar="KEY", help="The gold label field (a string or an integer).")]
Folds = Annotated[int, typer.Option("--folds", min=2, metavar="K", help="Cross-validation folds.")]
InverseStrength = Annotated[str, typer.Option(
    "--c", metavar="C|auto", callback=_inverse_strength,
    help="Inverse L2 strength of the logistic regression; auto: pick it from 0.25, 0.5, 1, 2, 4, 8 on every "
         "training split by an inner search with as many folds, as SentEval does (about 60 times slower).")]
FeatureKind = Annotated[str, typer.Option(
    "--features", metavar="abs-diff|senteval",
    help="abs-diff: |u - v| (CF-BERT section 4.4); senteval: (|u - v|, u * v) as SentEval's SICK-E.")]


NpyVectors = Annotated[Optional[Path], typer.Option(
    "--npy", metavar="FILE", show_default=False,
    help="Read the vectors from this float32 matrix, which `sembed embed --npy FILE` wrote: each record names its "
         "rows (embedding_row_a, ...), and FILE.json, when present, names the model (it must agree with the "
         "records' embedding_model). The matrix is read with the records: give a finished one "
         "(`embed --npy FILE -o rows.jsonl` first), not a pipe from the embed still writing it.")]


# --- shared machinery --------------------------------------------------------------------------------

def read_all(source: RecordSource, keep: Callable[[dict], T], models=None, npy: Path | None = None) -> list[T]:
    """What `keep` takes from every record; a BadRecord it raises is reported at FILE:LINE (or skipped).

    `models` (a model_identity.OneModel) refuses records whose vectors are of another model than the first's;
    `npy`: the vectors are rows of that `embed --npy` matrix (vector_rows.RowVectors)."""
    from ..vector_rows import RowVectors

    rows = RowVectors(npy) if npy is not None else None
    kept: list[T] = []

    def take(record: dict) -> None:
        if rows is not None:
            rows.attach(record)
        if models is not None:
            models(record)
            if rows is not None:
                models.agree(rows.identity, f"{rows.path}.json names vectors")
        kept.append(keep(record))

    for _ in console.progress(source.checked(take), "reading records"):
        pass
    summary = source.summary()
    if summary:
        console.warn(summary)
    if not kept:
        raise SembedError(f"no usable records in {source.rejects.name}")
    return kept


def pair_keys(text_keys: Optional[list[str]], name: str) -> tuple[str, str]:
    """The two fields derived from the pair's text keys (text_a, text_b unless --text-key is given twice)."""
    keys = text_keys or ["text_a", "text_b"]
    if len(keys) != 2:
        raise typer.BadParameter(f"a pair needs exactly two --text-key options, got {len(keys)}", param_hint="--text-key")
    return derived_key(keys[0], name), derived_key(keys[1], name)


def write_report(report: dict, output: str, force: bool, input: str) -> None:
    with RecordSink(output, force=force, inputs=[input]) as sink:
        sink.write(report)


def show(table) -> None:
    """The human-readable table, on stderr unless -q."""
    if not console.state.quiet:
        console.console.print(table)


def _fmt(value: Optional[float], digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(ci: Optional[list[float]]) -> str:
    return "-" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def sts_table(report: dict):
    from rich.table import Table

    grid = report.get("cf_grid")
    table = Table(title=f"STS: {report['similarity']} vs {report['gold']} (x100, Fisher 95% CI)", title_justify="left")
    if grid is not None:
        table.add_column("W_cf", justify="right")
    if "groups" in (grid[0] if grid else report):
        table.add_column("group")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right")
    for entry in grid or [report]:
        lead = [f"{entry['cf_weight']:g}"] if grid is not None else []
        rows = [*entry.get("groups", {}).items(), ("all", entry)] if "groups" in entry else [(None, entry)]
        for position, (name, m) in enumerate(rows):
            cells = [str(m["n"]), _fmt(m["pearson"]), _interval(m["pearson_ci"]), _fmt(m["spearman"]),
                     _interval(m["spearman_ci"])]
            # a rule above each 'all' row, and below it when several W_cf blocks follow
            table.add_row(*lead, *([name] if name is not None else []), *cells,
                          end_section=len(rows) > 1 and (position == len(rows) - 2 or (grid is not None and name == "all")))
    return table


def accuracy_table(report: dict):
    from rich.table import Table

    classes = ", ".join(f"{label} {count}" for label, count in report["classes"].items())
    table = Table(title=f"{report['task']}: logistic regression on {report['features']}, "
                        f"{report['folds']}-fold cross-validation", title_justify="left",
                  caption=f"classes: {classes}", caption_justify="left")
    for column in ("n", "C", "accuracy", "std"):
        table.add_column(column, justify="right")
    c = report["c"]
    table.add_row(str(report["n"]), f"{c:g}" if not isinstance(c, list) else "/".join(f"{v:g}" for v in c),
                  _fmt(report["accuracy"]), _fmt(report["accuracy_std"]))
    return table


# --- sts ---------------------------------------------------------------------------------------------

PairsFile = Annotated[Optional[str], typer.Option(
    "--pairs", metavar="FILE", show_default=False,
    help="Also write each pair's record to FILE as it is read (JSONL; '-': stdout, the metrics then need -o), "
         "without its vectors, with its similarity; unscored pairs too.")]


Versus = Annotated[Optional[str], typer.Option(
    "--versus", metavar="FILE", show_default=False,
    help="Compare with another model: FILE holds the same pairs in the same order, embedded by it (read like the "
         "input); adds their paired difference (input - FILE) with a bootstrap interval.")]
VersusKey = Annotated[Optional[str], typer.Option(
    "--versus-key", metavar="NAME", show_default=False,
    help="Compare with another model whose vectors the same records hold under NAME_a and NAME_b (as --text-key "
         "derives them), its identity under NAME_model when known.")]
Resamples = Annotated[int, typer.Option(
    "--resamples", min=1, metavar="N", help="Bootstrap resamples of the test pairs for --versus / --versus-key.")]


@eval_app.command("sts", epilog=VECTORS_EPILOG)
def sts_command(
    input: Input = "-",
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
    the point. Not with --cf-grid, --group-by, --pairs or --npy.

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
    """
    import numpy as np

    from .. import io
    from ..evaluation import sts
    from ..models.model_identity import FIELD, OneModel

    if versus is not None or versus_key is not None:
        option = "--versus" if versus is not None else "--versus-key"
        if versus is not None and versus_key is not None:
            raise typer.BadParameter("give the other model once: --versus FILE or --versus-key NAME",
                                     param_hint="--versus-key")
        for given, name in ((cf_grid, "--cf-grid"), (group_by, "--group-by"), (pairs, "--pairs"), (npy, "--npy")):
            if given is not None:
                raise typer.BadParameter(f"{option} compares two models over all pairs; leave out {name}",
                                         param_hint=name)
        if versus == input:
            raise typer.BadParameter("--versus names the input itself: give the other model's records",
                                     param_hint="--versus")
        report = sts_versus(input, versus, versus_key, text_keys, similarity_key, gold_key, resamples, seed,
                            skip_errors)
        write_report(report, output, force, input)
        show(versus_table(report))
        return
    if cf_grid is not None and similarity_key is not None:
        raise typer.BadParameter("--cf-grid sweeps embedding parts; it cannot use --similarity-key", param_hint="--cf-grid")
    if cf_grid is not None and pairs is not None:
        raise typer.BadParameter("--cf-grid gives each pair a similarity per W_cf; leave out --pairs",
                                 param_hint="--pairs")
    if pairs == "-" and output == "-":
        raise typer.BadParameter("--pairs - writes the pairs to stdout: give the metrics a file with -o",
                                 param_hint="--pairs")
    if cf_grid is not None:
        (basic_a, basic_b), (cf_a, cf_b) = pair_keys(text_keys, "embedding_basic"), pair_keys(text_keys, "embedding_cf")
        reader = sts.CfParts((basic_a, cf_a), (basic_b, cf_b))
    else:
        reader = sts.PairSimilarity(*pair_keys(text_keys, "embedding"), similarity_key)
    models = OneModel(ignore=("cf",) if cf_grid is not None else ())  # the parts are the same for every W_cf
    unscored = 0

    def keep(record: dict) -> tuple | None:
        nonlocal unscored
        value = reader(record)
        group = io.group(record, group_by) if group_by else None
        gold = None if record.get(gold_key) is None else check_number(record, gold_key, "the gold similarity score")
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
        console.warn(f"{unscored} pair(s) have no gold score ('{gold_key}'): left out of the correlation")
    if not rows:
        raise SembedError(f"no pair has a gold score ('{gold_key}')", "give the score field with --gold-key")
    kept, gold = np.array([row[0] for row in rows]), np.array([row[1] for row in rows])
    report = sts.report(kept, gold, reader.name, gold_key, group_by, [row[2] for row in rows] if group_by else None,
                        sts.parse_grid(cf_grid) if cf_grid is not None else None)
    if unscored:
        report["unscored"] = unscored
    for problem in sts.undefined_groups(report):
        console.warn(problem)
    write_report(report, output, force, input)
    show(sts_table(report))


def sts_versus(input: str, versus: Optional[str], versus_key: Optional[str], text_keys: Optional[list[str]],
               similarity_key: Optional[str], gold_key: str, resamples: int, seed: int, skip_errors: bool) -> dict:
    """`eval sts --versus FILE | --versus-key NAME`: both models' similarity of every scored pair, compared."""
    import numpy as np

    from ..evaluation import sts
    from ..models.model_identity import FIELD, OneModel

    text_a, text_b = pair_keys(text_keys, "text")
    models = {"a": OneModel(), "b": OneModel()}

    class Side:
        """Reads one model's (the pair's texts, its gold score or None, its similarity) from a record."""

        def __init__(self, keys: tuple[str, str], similarity_key: Optional[str], identity_field: Optional[str] = None):
            self.similarity = sts.PairSimilarity(*keys, similarity_key)
            if identity_field is not None:  # the other model's vectors in the same records: never a similarity field
                self.similarity.decided = True
            self.identity_field = identity_field

        def __call__(self, record: dict) -> tuple:
            if self.identity_field is not None:  # the other model's identity, under NAME_model
                models["b"]({FIELD: record.get(self.identity_field)})
            gold = None if record.get(gold_key) is None else check_number(record, gold_key, "the gold similarity score")
            return (record.get(text_a), record.get(text_b)), gold, self.similarity(record)

    embeddings = pair_keys(text_keys, "embedding")
    side_a = Side(embeddings, similarity_key)
    if versus is not None:
        side_b = Side(embeddings, similarity_key)
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
        side_b = Side(pair_keys(text_keys, versus_key), None, f"{versus_key}_model")
        rows = read_all(RecordSource(input, skip_errors=skip_errors), lambda r: (side_a(r), side_b(r)), models["a"])
        rows_a, rows_b = [row[0] for row in rows], [row[1] for row in rows]
        names = (side_a.similarity.name, side_b.similarity.name)
    scored = [(a[1], a[2], b[2]) for a, b in zip(rows_a, rows_b) if a[1] is not None]
    if len(scored) < len(rows_a):
        console.warn(f"{len(rows_a) - len(scored)} pair(s) have no gold score ('{gold_key}'): left out of the "
                     "correlation")
    if not scored:
        raise SembedError(f"no pair has a gold score ('{gold_key}')", "give the score field with --gold-key")
    gold, similarity_a, similarity_b = (np.array(column) for column in zip(*scored))
    report = sts.compare(similarity_a, similarity_b, gold, names, gold_key, resamples, seed)
    for side in ("a", "b"):
        identity = models[side].identity
        report[side][FIELD] = None if identity is None else str(identity)
    if len(scored) < len(rows_a):
        report["unscored"] = len(rows_a) - len(scored)
    undefined = report["difference"].get("undefined_resamples")
    if undefined:
        console.warn(f"{undefined} of {resamples} bootstrap resamples left out: a correlation was undefined in them "
                     "(a column that did not vary)")
    return report


def versus_table(report: dict):
    from rich.table import Table

    difference = report["difference"]
    table = Table(title=f"STS: two models vs {report['gold']} (x100; a, b: Fisher 95% CI; a - b: "
                        f"{difference['interval']}, {difference['resamples']} resamples)", title_justify="left")
    for column in ("", "model", "n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="left" if column in ("", "model") else "right")
    for side in ("a", "b"):
        m = report[side]
        table.add_row(side, m.get("embedding_model") or m["similarity"], str(m["n"]), _fmt(m["pearson"]),
                      _interval(m["pearson_ci"]), _fmt(m["spearman"]), _interval(m["spearman_ci"]))
    table.add_row("a - b", "", str(difference["n"]), f"{difference['pearson']:+.2f}",
                  _interval(difference["pearson_ci"]), f"{difference['spearman']:+.2f}",
                  _interval(difference["spearman_ci"]))
    return table


# --- entailment and classify ---------------------------------------------------------------------------

def classification_report(task: str, rows: list[tuple], features: str, label_key: str, folds: int, seed: int,
                          c: str) -> dict:
    """Cross-validated accuracy over the kept (features, label) rows: the one machinery of both commands."""
    import numpy as np

    from ..evaluation.classify import cross_validate

    x = np.stack([row[0] for row in rows])
    result = cross_validate(x, [row[1] for row in rows], folds, seed, None if c == "auto" else float(c))
    for note in result.notes:
        console.warn(note)
    if result.unconverged:
        console.warn(f"the logistic regression did not converge in {result.unconverged} fit(s)")
    return {"task": task, "features": features, "label": label_key, **result.as_dict(), "seed": seed}


@eval_app.command("entailment", epilog=VECTORS_EPILOG)
def entailment_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    text_keys: TextKeys = None,
    features: FeatureKind = "abs-diff",
    label_key: LabelKey = "label",
    folds: Folds = 10,
    c: InverseStrength = "1",
    seed: Seed = 0,
    npy: NpyVectors = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Entailment accuracy of pair embeddings: the SICK-E protocol of CF-BERT.

    Reads every record (the classifier needs them all) and keeps per pair
    only its features and label: from embedding_a = u and embedding_b = v
    (those of --text-key A --text-key B), |u - v| (CF-BERT section 4.4,
    Table 6) or, with --features senteval, (|u - v|, u * v); the label from
    label (--label-key: entailment / neutral / contradiction, or any).

    A logistic regression (scikit-learn, L-BFGS, multinomial, C = 1 by
    default, no feature scaling) is trained on 9 folds and scored on the
    10th, for each of 10 stratified folds shuffled with --seed. Writes one
    JSON object: n, classes (counts), folds, accuracy and accuracy_std
    (mean and standard deviation over the folds, x100), fold_accuracies, c.

    Fewer records than folds, or a single label, is an error; a label with
    fewer records than folds gets a warning.

    \b
    Example:
        sembed convert --from sick SICK_test_annotated.txt | sembed embed | sembed eval entailment
    """
    from ..evaluation.entailment import FEATURES, PairFeatures
    from ..models.model_identity import OneModel

    if features not in FEATURES:
        raise typer.BadParameter(f"'{features}' is not one of {', '.join(FEATURES)}", param_hint="--features")
    key_a, key_b = pair_keys(text_keys, "embedding")
    reader = PairFeatures(key_a, key_b, label_key, features)
    rows = read_all(RecordSource(input, skip_errors=skip_errors), reader, OneModel(), npy)
    report = classification_report("entailment", rows, reader.name, label_key, folds, seed, c)
    write_report(report, output, force, input)
    show(accuracy_table(report))


@eval_app.command("classify", epilog=VECTORS_EPILOG)
def classify_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    text_keys: TextKeys = None,
    label_key: LabelKey = "label",
    folds: Folds = 10,
    c: InverseStrength = "1",
    seed: Seed = 0,
    npy: NpyVectors = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Transfer accuracy of sentence embeddings, SentEval style (MR, SUBJ, CR...).

    Reads every record (the classifier needs them all) and keeps its
    embedding (that of --text-key K: embedding_K) and label (--label-key).
    A logistic regression (scikit-learn, L-BFGS, C = 1 by default, no
    feature scaling) is trained on 9 folds and scored on the 10th, for each
    of 10 stratified folds shuffled with --seed, as SentEval does for MR,
    SUBJ and CR; --c auto also picks C per split by SentEval's inner search.
    Writes one JSON object: n, classes (counts), folds, accuracy and
    accuracy_std (x100, over the folds), fold_accuracies, c.

    Fewer records than folds, or a single label, is an error; a label with
    fewer records than folds gets a warning.

    \b
    Example:
        sembed convert --from mr senteval/sentence_polarity | sembed embed | sembed eval classify
    """
    from ..evaluation.classify import LabelledVector
    from ..models.model_identity import OneModel

    keys = text_keys or ["text"]
    if len(keys) != 1:
        raise typer.BadParameter(f"classify reads one embedding: give --text-key once, got {len(keys)}",
                                 param_hint="--text-key")
    reader = LabelledVector(derived_key(keys[0], "embedding"), label_key)
    rows = read_all(RecordSource(input, skip_errors=skip_errors), reader, OneModel(), npy)
    report = classification_report("classify", rows, reader.name, label_key, folds, seed, c)
    write_report(report, output, force, input)
    show(accuracy_table(report))


# --- salience ----------------------------------------------------------------------------------------

SalienceTableDir = Annotated[str, typer.Option("--salience", metavar="DIR", show_default=False,
                                               help="The salience table `sembed train --method nws` wrote (required).")]
WordKey = Annotated[str, typer.Option("--word-key", metavar="KEY", help="The rated word's field (or column).")]
RatingKey = Annotated[str, typer.Option("--rating-key", metavar="KEY", help="The rating's field (or column).")]
Extremes = Annotated[int, typer.Option("--extremes", min=0, metavar="N", help="How many highest and lowest scored "
                                                                               "words to list.")]
MinSentences = Annotated[int, typer.Option("--min-sentences", min=1, metavar="N",
                                           help="List only words in at least N sentences of the training corpus.")]


@eval_app.command("salience", epilog=EVAL_EPILOG)
def salience_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    salience: SalienceTableDir = ...,
    word_key: WordKey = "word",
    rating_key: RatingKey = "rating",
    extremes: Extremes = 10,
    min_sentences: MinSentences = 5,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Correlation of a salience table's scores with word norms (word, rating).

    Reads every rated word: JSONL records with word and rating (--word-key,
    --rating-key), or a .csv / .tsv / .txt file with a header row naming those
    columns (as norms are published: concreteness, imageability, valence...).
    A word is looked up as written, then lower-cased for a lower-case table.
    Writes one JSON object: rated, missing (rated words not in the table)
    and a few missing_examples, n, pearson, spearman (x100) with Fisher 95%
    confidence intervals (NWS paper eq. 11-12, section 4.2 and Table 3),
    words (the table's size), and top / bottom: the --extremes highest and
    lowest scored words in at least --min-sentences corpus sentences.

    \b
    Example:
        sembed eval salience concreteness.tsv --salience nws-glove \\
          --word-key Word --rating-key Conc.M
    """
    from rich.table import Table

    from ..evaluation.salience import NormReader, read_norms, salience_report

    norms, source = read_norms(input, NormReader(word_key, rating_key), skip_errors)
    summary = source.summary()
    if summary:
        console.warn(summary)
    report = salience_report(salience, norms, extremes, min_sentences)
    write_report(report, output, force, input)
    table = Table(title=f"salience vs {rating_key} (x100, Fisher 95% CI): {report['n']} of {report['rated']} rated "
                        f"words in the table", title_justify="left")
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right")
    table.add_row(str(report["n"]), _fmt(report["pearson"]), _interval(report["pearson_ci"]), _fmt(report["spearman"]),
                  _interval(report["spearman_ci"]))
    show(table)
    if report["top"] and not console.state.quiet:
        console.say("highest: " + ", ".join(f"{w} {s:.3g}" for w, s in report["top"]))
        console.say("lowest: " + ", ".join(f"{w} {s:.3g}" for w, s in report["bottom"]))


# --- poi -----------------------------------------------------------------------------------------------

PoiGoldKey = Annotated[Optional[str], typer.Option(
    "--gold-key", metavar="KEY", show_default=False,
    help="The gold label field (true for a POI). Default: is_poi_gold (where `sembed taste` keeps the input's "
         "is_poi) when the record has it, else is_poi.")]
ScoreKey = Annotated[str, typer.Option("--score-key", metavar="KEY", help="The score field (a POI when >= the "
                                                                         "threshold).")]
PoiThreshold = Annotated[float, typer.Option("--threshold", metavar="T", help="The threshold (the paper: 0.5).")]
TuneSplit = Annotated[Optional[str], typer.Option(
    "--tune-split", metavar="NAME", show_default=False,
    help="Also pick the threshold with the highest F0.5 on the records whose split is NAME (e.g. dev) and report "
         "the others at it too.")]
TestSplit = Annotated[Optional[str], typer.Option(
    "--test-split", metavar="NAME", show_default=False,
    help="Report only the records whose split is NAME (e.g. test). Default: all records (but --tune-split's).")]
SplitKey = Annotated[str, typer.Option("--split-key", metavar="KEY", help="The field naming a record's split.")]


@eval_app.command("poi", epilog=EVAL_EPILOG)
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
    import numpy as np

    from ..evaluation import poi

    def keep(record: dict) -> tuple:
        key = gold_key or ("is_poi_gold" if "is_poi_gold" in record else "is_poi")
        split = record.get(split_key) if (tune_split or test_split) else None
        return poi.score(record, score_key), poi.gold_label(record, key), split

    rows = read_all(RecordSource(input, skip_errors=skip_errors), keep)

    def columns(chosen: list[tuple]) -> tuple:
        return np.array([r[0] for r in chosen], dtype=float), np.array([r[1] for r in chosen], dtype=bool)

    reported = [r for r in rows if (test_split is None or r[2] == test_split) and (tune_split is None or r[2] != tune_split)]
    if not reported:
        raise SembedError(f"no records of split '{test_split}' to report" if test_split else "no records to report")
    scores, gold = columns(reported)
    report = {"score": score_key, **poi.metrics(scores, gold, threshold)}
    if test_split:
        report["split"] = test_split
    if tune_split:
        tuning = [r for r in rows if r[2] == tune_split]
        if not tuning:
            raise SembedError(f"no records of split '{tune_split}' to tune the threshold on")
        tune_scores, tune_gold = columns(tuning)
        best = poi.best_threshold(tune_scores, tune_gold)
        report.update({"tune_split": tune_split, "tuned_threshold": round(best, 6),
                       "tuning": poi.metrics(tune_scores, tune_gold, best),
                       "at_tuned_threshold": poi.metrics(scores, gold, best)})
    write_report(report, output, force, input)
    show(poi_table(report))


def poi_table(report: dict):
    from rich.table import Table

    table = Table(title=f"POI identification: {report['score']} >= threshold (POI = positive)", title_justify="left")
    for column in ("records", "threshold", "n", "precision", "recall", "F0.5", "accuracy"):
        table.add_column(column, justify="right")
    rows = [(report.get("split", "all"), report)]
    if "tuned_threshold" in report:
        rows += [(f"{report['tune_split']} (tuning)", report["tuning"]),
                 (report.get("split", "all"), report["at_tuned_threshold"])]
    for name, m in rows:
        table.add_row(name, f"{m['threshold']:g}", str(m["n"]), _fmt(m["precision"], 3), _fmt(m["recall"], 3),
                      _fmt(m["f0_5"], 3), _fmt(m["accuracy"], 3))
    return table


# --- structure -----------------------------------------------------------------------------------------

def _cluster_counts(value: str) -> str:
    try:
        counts = [int(k) for k in value.split(",")]
        if not counts or any(k < 2 for k in counts):
            raise ValueError
    except ValueError:
        raise typer.BadParameter(f"'{value}' is not a comma-separated list of integers >= 2") from None
    return value


Queries = Annotated[int, typer.Option("--queries", min=1, metavar="N",
                                      help="Random query words (content words only), drawn with --seed.")]
DifficultTags = Annotated[int, typer.Option(
    "--difficult", min=0, metavar="N", help="How many 'difficult' tags: those with the highest entropy of "
                                            "dependency labels.")]
MinTagCount = Annotated[int, typer.Option("--min-tag-count", min=1, metavar="N",
                                          help="A difficult tag needs at least N content words.")]
ClusterCounts = Annotated[str, typer.Option("--clusters", metavar="K,K,...", callback=_cluster_counts,
                                            help="The K of each k-means purity.")]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY", help="The word vector field.")]
SentenceKey = Annotated[str, typer.Option("--sentence-key", metavar="KEY",
                                          help="The field that tells sentences apart (words with equal values are "
                                               "one sentence).")]


@eval_app.command("structure", epilog=VECTORS_EPILOG)
def structure_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    queries: Queries = 2000,
    difficult: DifficultTags = 5,
    min_tag_count: MinTagCount = 50,
    clusters: ClusterCounts = "10,20,40,80",
    embedding_key: EmbeddingKey = "embedding",
    sentence_key: SentenceKey = "sentence_index",
    seed: Seed = 0,
    npy: NpyVectors = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Syntactic structure in word vectors: nearest-neighbour tests and k-means purity.

    Reads every word record (the neighbours are searched among all of them,
    so nothing streams out), as `sembed embed --words` writes them, and keeps
    embedding (--embedding-key; or its row of --npy FILE), word, pos, tag, dep, head_dep, depth and sentence_index
    (--sentence-key): about 3 KB a word for 768-d vectors.

    Syntax-distillation paper, section 4.2: --queries random query words,
    not function words, each against the content words of the other
    sentences; for each query its nearest neighbour by cosine, and the share
    of (query, neighbour) pairs with the same dep (dep_edge), the same
    head_dep (head_dep_edge) and the same lower-cased word (lexical_match),
    and the Pearson correlation of their depths (depth_r). Function words
    (universal POS DET, ADP, PRON, AUX, CCONJ, SCONJ, PART, PUNCT, SYM, NUM,
    SPACE, X) are neither queries nor neighbours, and a query's own sentence
    is left out (its nearest words there are its neighbours in the text).
    The same on the difficult tags: the --difficult fine tags (tag) with the
    highest entropy of their dep labels among tags with at least
    --min-tag-count content words, with up to --queries queries drawn among
    their words. Section 4.1: k-means (scikit-learn, k-means++, one start,
    --seed) on the L2-normalised vectors of the all-words queries, for each
    K of --clusters: purity, the share of the most common dep label in each
    cluster, averaged over the clusters (mean, the paper's) and weighted by
    cluster size (weighted); null where K is not below the query count.

    Writes one JSON object: words, sentences, content_words, dimension,
    seed; all and difficult (n, dep_edge, head_dep_edge, depth_r,
    lexical_match; difficult also tags: tag, entropy in bits, n); purity
    (per K: mean, weighted). Shares are fractions, as the paper's Table 1.

    \b
    Example:
        sembed convert --from conll treebank/dependency_treebank | head -300 | sembed parse \\
          | sembed embed --words | sembed eval structure
    """
    from rich.table import Table

    from ..evaluation.structure import StructureWords, structure_report
    from ..models.model_identity import OneModel

    kept = StructureWords(embedding_key, sentence_key)
    read_all(RecordSource(input, skip_errors=skip_errors), kept, OneModel(), npy)
    ks = tuple(int(k) for k in clusters.split(","))
    report = structure_report(kept, queries, seed, difficult, min_tag_count, ks)
    write_report(report, output, force, input)
    table = Table(title=f"nearest neighbour by cosine: {report['words']} words, {report['sentences']} sentences, "
                        f"{report['dimension']}-d", title_justify="left",
                  caption="difficult tags: " + (", ".join(t["tag"] for t in report["difficult"]["tags"]) or "none"),
                  caption_justify="left")
    for column in ("queries", "n", "dep edge", "head's dep edge", "depth r", "lexical match"):
        table.add_column(column, justify="right")
    for name in ("all", "difficult"):
        m = report[name]
        table.add_row(name, str(m["n"]), _fmt(m["dep_edge"], 3), _fmt(m["head_dep_edge"], 3), _fmt(m["depth_r"], 3),
                      _fmt(m["lexical_match"], 3))
    show(table)
    purity = Table(title="k-means purity of dep labels (all queries)", title_justify="left")
    for column in ("K", "mean", "weighted"):
        purity.add_column(column, justify="right")
    for k, m in report["purity"].items():
        purity.add_row(k, _fmt(m and m["mean"], 3), _fmt(m and m["weighted"], 3))
    show(purity)
    for k, m in report["purity"].items():
        if m is None:
            console.warn(f"no purity at K = {k}: only {report['all']['n']} queries")
