"""The functions the commands call, for a script or a notebook: embed, index, search, evaluate.

`import sembed_cli` exposes them (lazily, so the command line stays quick to start): each is the library function
a command calls, with the record stream left out. Records are dicts as the commands read them; a path of JSONL
(gzip or not) works wherever records do, and is read as the commands read it (the same checks, the same errors).
The page docs/api.md runs them.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .io import RecordSource, dumps
from .models.sentence_models import DEFAULT_MODEL

if TYPE_CHECKING:
    import numpy as np

    from .indexes.directory import VectorIndex

log = logging.getLogger(__name__)

Records = str | Path | Iterable[dict]  # a JSONL file, or the records themselves


def load_model(model: str = DEFAULT_MODEL, device: str = "auto", backend: str = "torch", quantize: str = "none"):
    """A sentence encoder: the packaged all-MiniLM-L6-v2 by default, a model directory `sembed train` wrote, a
    static model; `backend="onnx"` (and `quantize="int8"`) runs it without torch, as `embed --backend` does."""
    from .models.sentence_models import load_encoder

    encoder, _ = load_encoder(model, device=device, backend=backend, quantize=quantize)
    return encoder


def embed(texts: Sequence[str], model: Any = DEFAULT_MODEL, batch_size: int = 32) -> np.ndarray:
    """float32 vectors, one row per text, in order, as `sembed embed` writes them. `model`: a name or path
    (loaded with `load_model`'s defaults) or an encoder `load_model` returned (load it once for many calls)."""
    from .models.sentence_embedding import encode

    return encode(_encoder(model), list(texts), batch_size=batch_size)


def embed_records(records: Iterable[dict], model: Any = DEFAULT_MODEL, batch_size: int = 1000) -> Iterator[dict]:
    """Each record with its `embedding` added (the text field found as the commands find it), lazily: a
    generator of records works, a window of `batch_size` at a time."""
    from .models.sentence_embedding import embed_records as embedded

    return embedded(records, _encoder(model), batch_size=batch_size)


def _encoder(model: Any):
    """An encoder `load_model` returned, as given, or the one a name or path loads."""
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
    device: str = "auto",
) -> dict:
    """`sembed index RECORDS -o OUTPUT`: an index of the records' `embedding` vectors, or of their texts
    embedded with `model`; returns the index's metadata. `index_type`: auto, flat, hnsw, ivf, ivfpq or a FAISS
    factory string (see `sembed index --help`); `trained`: an index whose trained quantiser to reuse."""
    from .indexes.build import build_index as build
    from .indexes.model_choice import ModelChoice
    from .indexes.staging import IndexSettings

    settings = IndexSettings(requested_type=index_type, text_key=text_key, id_key=id_key)
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


def update_index(records: Records, directory: str | Path, *, sync: bool = False, device: str = "auto") -> dict:
    """`sembed index RECORDS --update DIRECTORY`: new ids added, changed ones replaced, in place, texts embedded
    with the index's own model (with `sync`, ids absent from the records removed); returns the new metadata."""
    from .indexes.model_choice import ModelChoice
    from .indexes.staging import IndexSettings
    from .indexes.update import UpdateChoices
    from .indexes.update import update_index as update

    choice = ModelChoice(DEFAULT_MODEL, device=device)  # replaced by the index's model: none is given
    with _source(records) as source:
        return update(source, Path(directory), IndexSettings(), choice, UpdateChoices(frozenset(), sync=sync))


def merge_indexes(pieces: Sequence[str | Path], output: str | Path, force: bool = False) -> dict:
    """`sembed index merge PIECE... -o OUTPUT`: one index from indexes of one model and one trained quantiser."""
    from .indexes.merge import merge_indexes as merge

    return merge([Path(piece) for piece in pieces], Path(output), force=force)


def open_index(path: str | Path) -> VectorIndex:
    """An index directory, memory-mapped for search; close it (or use `with`) when done."""
    from .indexes.directory import VectorIndex

    return VectorIndex.load(path)


def search(index: str | Path | VectorIndex, queries: Sequence[str], k: int = 10) -> list[list[dict]]:
    """`sembed search`: for each query text, its `k` nearest records [{id, text, score}, ...], best first, the
    queries embedded as the index's texts were (its model)."""
    from .indexes.directory import VectorIndex
    from .indexes.query_encoder import QueryEncoder
    from .indexes.search import search_records

    loaded = open_index(index) if not isinstance(index, VectorIndex) else index
    try:
        text_key = loaded.settings.get("text_key", "text")
        encoder = QueryEncoder(loaded, None, "auto", text_key)
        found = search_records(
            ({text_key: query} for query in queries), loaded, encoder, k, text_key, "embedding", batch_size=1000
        )
        return [record["neighbors"] for record in found]
    finally:
        if loaded is not index:
            loaded.close()


def evaluate_sts(records: Records, group_by: str | None = None, gold_key: str = "score") -> dict:
    """`sembed eval sts`: Pearson and Spearman (x100, Fisher 95% intervals) between the cosine of each record's
    `embedding_a` / `embedding_b` (as `sembed embed` writes a pair's) and its gold score; per `group_by` value."""
    from .evaluation import sts

    with _source(records) as source:
        return sts.evaluate(source.path, gold_key=gold_key, group_by=group_by)
