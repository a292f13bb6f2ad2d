"""sembed index: a FAISS index over records' sentence vectors, stored as a directory search reads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..artifacts import refuse_existing
from ..models import sentence_models
from ..options import (
    Backend,
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    LongText,
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

if TYPE_CHECKING:
    from ..indexes.staging import IndexSource

from .index_options import (
    ONLY,
    Check,
    DocKey,
    EmbeddingKey,
    IdKey,
    IndexDir,
    IndexType,
    Keywords,
    NProbe,
    NpyVectors,
    Rerank,
    Retrain,
    Sync,
    TargetRecall,
    TextKey,
    Trained,
    UpdateDir,
)


def index_command(
    ctx: typer.Context,
    input: Input = "-",
    output: IndexDir = None,
    update: UpdateDir = None,
    check: Check = None,
    model: SentenceModel = sentence_models.DEFAULT_MODEL,
    index_type: IndexType = "auto",
    rerank: Rerank = "float16",
    nprobe: NProbe = None,
    recall: TargetRecall = 0.95,
    sync: Sync = False,
    retrain: Retrain = False,
    keywords: Keywords = None,
    trained: Trained = None,
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    id_key: IdKey = "id",
    doc_key: DocKey = "doc_id",
    npy: NpyVectors = None,
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
    """Build a FAISS index over records' vectors, for sembed search.

    Streams the records (never the whole corpus in memory): each one's
    vector from embedding (--embedding-key, as `sembed embed` writes it;
    --npy FILE: the row embedding_row of the matrix `sembed embed --npy
    FILE` wrote) when the first record has one, else its text (--text-key)
    embedded with --model as `sembed embed` would. Vectors are normalised
    to unit length, so the inner product the index ranks by is the cosine.
    Writes nothing to stdout. DIR holds the FAISS index, records.sqlite
    (each row's id, a hash of its content and its payload: the record
    without its vectors, which search returns), for lossy types the vectors
    search re-ranks with, and sembed.json (the model's identity, type,
    count, settings, versions). --type auto measures its candidates on a sample;
    lossy types are trained once on a seeded sample of the vectors (--seed).
    DIR appears complete or not at all; an existing DIR needs --force.
    INPUT may be the directory `sembed embed --shard I/N --parts PARTS`
    wrote: every part must be done, and they are read in the input's order.

    Ids: --id-key's field, or, for records without one, a hash of their
    document (--doc-key, the doc_id convert writes) and text: one entry per
    document and sentence, so a sentence keeps its id wherever it moves in
    its file, the same sentence in two documents is two entries (search
    finds both), and twice in one document it is indexed once (counted). A
    record with neither is keyed by its text alone. An index built before
    documents counted keeps its ids on --update (a note says how to
    rebuild). An id twice with other content is an error. For an index of names labelled is_poi, true for
    some and false for others (those `sembed taste --neighbours` votes
    with), taste fits the regression over their character n-grams that it
    mixes with the vote at its first run, and keeps it in DIR.

    The model: records with vectors carry embedding_model (`sembed embed`
    writes it), and the index takes it from them; records of two models,
    or with and without the field, are refused. Vectors without it are
    taken to be --model's, with a warning. With vectors, --backend and
    --quantize say how they were made, so search embeds text queries the
    same way.

    --update DIR (instead of -o) changes an existing index in place: a new
    id is added, a changed one replaces its entry, an unchanged one is
    skipped (only new and changed texts are embedded); --sync also removes
    what the input no longer holds. Nothing is retrained or rebuilt
    (--retrain asks for it); the index answers as a full build with the
    same trained quantiser would. The index is locked meanwhile and a
    failed update leaves it as it was. `sembed index merge PIECE... -o DIR`
    joins indexes of disjoint parts built with one quantiser (--trained).

    \b
    Example:
      sembed convert --from gazetteer | grep '"is_poi":true' \\
        | sembed index -m poi-model -o poi-index
      sembed embed names.jsonl | sembed index -o names-index
      sembed embed names.jsonl --npy names.npy -o names.rows.jsonl
      sembed index names.rows.jsonl --npy names.npy -o names-index
      sembed convert --from prose corpora/abc | sembed index -o abc-index
      sembed convert --from prose corpora/abc | sembed index --update abc-index --sync
    """
    from ..indexes.build import build_index
    from ..indexes.kinds import NAMES, parses
    from ..indexes.model_choice import ModelChoice
    from ..indexes.staging import RERANK_CHOICES, IndexSettings
    from ..indexes.update import UpdateChoices, update_index
    from ..io import PLAIN_TEXT_HINT, RecordSource

    if check is not None:
        if output is not None or update is not None:
            raise typer.BadParameter("--check DIR verifies an index: give it alone", param_hint="'--check'")
        from .. import console
        from ..indexes.directory import check_index

        console.say(check_index(check))
        return
    if (output is None) == (update is None):
        raise typer.BadParameter(
            "give the index directory: -o DIR for a new index, or --update DIR", param_hint="'-o' / '--update'"
        )
    check_only(ctx, ONLY)
    given = given_on_command_line(ctx)
    if index_type not in NAMES and not parses(index_type):
        raise typer.BadParameter(
            f"'{index_type}' is not one of {', '.join(NAMES)}, nor a FAISS factory string", param_hint="'--type'"
        )
    if rerank not in RERANK_CHOICES:
        raise typer.BadParameter(f"'{rerank}' is not one of {', '.join(RERANK_CHOICES)}", param_hint="'--rerank'")
    check_backend(backend, quantize, device)
    settings = IndexSettings(
        index_type, rerank, nprobe, seed, text_key, embedding_key, id_key, batch_size, doc_key, recall or None, keywords
    )
    choice = ModelChoice(model, "model" in given, device, backend, quantize, long_text)
    source: IndexSource
    if input != "-" and Path(input).is_dir():  # the parts `sembed embed --parts DIR` wrote, in input order
        from ..parts.reassemble import PartsSource

        source = PartsSource(input)
    else:
        source = RecordSource(input, skip_errors=skip_errors, lines=lines, plain_text_hint=PLAIN_TEXT_HINT)
    if update is not None:
        update_index(source, update, settings, choice, UpdateChoices(given, sync, retrain), npy)
    elif output is not None:  # one of the two, checked above
        refuse_existing(output, force)
        build_index(source, output, settings, choice, npy, force, trained)


def merge_command(
    pieces: Annotated[
        list[Path],
        typer.Argument(metavar="PIECE", show_default=False, help="Index directories of disjoint parts of one corpus."),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "-o", "--output", metavar="DIR", show_default=False, help="The index directory to write (required)."
        ),
    ] = ...,  # type: ignore[assignment]  # typer: ... makes the option required
    force: Force = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Join indexes of disjoint parts of a corpus into one: sembed index merge.

    The pieces must hold vectors of one model and dimension, be built with
    one trained quantiser (`sembed index --trained DIR`; flat and graph
    indexes need none) and share no id; each refusal names both pieces.
    Rows follow the pieces' order, so a merge of flat pieces answers as one
    build over their records in that order. Reads every piece whole
    (FAISS merge_from); writes DIR atomically (--force to replace it).

    \b
    Example:
      sembed index corpus.txt -o piece-1
      sembed index more.txt -o piece-2
      sembed index merge piece-1 piece-2 -o corpus-index
    """
    from ..indexes.merge import merge_indexes

    if len(pieces) < 2:
        raise typer.BadParameter("give two pieces or more", param_hint="'PIECE...'")
    refuse_existing(output, force)
    merge_indexes(pieces, output, force)
