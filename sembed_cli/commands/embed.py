"""sembed embed: sentence vectors from a sentence-transformers model, with CF-BERT's component focusing."""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Annotated, Literal, Optional

import typer

from .. import console, sentence_models
from ..io import RecordSource, TextFields, check_text, derived_key, run_stream
from ..options import BatchSize, Device, Force, Input, Output, Quiet, SkipErrors, TextKeys, Verbose
from .spo import check_tokens

CPU_ENCODE_BATCH = 32  # sentence-transformers' own default
CUDA_ENCODE_BATCH = 128  # a GPU wants more texts per pass


def _finite(value: Optional[float]) -> Optional[float]:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter("must be a finite number")
    return value


SentenceModel = Annotated[str, typer.Option(
    "--model", "-m", envvar="SEMBED_MODEL", metavar="MODEL",
    help="sentence-transformers model: a directory (one `sembed train` wrote included) or all-MiniLM-L6-v2, the "
         "packaged default. Never downloaded.")]
CfWeight = Annotated[Optional[float], typer.Option(
    "--cf-weight", metavar="W", callback=_finite, show_default=False,
    help="CF-BERT eq. 1: embedding = emb(text) + W * emb(s_cf). Default: the W_cf a `sembed train --method cf` "
         "model saved, else 0 (plain embeddings).")]
KeepParts = Annotated[bool, typer.Option(
    "--keep-parts", help="Also write embedding_basic = emb(text) and embedding_cf = emb(s_cf), so `sembed eval sts "
                         "--cf-grid` can sweep W without embedding again.")]
Npy = Annotated[Optional[str], typer.Option(
    "--npy", metavar="FILE", show_default=False,
    help="Write the vectors as rows of a float32 .npy matrix instead of into the JSONL; each record gets the row "
         "number in embedding_row (embedding_row_a, embedding_basic_row, ...).")]
Precision = Annotated[Literal["auto", "fp32", "fp16", "bf16"], typer.Option(
    "--precision", metavar="auto|fp32|fp16|bf16",
    help="Model precision: auto is fp16 on CUDA and fp32 on the CPU (the only one allowed there).")]
EncodeBatchSize = Annotated[Optional[int], typer.Option(
    "--encode-batch-size", min=1, metavar="N", show_default=False,
    help=f"Texts per forward pass within a batch of records. Default: {CPU_ENCODE_BATCH} on the CPU, "
         f"{CUDA_ENCODE_BATCH} on CUDA.")]


def check_record(fields: TextFields, component_focus: bool):
    """The per-record check: usable text fields; with component focusing, a usable s_cf (or tokens to build it)."""
    from ..sentence_embedding import S_CF

    def check(record: dict) -> None:
        keys = fields.of(record)
        if not component_focus:
            return
        for key in keys:
            name = derived_key(key, S_CF)
            if name in record:
                check_text(record, name)
            elif derived_key(key, "tokens") in record:
                check_tokens(derived_key(key, "tokens"), record[derived_key(key, "tokens")])

    return check


def embed_command(
    input: Input = "-",
    output: Output = "-",
    text_keys: TextKeys = None,
    model: SentenceModel = sentence_models.DEFAULT_MODEL,
    cf_weight: CfWeight = None,
    keep_parts: KeepParts = False,
    npy: Npy = None,
    force: Force = False,
    batch_size: BatchSize = 1000,
    encode_batch_size: EncodeBatchSize = None,
    device: Device = "auto",
    precision: Precision = "auto",
    skip_errors: SkipErrors = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """Sentence vectors from a sentence-transformers model.

    Reads text (or text_a / text_b, or --text-key). Writes embedding
    (embedding_a, embedding_b, ...): the model's sentence vector with the
    pooling and normalisation it was saved with, as a list of float32 values.
    Each batch of records is encoded in one call, texts sorted by length
    inside it; output is flushed after each batch. A text repeated within a
    batch is encoded once.

    Component focusing (CF-BERT, Yin et al. 2020, eq. 1): with --cf-weight W
    (or a model trained by `sembed train --method cf`, which saves its W_cf),
    embedding = emb(text) + W * emb(s_cf), a sum of the two finished sentence
    vectors. s_cf (s_cf_a, ...) is read from the record when present, else
    built as `sembed spo` builds it (from tokens when present, else with the
    packaged spaCy pipeline; run `sembed spo -m NAME` first for another).
    --keep-parts also writes embedding_basic and embedding_cf, the unweighted
    parts. W = 0 without --keep-parts skips S_cf altogether.

    With --npy FILE the vectors go to a float32 matrix (numpy .npy) instead,
    in output order (record by record, text field by text field, embedding
    before embedding_basic and embedding_cf); each record gets the row number
    of each vector in a field named after it plus _row (embedding_row,
    embedding_row_a, embedding_basic_row_a, ...). The file is written under a
    temporary name and renamed when the stream ends, also after a bad record
    (so the rows of the records already written are there); an existing FILE
    needs --force. Read it with numpy.load(FILE, mmap_mode="r").

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed embed | sembed eval sts
      sembed convert --from stsb sts-test.csv | sembed spo \\
        | sembed embed --cf-weight 0.2 --keep-parts -o sts-test.cf.jsonl
    """
    from ..sentence_embedding import VectorFile, embed_records  # numpy: not at `sembed --help` time

    fields = TextFields(text_keys)
    vectors = VectorFile(npy, force) if npy else None  # refuses an existing file before the model loads
    weight = cf_weight if cf_weight is not None else sentence_models.saved_cf_weight(model)
    if cf_weight is None and weight is not None:
        console.say(f"using the W_cf = {weight:g} saved with the model (--cf-weight overrides it)")
    resolved = sentence_models.resolve_device(device)
    encoder = sentence_models.load(model, resolved, sentence_models.resolve_precision(precision, resolved))
    encode_batch = encode_batch_size or (CUDA_ENCODE_BATCH if resolved.startswith("cuda") else CPU_ENCODE_BATCH)
    source = RecordSource(input, skip_errors=skip_errors)
    with vectors if vectors is not None else nullcontext():
        run_stream(source, check_record(fields, keep_parts or bool(weight)),
                   lambda records: embed_records(records, encoder, fields, batch_size, weight, keep_parts,
                                                 encode_batch, vectors),
                   output, batch_size, "embedding")
    if vectors is not None:
        console.say(f"wrote {vectors.rows} vectors of {vectors.dim} dimensions to {vectors.path}")
