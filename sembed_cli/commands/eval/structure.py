"""sembed eval structure: syntactic structure in word vectors (nearest-neighbour tests, k-means purity)."""

from __future__ import annotations

from typing import Annotated

import typer

from ...options import Force, Input, Output, Quiet, Seed, SkipErrors, Threads, Verbose
from .options import NpyVectors, write_report


def _cluster_counts(value: str) -> str:
    try:
        counts = [int(k) for k in value.split(",")]
        if not counts or any(k < 2 for k in counts):
            raise ValueError
    except ValueError:
        raise typer.BadParameter(f"'{value}' is not a comma-separated list of integers >= 2") from None
    return value


Queries = Annotated[
    int,
    typer.Option("--queries", min=1, metavar="N", help="Random query words (content words only), drawn with --seed."),
]
DifficultTags = Annotated[
    int,
    typer.Option(
        "--difficult",
        min=0,
        metavar="N",
        help="How many 'difficult' tags: those with the highest entropy of dependency labels.",
    ),
]
MinTagCount = Annotated[
    int, typer.Option("--min-tag-count", min=1, metavar="N", help="A difficult tag needs at least N content words.")
]
ClusterCounts = Annotated[
    str, typer.Option("--clusters", metavar="K,K,...", callback=_cluster_counts, help="The K of each k-means purity.")
]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY", help="The word vector field.")]
SentenceKey = Annotated[
    str,
    typer.Option(
        "--sentence-key",
        metavar="KEY",
        help="The field that tells sentences apart (words with equal values are one sentence).",
    ),
]


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
    from ...evaluation import structure

    ks = tuple(int(k) for k in clusters.split(","))
    report = structure.evaluate(
        input, queries, seed, difficult, min_tag_count, ks, embedding_key, sentence_key, npy, skip_errors
    )
    write_report(report, output, force, input)
    structure.print_report(report)
