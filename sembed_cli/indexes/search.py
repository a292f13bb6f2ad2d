"""The nearest indexed records of each query: `sembed search` as a function.

Queries are records with a vector (checked to be of the index's model and dimension) or a text (embedded as the
index's own texts were, by `QueryEmbedder`), read from a stream or, for --query, from the command line
(`CommandLineQueries`); `search_stream` writes each with its `neighbors`, best first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import BadRecord, SembedError
from ..io import ReadPosition, RecordReader, Rejects, StreamOptions, batched, check_text

if TYPE_CHECKING:
    import numpy as np

    from .directory import VectorIndex
    from .filters import Selection
    from .keyword import KeywordIndex
    from .query_encoder import QueryEmbedder
    from .rerank import Reranker

log = logging.getLogger(__name__)

DEFAULT_K = 10  # the POI paper's neighbours per query


@dataclass(frozen=True)
class SearchSettings:
    """How `sembed search` answers: K neighbours, the query's fields, and how a text query is embedded (None: as
    the index's texts were)."""

    k: int = DEFAULT_K
    text_key: str = "text"
    embedding_key: str = "embedding"
    payload: bool = False
    spelling: bool = False
    batch_size: int = 1000
    model: str | None = None  # another path to the index's model
    device: str = "auto"
    backend: str = "torch"
    quantize: str = "none"
    long_text: str = "truncate"
    keyword: bool = False  # rank by BM25 alone (the index's FTS5 table)
    hybrid: bool = False  # fuse BM25 and the vectors by reciprocal-rank fusion
    hybrid_weight: float = 0.5  # the keyword ranking's share in the fusion
    any_word: bool = False  # read a keyword query as plain words, any of which may match
    where: str | None = None  # a filter on the records' fields (indexes/filters.py), applied before the search
    rerank_model: str | None = None  # a second model that re-ranks the first stage's candidates
    rerank_depth: int = 100  # candidates the first stage finds for it


@dataclass
class SearchPlan:
    """What answers a batch of queries beyond the plain vector search: the keyword index (keyword or hybrid),
    the --where selection, the second-stage model. Built once per search by `plan_of`."""

    keyword: KeywordIndex | None = None
    dense: bool = True
    weight: float = 0.5
    any_word: bool = False
    selection: Selection | None = None
    reranker: Reranker | None = None
    depth: int = 0  # candidates per query before the re-rank

    @property
    def needs_text(self) -> bool:
        return self.keyword is not None or self.reranker is not None

    def keyword_query(self, text: str) -> str:
        assert self.keyword is not None
        return self.keyword.words_query(text) if self.any_word else text

    def check(self, record: dict, text_key: str) -> None:
        """A query record's part of the plan: a text for keyword search and the re-rank, FTS5 able to parse it."""
        if self.needs_text and not isinstance(record.get(text_key), str):
            raise BadRecord(
                f"missing key '{text_key}': "
                + ("keyword search" if self.keyword is not None else "--rerank-model")
                + " needs the query's text"
            )
        if self.keyword is not None and not self.any_word:
            self.keyword.check(record[text_key])
        elif self.keyword is not None and not self.dense and not self.keyword_query(record[text_key]):
            raise BadRecord("the keyword query has no words")


def plan_of(index: VectorIndex, settings: SearchSettings) -> SearchPlan | None:
    """The SearchPlan of `settings` (None for a plain vector search); errors (no keyword index, a --where that
    does not parse or names a field no record has) come here, before any query is read."""
    from .filters import Selection
    from .keyword import KeywordIndex
    from .query_encoder import PREFER_ONNX
    from .rerank import Reranker

    if not (settings.keyword or settings.hybrid or settings.where is not None or settings.rerank_model):
        return None
    plan = SearchPlan(dense=not settings.keyword, weight=settings.hybrid_weight, any_word=settings.any_word)
    if settings.keyword or settings.hybrid:
        plan.keyword = KeywordIndex.of(index)
    if settings.where is not None:
        plan.selection = Selection.of(index, settings.where)
        log.info(f"--where selects {len(plan.selection):,} of {index.count:,} records")
    if settings.rerank_model:
        plan.reranker = Reranker(
            settings.rerank_model,
            index.settings.get("text_key", "text"),
            "torch" if settings.backend == PREFER_ONNX else settings.backend,  # the second model: as asked
            settings.quantize,
            settings.device,
            settings.rerank_depth,
        )
    return plan


class QueryVectors:
    """Checks query embeddings as they are read and keeps each as a float32 array for its batch.

    io.float32_vector checks the common case (a list of numbers) in C; anything else gets its exact message.
    Search is cheap per query, so the checking must be too.
    """

    def __init__(self, key: str, dimension: int, model: str, identity=None):
        self.key, self.dimension, self.model, self.identity = key, dimension, model, identity
        self._arrays: dict[int, object] = {}
        self._same = {str(identity)} if identity is not None else set()  # identities seen to be the index's
        self.unlabelled = False

    def check_model(self, record: dict) -> None:
        """A query vector labelled with another model than the index's is refused; an unlabelled one is taken to
        be of the index's model, said once on stderr."""
        from ..models.model_identity import FIELD, read, refuse_another_model

        label = record.get(FIELD)
        if label in self._same:
            return
        if label is None:
            if not self.unlabelled and self.identity is not None:
                log.warning(
                    f"query vectors without embedding_model: taken to be of the index's model '{self.identity}'"
                )
            self.unlabelled = True
            return
        identity = read(record)
        refuse_another_model(
            identity,
            self.identity,
            f"the query's '{self.key}' is of '{identity}', but the index holds vectors of '{self.identity}'",
            error=BadRecord,
        )
        self._same.add(label)

    def check(self, record: dict) -> None:
        from ..io import float32_vector

        self.check_model(record)
        array = float32_vector(record, self.key)  # the one vector check: numbers, finite in float32, not all zero
        if len(array) != self.dimension:
            raise BadRecord(
                f"'{self.key}' has {len(array)} dimensions, the index {self.dimension}: "
                f"the query was embedded with another model than '{self.model}'"
            )
        self._arrays[id(record)] = array

    def take(self, record: dict):
        import numpy as np

        array = self._arrays.pop(id(record), None)
        return array if array is not None else np.asarray(record[self.key], dtype=np.float32)


def search_records(
    records: Iterable[dict],
    index: VectorIndex,
    encoder: QueryEmbedder,
    k: int,
    text_key: str,
    embedding_key: str,
    batch_size: int,
    payload: bool = False,
    query_vectors: QueryVectors | None = None,
    spelling: bool = False,
    plan: SearchPlan | None = None,
) -> Iterator[dict]:
    """Each query record with `neighbors`: [{id, text, score}, ...] best first (a lazy iterator). `plan`: keyword
    or hybrid ranking, a --where selection, a second-stage model (SearchPlan; None: the vectors alone).

    FAISS releases the GIL, so batch n is searched in a worker thread while this one writes out batch n - 1
    and reads batch n + 1: the reading, checking and writing cost little on top of FAISS itself.
    On an input error the batches before it still come out first.
    """
    import functools
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from ..models.poi_lookup import SPELLING_CANDIDATES, SpellingReranker

    take = (
        query_vectors.take
        if query_vectors is not None
        else (lambda record: np.asarray(record[embedding_key], dtype=np.float32))
    )

    def query_matrix(batch: list[dict]) -> np.ndarray:
        given = [i for i, r in enumerate(batch) if embedding_key in r]
        texts = [i for i, r in enumerate(batch) if embedding_key not in r]
        vectors = np.empty((len(batch), index.dimension), dtype=np.float32)
        if given:
            vectors[given] = np.stack([take(batch[i]) for i in given])
        if texts:
            vectors[texts] = encoder.encode([batch[i][text_key] for i in texts])
        return vectors

    def first_stage(batch: list[dict]) -> tuple[list[dict], Callable[[], tuple[np.ndarray, np.ndarray]], None]:
        """Start the batch's search: FAISS in the worker thread, SQLite (keyword ranking) here; the callable
        returns the batch's (scores, rows) once both are done."""
        assert plan is not None
        depth = plan.depth
        keyword_ranked = None
        if plan.keyword is not None:
            texts = [plan.keyword_query(record[text_key]) for record in batch]
            keyword_ranked = plan.keyword.search(
                texts, depth, plan.selection.rows if plan.selection is not None else None
            )
        dense = None
        if plan.dense:
            vectors = query_matrix(batch)
            if plan.selection is not None:
                dense = worker.submit(plan.selection.search, vectors, depth)
            else:
                dense = worker.submit(index.search, vectors, depth)

        def result() -> tuple[np.ndarray, np.ndarray]:
            from .keyword import fuse

            if dense is None:
                assert keyword_ranked is not None
                return keyword_ranked
            if keyword_ranked is None:
                return dense.result()
            return fuse(dense.result(), keyword_ranked, depth, plan.weight)

        return batch, result, None

    def cosines(vectors: np.ndarray, query: int, rows: np.ndarray) -> np.ndarray:
        """The cosines of `rows` to the batch's query `query` (--spelling's names one edit away)."""
        return index.vectors_of(rows) @ vectors[query]

    def finish(batch: list[dict], searched, vectors: np.ndarray | None) -> list[dict]:
        """The batch with its neighbours; `vectors`: its query vectors (without a SearchPlan)."""
        scores, rows = searched.result() if plan is None else searched()
        if plan is not None:
            if plan.reranker is not None:
                queries = [record[text_key] for record in batch]
                scores, rows = plan.reranker.rerank(index, queries, rows, k)
            else:
                scores, rows = scores[:, :k], rows[:, :k]
        if spelling:
            texts = [record.get(text_key) for record in batch]
            of_rows = functools.partial(cosines, vectors) if vectors is not None else None
            scores, rows = reranker.rerank(texts, scores, rows, k, of_rows)
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

    def spelling_reranker() -> SpellingReranker:  # the names by row: the re-rank looks words up among all of them
        from .spelling_words import CachedNameWords

        texts: list[str | None] = []  # read at the first call: not at all where the names were kept

        def text_of(row: int) -> str | None:
            if not texts:
                texts.extend(index.texts(text_key))
            return texts[row]

        return SpellingReranker(text_of, index.row_count, CachedNameWords.of(index, text_key))

    if spelling:  # made once a loaded index (its index of words too, at its first query: seconds at millions)
        reranker = index.made_once(f"spelling {text_key}", spelling_reranker)
    asked = k * SPELLING_CANDIDATES if spelling else k
    if plan is not None:
        plan.depth = max(k, plan.reranker.depth if plan.reranker is not None else k)
        if plan.keyword is not None and plan.dense:
            from .keyword import HYBRID_DEPTH

            plan.depth = max(plan.depth, HYBRID_DEPTH)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="faiss-search") as worker:
        pending = None
        try:
            for batch in batched(records, batch_size):
                searching: tuple[list[dict], Any, np.ndarray | None]
                if plan is not None:
                    searching = first_stage(batch)
                else:
                    vectors = query_matrix(batch)
                    searching = (batch, worker.submit(index.search, vectors, asked), vectors)
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
    """--query TEXT ...: query records from the command line, read as a RecordSource reads a file (both are
    io.RecordReader)."""

    def __init__(self, texts: Sequence[str], text_key: str, skip_errors: bool = False):
        self.texts, self.text_key = texts, text_key
        self.rejects = Rejects("--query", skip_errors)
        self.path: str | None = None
        self.position = ReadPosition()  # no file read: nothing -o could overwrite

    def checked(self, check: Callable[[dict], object] | None) -> Iterator[dict]:
        for number, text in enumerate(self.texts, 1):
            record = {self.text_key: text}
            try:
                if check is not None:
                    check(record)
            except BadRecord as e:
                self.rejects.reject(number, e.message)
                continue
            yield record

    def summary(self) -> str | None:
        return self.rejects.summary()


def query_check(
    query_vectors: QueryVectors,
    encoder: QueryEmbedder,
    text_key: str,
    embedding_key: str,
    plan: SearchPlan | None = None,
) -> Callable[[dict], None]:
    """The per-record check of a query: a vector of the index's model and dimension, or a usable text (and
    what the plan needs: a text FTS5 can parse for keyword search, a text for the re-rank)."""

    def check(record: dict) -> None:
        if plan is not None:
            plan.check(record, text_key)
            if not plan.dense:
                check_text(record, text_key)
                return
        if embedding_key in record:
            query_vectors.check(record)
        elif text_key in record:
            check_text(record, text_key)
            encoder.check_long(record, text_key)
        else:
            raise BadRecord(f"missing key '{text_key}' (or '{embedding_key}')")

    return check


def search_stream(
    stream: StreamOptions, index: VectorIndex, settings: SearchSettings, queries: Sequence[str] = ()
) -> int:
    """`sembed search` over the loaded `index` (indexes.directory.VectorIndex): the stream's query records, or
    the `queries` texts when given, each written with its neighbours; returns the count written."""
    from .query_encoder import QueryEmbedder

    encoder = QueryEmbedder(
        index, settings.model, settings.device, settings.long_text, settings.backend, settings.quantize
    )
    plan = plan_of(index, settings)
    if (settings.model is not None or queries) and (plan is None or plan.dense):
        encoder.open()  # a wrong --model is refused before any query is read
    if plan is not None and plan.reranker is not None:
        plan.reranker.open()  # and a wrong --rerank-model too
    name = str(index.identity or index.metadata["model"])
    log.info(f"searching {index.count} vectors ({index.metadata.get('type')}) of {name}")
    query_vectors = QueryVectors(settings.embedding_key, index.dimension, name, index.identity)
    check = query_check(query_vectors, encoder, settings.text_key, settings.embedding_key, plan)
    source: RecordReader = (
        CommandLineQueries(queries, settings.text_key, stream.skip_errors) if queries else stream.source()
    )
    try:
        return stream.run(
            check,
            lambda records: search_records(
                records,
                index,
                encoder,
                settings.k,
                settings.text_key,
                settings.embedding_key,
                settings.batch_size,
                settings.payload,
                query_vectors,
                settings.spelling,
                plan,
            ),
            settings.batch_size,
            "searching",
            source,
        )
    finally:
        encoder.report()
        if plan is not None and plan.reranker is not None:
            plan.reranker.report()
