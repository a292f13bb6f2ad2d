"""sembed dedup: near-duplicate groups over a record stream or an index, by the cosine of their vectors."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

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
    finite,
    given_on_command_line,
)
from .collection_options import NOT_WITH_INDEX, EmbeddingKey, IdKey, IndexDir, Npy, TextKey, check_input

Threshold = Annotated[
    float,
    typer.Option(
        "--threshold",
        "-t",
        metavar="COSINE",
        min=-1.0,
        max=1.0,
        callback=finite,
        help="The cosine at or above which two records are near-duplicates.",
    ),
]
Neighbours = Annotated[
    int,
    typer.Option(
        "--neighbours",
        "--neighbors",
        metavar="N",
        min=1,
        help="Nearest records looked at per record; a larger group still joins through its members' neighbours.",
    ),
]
Keep = Annotated[
    Literal["all", "first", "duplicates"],
    typer.Option(
        "--keep",
        metavar="all|first|duplicates",
        help="all: every record; first: a group's representative and the records in no group (one of each, for a "
        "pipeline); duplicates: only the records in a group.",
    ),
]
Exact = Annotated[
    bool | None,
    typer.Option(
        "--exact/--approximate",
        show_default=False,
        help="Search a stream's vectors exactly (every pair), or over inverted lists (FAISS IVF, --nprobe). "
        "Default: exact up to 100,000 records.",
    ),
]
NProbe = Annotated[
    int,
    typer.Option("--nprobe", metavar="N", min=1, help="Inverted lists searched per record (--approximate)."),
]


def dedup_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    index: IndexDir = None,
    threshold: Threshold = 0.9,
    neighbours: Neighbours = 10,
    keep: Keep = "all",
    exact: Exact = None,
    nprobe: NProbe = 16,
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
    """Near-duplicate groups: records whose vectors' cosine reaches --threshold.

    Reads records with a vector (embedding, as `sembed embed` writes it,
    or a row of --npy), or texts embedded with --model as `sembed index`
    embeds them; or, with --index DIR, an index's vectors and stored
    records. Each record's --neighbours nearest records (FAISS: exact
    search up to 100,000 records, inverted lists above; an index answers
    with its own search) at cosine >= --threshold are its pairs, and the
    groups are the connected components of those pairs (union-find). Writes
    each record, in input order, with group (0, 1, ... in order of each
    group's first record), representative (the id of the group's first
    record: its --id-key field, an index's id, else its position from 0)
    and score (its cosine to the representative; a record joined through
    a chain may score below the threshold); a record in no group gets
    null for all three. --keep first passes on one record of each group
    and every record in no group. Reads everything before writing (twice:
    the vectors are kept, float16, in a temporary file, and the records
    read again; stdin is copied to a temporary file); bad input stops the
    reading, and the records before it are still grouped and written
    before the error.

    The default threshold, 0.9, groups the copies of a sentence and its
    changes of punctuation or case under all-MiniLM-L6-v2, about half of
    its one-word edits, and few of the windows of a text that overlap it;
    a lower one groups more edits, and more merely similar texts (the
    measured trade-off: docs/dedup-cluster.md).

    \b
    Example:
      sembed embed corpus.txt | sembed dedup --keep first -o unique.jsonl
      sembed dedup corpus.txt --threshold 0.95 --keep duplicates
      sembed convert --from prose corpora/abc | sembed index -o abc-index
      sembed dedup --index abc-index --keep duplicates
    """
    from ..indexes.collection import CollectionSource, ReadSettings, run_collection
    from ..indexes.model_choice import ModelChoice
    from ..indexes.near_duplicates import DedupSettings, dedup_records, near_duplicates

    given = given_on_command_line(ctx)
    check_input(given, index)
    check_only(ctx, NOT_WITH_INDEX)
    check_backend(backend, quantize, device)
    settings = DedupSettings(threshold, neighbours, keep, exact, nprobe, seed)
    source = CollectionSource(
        input,
        index,
        ReadSettings(text_key, embedding_key, id_key, npy, batch_size),
        ModelChoice(model, "model" in given, device, backend, quantize, long_text),
        lines,
        skip_errors,
    )

    def compute(collection):
        groups, _, _ = near_duplicates(collection, settings)
        return dedup_records(collection, groups, settings.keep)

    run_collection(source, output, force, compute, "writing")
