"""sembed search: the nearest indexed records of each query, from an index directory sembed index wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .. import sentence_models
from ..errors import BadRecord, SembedError
from ..io import RecordSource, batched, check_text, run_stream
from ..options import BatchSize, Device, Input, Output, Quiet, SkipErrors, Verbose

IndexPath = Annotated[Path, typer.Option("--index", "-i", metavar="DIR", show_default=False,
                                         help="The index directory `sembed index` wrote (required).")]
QueryModel = Annotated[Optional[str], typer.Option(
    "--model", "-m", metavar="MODEL", show_default=False,
    help="The model that embeds the query texts. Default: the index's own; another model is refused.")]
K = Annotated[int, typer.Option("--k", "-n", min=1, metavar="K", help="Neighbours per query (the paper: 10).")]
TextKey = Annotated[str, typer.Option("--text-key", "-k", metavar="KEY", help="The query text field (embedded when "
                                                                              "the record has no --embedding-key).")]
EmbeddingKey = Annotated[str, typer.Option("--embedding-key", metavar="KEY",
                                           help="A field with the query's vector, used instead of its text.")]
Spelling = Annotated[bool, typer.Option(
    "--spelling", help="Re-rank the 10 K nearest by spelling: a name one edit from the query text, or holding all "
                       "its words, moves up (place-name lookup, sembed_cli/poi_lookup.py; scores stay comparable).")]
Payload = Annotated[bool, typer.Option("--payload", help="Give each neighbour the whole indexed record (payload), "
                                                         "not only its id, text and score.")]


class QueryVectors:
    """Checks query embeddings as they are read and keeps each as a float32 array for its batch.

    numpy checks the common case (a list of numbers) in C; anything else gets `fields.vector`'s exact
    message. Search is cheap per query, so the checking must be too (bench/search_speed.py).
    """

    def __init__(self, key: str, dimension: int, model: str):
        self.key, self.dimension, self.model = key, dimension, model
        self._arrays: dict[int, object] = {}

    def check(self, record: dict) -> None:
        import numpy as np

        from ..evaluation.fields import vector

        value = record[self.key]
        array = np.asarray(value, dtype=np.float32) if isinstance(value, list) and value else None
        if array is None or array.dtype.kind != "f" or array.ndim != 1 or not np.isfinite(array).all():
            array = vector(record, self.key).astype(np.float32)  # raises the precise BadRecord
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

    from ..poi_lookup import SPELLING_CANDIDATES, SpellingReranker

    take = query_vectors.take if query_vectors is not None else \
        (lambda record: np.asarray(record[embedding_key], dtype=np.float32))
    ids, payloads = index.ids, index.payloads

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
        for record, row_scores, row_ids in zip(batch, np.round(scores.astype(np.float64), 6).tolist(), rows.tolist()):
            if payload:
                record["neighbors"] = [{"id": ids[row], "text": payloads[row].get(text_key), "score": score,
                                        "payload": payloads[row]} for score, row in zip(row_scores, row_ids) if row >= 0]
            else:
                record["neighbors"] = [{"id": ids[row], "text": payloads[row].get(text_key), "score": score}
                                       for score, row in zip(row_scores, row_ids) if row >= 0]
        return batch

    reranker = SpellingReranker(lambda row: payloads[row].get(text_key)) if spelling else None
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


def search_command(
    input: Input = "-",
    output: Output = "-",
    index: IndexPath = ...,
    model: QueryModel = None,
    k: K = 10,
    text_key: TextKey = "text",
    embedding_key: EmbeddingKey = "embedding",
    payload: Payload = False,
    spelling: Spelling = False,
    batch_size: BatchSize = 1000,
    device: Device = "auto",
    skip_errors: SkipErrors = False,
    quiet: Quiet = False,
    verbose: Verbose = False,
) -> None:
    """The k nearest indexed records of each query record, by cosine.

    Reads query records with an embedding (--embedding-key) or a text
    (--text-key), embedded with the index's model (the one its sembed.json
    names; --model for another path to the same model: a model with another
    fingerprint is refused, and so is an embedding of another dimension).
    Writes each record with neighbors: a list of {id, text, score} (score:
    the cosine), best first; --payload adds each neighbour's whole indexed
    record. Queries go to FAISS a batch at a time (--batch-size); output is
    flushed after each batch. --spelling (place-name lookup) asks FAISS for
    10 K candidates and keeps the K best after adding 0.3 to the score of a
    name one edit from the query text and 0.3 to one that holds all the
    query's words (see sembed_cli/poi_lookup.py).

    \b
    Example:
      echo '{"text": "Springfeild"}' | sembed search --index poi-index --spelling
      sembed convert --from gazetteer | sembed taste -m poi-model \\
        | grep '"is_poi":true' | sembed search --index poi-index -k 10
    """
    from .. import console
    from ..vector_index import VectorIndex, model_fingerprint

    loaded = VectorIndex.load(index)
    resolved = sentence_models.resolve_device(device)
    name = model or loaded.metadata.get("model_path") or loaded.metadata["model"]
    encoder = sentence_models.load(name, resolved)
    loaded.check_model(name, model_fingerprint(encoder))
    console.say(f"searching {loaded.index.ntotal} vectors ({loaded.metadata.get('type')}) of {loaded.metadata['model']}")

    query_vectors = QueryVectors(embedding_key, loaded.dimension, loaded.metadata["model"])

    def check(record: dict) -> None:
        if embedding_key in record:
            query_vectors.check(record)
        elif text_key in record:
            check_text(record, text_key)
        else:
            raise BadRecord(f"missing key '{text_key}' (or '{embedding_key}')")

    run_stream(RecordSource(input, skip_errors=skip_errors), check,
               lambda records: search_records(records, loaded, encoder, k, text_key, embedding_key, batch_size,
                                              payload, query_vectors, spelling),
               output, batch_size, "searching")
