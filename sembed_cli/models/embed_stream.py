"""`sembed embed` as functions: its three ways of making vectors, each over a record stream.

`embed_sentences` (--method model): a sentence-transformers model's vectors, with CF-BERT's component focusing
(Yin et al. 2020, eq. 1) and Token Attention weights where asked; `embed_with_word_vectors` (--method
avg|isf|sif|nws): word-vector sentence embeddings (salience.py); `embed_words` (--words): one record per word
with its contextual vector (word_records.py). Each stamps the vectors with the identity of what made them
(model_identity) and refuses records holding another model's.

Light at import (no numpy, no torch): the command's defaults come from here, and `sembed --help` must stay instant.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..errors import SembedError
from ..io import StreamOptions, TextFields, check_text, derived_key
from . import model_identity, sentence_models

log = logging.getLogger(__name__)

CPU_ENCODE_BATCH = 32  # sentence-transformers' own default
CUDA_ENCODE_BATCH = 128  # a GPU wants more texts per pass


def encode_batch_for(device: str, given: int | None) -> int:
    """Texts per forward pass: the one given, else the default of the (resolved) device."""
    return given or (CUDA_ENCODE_BATCH if device.startswith("cuda") else CPU_ENCODE_BATCH)


@dataclass(frozen=True)
class SentenceVectorSettings:
    """--method model: the model and how it runs, CF-BERT's W_cf (None: the one the model saved, else 0), what
    else is written (the parts, Token Attention weights, a .npy matrix) and how long texts are met."""

    model: str = sentence_models.DEFAULT_MODEL
    cf_weight: float | None = None
    keep_parts: bool = False
    explain: bool = False
    npy: str | None = None
    long_text: str = "truncate"
    batch_size: int = 1000
    encode_batch_size: int | None = None
    device: str = "auto"
    precision: str = "auto"
    backend: str = "torch"
    quantize: str = "none"
    # where the vectors go and where they are computed, not what they are: a part's manifest leaves them out
    NOT_VECTORS: ClassVar[frozenset[str]] = frozenset({"npy", "device"})


def check_record(
    fields: TextFields, component_focus: bool, stamp: model_identity.Stamp | None = None, long_texts=None
) -> Callable[[dict], None]:
    """The per-record check: usable text fields (not too long for the model under --long-text error); with
    component focusing, a usable s_cf (or tokens to build it); with a `stamp`, no vectors of another model left
    in the record."""
    from ..text import spacy_pipeline
    from ..text.dependency import check_tokens
    from .sentence_embedding import S_CF

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


def stamp_for(identity: model_identity.Identity, names: tuple[str, ...], matrix_file) -> model_identity.Stamp:
    """The run's `embedding_model` stamp; with --npy the vectors are row numbers (embedding_row...) and the matrix's
    sidecar names the model too."""
    from .sentence_embedding import ROW

    if matrix_file is None:
        return model_identity.Stamp(identity, names)
    matrix_file.identity = identity
    return model_identity.Stamp(identity, tuple(name + ROW for name in names))


def embed_sentences(
    stream: StreamOptions,
    fields: TextFields,
    settings: SentenceVectorSettings,
    show: Callable[[list], None] | None = None,
) -> int:
    """--method model: each record with its text fields' sentence vectors; `show` is given each text's Token
    Attention weights, [[word, weight], ...], as its record goes out (the command's --plain display; needs
    settings.explain). Returns the count written."""
    from .sentence_embedding import TOKEN_WEIGHTS, LongTexts, VectorFile, embed_records, has_token_attention

    matrix_file = VectorFile(settings.npy, stream.force) if settings.npy else None  # refused before the model loads
    weight = settings.cf_weight if settings.cf_weight is not None else sentence_models.saved_cf_weight(settings.model)
    if settings.cf_weight is None and weight is not None:
        log.info(f"using the W_cf = {weight:g} saved with the model (--cf-weight overrides it)")
    encoder, resolved = sentence_models.load_encoder(
        settings.model, settings.device, settings.precision, settings.backend, settings.quantize
    )
    if settings.explain and not has_token_attention(encoder):
        raise SembedError(
            f"the model at '{sentence_models.resolve_path(settings.model)}' has no Token Attention pooling",
            "--explain and --plain need a model that `sembed train --method ta` wrote",
        )
    encode_batch = encode_batch_for(resolved, settings.encode_batch_size)
    identity = model_identity.of_sentence_model(settings.model)  # like precision, the backend is not part of it
    names = ("embedding", "embedding_basic", "embedding_cf") if settings.keep_parts else ("embedding",)
    stamp = stamp_for(identity.with_setting("cf", weight) if weight else identity, names, matrix_file)
    long_texts = LongTexts(encoder, settings.long_text)

    def transform(records: Iterable[dict]) -> Iterable[dict]:
        embedded = stamp.label(
            embed_records(
                records,
                encoder,
                fields,
                settings.batch_size,
                weight,
                settings.keep_parts,
                encode_batch,
                matrix_file,
                settings.explain,
                long_texts,
            )
        )
        return embedded if show is None else _shown(embedded, fields, TOKEN_WEIGHTS, show)

    try:
        with matrix_file if matrix_file is not None else nullcontext():
            count = stream.run(
                check_record(fields, settings.keep_parts or bool(weight), stamp, long_texts),
                transform,
                settings.batch_size,
                "embedding",
            )
    finally:
        long_texts.report()
    _report_matrix(matrix_file)
    return count


def _shown(records: Iterable[dict], fields: TextFields, weights: str, show: Callable[[list], None]) -> Iterator[dict]:
    for record in records:
        for key in fields.of(record):
            show(record[derived_key(key, weights)])
        yield record


@dataclass(frozen=True)
class WordVectorSettings:
    """--method avg|isf|sif|nws: the word vectors (None: the salience table's, else the packaged GloVe), the
    salience table `sembed train --method nws` wrote (avg takes none, the others need one) and SIF's component."""

    method: str
    vectors: str | None = None
    salience: str | None = None
    sif_component: str = "corpus"
    batch_size: int = 1000


def embed_with_word_vectors(stream: StreamOptions, fields: TextFields, settings: WordVectorSettings) -> int:
    """Word-vector sentence embeddings of each record's text fields (salience.py); returns the count written."""
    from . import word_vectors
    from .salience import SalienceTable, SentenceEmbedder, embed_records

    table = SalienceTable.load(settings.salience) if settings.salience is not None else None
    spec = settings.vectors or (table.vectors if table is not None else word_vectors.DEFAULT_VECTORS)
    embedder = SentenceEmbedder(settings.method, word_vectors.load(spec), table, settings.sif_component)
    stamp = model_identity.Stamp(
        model_identity.of_word_vector_method(
            word_vectors.identity(embedder.vectors), settings.method, settings.salience, settings.sif_component
        )
    )
    count = stream.run(
        lambda record: stamp.check(record, fields.of(record)),
        lambda records: stamp.label(embed_records(records, embedder, fields, settings.batch_size)),
        settings.batch_size,
        "embedding",
    )
    embedder.report()
    return count


@dataclass(frozen=True)
class WordRecordSettings:
    """--words: the word encoder (a syntax map's own, when one is given), the one text field, --npy, batches."""

    model: str = sentence_models.DEFAULT_MODEL
    text_key: str = "text"
    syntax_map: str | None = None  # the directory `sembed train --method syntax` wrote
    npy: str | None = None
    batch_size: int = 1000
    encode_batch_size: int | None = None
    device: str = "auto"


def same_encoder(model: str, description: dict) -> bool:
    """Whether `model` names the encoder a syntax map's description records (by name or by directory)."""
    if model == description.get("model_name"):
        return True
    try:
        from .contextual_words import transformer_path

        return str(transformer_path(model).resolve()) == str(Path(str(description.get("model"))).resolve())
    except SembedError:
        return False


def embed_words(stream: StreamOptions, settings: WordRecordSettings, transformation=None) -> int:
    """One record per word of each record's text, with its parse and contextual vector (word_records.py); with
    `transformation` (the loaded syntax_map.SyntaxMap of settings.syntax_map), f(x) on its own encoder's vectors.
    Returns the count of word records written."""
    from .. import console
    from .contextual_words import WordEncoder
    from .sentence_embedding import VectorFile
    from .word_records import check_record as check_words
    from .word_records import word_batches

    matrix_file = VectorFile(settings.npy, stream.force) if settings.npy else None  # refused before the model loads
    if transformation is not None:
        encoder = WordEncoder.from_description(transformation.encoder, device=settings.device)
    else:
        encoder = WordEncoder.open(settings.model, device=settings.device)
    encode_batch = encode_batch_for(encoder.device, settings.encode_batch_size)
    identity = model_identity.of_path(encoder.name, encoder.path).with_setting("words", f"layer{encoder.layer}")
    if encoder.random_init:
        identity = identity.with_setting("random_init", f"seed{encoder.seed}")
    if settings.syntax_map is not None:
        identity = identity.with_setting("syntax_map", model_identity.of_path(settings.syntax_map, settings.syntax_map))
    stamp = stamp_for(identity, ("embedding",), matrix_file)
    check_parse = check_words(settings.text_key)

    def check(record: dict) -> None:
        check_parse(record)
        stamp.check(record, ["text"])  # a word record's vector is embedding (embedding_row), whatever the text key

    source = stream.source()
    records: Iterator[dict] = source.checked(check)
    with (
        matrix_file if matrix_file is not None else nullcontext(),
        console.StreamProgress("embedding words", source.position) as progress,
        stream.sink(1 << 30, progress) as sink,
    ):
        for batch in word_batches(
            records,
            encoder,
            text_key=settings.text_key,
            batch_size=settings.batch_size,
            encode_batch_size=encode_batch,
            syntax_map=transformation,
            matrix_file=matrix_file,
            shard=stream.shard,
        ):
            sink.write_all(stamp.label(batch))
            sink.flush()
    summary = source.summary()
    if summary:
        log.warning(summary)
    _report_matrix(matrix_file)
    return sink.count


def _report_matrix(matrix_file) -> None:
    if matrix_file is not None:
        log.info(f"wrote {matrix_file.rows} vectors of {matrix_file.dim} dimensions to {matrix_file.path}")
