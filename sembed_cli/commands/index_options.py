"""The options of `sembed index` and the rules of which go together (options.Only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import (
    Only,
)

IndexDir = Annotated[
    Path | None,
    typer.Option(
        "-o", "--output", metavar="DIR", show_default=False, help="The index directory to write (this or --update)."
    ),
]
UpdateDir = Annotated[
    Path | None,
    typer.Option(
        "--update",
        metavar="DIR",
        show_default=False,
        help="Add the records to the index in DIR instead: new ids are added, a changed text replaces its id's entry, "
        "an unchanged id and text is skipped (not embedded again); nothing is rebuilt.",
    ),
]
IndexType = Annotated[
    str,
    typer.Option(
        "--type",
        metavar="auto|flat|hnsw|ivf|ivfpq|FACTORY",
        help="flat: exact (4 bytes a dimension); hnsw: a graph (M 32; + 256 bytes a vector); ivf: 4 sqrt(n) k-means "
        "cells of exact vectors; ivfpq: those cells over PQ codes of one byte per 4 dimensions (96 bytes at 384-d), "
        "re-ranked from the vectors kept on disk; FACTORY: any FAISS index_factory string (e.g. "
        "'IVF16384_HNSW32,PQ48'). auto: flat up to 100,000 vectors; above, the cheapest of hnsw, HNSW32,SQ8 "
        "and fast-scan IVF-PQ that meets --recall, each built and measured on 50,000 sampled vectors "
        "(--recall 0: by count, hnsw up to 1,000,000, ivfpq above). "
        "Recall follows the search breadth, which --recall sets by measurement (hnsw over 953,433 real MiniLM "
        "vectors: recall@10 0.89 / 0.94 / 0.97 at efSearch 64 / 128 / 256; the docs' index section). --update "
        "keeps the index's own.",
    ),
]
Rerank = Annotated[
    str,
    typer.Option(
        "--rerank",
        metavar="float16|float32|none",
        help="Lossy types (ivfpq, PQ or SQ factories): keep each vector on disk (float16: 2 bytes a dimension; "
        "float32: 4) and re-rank 10 k candidates by exact cosine; none saves the disk and answers from the codes "
        "alone.",
    ),
]
NProbe = Annotated[
    int | None,
    typer.Option(
        "--nprobe",
        min=1,
        metavar="N",
        show_default=False,
        help="Inverted lists searched per query (ivf, ivfpq): more finds more, slower. Default: 1/16 of the "
        "cells, at least 16 (all of them when fewer) and at most 256.",
    ),
]
TargetRecall = Annotated[
    float,
    typer.Option(
        "--recall",
        min=0.0,
        max=1.0,
        metavar="R",
        help="The recall@10 search must reach: at build, 1,000 of the corpus's own vectors are searched as queries "
        "against exact search, and the search breadth (efSearch, nprobe) is set to the cheapest that meets R "
        "(measured, with the breadth -> recall curve, in sembed.json; a warning says what was reached when the type "
        "cannot). --update measures again after the rows it changed. 0: not measured.",
    ),
]
Sync = Annotated[
    bool,
    typer.Option(
        "--sync",
        help="With --update: the input is the whole collection; indexed records it no longer holds are "
        "removed (and counted), so the index mirrors a folder a nightly job re-reads.",
    ),
]
Retrain = Annotated[
    bool,
    typer.Option(
        "--retrain",
        help="With --update: then rebuild the index from its rows (fresh cells for its new size; rows "
        "renumbered). Without it an update keeps the trained quantiser.",
    ),
]
Keywords = Annotated[
    bool | None,
    typer.Option(
        "--keywords/--no-keywords",
        show_default=False,
        help="Keep the FTS5 keyword index of the texts that search --keyword and --hybrid rank by (the default), or "
        "none: a vector-only index builds faster and smaller (11.3M windows: 29 of 490 CPU-s, 0.6 of 4.7 GB). "
        "With --update: add it to an index without one, or drop it; unless given, an update keeps the index's choice.",
    ),
]
Trained = Annotated[
    Path | None,
    typer.Option(
        "--trained",
        metavar="DIR",
        show_default=False,
        help="Build with the trained quantiser and codebooks of the index at DIR instead of training: pieces of one "
        "corpus built so can be joined with `sembed index merge`.",
    ),
]
TextKey = Annotated[
    str,
    typer.Option(
        "--text-key", "-k", metavar="KEY", help="The text field (embedded when the record has no --embedding-key)."
    ),
]
EmbeddingKey = Annotated[
    str,
    typer.Option(
        "--embedding-key",
        metavar="KEY",
        help="A field with the record's vector (from sembed embed), used instead of embedding the text.",
    ),
]
IdKey = Annotated[
    str,
    typer.Option(
        "--id-key",
        metavar="KEY",
        help="The record's id. Records without one get a hash of their text (or vector) as id.",
    ),
]
DocKey = Annotated[
    str,
    typer.Option(
        "--doc-key",
        metavar="KEY",
        help="The document a record without an id comes from (convert writes doc_id): such records get a hash of "
        "their document and text as id, one entry per document and sentence.",
    ),
]
NpyVectors = Annotated[
    Path | None,
    typer.Option(
        "--npy",
        metavar="FILE",
        show_default=False,
        help="Read the vectors from this matrix, which `sembed embed --npy FILE` wrote: each record names its row "
        "(embedding_row), and FILE.json the model. The matrix is read with the records: give a finished one "
        "(`embed --npy FILE -o rows.jsonl` first), not a pipe from the embed still writing it.",
    ),
]

Check = Annotated[
    Path | None,
    typer.Option(
        "--check",
        metavar="DIR",
        show_default=False,
        help="Verify the index in DIR instead: every file against the checksum recorded when it was written, "
        "SQLite's integrity check and every row's check (a search checks the files' checksums as it opens them); "
        "exit 1 naming the damaged file.",
    ),
]

ONLY = (
    Only("sync", with_="update", message="only with --update DIR"),
    Only("retrain", with_="update", message="only with --update DIR"),
    Only("trained", with_="output", message="only with -o DIR (an update keeps the index's own)"),
)
