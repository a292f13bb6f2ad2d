"""What the `sembed eval` commands share: the epilogs, --npy, the pair's --text-key, the classifiers' options,
the report on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ...io import RecordSink
from ...options import counted_text_keys

EVAL_EPILOG = (
    "Bad records stop with 'error: FILE:LINE: what is wrong' and exit 1 "
    "(--skip-errors: leave them out, counted on stderr)."
)
VECTORS_EPILOG = (
    EVAL_EPILOG + " Vectors of two models are never compared: every record's embedding_model (which "
    "`sembed embed` writes) must name the same model, and a record with one after records without "
    "(or the reverse) is refused; records none of which has the field (older files, vectors from "
    "elsewhere) are accepted as they are."
)

NpyVectors = Annotated[
    Path | None,
    typer.Option(
        "--npy",
        metavar="FILE",
        show_default=False,
        help="Read the vectors from this float32 matrix, which `sembed embed --npy FILE` wrote: each record names its "
        "rows (embedding_row_a, ...), and FILE.json, when present, names the model (it must agree with the "
        "records' embedding_model). The matrix is read with the records: give a finished one "
        "(`embed --npy FILE -o rows.jsonl` first), not a pipe from the embed still writing it.",
    ),
]

# --- entailment and classify -------------------------------------------------------------------------


def _inverse_strength(value: str) -> str:
    if value != "auto":
        try:
            if not float(value) > 0:
                raise ValueError
        except ValueError:
            raise typer.BadParameter(f"'{value}' is neither a positive number nor 'auto'") from None
    return value


def inverse_strength(value: str) -> float | None:
    """--c as `classify.cross_validate` takes it: a number, or None for 'auto' (the inner search)."""
    return None if value == "auto" else float(value)


LabelKey = Annotated[
    str, typer.Option("--label-key", metavar="KEY", help="The gold label field (a string or an integer).")
]
Folds = Annotated[int, typer.Option("--folds", min=2, metavar="K", help="Cross-validation folds.")]
InverseStrength = Annotated[
    str,
    typer.Option(
        "--c",
        metavar="C|auto",
        callback=_inverse_strength,
        help="Inverse L2 strength of the logistic regression; auto: pick it from 0.25, 0.5, 1, 2, 4, 8 on every "
        "training split by an inner search with as many folds, as SentEval does (about 60 times slower).",
    ),
]


# --- the pair and the report -------------------------------------------------------------------------


def pair_text_keys(text_keys: list[str] | None) -> tuple[str, str]:
    """The pair's two text keys: text_a, text_b unless --text-key is given twice."""
    key_a, key_b = counted_text_keys(
        text_keys, ("text_a", "text_b"), "a pair needs exactly two --text-key options, got {given}"
    )
    return key_a, key_b


def write_report(report: dict, output: str, force: bool, input: str | list[str]) -> None:
    """The report, one JSON object, to stdout or the -o file (never one of the inputs)."""
    with RecordSink(output, force=force, inputs=[input] if isinstance(input, str) else input) as sink:
        sink.write(report)
