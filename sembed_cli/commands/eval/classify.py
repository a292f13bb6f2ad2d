"""sembed eval classify: transfer accuracy of sentence embeddings, SentEval style."""

from __future__ import annotations

from ...options import Force, Input, Output, Quiet, Seed, SkipErrors, TextKeys, Threads, Verbose, counted_text_keys
from .options import Folds, InverseStrength, LabelKey, NpyVectors, inverse_strength, write_report


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
    from ...evaluation import classify

    (key,) = counted_text_keys(text_keys, ("text",), "classify reads one embedding: give --text-key once, got {given}")
    report = classify.evaluate(input, key, label_key, folds, seed, inverse_strength(c), npy, skip_errors)
    write_report(report, output, force, input)
    classify.print_report(report)
