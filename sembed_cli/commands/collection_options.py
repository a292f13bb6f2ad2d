"""The options `sembed dedup` and `sembed cluster` share: where the collection comes from (a record stream, or an
index directory) and how a stream's records are read (their vector, text and id fields, an .npy matrix)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..options import Only

IndexDir = Annotated[
    Path | None,
    typer.Option(
        "--index",
        "-i",
        metavar="DIR",
        show_default=False,
        help="Read an index directory `sembed index` wrote instead of INPUT: its vectors, and its records as stored.",
    ),
]
TextKey = Annotated[
    str,
    typer.Option("--text-key", metavar="KEY", help="The text field: embedded when records bring no vector, and shown."),
]
EmbeddingKey = Annotated[
    str,
    typer.Option(
        "--embedding-key", metavar="KEY", help="The vector field (as `sembed embed` writes it); read when present."
    ),
]
IdKey = Annotated[str, typer.Option("--id-key", metavar="KEY", help="The field that names a record.")]
Npy = Annotated[
    Path | None,
    typer.Option(
        "--npy",
        metavar="FILE",
        show_default=False,
        help="The .npy matrix `sembed embed --npy FILE` wrote: each record's vector is the row its embedding_row "
        "names.",
    ),
]

STREAM_ONLY = ("model", "text_key", "embedding_key", "id_key", "npy", "lines", "skip_errors", "backend", "quantize")
NOT_WITH_INDEX = tuple(
    Only(name, without="index", message="not with --index: the index brings its vectors and records")
    for name in STREAM_ONLY
)


def check_input(given: frozenset[str], index: Path | None) -> None:
    """INPUT or --index, not both."""
    if index is not None and "input" in given:
        raise typer.BadParameter("either INPUT records or --index DIR, not both", param_hint="'--index'")
