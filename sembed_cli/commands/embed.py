"""sembed embed: sentence vectors from a sentence-transformers model, with CF-BERT's component focusing."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

from .. import console
from ..models import model_identity, sentence_models
from ..text import spacy_pipeline
from ..io import StreamOptions, TextFields, check_text, derived_key
from ..errors import SembedError
from ..options import (Backend, BatchSize, Device, Force, Input, Lines, LongText, Output, Precision, Quantize, Quiet,
                       SentenceModel, ShardOption, SkipErrors, TextKeys, Threads, Verbose, check_backend,
                       counted_text_keys, finite, flag, given_on_command_line)
from ..text.dependency import check_tokens

CPU_ENCODE_BATCH = 32  # sentence-transformers' own default
CUDA_ENCODE_BATCH = 128  # a GPU wants more texts per pass

CfWeight = Annotated[Optional[float], typer.Option(
    "--cf-weight", metavar="W", callback=finite, show_default=False,
    help="CF-BERT eq. 1: embedding = emb(text) + W * emb(s_cf). Default: the W_cf a `sembed train --method cf` "
         "model saved, else 0 (plain embeddings).")]
KeepParts = Annotated[bool, typer.Option(
    "--keep-parts", help="Also write embedding_basic = emb(text) and embedding_cf = emb(s_cf), so `sembed eval sts "
                         "--cf-grid` can sweep W without embedding again.")]
Npy = Annotated[Optional[str], typer.Option(
    "--npy", metavar="FILE", show_default=False,
    help="Write the vectors as rows of a float32 .npy matrix instead of into the JSONL; each record gets the row "
         "number in embedding_row (embedding_row_a, embedding_basic_row, ...).")]
EmbedMethod = Annotated[Literal["model", "avg", "isf", "sif", "nws"], typer.Option(
    "--method", metavar="model|avg|isf|sif|nws",
    help="model: the sentence-transformers --model (the default); avg, isf, sif, nws: word-vector sentence "
         "embeddings (see below).")]
WordVectorsOption = Annotated[Optional[str], typer.Option(
    "--vectors", metavar="SPEC", envvar="SEMBED_VECTORS", show_default=False,
    help="avg, isf, sif, nws: word vectors: glove-6b-50d (packaged), spacy:NAME|PATH, glove:FILE, word2vec:FILE, "
         "word2vec-bin:FILE or a FILE. Default: those the --salience table was learnt on, else glove-6b-50d.")]
SalienceDir = Annotated[Optional[str], typer.Option(
    "--salience", metavar="DIR", show_default=False,
    help="isf, sif, nws: the salience table `sembed train --method nws` wrote (its scores, and its corpus "
         "counts for ISF and SIF).")]
SifComponent = Annotated[Literal["corpus", "batch"], typer.Option(
    "--sif-component", metavar="corpus|batch",
    help="sif: remove the first principal component of the training corpus's SIF vectors (stored with the "
         "table; streams, and the same for every input), or of each --batch-size batch's own vectors (Arora "
         "et al. on a whole test set: give a batch size above the record count).")]
Explain = Annotated[bool, typer.Option(
    "--explain", help="With a TA-SBERT model (`sembed train --method ta`): also write token_weights (token_weights_a, "
                      "...), each word of the text with its Token Attention weight, [[word, weight], ...].")]
Plain = Annotated[bool, typer.Option(
    "--plain", help="With a TA-SBERT model: show each text on stderr with its words shaded by their Token Attention "
                    "weight (where stderr is not a terminal: word(weight)); implies --explain.")]
Words = Annotated[bool, typer.Option(
    "--words", help="One record per word instead, with its parse and contextualised vector (see below).")]
SyntaxMapDir = Annotated[Optional[str], typer.Option(
    "--syntax-map", metavar="DIR", show_default=False,
    help="--words: write f(x), the syntactic transformation `sembed train --method syntax` saved in DIR, on the "
         "vectors of the word encoder it was trained on (which replaces --model).")]
EncodeBatchSize = Annotated[Optional[int], typer.Option(
    "--encode-batch-size", min=1, metavar="N", show_default=False,
    help=f"Texts per forward pass within a batch of records. Default: {CPU_ENCODE_BATCH} on the CPU, "
         f"{CUDA_ENCODE_BATCH} on CUDA.")]


@dataclass(frozen=True)
class Mode:
    """One of embed's three ways of making vectors and the options it takes; an option of another mode given on the
    command line is a usage error: `refusal` where the mode says why, else "only" and where the option belongs."""

    chosen: str  # how the user chooses it, as the usage error names it
    options: frozenset[str]
    refusal: Optional[str] = None
    refusals: dict[str, str] = field(default_factory=dict)  # a reason of its own for some options


COMMON = frozenset({"input", "output", "lines", "text_keys", "force", "batch_size", "shard", "skip_errors", "threads",
                    "quiet", "verbose"})
MODEL = Mode("for --method model", frozenset({
    "method", "model", "cf_weight", "keep_parts", "explain", "plain", "npy", "long_text", "encode_batch_size",
    "device", "precision", "backend", "quantize"}))
WORD_VECTORS = Mode("for --method avg|isf|sif|nws",
                    frozenset({"method", "vectors", "salience", "sif_component"}))
WORDS = Mode("with --words", frozenset({
    "words", "model", "syntax_map", "npy", "encode_batch_size", "device", "precision"}),
    refusal="not with --words (word vectors come from the encoder, in fp32)",
    refusals={"long_text": "not with --words (a long text is always encoded in windows there)"})
MODES = (MODEL, WORD_VECTORS, WORDS)


def mode_of(method: str, words: bool) -> Mode:
    return WORDS if words else MODEL if method == "model" else WORD_VECTORS


def refuse_other_modes(ctx: typer.Context, mode: Mode) -> None:
    """A usage error for an option of another mode given on the command line (the environment's are left be)."""
    given = given_on_command_line(ctx)
    for param in ctx.command.params:  # in the order of the command's options
        if param.name in COMMON | mode.options or param.name not in given:
            continue
        homes = [other.chosen for other in MODES if param.name in other.options]
        message = mode.refusals.get(param.name, mode.refusal) or "only " + " or ".join(homes)
        raise typer.BadParameter(message, param_hint=flag(ctx, param.name))


def check_record(fields: TextFields, component_focus: bool, stamp: model_identity.Stamp | None = None,
                 long_texts=None):
    """The per-record check: usable text fields (not too long for the model under --long-text error); with
    component focusing, a usable s_cf (or tokens to build it); with a `stamp`, no vectors of another model left
    in the record."""
    from ..models.sentence_embedding import S_CF

    def check(record: dict) -> None:
        keys = fields.of(record)
        if stamp is not None:
            stamp.check(record, keys)
        if long_texts is not None:
            for key in keys:
                long_texts.check(record, key)
        if not component_focus:
            return
        for key in keys:
            name = derived_key(key, S_CF)
            if name in record:
                check_text(record, name)
            elif derived_key(key, "tokens") in record:
                check_tokens(derived_key(key, "tokens"), record[derived_key(key, "tokens")])
            else:
                check_text(record, key, spacy_pipeline.LIMIT)  # S_cf comes from its parse

    return check


def embed_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = False,
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

    Backends (--backend): torch runs the model with sentence-transformers.
    onnx exports the model's transformer once with torch.onnx.export to
    MODEL/onnx/model.onnx (when MODEL is writable, else under SEMBED_CACHE,
    default ~/.cache/sembed, keyed by the model's content; rebuilt when the
    model changes) and then runs it with ONNX Runtime on the CPU, pooling and
    normalising in numpy as the model's own modules do: the same vectors
    (fp32, to float rounding) from a process that never imports torch.
    --quantize int8 runs its dynamic int8 quantisation for this CPU
    (MODEL/onnx/model_qint8_avx2.onnx ...): faster, slightly other vectors.
    SEMBED_THREADS sets ONNX Runtime's threads. Models with modules other
    than Transformer, Pooling and Normalize (TA-SBERT's Token Attention,
    Dense) need --backend torch.

    A static model (a sentence-transformers StaticEmbedding directory, as
    `sembed train --method static` writes it) is run in numpy and tokenizers
    whatever the backend, without torch: a text is the mean of its
    word-pieces' vectors, for corpus-scale first passes (retrieval,
    deduplication, clustering); it ignores word order.

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
    where those change the vector (see the README, "Vectors know their
    model"); --npy FILE writes it to FILE.json too. index, search and eval
    read it and refuse to mix models. A record that already holds vectors
    of another model (or of none named) that this run does not replace is
    refused.

    Word-vector methods (--method, no sentence-transformers model; the text
    is tokenised as the vectors were built, lower-cased for GloVe and spaCy):
    avg is the mean of the word vectors; isf and nws are NWS eq. 1,
    s = sum q(w) w over the text's distinct words, with q the inverse
    sentence frequency in the table's corpus (eq. 13) or the learnt NWS
    scores; sif is Arora et al. 2017: the mean of a / (a + p(w)) w,
    a = 1e-3, p(w) from the table's corpus, minus the projection on the
    first principal component (--sif-component). Tokens without a vector,
    and words the table lacks (scored as a word seen once), are counted on
    stderr; a text with no known word gets the zero vector, with a warning.

    Words (--words; syntax-distillation paper, section 3.2): one record per
    word of text (--text-key K: of K) instead of one per text. The parse is
    tokens (tokens_K) as `sembed parse` writes it, with dependency labels;
    a record without one is parsed with the packaged spaCy pipeline (run
    `sembed parse -m NAME` first for another). Each word record has the
    input record's fields but tokens and triples (and their _a/_b forms),
    and word_index, word, lemma, pos, tag, dep (the token's), head_index,
    head_dep (the head's dep; ROOT for a root, its own head), depth (edges
    to the root), sentence_index (the record's number in the input from 0,
    skipped bad records not counted; with --shard I/N, record k of the
    shard is k * N + I - 1) and embedding
    (embedding_row with --npy). The vector is --model's transformer (any
    BERT-style encoder directory also works): the mean of its hidden layers
    1..L concatenated with layer round(2/3 L), 768 values for MiniLM (the
    paper: BERT-large's mean of all layers and layer 16), a word the mean
    of its word-pieces, fp32. A text longer than the encoder's positions is
    encoded in consecutive windows. --syntax-map DIR writes f(x) instead,
    from the encoder the map was trained on. Output is flushed after each
    batch of records.

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
    from ..models.sentence_embedding import LongTexts, VectorFile, embed_records, has_token_attention  # numpy: not at help

    mode = mode_of(method, words)
    refuse_other_modes(ctx, mode)
    fields = TextFields(text_keys)
    explain = explain or plain
    stream = StreamOptions(input, output, lines=lines, force=force, shard=shard, skip_errors=skip_errors)
    if mode is WORDS:
        return _embed_words(ctx, stream, text_keys, model, syntax_map, npy, batch_size, encode_batch_size, device,
                            precision)
    if mode is WORD_VECTORS:
        return _embed_word_vectors(stream, fields, method, vectors, salience, sif_component, batch_size)
    check_backend(backend, quantize, device, precision)  # the other modes leave a SEMBED_BACKEND of this one be
    if backend == "onnx" and explain:
        raise typer.BadParameter("only for the sentence vectors of --method model (not --words, --explain, --plain)",
                                 param_hint="'--backend'")
    if explain and long_text == "window":
        raise typer.BadParameter("not with --explain or --plain (Token Attention is shown on one window)",
                                 param_hint="'--long-text'")
    matrix_file = VectorFile(npy, force) if npy else None  # refuses an existing file before the model loads
    weight = cf_weight if cf_weight is not None else sentence_models.saved_cf_weight(model)
    if cf_weight is None and weight is not None:
        console.say(f"using the W_cf = {weight:g} saved with the model (--cf-weight overrides it)")
    encoder, resolved = sentence_models.load_encoder(model, device, precision, backend, quantize)
    if explain and not has_token_attention(encoder):
        raise SembedError(f"the model at '{sentence_models.resolve_path(model)}' has no Token Attention pooling",
                          "--explain and --plain need a model that `sembed train --method ta` wrote")
    encode_batch = encode_batch_size or (CUDA_ENCODE_BATCH if resolved.startswith("cuda") else CPU_ENCODE_BATCH)
    identity = model_identity.of_sentence_model(model)  # like precision, the backend is not part of it
    stamp = stamp_for(identity.with_setting("cf", weight) if weight else identity,
                      ("embedding", "embedding_basic", "embedding_cf") if keep_parts else ("embedding",), matrix_file)
    long_texts = LongTexts(encoder, long_text)

    def transform(records):
        embedded = stamp.label(embed_records(records, encoder, fields, batch_size, weight, keep_parts, encode_batch,
                                             matrix_file, explain, long_texts))
        return show_weights(embedded, fields) if plain else embedded

    try:
        with matrix_file if matrix_file is not None else nullcontext():
            stream.run(check_record(fields, keep_parts or bool(weight), stamp, long_texts), transform, batch_size,
                       "embedding")
    finally:
        long_texts.report()
    if matrix_file is not None:
        console.say(f"wrote {matrix_file.rows} vectors of {matrix_file.dim} dimensions to {matrix_file.path}")


def stamp_for(identity: model_identity.Identity, names: tuple[str, ...], matrix_file) -> model_identity.Stamp:
    """The run's `embedding_model` stamp; with --npy the vectors are row numbers (embedding_row...) and the matrix's
    sidecar names the model too."""
    from ..models.sentence_embedding import ROW

    if matrix_file is None:
        return model_identity.Stamp(identity, names)
    matrix_file.identity = identity
    return model_identity.Stamp(identity, tuple(name + ROW for name in names))


def show_weights(records, fields: TextFields):
    """Pass records through, showing each text's Token Attention on stderr (--plain)."""
    from ..models.sentence_embedding import TOKEN_WEIGHTS

    for record in records:
        for key in fields.of(record):
            console.weighted_words(record[derived_key(key, TOKEN_WEIGHTS)])
        yield record


def _embed_word_vectors(stream: StreamOptions, fields, method, vectors, salience, sif_component, batch_size) -> None:
    """--method avg|isf|sif|nws: word-vector sentence embeddings (sembed_cli/models/salience.py)."""
    from ..models import word_vectors
    from ..models.salience import SalienceTable, SentenceEmbedder, embed_records as embed_word_records

    if method == "avg" and salience is not None:
        raise typer.BadParameter("avg weighs no word: leave it out", param_hint="'--salience'")
    if method != "avg" and salience is None:
        raise typer.BadParameter(f"--method {method} needs the salience table `sembed train --method nws` wrote",
                                 param_hint="'--salience'")
    table = SalienceTable.load(salience) if salience is not None else None
    spec = vectors or (table.vectors if table is not None else word_vectors.DEFAULT_VECTORS)
    embedder = SentenceEmbedder(method, word_vectors.load(spec), table, sif_component)
    stamp = model_identity.Stamp(model_identity.of_word_vector_method(word_vectors.identity(embedder.vectors), method,
                                                                      salience, sif_component))
    stream.run(lambda record: stamp.check(record, fields.of(record)),
               lambda records: stamp.label(embed_word_records(records, embedder, fields, batch_size)), batch_size,
               "embedding")
    embedder.report()


def _embed_words(ctx, stream: StreamOptions, text_keys, model, syntax_map, npy, batch_size, encode_batch_size, device,
                 precision) -> None:
    """--words [--syntax-map DIR]: one record per word (sembed_cli/models/word_records.py)."""
    from ..models.contextual_words import WordEncoder
    from ..models.sentence_embedding import VectorFile
    from ..models.syntax_map import SyntaxMap
    from ..models.word_records import check_record as check_words, word_batches

    if precision not in ("auto", "fp32"):
        raise typer.BadParameter(WORDS.refusal, param_hint="'--precision'")
    (text_key,) = counted_text_keys(text_keys, ("text",), "--words reads one text: give --text-key once, got {given}")
    matrix_file = VectorFile(npy, stream.force) if npy else None  # refuses an existing file before the model loads
    transformation = None
    if syntax_map is not None:
        transformation = SyntaxMap.load(syntax_map)
        if "model" in given_on_command_line(ctx) and not _same_model(model, transformation.encoder):
            raise typer.BadParameter(
                f"the syntax map was trained on the word encoder of '{transformation.encoder.get('model_name')}'; "
                "leave --model out with --syntax-map", param_hint=flag(ctx, "model"))
        encoder = WordEncoder.from_description(transformation.encoder, device=device)
    else:
        encoder = WordEncoder.open(model, device=device)
    encode_batch = encode_batch_size or (CUDA_ENCODE_BATCH if encoder.device.startswith("cuda") else CPU_ENCODE_BATCH)
    identity = model_identity.of_path(encoder.name, encoder.path).with_setting("words", f"layer{encoder.layer}")
    if encoder.random_init:
        identity = identity.with_setting("random_init", f"seed{encoder.seed}")
    if syntax_map is not None:
        identity = identity.with_setting("syntax_map", model_identity.of_path(syntax_map, syntax_map))
    stamp = stamp_for(identity, ("embedding",), matrix_file)
    check_parse = check_words(text_key)

    def check(record: dict) -> None:
        check_parse(record)
        stamp.check(record, ["text"])  # a word record's vector is embedding (embedding_row), whatever the text key

    source = stream.source()
    records = source.checked(check)
    with matrix_file if matrix_file is not None else nullcontext(), \
            console.StreamProgress("embedding words", source.position) as progress, \
            stream.sink(1 << 30, progress) as sink:
        for batch in word_batches(records, encoder, text_key=text_key, batch_size=batch_size,
                                  encode_batch_size=encode_batch, syntax_map=transformation, matrix_file=matrix_file,
                                  shard=stream.shard):
            sink.write_all(stamp.label(batch))
            sink.flush()
    summary = source.summary()
    if summary:
        console.warn(summary)
    if matrix_file is not None:
        console.say(f"wrote {matrix_file.rows} vectors of {matrix_file.dim} dimensions to {matrix_file.path}")


def _same_model(model: str, description: dict) -> bool:
    """Whether --model names the encoder a syntax map's description records (by name or by directory)."""
    if model == description.get("model_name"):
        return True
    try:
        from ..models.contextual_words import transformer_path

        return str(transformer_path(model).resolve()) == str(Path(str(description.get("model"))).resolve())
    except SembedError:
        return False
