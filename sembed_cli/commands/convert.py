"""sembed convert: turn benchmark and corpus files, as downloaded, into records."""

from __future__ import annotations

import codecs
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from .. import console
from ..io import RecordSink
from ..options import (
    BatchSize,
    Force,
    NProcess,
    Only,
    Output,
    Quiet,
    SkipErrors,
    SpacyModel,
    Threads,
    Verbose,
    check_only,
)
from ..readers import FORMATS, InputFile, ReadSettings, input_files
from ..readers.inputs import AUTO
from ..text import spacy_pipeline

if TYPE_CHECKING:
    FormatName = str
else:
    FormatName = Literal[tuple(FORMATS)]  # typer offers the formats as the choices


def _encoding(value: str) -> str:
    if value == AUTO:
        return value
    try:
        return codecs.lookup(value).name
    except LookupError:
        raise typer.BadParameter(f"unknown encoding {value!r}") from None


From = Annotated[
    FormatName,
    typer.Option("--from", "-f", metavar="FORMAT", show_default=False, help=f"Input format: {', '.join(FORMATS)}."),
]
Paths = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH",
        show_default=False,
        help="Files or folders (every data file under a folder, in sorted order); '-' or none reads stdin; .gz works.",
    ),
]
Encoding = Annotated[
    str,
    typer.Option(
        "--encoding",
        metavar="NAME",
        callback=_encoding,
        help="Text encoding: auto (UTF-8; a line that is not UTF-8 is read as "
        "Windows-1252 and counted on stderr), utf-8 (such a line is an error), "
        "latin-1 or any Python codec. JSONL (snli) is always UTF-8.",
    ),
]
DocBreak = Annotated[
    Literal["blank", "file"] | None,
    typer.Option(
        "--doc-break",
        metavar="blank|file",
        show_default=False,
        help="lines and prose: where a document ends: at a blank line (lines' default) or at the end of the file "
        "(prose's default).",
    ),
]
Wrapped = Annotated[
    bool,
    typer.Option(
        "--wrapped",
        help="prose: lines are hard-wrapped, a paragraph runs to the next blank line (default: a paragraph a line).",
    ),
]


def convert_records(fmt: str, files: Sequence[InputFile], settings: ReadSettings | None = None) -> Iterator[dict]:
    """The records of `files` read as format `fmt`, lazily, in reading order."""
    return FORMATS[fmt].read(files, settings or ReadSettings())


ONLY = (
    Only(
        "doc_break", when=lambda values: values["fmt"] in ("lines", "prose"), message="only for --from lines or prose"
    ),
    Only("wrapped", when=lambda values: values["fmt"] == "prose", message="only for --from prose"),
)


def convert_command(
    ctx: typer.Context,
    fmt: From,
    paths: Paths = None,
    output: Output = "-",
    force: Force = False,
    encoding: Encoding = AUTO,
    doc_break: DocBreak = None,
    wrapped: Wrapped = False,
    model: SpacyModel = spacy_pipeline.DEFAULT_MODEL,
    batch_size: BatchSize = 1000,
    n_process: NProcess = 1,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Turn benchmark and corpus files, as downloaded, into records.

    Reads files in one of the formats below (no JSONL input) and writes a
    record a pair, a sentence or a labelled text, in reading order, fields
    in a fixed order. Pair texts are stripped of surrounding blanks.

    \b
    FORMAT       writes
    stsb         id (file/year/id), genre, source, text_a, text_b, score
    sick         id, text_a, text_b, score, label (lower case)
    semeval-sts  id (set/line), source, text_a, text_b, score
    snli         id (pairID), text_a, text_b, label; genre (MultiNLI)
    lines        doc_id, sent_id, text: a sentence a line
    prose        doc_id, sent_id, text: split by spaCy's senter
    brown        doc_id, sent_id, text, tags: word/TAG lines
    conll        doc_id, sent_id, text, tokens {i, text, tag, head}
    mr, subj     text, label (1 positive/subjective, 0 otherwise)
    cr           text, label (1 positive, 0 negative)

    \b
    Shared data folder              how to convert it
    stsb/sts-{train,dev,test}.csv   --from stsb
    sick/SICK_*.txt                 --from sick
    nli/*.jsonl                     --from snli
    corpora/abc                     --from prose --doc-break blank
                                    (an article a document)
    corpora/state_union             --from prose (a speech a document)
    corpora/inaugural               --from prose
    corpora/webtext                 --from lines (a post or turn a line)
    corpora/movie_reviews           --from lines (a review a file)
    corpora/brown                   --from brown
    treebank/dependency_treebank    --from conll
    senteval/sentence_polarity      --from mr
    senteval/subjectivity           --from subj
    senteval/product_reviews_{1,2}  --from cr (together: SentEval's CR)

    Documents: a document that is a whole file is named by the file (its
    path under the folder given: "state_union/1945-Truman.txt"); one ended
    by a blank line adds its number in the file from 0 ("abc/rural.txt#3").
    sent_id counts sentences in the document from 0 (for conll and brown,
    the position in the file, kept when --skip-errors drops a sentence).

    prose: a paragraph a line (--wrapped: up to a blank line), batched
    through spaCy's senter across files. conll: heads become 0-based with
    the root its own head, as `sembed parse` writes; dep, lemma and pos
    only where the file has those columns.

    semeval-sts: an STS.input.X.txt takes its scores from STS.gs.X.txt
    beside it; a blank gold line (an unscored pair) gives a record without
    score, counted on stderr; other files are score TAB sentence1 TAB
    sentence2 lines. snli: pairs with gold_label '-' (no consensus) are
    left out and counted on stderr. cr: the opinion marks [+n]/[-n] of a
    sentence are summed; sentences summing to 0 or without marks are left
    out. mr, subj and cr take labels from file names.

    A malformed line stops with 'error: FILE:LINE: what is wrong', exit 1,
    everything before it written; --skip-errors goes on and counts.

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed parse | sembed spo
      sembed convert --from prose corpora/state_union -o speeches.jsonl
    """
    check_only(ctx, ONLY)
    reader = FORMATS[fmt]
    files = input_files(paths or [], reader.pick, skip_errors)
    settings = ReadSettings(
        encoding=encoding, doc_break=doc_break, wrapped=wrapped, model=model, batch_size=batch_size, n_process=n_process
    )
    with (
        console.StreamProgress(f"converting {fmt}") as progress,
        RecordSink(
            output, flush_every=batch_size, force=force, inputs=[file.path for file in files], progress=progress
        ) as sink,
    ):
        sink.write_all(convert_records(fmt, files, settings))
    for file in files:
        warnings, notes = file.reports()
        for message in warnings:
            console.warn(message)
        for message in notes:
            console.say(message)
