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
from typing import TYPE_CHECKING, ClassVar, TypeVar

from ..errors import SembedError
from ..io import StreamOptions, TextFields, batched, check_text, derived_key, text_jobs
from ..io.vector_json import VectorJson, processes_for
from . import model_identity, sentence_models
from .embedder import Embedder, encode_batch_for

if TYPE_CHECKING:
    import numpy as np

    from .sentence_embedding import NpyMatrix

log = logging.getLogger(__name__)
T = TypeVar("T")


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
    fields: TextFields,
    component_focus: bool,
    stamp: model_identity.Stamp | None = None,
    embedder: Embedder | None = None,
) -> Callable[[dict], None]:
    """The per-record check: usable text fields (not too long for the model under --long-text error); with
    component focusing, a usable s_cf (or tokens to build it); with a `stamp`, no vectors of another model left
    in the record."""
    from ..text import spacy_pipeline
    from ..text.component_focus import S_CF
    from ..text.dependency import check_tokens

    def check(record: dict) -> None:
        keys = fields.of(record)
        if stamp is not None:
            stamp.check(record, keys)
        if embedder is not None:
            for key in keys:
                embedder.check_long(record, key)
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
    from .sentence_embedding import TOKEN_WEIGHTS, NpyMatrix, has_token_attention

    matrix_file = NpyMatrix(settings.npy, stream.force) if settings.npy else None  # refused before the model loads
    embedder = open_embedder(settings)
    if settings.explain and not has_token_attention(embedder.encoder):
        raise SembedError(
            f"the model at '{sentence_models.resolve_path(settings.model)}' has no Token Attention pooling",
            "--explain and --plain need a model that `sembed train --method ta` wrote",
        )
    names = ("embedding", "embedding_basic", "embedding_cf") if settings.keep_parts else ("embedding",)
    stamp = stamp_for(embedder.identity, names, matrix_file)
    # a static model's windows are read and encoded ahead of the writing when there are threads for it: the
    # tokenizer and the sums run without the GIL; with four threads or more the JSON of their vectors, which
    # holds it, is written by worker processes (docs/static-mode.md, "Where the time goes")
    ahead = embedder.backend.get("backend") == "static" and uses_threads()
    processes = processes_for(threads_used()) if ahead and matrix_file is None else 0
    json_workers = VectorJson(processes) if processes else None

    def transform(records: Iterable[dict]) -> Iterable[dict]:
        embedded = stamp.label(
            embed_records(
                records,
                embedder,
                fields,
                settings.batch_size,
                settings.keep_parts,
                matrix_file,
                settings.explain,
                ahead=ahead,
                json_workers=json_workers,
            )
        )
        return embedded if show is None else _shown(embedded, fields, TOKEN_WEIGHTS, show)

    try:
        with (
            matrix_file if matrix_file is not None else nullcontext(),
            json_workers if json_workers is not None else nullcontext(),
        ):
            count = stream.run(
                check_record(fields, settings.keep_parts or embedder.focus, stamp, embedder),
                transform,
                settings.batch_size,
                "embedding",
            )
    finally:
        embedder.report()
    _report_matrix(matrix_file)
    return count


def open_embedder(settings: SentenceVectorSettings) -> Embedder:
    """The Embedder of --method model's settings (the one `embed` and `parts` run)."""
    return Embedder.open(
        settings.model,
        backend=settings.backend,
        quantize=settings.quantize,
        precision=settings.precision,
        cf_weight=settings.cf_weight,
        long_text=settings.long_text,
        device=settings.device,
    ).with_batch_size(settings.encode_batch_size)


def embed_records(
    records: Iterable[dict],
    embedder: Embedder,
    fields: TextFields = TextFields(),
    batch_size: int = 1000,
    keep_parts: bool = False,
    vectors: NpyMatrix | None = None,
    explain: bool = False,
    ahead: bool = False,
    json_workers: VectorJson | None = None,
) -> Iterator[dict]:
    """Add `embedding` (suffixed like the text field) to every record, a window of `batch_size` records at a time.

    Every text of the window goes through `embedder` in one pass. With the
    embedder's W_cf, embedding = emb(text) + W * emb(s_cf) (CF-BERT eq. 1,
    the record's s_cf where it has one, else built from its parse);
    `keep_parts` also stores `embedding_basic` = emb(text) and
    `embedding_cf` = emb(s_cf) (W is then 0 unless the embedder has one).
    With `vectors` the records get row numbers (`embedding_row`...) into that
    file instead of the vectors. `explain` (a Token Attention model) adds
    `token_weights`, each text's words with their weights. Records must have
    passed `TextFields.of` (and, with component focusing, carry a string s_cf
    where they carry one at all).

    `ahead`: the windows are read and encoded in a thread of their own (`read_ahead`), a window or two ahead of
    the one the caller is writing, so that reading and encoding the next overlaps writing this one; the records,
    their order, the values and the errors are the same. `json_workers` (without `vectors`): the vectors' JSON
    text is written by those processes, a window at a time (`VectorJson`), and stored as orjson Fragments, which
    the sink writes as they are: the same bytes.
    """
    windows: Iterator = encoded_windows(records, embedder, fields, batch_size, keep_parts, explain)
    if json_workers is not None:
        windows = json_workers.ahead(windows)
    for batch, jobs, outputs in read_ahead(windows) if ahead else windows:
        if vectors is None:
            rows = json_workers.written(outputs) if json_workers is not None else outputs
            for n, (record, key) in enumerate(jobs):
                for name, values in rows.items():
                    record[derived_key(key, name)] = values[n]  # a float32 row: the sink writes it as a JSON list
        else:
            store_rows(jobs, outputs, vectors)
        yield from batch


def encoded_windows(
    records: Iterable[dict],
    embedder: Embedder,
    fields: TextFields,
    batch_size: int,
    keep_parts: bool,
    explain: bool,
) -> Iterator[tuple[list[dict], list[tuple[dict, str]], dict[str, np.ndarray]]]:
    """Each window of records with its (record, text key) jobs and the vectors of those jobs by field name
    (`embed_records`' first half: everything but storing the vectors)."""
    from ..text.component_focus import S_CF, add_missing_s_cf
    from .sentence_embedding import BASIC, CF, EMBEDDING, TOKEN_WEIGHTS, encode_explained

    focus = keep_parts or embedder.focus
    for batch in batched(records, batch_size):
        jobs = text_jobs(batch, fields)
        texts = [record[key] for record, key in jobs]
        s_cf = None
        if focus:
            add_missing_s_cf(jobs)
            s_cf = [record[derived_key(key, S_CF)] for record, key in jobs]
        if explain:
            both = texts + (s_cf or [])
            long_texts = embedder.long_texts
            if long_texts is not None:
                long_texts.count += len(long_texts.lengths(both))  # Token Attention is shown on the first window
            matrix, explained = encode_explained(embedder.encoder, both, embedder.encode_batch_size)
            for (record, key), words in zip(jobs, explained):
                record[derived_key(key, TOKEN_WEIGHTS)] = words
            basic, cf = matrix[: len(jobs)], matrix[len(jobs) :]
        elif focus:
            basic, cf = embedder.encode_parts(texts, s_cf)
        else:
            basic, cf = embedder.encode_plain(texts), None
        outputs = {EMBEDDING: basic}
        if focus and cf is not None:
            outputs[EMBEDDING] = basic + embedder.weight() * cf  # CF-BERT eq. 1
            if keep_parts:
                outputs[BASIC], outputs[CF] = basic, cf
        yield batch, jobs, outputs


AHEAD = 2  # windows `read_ahead` keeps ready: one being written, one to overlap with the next
JOIN_SECONDS = 2.0  # how long a stopped `read_ahead` waits for its thread


def read_ahead(items: Iterator[T], depth: int = AHEAD) -> Iterator[T]:
    """`items`, computed in a thread of its own up to `depth` ahead of the caller; an exception it raises comes
    out after the items before it, as it would from `items` itself.

    The thread only reads and computes (here: reads records and encodes windows, whose tokenizer and numpy work
    runs without the GIL), so it overlaps the caller's writing; it holds nothing the caller closes, and stops at
    the next item once the caller is done (a closed pipe, an error, an interrupt), which waits for it up to
    JOIN_SECONDS; one waiting on stdin longer ends with the process (a daemon thread).
    """
    import queue
    import threading

    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put((None, item)):
                    return
        except BaseException as error:  # handed to the caller, who raises it in its own thread
            put((error, None))
            return
        put((None, done))

    thread = threading.Thread(target=work, name="sembed-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            error, item = ready.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        stop.set()
        # let a window being encoded finish (milliseconds): a process that exits under native code running
        # without the GIL (the tokenizer) may abort; a thread waiting on stdin is left to end with the process
        thread.join(timeout=JOIN_SECONDS)


def threads_used() -> int:
    """The command's thread count (--threads, SEMBED_THREADS, OMP_NUM_THREADS or the machine's default, as
    `threads.configure` chose)."""
    from .. import threads

    return threads.configured_count() or 1


def uses_threads() -> bool:
    """Whether the command runs with more than one thread, so that a thread may read ahead of the writer."""
    return threads_used() > 1


def store_rows(jobs: list[tuple[dict, str]], outputs: dict[str, np.ndarray], vectors: NpyMatrix) -> None:
    """Append a window's vectors to `vectors` in output order (record by record, text by text, field by
    field) and give each record the row numbers."""
    import numpy as np

    from .sentence_embedding import ROW

    names = list(outputs)
    rows = np.stack([outputs[name] for name in names], axis=1).reshape(len(jobs) * len(names), -1)
    first = vectors.append(rows)
    for n, (record, key) in enumerate(jobs):
        for offset, name in enumerate(names):
            record[derived_key(key, name + ROW)] = first + n * len(names) + offset


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
    embedder = Embedder.open(
        settings.vectors,
        method=settings.method,
        salience=settings.salience,
        sif_component=settings.sif_component,
    )
    stamp = model_identity.Stamp(embedder.identity)
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
    from .sentence_embedding import NpyMatrix
    from .word_records import check_record as check_words
    from .word_records import word_batches

    matrix_file = NpyMatrix(settings.npy, stream.force) if settings.npy else None  # refused before the model loads
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
