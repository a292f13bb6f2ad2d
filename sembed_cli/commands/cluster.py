"""sembed cluster: k-means clusters of a record stream's or an index's vectors, named by their most central texts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import console
from ..models import sentence_models
from ..options import (
    Backend,
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    LongText,
    Output,
    Quantize,
    Quiet,
    Seed,
    SentenceModel,
    SkipErrors,
    Threads,
    Verbose,
    check_backend,
    check_only,
    given_on_command_line,
)
from .collection_options import NOT_WITH_INDEX, EmbeddingKey, IdKey, IndexDir, Npy, TextKey, check_input

Clusters = Annotated[int, typer.Option("--clusters", "-k", metavar="N", min=1, help="How many clusters (k-means' k).")]
Iterations = Annotated[int, typer.Option("--iterations", metavar="N", min=1, help="k-means iterations.")]
Central = Annotated[
    int,
    typer.Option("--central", metavar="N", min=1, help="Most central texts that name each cluster in the summary."),
]
SummaryFile = Annotated[
    Path | None,
    typer.Option(
        "--summary",
        metavar="FILE",
        show_default=False,
        help="Also write the summary as JSON to FILE (each cluster's size, mean cosine and most central texts).",
    ),
]
PlotFile = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        metavar="FILE.png",
        show_default=False,
        help="Draw a 2-D map (PCA; UMAP where umap-learn is installed) of up to 20,000 sampled records, coloured by "
        "cluster and labelled with each cluster's most central text (past 20 clusters, its number alone; needs "
        "matplotlib: the plots extra).",
    ),
]


def cluster_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    index: IndexDir = None,
    clusters: Clusters = 10,
    iterations: Iterations = 20,
    central: Central = 3,
    summary: SummaryFile = None,
    plot: PlotFile = None,
    model: SentenceModel = sentence_models.DEFAULT_MODEL,
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    id_key: IdKey = "id",
    npy: Npy = None,
    lines: Lines = None,
    long_text: LongText = "truncate",
    batch_size: BatchSize = 256,
    force: Force = False,
    seed: Seed = 42,
    device: Device = "auto",
    backend: Backend = "torch",
    quantize: Quantize = "none",
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """k-means clusters of the records' vectors, each named by its most central texts.

    Reads records with a vector (embedding, as `sembed embed` writes it,
    or a row of --npy), or texts embedded with --model as `sembed index`
    embeds them; or, with --index DIR, an index's vectors and stored
    records. Spherical k-means (FAISS Kmeans, seeded by --seed, trained on
    a sample of 256 records a cluster), then every record goes to its
    nearest centroid. Writes each record, in input order, with cluster
    (0 to N - 1) and cluster_score (its cosine to the centroid). A summary
    on stderr gives each cluster's size, mean cosine and --central most
    central texts (--summary FILE: the same as JSON); --plot FILE.png draws
    the map. Reads everything before writing (twice: the vectors are kept,
    float16, in a temporary file, and the records read again; stdin is
    copied to a temporary file); bad input stops the reading, and the
    records before it are still clustered and written before the error.

    \b
    Example:
      sembed convert --from mr senteval/sentence_polarity | sembed embed \\
        | sembed cluster -k 2 --summary mr.clusters.json > mr.clustered.jsonl
      sembed cluster corpus.txt -k 2 --plot corpus.png -o corpus.clustered.jsonl
      sembed convert --from prose corpora/abc | sembed index -o abc-index
      sembed cluster --index abc-index -k 4 --central 2
    """
    from ..errors import SembedError
    from ..indexes.clusters import ClusterRun, ClusterSettings
    from ..indexes.collection import CollectionSource, ReadSettings, run_collection
    from ..indexes.model_choice import ModelChoice
    from ..io import write_json_atomic

    given = given_on_command_line(ctx)
    check_input(given, index)
    check_only(ctx, NOT_WITH_INDEX)
    check_backend(backend, quantize, device)
    for path, flag in ((summary, "--summary"), (plot, "--plot")):
        if path is not None and path.exists() and not force:
            raise SembedError(f"{path} already exists", f"pass --force to replace it, or choose another {flag}")
    settings = ClusterSettings(clusters, iterations, seed, central, text_key)
    source = CollectionSource(
        input,
        index,
        ReadSettings(text_key, embedding_key, id_key, npy, batch_size),
        ModelChoice(model, "model" in given, device, backend, quantize, long_text),
        lines,
        skip_errors,
    )
    run = ClusterRun(settings, plot, force)
    try:
        run_collection(source, output, force, run, "writing")
    finally:
        if run.report is not None:
            print_summary(run.report)
            if summary is not None:
                write_json_atomic(summary, run.report)


def print_summary(report: dict) -> None:
    """The summary as a table on stderr (the command's: library modules only log): each cluster's size, mean
    cosine and most central text."""
    from ..indexes.clusters import shorten

    console.say(
        f"{report['clusters']} clusters of {report['count']} records (mean cosine to the centroid "
        f"{report['mean_score']:.3f}):"
    )
    for row in report["by_cluster"]:
        names = "; ".join(shorten(c["text"]) for c in row["central"])
        mean = f"{row['mean_score']:.3f}" if row["mean_score"] is not None else "-"
        console.say(f"  {row['cluster']:>4}  {row['size']:>9,}  {mean}  {names}")
