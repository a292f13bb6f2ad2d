"""sembed eval entailment: entailment accuracy of pair embeddings (CF-BERT's SICK-E protocol)."""

from __future__ import annotations

from typing import Annotated

import typer

from ...options import Force, Input, Output, Quiet, Seed, SkipErrors, TextKeys, Threads, Verbose
from .options import Folds, InverseStrength, LabelKey, NpyVectors, inverse_strength, pair_text_keys, write_report

FeatureKind = Annotated[
    str,
    typer.Option(
        "--features",
        metavar="abs-diff|senteval",
        help="abs-diff: |u - v| (CF-BERT section 4.4); senteval: (|u - v|, u * v) as SentEval's SICK-E.",
    ),
]


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
    from ...evaluation import entailment

    if features not in entailment.FEATURES:
        raise typer.BadParameter(
            f"'{features}' is not one of {', '.join(entailment.FEATURES)}", param_hint="--features"
        )
    report = entailment.evaluate(
        input, pair_text_keys(text_keys), features, label_key, folds, seed, inverse_strength(c), npy, skip_errors
    )
    write_report(report, output, force, input)
    entailment.print_report(report)
