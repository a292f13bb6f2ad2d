"""sembed search: the nearest indexed records of each query, from an index directory sembed index wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import BadRecord, SembedError
from ..io import StreamOptions, batched, check_text
from ..options import (BACKEND_HELP, QUANTIZE_HELP, BackendName, BatchSize, Device, Force, Input, Lines, LongText,
                       Output, Quantization, Quiet, SkipErrors, Threads, Verbose, check_backend, flag,
                       given_on_command_line)

IndexPath = Annotated[Path, typer.Option("--index", "-i", metavar="DIR", show_default=False,
                                         help="The index directory `sembed index` wrote (required).")]
QueryModel = Annotated[Optional[str], typer.Option(
    "--model", "-m", metavar="MODEL", show_default=False,
    help="The model that embeds the query texts (another path to the index's model). Default: the index's own; "
         "another model is refused.")]
QueryTexts = Annotated[Optional[list[str]], typer.Option(
    "--query", metavar="TEXT", show_default=False,
    help="A query text (repeatable), searched instead of reading query records: each is the record "
         "{\"text\": TEXT} (--text-key names the field).")]
K = Annotated[int, typer.Option("--k", "-n", min=1, metavar="K", help="Neighbours per query (the paper: 10).")]
TextKey = Annotated[str, typer.Option("--text-key", "-k", metavar="KEY", help="The query text field (embedded when "
                                                                              "the record has no --embedding-key).")]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY",
                                           help="A field with the query's vector, used instead of its text.")]
QueryBackend = Annotated[Optional[BackendName], typer.Option(
    "--backend", envvar="SEMBED_BACKEND", metavar="torch|onnx", show_default=False,
    help=BACKEND_HELP + " Default: the one the index was built with.")]
QueryQuantize = Annotated[Optional[Quantization], typer.Option(
    "--quantize", envvar="SEMBED_QUANTIZE", metavar="none|int8", show_default=False,
    help=QUANTIZE_HELP + " Default: the index's.")]
Spelling = Annotated[bool, typer.Option(
    "--spelling", help="Re-rank the 10 K nearest by spelling, with the indexed names that hold the query's "
                       "words: a name one edit from the query text, or holding its words in any order, however "
                       "punctuated or abbreviated, moves up, by the share of the query's words it holds, each word "
                       "weighted by its IDF over the indexed names ('Jackson' finds 'Jackson County', 'Springfield "
                       "City' and 'st louis' find 'Springfield' and 'St. Louis'; place-name lookup, "
                       "sembed_cli/models/poi_lookup.py).")]
Payload = Annotated[bool, typer.Option("--payload", help="Give each neighbour the whole indexed record (payload), "
                                                         "not only its id, text and score.")]


class QueryVectors:
    """Checks query embeddings as they are read and keeps each as a float32 array for its batch.

    io.float32_vector checks the common case (a list of numbers) in C; anything else gets its exact message.
    Search is cheap per query, so the checking must be too (bench/search_speed.py).
    """

    def __init__(self, key: str, dimension: int, model: str, identity=None):
        self.key, self.dimension, self.model, self.identity = key, dimension, model, identity
        self._arrays: dict[int, object] = {}
        self._same = {str(identity)} if identity is not None else set()  # identities seen to be the index's
        self.unlabelled = False

    def check_model(self, record: dict) -> None:
        """A query vector labelled with another model than the index's is refused; an unlabelled one is taken to
        be of the index's model, said once on stderr."""
        from .. import console
        from ..models.model_identity import FIELD, read

        label = record.get(FIELD)
        if label in self._same:
            return
        if label is None:
            if not self.unlabelled and self.identity is not None:
                console.warn(f"query vectors without embedding_model: taken to be of the index's model '{self.identity}'")
            self.unlabelled = True
            return
        identity = read(record)
        if self.identity is not None and not identity.same(self.identity):
            raise BadRecord(f"the query's '{self.key}' is of '{identity}', but the index holds vectors of "
                            f"'{self.identity}'")
        self._same.add(label)

    def check(self, record: dict) -> None:
        from ..io import float32_vector

        self.check_model(record)
        array = float32_vector(record, self.key)  # the one vector check: numbers, finite in float32, not all zero
        if len(array) != self.dimension:
            raise BadRecord(f"'{self.key}' has {len(array)} dimensions, the index {self.dimension}: "
                            f"the query was embedded with another model than '{self.model}'")
        self._arrays[id(record)] = array

    def take(self, record: dict):
        import numpy as np

        array = self._arrays.pop(id(record), None)
        return array if array is not None else np.asarray(record[self.key], dtype=np.float32)


def search_records(records, index, encoder, k: int, text_key: str, embedding_key: str, batch_size: int,
                   payload: bool = False, query_vectors: QueryVectors | None = None, spelling: bool = False):
    """Each query record with `neighbors`: [{id, text, score}, ...] best first (a lazy iterator).

    FAISS releases the GIL, so batch n is searched in a worker thread while this one writes out batch n - 1
    and reads batch n + 1: the reading, checking and writing cost little on top of FAISS itself
    (bench/search_speed.py). On an input error the batches before it still come out first.
    """
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from ..models.poi_lookup import SPELLING_CANDIDATES, SpellingReranker

    take = query_vectors.take if query_vectors is not None else \
        (lambda record: np.asarray(record[embedding_key], dtype=np.float32))

    def query_matrix(batch: list[dict]) -> np.ndarray:
        given = [i for i, r in enumerate(batch) if embedding_key in r]
        texts = [i for i, r in enumerate(batch) if embedding_key not in r]
        vectors = np.empty((len(batch), index.dimension), dtype=np.float32)
        if given:
            vectors[given] = np.stack([take(batch[i]) for i in given])
        if texts:
            vectors[texts] = encoder.encode([batch[i][text_key] for i in texts], batch_size=256,
                                            show_progress_bar=False, convert_to_numpy=True)
        return vectors

    def finish(batch: list[dict], searched) -> list[dict]:
        scores, rows = searched.result()
        if spelling:
            scores, rows = reranker.rerank([record.get(text_key) for record in batch], scores, rows, k)
        found = index.records(rows.ravel())  # only the neighbours' rows are read from the store
        for record, row_scores, row_ids in zip(batch, np.round(scores.astype(np.float64), 6).tolist(), rows.tolist()):
            neighbours = []
            for score, row in zip(row_scores, row_ids):
                if row < 0 or row not in found:
                    continue
                record_id, stored = found[row]
                neighbour = {"id": record_id, "text": stored.get(text_key), "score": score}
                if payload:
                    neighbour["payload"] = stored
                neighbours.append(neighbour)
            record["neighbors"] = neighbours
        return batch

    if spelling:  # the names by row, read once: the re-rank looks words up among all of them
        texts = index.texts(text_key)
        reranker = SpellingReranker(texts.__getitem__, len(texts))
    asked = k * SPELLING_CANDIDATES if spelling else k
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="faiss-search") as worker:
        pending = None
        try:
            for batch in batched(records, batch_size):
                searching = (batch, worker.submit(index.search, query_matrix(batch), asked))
                if pending is not None:
                    yield from finish(*pending)
                pending = searching
        except SembedError:
            if pending is not None:
                yield from finish(*pending)
            raise
        if pending is not None:
            yield from finish(*pending)


class CommandLineQueries:
    """--query TEXT ...: query records from the command line, read as a RecordSource reads a file."""

    def __init__(self, texts: list[str], text_key: str, skip_errors: bool = False):
        from ..io import Rejects

        from ..io import ReadPosition

        self.texts, self.text_key = texts, text_key
        self.rejects = Rejects("--query", skip_errors)
        self.path, self.position = None, ReadPosition()  # no file read: nothing -o could overwrite

    def checked(self, check):
        for number, text in enumerate(self.texts, 1):
            record = {self.text_key: text}
            try:
                check(record)
            except BadRecord as e:
                self.rejects.reject(number, e.message)
                continue
            yield record

    def summary(self) -> str | None:
        return self.rejects.summary()


def search_command(
    ctx: typer.Context,
    input: Input = "-",
    output: Output = "-",
    lines: Lines = False,
    force: Force = False,
    index: IndexPath = ...,
    model: QueryModel = None,
    query: QueryTexts = None,
    k: K = 10,
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    payload: Payload = False,
    long_text: LongText = "truncate",
    spelling: Spelling = False,
    batch_size: BatchSize = 1000,
    device: Device = "auto",
    backend: QueryBackend = None,
    quantize: QueryQuantize = None,
    skip_errors: SkipErrors = False,
    threads: Threads = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """The k nearest indexed records of each query record, by cosine.

    Reads query records with an embedding (--embedding-key) or a text
    (--text-key), or takes the texts of --query. A text is embedded as the
    index's vectors were (the model its sembed.json names in
    embedding_model, with the W_cf of CF-BERT vectors; --model for another
    path to the same model: another model is refused). An embedding must be
    of the index's model: one whose embedding_model names another model is
    refused, and so is one of another dimension; one without the field
    (vectors from elsewhere) is taken to be of the index's model, with a
    warning. Writes each record with neighbors: a list of {id, text, score}
    (score: the cosine), best first; --payload adds each neighbour's whole
    indexed record. Queries go to FAISS a batch at a time (--batch-size);
    output is flushed after each batch. --backend and --quantize
    default to those that embedded the index's texts. --spelling
    (place-name lookup) asks FAISS for 10 K candidates, adds the 10 K
    indexed names with the largest bonus for the query's words they hold
    (at the lowest cosine FAISS found), and keeps the K best after adding
    0.3 to the score of a name one edit from the query text and, to one
    that holds some of the query's words, share x (1 - 0.02 x the IDF of
    its other words), share being the part of the query words' IDF it
    holds: a word the name lacks costs it little when common among the
    names ("City"), much when rare (see sembed_cli/models/poi_lookup.py).

    \b
    Example:
      echo '{"text": "Springfeild"}' | sembed search --index poi-index --spelling
      sembed search --index poi-index --query Springfeild --query 'Lake Pleasant'
      sembed convert --from gazetteer | sembed taste -m poi-model \\
        | grep '"is_poi":true' | sembed search --index poi-index --k 10
    """
    from .. import console
    from ..models.query_encoder import QueryEncoder, index_backend
    from ..indexes.directory import VectorIndex

    if query and "input" in given_on_command_line(ctx):
        raise typer.BadParameter("either query records (INPUT) or --query texts, not both",
                                 param_hint=flag(ctx, "query"))
    loaded = VectorIndex.load(index)
    ctx.with_resource(loaded)
    backend, quantize = index_backend(loaded, backend, quantize)
    check_backend(backend, quantize, device)
    encoder = QueryEncoder(loaded, model, device, text_key, long_text, backend, quantize)
    if model is not None or query:
        encoder.check()  # a wrong --model is refused before any query is read
    name = str(loaded.identity or loaded.metadata["model"])
    console.say(f"searching {loaded.count} vectors ({loaded.metadata.get('type')}) of {name}")

    query_vectors = QueryVectors(embedding_key, loaded.dimension, name, loaded.identity)

    def check(record: dict) -> None:
        if embedding_key in record:
            query_vectors.check(record)
        elif text_key in record:
            check_text(record, text_key)
            encoder.check_long(record, text_key)
        else:
            raise BadRecord(f"missing key '{text_key}' (or '{embedding_key}')")

    stream = StreamOptions(input, output, lines=lines, force=force, skip_errors=skip_errors)
    source = CommandLineQueries(query, text_key, skip_errors) if query else stream.source()
    try:
        stream.run(check, lambda records: search_records(records, loaded, encoder, k, text_key, embedding_key,
                                                         batch_size, payload, query_vectors, spelling),
                   batch_size, "searching", source)
    finally:
        encoder.report()
