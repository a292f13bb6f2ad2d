"""sembed embed: sentence vectors from a sentence-transformers model, with CF-BERT's component focusing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from .. import console
from ..io import STDIN, StreamOptions, TextFields
from ..models import sentence_models
from ..models.embed_stream import (
    SentenceVectorSettings,
    WordRecordSettings,
    WordVectorSettings,
    embed_sentences,
    embed_with_word_vectors,
    embed_words,
    same_encoder,
)
from ..options import (
    Backend,
    BatchSize,
    Device,
    Force,
    Input,
    Lines,
    LongText,
    Output,
    Precision,
    Quantize,
    Quiet,
    SentenceModel,
    ShardOption,
    SkipErrors,
    TextKeys,
    Threads,
    Verbose,
    check_backend,
    check_only,
    counted_text_keys,
    flag,
    given_on_command_line,
)
from .embed_options import (
    ONLY,
    CfWeight,
    EmbedMethod,
    EncodeBatchSize,
    Explain,
    KeepParts,
    Npy,
    PartsDir,
    Plain,
    SalienceDir,
    SifComponent,
    SyntaxMapDir,
    Words,
    WordVectorsOption,
)

if TYPE_CHECKING:
    from ..parts.embed_part import PartSettings


def embed_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = None,
    text_keys: TextKeys = None,
    model: SentenceModel = sentence_models.DEFAULT_MODEL,
    method: EmbedMethod = "model",
    vectors: WordVectorsOption = None,
    salience: SalienceDir = None,
    sif_component: SifComponent = "corpus",
    cf_weight: CfWeight = None,
    keep_parts: KeepParts = False,
    explain: Explain = False,
    plain: Plain = False,
    words: Words = False,
    syntax_map: SyntaxMapDir = None,
    npy: Npy = None,
    long_text: LongText = "truncate",
    force: Force = False,
    batch_size: BatchSize = 1000,
    encode_batch_size: EncodeBatchSize = None,
    device: Device = "auto",
    precision: Precision = "auto",
    backend: Backend = "torch",
    quantize: Quantize = "none",
    shard: ShardOption = None,
    parts: PartsDir = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
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

    Backends (--backend): torch runs the model with sentence-transformers;
    onnx runs its transformer, exported once to MODEL/onnx/ (else under
    SEMBED_CACHE, keyed by the model's content), with ONNX Runtime on the
    CPU and pools in numpy: the same vectors (fp32, to float rounding)
    without torch; --quantize int8 is faster, with slightly other vectors.
    SEMBED_THREADS sets ONNX Runtime's threads. Models with modules other
    than Transformer, Pooling and Normalize need --backend torch.

    A static model (a StaticEmbedding directory, as `sembed train --method
    static` writes it) runs in numpy whatever the backend: a text is the
    mean of its word-pieces' vectors, for corpus-scale first passes.

    With --npy FILE the vectors go to a float32 matrix (numpy .npy) instead,
    in output order (record by record, text field by text field, embedding
    before embedding_basic and embedding_cf); each record gets the row number
    of each vector in a field named after it plus _row (embedding_row,
    embedding_row_a, embedding_basic_row_a, ...). The file is written under a
    temporary name and renamed when the stream ends, also after a bad record
    (so the rows of the records already written are there); an existing FILE
    needs --force. Read it with numpy.load(FILE, mmap_mode="r").

    Every record also gets embedding_model, the identity of what made its
    vectors (one for all of them): NAME@DIGEST, the model as given and a
    short hash of its files, then ;cf=W, ;method=M;salience=..., ;words=...
    where those change the vector (the docs: "Vectors know their model");
    --npy FILE writes it to FILE.json too. index, search and eval
    read it and refuse to mix models. A record that already holds vectors
    of another model (or of none named) that this run does not replace is
    refused.

    Word-vector methods (--method; the text is tokenised as the vectors
    were built): avg is the mean of the word vectors; isf and nws are NWS
    eq. 1, s = sum q(w) w over the text's distinct words, q the table
    corpus's inverse sentence frequency (eq. 13) or the learnt NWS scores;
    sif is Arora et al. 2017, less the first principal component
    (--sif-component). Tokens without a vector and words the table lacks
    are counted on stderr; a text with no known word gets the zero vector.

    Words (--words; syntax-distillation paper, section 3.2): one record per
    word of text (--text-key K: of K). The parse is tokens (tokens_K) as
    `sembed parse` writes it; a record without one is parsed with the
    packaged spaCy pipeline. Each word record has the input record's fields
    but tokens and triples, and word_index, word, lemma, pos, tag, dep,
    head_index, head_dep (ROOT for a root), depth (edges to the root),
    sentence_index (the record's number in the input from 0; with --shard
    I/N, record k of the shard is k * N + I - 1) and embedding
    (embedding_row with --npy): the mean of --model's hidden layers 1..L
    concatenated with layer round(2/3 L), a word the mean of its
    word-pieces, fp32; a text longer than the encoder's positions is
    encoded in windows. --syntax-map DIR writes f(x) instead, from the
    encoder the map was trained on.

    Each of the three modes (--method model, the default; --method
    avg|isf|sif|nws; --words) has options of its own: one of another mode
    on the command line is a usage error.

    \b
    Example:
      sembed convert --from stsb sts-test.csv | sembed embed | sembed eval sts
      sembed convert --from stsb sts-test.csv \\
        | sembed embed --method nws --salience nws-glove | sembed eval sts
      sembed convert --from stsb sts-test.csv | sembed spo \\
        | sembed embed --cf-weight 0.2 --keep-parts -o sts-test.cf.jsonl
      sembed convert --from conll treebank/dependency_treebank | sembed parse \\
        | sembed embed --words --syntax-map syntax-map | sembed eval structure
    """
    check_only(ctx, ONLY)
    if parts is not None:  # one part of a split, written atomically with its manifest (sembed_cli/parts/)
        from ..parts.embed_part import embed_part

        embed_part(part_settings(ctx), parts, shard, force, console.weighted_words if plain else None)
        return
    fields = TextFields(text_keys)
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    if words:
        (text_key,) = counted_text_keys(
            text_keys, ("text",), "--words reads one text: give --text-key once, got {given}"
        )
        transformation = None
        if syntax_map is not None:
            from ..models.syntax_map import SyntaxMap

            transformation = SyntaxMap.load(syntax_map)
            trained_on = transformation.encoder
            if "model" in given_on_command_line(ctx) and not same_encoder(model, trained_on):
                raise typer.BadParameter(
                    f"the syntax map was trained on the word encoder of "
                    f"'{trained_on.get('model_name')}'; leave --model out with --syntax-map",
                    param_hint=flag(ctx, "model"),
                )
        words_settings = WordRecordSettings(model, text_key, syntax_map, npy, batch_size, encode_batch_size, device)
        embed_words(stream, words_settings, transformation)
        return
    if method != "model":
        if method != "avg" and salience is None:
            raise typer.BadParameter(
                f"--method {method} needs the salience table `sembed train --method nws` wrote",
                param_hint="'--salience'",
            )
        embed_with_word_vectors(
            stream, fields, WordVectorSettings(method, vectors, salience, sif_component, batch_size)
        )
        return
    settings = sentence_settings(ctx.params)
    embed_sentences(stream, fields, settings, console.weighted_words if plain else None)


def sentence_settings(params: Mapping[str, Any]) -> SentenceVectorSettings:
    """--method model's settings from embed's parameters by name (the command's own, or those `sembed parts run`
    parsed), after the usage errors of their combinations."""
    explain = params["explain"] or params["plain"]
    backend, long_text = params["backend"], params["long_text"]
    # checked for this mode only: the other modes leave a SEMBED_BACKEND of this one be
    check_backend(backend, params["quantize"], params["device"], params["precision"])
    if backend == "onnx" and explain:
        raise typer.BadParameter(
            "only for the sentence vectors of --method model (not --words, --explain, --plain)",
            param_hint="'--backend'",
        )
    if explain and long_text == "window":
        raise typer.BadParameter(
            "not with --explain or --plain (Token Attention is shown on one window)", param_hint="'--long-text'"
        )
    return SentenceVectorSettings(
        params["model"],
        params["cf_weight"],
        params["keep_parts"],
        explain,
        params["npy"],
        long_text,
        params["batch_size"],
        params["encode_batch_size"],
        params["device"],
        params["precision"],
        backend,
        params["quantize"],
    )


def part_settings(ctx: typer.Context) -> PartSettings:
    """The settings of one part of --parts DIR, from embed's parameters (the command's own, or those `sembed parts
    run` parsed), after the usage errors of --parts."""
    from ..parts.embed_part import PartSettings

    params = ctx.params
    given = given_on_command_line(ctx)
    if params["input"] == STDIN:
        raise typer.BadParameter(
            "a part reads INPUT twice (to know whether it is done): give a file, not stdin", param_hint="'--parts'"
        )
    for name in ("output", "npy"):
        if name in given:
            raise typer.BadParameter(
                "not with --parts (the part's files are named after it)",
                param_hint=f"'--{name}'" if name == "npy" else "'-o'",
            )
    return PartSettings(
        params["input"],
        sentence_settings(params),
        tuple(params["text_keys"] or ()),
        params["lines"],
        params["skip_errors"],
    )
