"""sembed eval salience: a salience table's scores against word norms (word, rating)."""

from __future__ import annotations

from typing import Annotated

import typer

from ...options import Force, Input, Output, Quiet, SkipErrors, Threads, Verbose
from .options import write_report

SalienceTableDir = Annotated[
    str,
    typer.Option(
        "--salience",
        metavar="DIR",
        show_default=False,
        help="The salience table `sembed train --method nws` wrote (required).",
    ),
]
WordKey = Annotated[str, typer.Option("--word-key", metavar="KEY", help="The rated word's field (or column).")]
RatingKey = Annotated[str, typer.Option("--rating-key", metavar="KEY", help="The rating's field (or column).")]
Extremes = Annotated[
    int, typer.Option("--extremes", min=0, metavar="N", help="How many highest and lowest scored words to list.")
]
MinSentences = Annotated[
    int,
    typer.Option(
        "--min-sentences", min=1, metavar="N", help="List only words in at least N sentences of the training corpus."
    ),
]


def salience_command(
    input: Input = "-",
    output: Output = "-",
    force: Force = False,
    salience: SalienceTableDir = ...,  # type: ignore[assignment]  # typer: ... makes the option required
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
    from ...evaluation.salience import evaluate, print_report

    report = evaluate(input, salience, word_key, rating_key, extremes, min_sentences, skip_errors)
    write_report(report, output, force, input)
    print_report(report, rating_key)
