"""The functions the commands call, for a script or a notebook: embed, index, search, evaluate.

`import sembed_cli` exposes them (lazily, so the command line stays quick to start): each is the library function
a command calls, with the record stream left out. Records are dicts as the commands read them; a path of JSONL
(gzip or not) works wherever records do, and is read as the commands read it (the same checks, the same errors).
The page docs/api.md runs them.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SembedError
from .io import RecordSource, dumps
from .models.sentence_models import DEFAULT_MODEL

if TYPE_CHECKING:
    import numpy as np

    from .indexes.directory import VectorIndex
    from .models.embedder import Embedder

log = logging.getLogger(__name__)

Records = str | Path | Iterable[dict]  # a JSONL file, or the records themselves


def load_model(
    model: str | None = None,
    device: str = "auto",
    backend: str = "torch",
    quantize: str = "none",
    *,
    method: str = "model",
    salience: str | Path | None = None,
    cf_weight: float | None = None,
    long_text: str = "truncate",
) -> Embedder:
    """The Embedder `sembed embed -m MODEL` opens, with the recipe the model directory records: the packaged
    all-MiniLM-L6-v2 by default, a model directory `sembed train` wrote (CF-BERT's W_cf applied to each record's
    S_cf, TA-SBERT's Token Attention pooling, a POI model's character n-grams), a static model; `backend="onnx"`
    (and `quantize="int8"`) runs it without torch, as `embed --backend` does. `method` avg|isf|sif|nws: sentence
    vectors from word vectors (`model`: their file or package, None for the salience table's) weighted by the
    salience table at `salience` (a directory `train(method="nws")` wrote). `model` None: the packaged MiniLM, or
    for a word-vector method the table's vectors. Its `encode(texts)` gives the rows,
    `identity` the `embedding_model` they carry, `dimension` their length."""
    from .models.embedder import Embedder

    with _in_python_terms():
        return Embedder.open(
            model,
            method=method,
            backend=backend,
            quantize=quantize,
            device=device,
            cf_weight=cf_weight,
            long_text=long_text,
            salience=str(salience) if salience is not None else None,
        )


def embed(texts: Sequence[str], model: Any = DEFAULT_MODEL, batch_size: int = 32) -> np.ndarray:
    """float32 vectors, one row per text, in order, as `sembed embed` writes them. `model`: a name or path
    (opened with `load_model`'s defaults) or an Embedder `load_model` returned (open it once for many calls)."""
    embedder = _embedder(model).with_batch_size(batch_size)
    with _in_python_terms():
        return embedder.encode(list(texts))


def embed_records(records: Iterable[dict], model: Any = DEFAULT_MODEL, batch_size: int = 1000) -> Iterator[dict]:
    """A copy of each record with its `embedding` and `embedding_model` added, as `sembed embed` writes them (the
    text field found as the commands find it; records holding another model's vectors refused), lazily: a
    generator of records works, a window of `batch_size` at a time. The records given are left as they were."""
    from .io import TextFields
    from .models.embed_stream import check_record
    from .models.embed_stream import embed_records as embedded
    from .models.model_identity import Stamp

    embedder, fields = _embedder(model), TextFields()
    stamp = Stamp(embedder.identity)
    check = check_record(fields, embedder.focus, stamp, embedder)

    def copies() -> Iterator[dict]:
        for record in records:
            record = dict(record)
            check(record)
            yield record

    return _python_errors(stamp.label(embedded(copies(), embedder, fields, batch_size)))


def _embedder(model: Any) -> Embedder:
    """An Embedder `load_model` returned, as given, or the one a name or path opens."""
    return load_model(str(model)) if isinstance(model, (str, Path)) else model


@contextmanager
def _source(records: Records) -> Iterator[RecordSource]:
    """The records as the commands read them: a path is read in place; records in memory go through a
    temporary JSONL file, so they meet the very checks (and line numbers in errors) a file would."""
    if isinstance(records, (str, Path)):
        yield RecordSource(str(records))
        return
    with tempfile.TemporaryDirectory(prefix="sembed-api-") as work:
        path = Path(work) / "records.jsonl"
        with path.open("wb") as out:
            for record in records:
                out.write(dumps(record) + b"\n")
        yield RecordSource(str(path))


def build_index(
    records: Records,
    output: str | Path,
    *,
    model: str = DEFAULT_MODEL,
    index_type: str = "auto",
    force: bool = False,
    text_key: str = "text",
    id_key: str = "id",
    trained: str | Path | None = None,
    keywords: bool = True,
    device: str = "auto",
) -> dict:
    """`sembed index RECORDS -o OUTPUT`: an index of the records' `embedding` vectors, or of their texts
    embedded with `model`; returns the index's metadata. `index_type`: auto, flat, hnsw, ivf, ivfpq or a FAISS
    factory string (see `sembed index --help`); `trained`: an index whose trained quantiser to reuse;
    `keywords=False`: no keyword index (`--no-keywords`)."""
    from .indexes.build import build_index as build
    from .indexes.model_choice import ModelChoice
    from .indexes.staging import IndexSettings

    settings = IndexSettings(requested_type=index_type, text_key=text_key, id_key=id_key, keywords=keywords)
    choice = ModelChoice(model, given=model != DEFAULT_MODEL, device=device)
    with _source(records) as source:
        return build(
            source,
            Path(output),
            settings,
            choice,
            force=force,
            trained_from=Path(trained) if trained is not None else None,
        )


def update_index(
    records: Records, directory: str | Path, *, sync: bool = False, keywords: bool | None = None, device: str = "auto"
) -> dict:
    """`sembed index RECORDS --update DIRECTORY`: new ids added, changed ones replaced, in place, texts embedded
    with the index's own model (with `sync`, ids absent from the records removed; `keywords`: add (True) or drop
    (False) the keyword index, None keeps the index's choice); returns the new metadata."""
    from .indexes.model_choice import ModelChoice
    from .indexes.staging import IndexSettings
    from .indexes.update import UpdateChoices
    from .indexes.update import update_index as update

    choice = ModelChoice(DEFAULT_MODEL, device=device)  # replaced by the index's model: none is given
    with _source(records) as source:
        settings = IndexSettings(keywords=keywords)
        return update(source, Path(directory), settings, choice, UpdateChoices(frozenset(), sync=sync))


def merge_indexes(pieces: Sequence[str | Path], output: str | Path, force: bool = False) -> dict:
    """`sembed index merge PIECE... -o OUTPUT`: one index from indexes of one model and one trained quantiser."""
    from .indexes.merge import merge_indexes as merge

    return merge([Path(piece) for piece in pieces], Path(output), force=force)


def open_index(path: str | Path) -> VectorIndex:
    """An index directory, memory-mapped for search; close it (or use `with`) when done."""
    from .indexes.directory import VectorIndex

    return VectorIndex.load(path)


def search(
    index: str | Path | VectorIndex,
    queries: Sequence[str],
    k: int = 10,
    *,
    keyword: bool = False,
    hybrid: bool = False,
    hybrid_weight: float = 0.5,
    any_word: bool = False,
    where: str | None = None,
    rerank_model: str | None = None,
    rerank_depth: int = 100,
) -> list[list[dict]]:
    """`sembed search --payload`: for each query text, its `k` nearest records [{id, text, score, payload}, ...],
    best first, `payload` the whole record as it was indexed (its doc_id and other fields). The queries are embedded as
    the command embeds them: with the index's model, on its backend and quantization (fp32 torch's on ONNX Runtime where
    it runs the model; `search` of an int8 index loads no torch), so the scores are the command's. The keyword arguments
    are the command's options: `keyword` (BM25 alone, FTS5 query syntax; score -bm25), `hybrid` (reciprocal-rank fusion
    of BM25 and the vectors, the keyword side weighted `hybrid_weight`), `any_word` (a keyword query read as plain
    words), `where` (a filter on the records' fields, applied before the search), `rerank_model` (a second model
    re-ranking `rerank_depth` candidates by its cosine)."""
    from .indexes.directory import VectorIndex
    from .indexes.query_encoder import QueryEmbedder, index_backend
    from .indexes.search import SearchSettings, plan_of, search_records

    if keyword and hybrid:
        raise ValueError("either keyword=True (BM25 alone) or hybrid=True (BM25 and vectors), not both")
    loaded = open_index(index) if not isinstance(index, VectorIndex) else index
    try:
        text_key = loaded.settings.get("text_key", "text")
        backend, quantize = index_backend(loaded)
        encoder = QueryEmbedder(loaded, None, "auto", "truncate", backend, quantize)
        settings = SearchSettings(
            k=k,
            text_key=text_key,
            backend=backend,
            quantize=quantize,
            keyword=keyword,
            hybrid=hybrid,
            hybrid_weight=hybrid_weight,
            any_word=any_word,
            where=where,
            rerank_model=rerank_model,
            rerank_depth=rerank_depth,
        )
        with _in_python_terms():
            plan = plan_of(loaded, settings)
            records = [{text_key: query} for query in queries]
            if plan is not None:
                for record in records:
                    plan.check(record, text_key)
            found = search_records(
                iter(records),
                loaded,
                encoder,
                k,
                text_key,
                "embedding",
                batch_size=1000,
                payload=True,
                plan=plan,
            )
            return [record["neighbors"] for record in found]
    finally:
        if loaded is not index:
            loaded.close()


def dedup(
    records: Records | None = None,
    *,
    index: str | Path | None = None,
    threshold: float = 0.9,
    neighbours: int = 10,
    keep: str = "all",
    exact: bool | None = None,
    nprobe: int = 16,
    model: str = DEFAULT_MODEL,
    text_key: str = "text",
    embedding_key: str = "embedding",
    id_key: str = "id",
    seed: int = 42,
    device: str = "auto",
) -> list[dict]:
    """`sembed dedup`: the records (with an `embedding`, or texts embedded with `model`), or with `index` an index
    directory's stored records, each with `group`, `representative` and `score` (None for a record in no group),
    in order; `keep` "first" keeps one record of each group and those in no group, "duplicates" only the records
    in a group. The groups join the pairs at cosine >= `threshold` among each record's `neighbours` nearest."""
    from .indexes.near_duplicates import KEEP, DedupSettings, dedup_records, near_duplicates

    if keep not in KEEP:
        raise SembedError(f"keep={keep!r} is not one of {', '.join(KEEP)}")
    settings = DedupSettings(threshold, neighbours, keep, exact, nprobe, seed)

    def compute(collection) -> list[dict]:
        groups, _, _ = near_duplicates(collection, settings)
        return list(dedup_records(collection, groups, keep))

    return _over_collection(records, index, compute, model, text_key, embedding_key, id_key, device)


def cluster(
    records: Records | None = None,
    *,
    index: str | Path | None = None,
    clusters: int = 10,
    iterations: int = 20,
    central: int = 3,
    plot: str | Path | None = None,
    force: bool = False,
    model: str = DEFAULT_MODEL,
    text_key: str = "text",
    embedding_key: str = "embedding",
    id_key: str = "id",
    seed: int = 42,
    device: str = "auto",
) -> tuple[list[dict], dict]:
    """`sembed cluster --summary`: (the records, each with `cluster` and `cluster_score`, in order; the summary
    `sembed cluster` prints: each cluster's size, mean cosine and `central` most central texts). Spherical
    k-means (FAISS) of the records' `embedding` vectors (or their texts embedded with `model`), or with `index` of
    an index directory's; `plot`: also draw the map to that PNG file (`force` to replace it)."""
    from .indexes.clusters import ClusterRun, ClusterSettings

    run = ClusterRun(
        ClusterSettings(clusters, iterations, seed, central, text_key),
        Path(plot) if plot is not None else None,
        force,
    )

    def compute(collection) -> tuple[list[dict], dict]:
        clustered = list(run(collection))
        assert run.report is not None  # set once the records are all out
        return clustered, run.report

    return _over_collection(records, index, compute, model, text_key, embedding_key, id_key, device)


def _over_collection(records, index, compute, model, text_key, embedding_key, id_key, device):
    """`compute(collection)` over the records or the index (one of the two), read as dedup and cluster read them;
    bad input stops the reading and is raised (the records before it are not returned: a list is all or none)."""
    from .indexes.collection import CollectionSource, ReadSettings, opened
    from .indexes.model_choice import ModelChoice

    if (records is None) == (index is None):
        raise SembedError("give the records or index=, one of the two")
    settings = ReadSettings(text_key, embedding_key, id_key)
    choice = ModelChoice(model, given=model != DEFAULT_MODEL, device=device)
    with _in_python_terms(), ExitStack() as stack:
        if index is not None:
            source = CollectionSource(index=Path(index), read=settings)
        else:
            path = stack.enter_context(_source(records)).path
            source = CollectionSource(path, read=settings, choice=choice)
        collection = stack.enter_context(opened(source))
        if collection.error is not None:
            raise collection.error
        return compute(collection)


def evaluate_sts(
    records: Records | Sequence[Records],
    versus: Records | Sequence[Records] | None = None,
    group_by: str | None = None,
    gold_key: str = "score",
    seed: int = 0,
    resamples: int = 1000,
) -> dict:
    """`sembed eval sts`: Pearson and Spearman (x100, Fisher 95% intervals) between the cosine of each record's
    `embedding_a` / `embedding_b` (as `sembed embed` writes a pair's) and its gold score; per `group_by` value.
    Pairs embedded by two models are refused, as the command refuses them. With `versus` (the same pairs
    embedded by another model), `sembed eval sts --versus`: both models' correlations and their paired
    difference with a bootstrap interval (`resamples` drawn with `seed`), the command's report. Several training
    seeds of each model: `records` and `versus` lists of seeds (each a file or a list of records), paired by
    position; the report adds the mean paired difference over the seeds with its t interval ("over_seeds")."""
    from .evaluation import sts

    with _in_python_terms(), ExitStack() as opened:
        inputs = [opened.enter_context(_source(one)).path for one in _seeds(records)]
        if versus is None:
            if len(inputs) > 1:
                raise SembedError("several seeds of one model: compare them with versus=, one seed each")
            return sts.evaluate(inputs[0], gold_key=gold_key, group_by=group_by)
        others = [opened.enter_context(_source(one)).path for one in _seeds(versus)]
        if len(others) != len(inputs):
            raise SembedError(f"{len(inputs)} seed(s) against {len(others)} in versus=: give one of each per seed")
        return sts.evaluate_versus(
            inputs if len(inputs) > 1 else inputs[0],
            others if len(others) > 1 else others[0],
            gold_key=gold_key,
            resamples=resamples,
            seed=seed,
            group_by=group_by,
        )


def _seeds(records: Records | Sequence[Records]) -> list[Records]:
    """Records of one seed (a path, or records: dicts), or a list of such seeds."""
    if isinstance(records, (str, Path)):
        return [records]
    if isinstance(records, Sequence) and records and not isinstance(records[0], dict):
        return list(records)  # a list of paths or of record lists
    return [records]  # type: ignore[list-item]  # records themselves (a list or a generator of dicts)


def train(
    records: Records,
    method: str,
    output: str | Path,
    *,
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    warmup: float | None = None,
    text_keys: Sequence[str] | None = None,
    seed: int = 42,
    device: str = "auto",
    resume: bool = False,
    force: bool = False,
    **settings: Any,
) -> Path:
    """`sembed train --method METHOD -o OUTPUT`: any registered method (sbert, cf, ta, nws, mlm, poi, syntax,
    static) trained on `records`, written to `output` with its sembed.json and model card; returns `output`, ready
    for `load_model`. `settings` are the method's own options by their Python names (`--cf-weight` is
    `cf_weight=`, `--model` `model=`; `sembed train --help` lists them); `epochs`, `batch_size`, `lr` and
    `warmup` override the method's recipe."""
    from dataclasses import fields, replace

    from .training.methods import METHODS, OptionError
    from .training.methods import train as run

    if method not in METHODS:
        raise SembedError(f"unknown method '{method}'", f"method= one of {', '.join(METHODS)}")
    chosen = METHODS[method]
    known = sorted(f.name for f in fields(chosen.settings))
    unknown = sorted(set(settings) - set(known))
    if unknown:
        raise SembedError(f"method '{method}' has no setting {unknown[0]}=", f"its settings: {', '.join(known)}")
    values = chosen.settings(**settings)
    keys = tuple(text_keys) if text_keys is not None else None
    given = frozenset(settings) | ({"text_keys"} if keys is not None else frozenset())
    try:
        chosen.check_usage(values, keys, given)
    except OptionError as e:
        raise SembedError(f"{e.name}=: {e}") from None
    overrides: dict[str, Any] = {"epochs": epochs, "batch_size": batch_size, "lr": lr, "warmup": warmup}
    recipe = replace(chosen.recipe_for(values), **{k: v for k, v in overrides.items() if v is not None})
    with _in_python_terms(), _source(records) as source:
        run(
            chosen,
            values,
            source,
            Path(output),
            recipe,
            text_keys=keys,
            seed=seed,
            device=device,
            resume=resume,
            force=force,
        )
    return Path(output)


FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?: ([A-Z][A-Z_]*\b|(?:avg|isf|sif|nws|onnx|torch|int8|none|window|error)\b))?")


def in_python_terms(text: str | None) -> str | None:
    """A message of the library with its command-line flags named as this module's arguments:
    "pass --salience DIR" -> "pass salience=DIR", "--method nws" -> 'method="nws"'."""
    if text is None:
        return None

    def argument(match: re.Match) -> str:
        name, value = match.group(1).replace("-", "_"), match.group(2) or ""
        return f'{name}="{value}"' if value and not value.isupper() else f"{name}={value}"

    return FLAG.sub(argument, text)


@contextmanager
def _in_python_terms() -> Iterator[None]:
    """Errors raised inside name Python arguments, not flags (the library's messages are the command line's)."""
    try:
        yield
    except SembedError as e:
        raise type(e)(in_python_terms(e.message) or "", in_python_terms(e.hint)) from None


def _python_errors(records: Iterator[dict]) -> Iterator[dict]:
    """A lazy stream of records whose errors, raised as it is read, name Python arguments."""
    with _in_python_terms():
        yield from records
