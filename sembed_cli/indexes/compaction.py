"""A graph index's removed rows purged by rebuilding the graph from its live rows, inside an update's commit.

FAISS's HNSW cannot remove a vertex: the rows an update removes (or replaces) stay in the graph, skipped at search
(the store's `removed`). They still cost memory, and a search walks them without counting them: at a share f of
the graph, a search needs 1 / (1 - f) times the steps for as many live neighbours, and inserts keep linking to
them. Once they reach COMPACT_SHARE of the rows the graph holds, the update that crossed it builds the graph again
from the live rows' vectors (FreshDiskANN, Singh et al. 2021, likewise consolidates its deletes in batches rather
than one by one).

10%: the filtered walk then costs at most 1 / 0.9 = 1.11x, the margin issue 36 allows sembed's own work over raw
FAISS; a lower share rebuilds more often (a rebuild costs about a build, so at 1% churn an update a share of 10%
compacts every ~10 updates), a higher one lets the dead rows cost more than that margin.

The new graph is an IndexIDMap2 over a fresh HNSW of the same factory holding each live row under its own row
number: rows keep their numbers, so the store, the kept vectors and anything keyed by row stay as they are, and
later updates add by id (`add_with_ids`) and mark removed rows as before. The update writes it as its new
generation's FAISS file and empties `removed` in its transaction: a search sees the old graph with the old
`removed`, or the new graph with none, never a mix (the reader/writer rules of docs/indexes.md).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from . import kinds
from .directory import VectorIndex
from .staging import add_rows_read
from .store import RecordStore

log = logging.getLogger(__name__)

COMPACT_SHARE = 0.10  # removed rows / rows the graph holds from which an update rebuilds it
TRAINING_SAMPLE = 100_000  # live rows a graph whose storage is trained (SQ, PQ codes) is trained on again


def due(removed: int, held: int) -> bool:
    """Whether a graph holding `held` rows, `removed` of them removed, is to be compacted."""
    return held > 0 and removed >= COMPACT_SHARE * held


def compact(loaded: VectorIndex, seed: int, next_row: int):
    """A new graph (an IDMap2 over a fresh HNSW of the index's factory) of the live rows of `loaded`, read inside
    the update's open transaction (rows below `next_row`) from its kept vectors or its graph's own storage."""
    import faiss

    store = loaded.store
    assert isinstance(store, RecordStore)
    started = time.perf_counter()
    settings = loaded.settings
    live = np.fromiter(store.row_numbers(), dtype=np.int64)
    graph = kinds.create(kinds.Kind(settings.get("type", "factory"), settings["factory"]), loaded.dimension)
    if kinds.needs_training(graph):
        size = min(len(live), TRAINING_SAMPLE)
        sample = np.sort(np.random.default_rng(seed).choice(live, size=size, replace=False))
        kinds.train(graph, loaded.vectors_of(sample, next_row), seed)
    compacted = faiss.IndexIDMap2(graph)
    add_rows_read(compacted, live, lambda rows: loaded.vectors_of(rows, next_row))
    kinds.set_search_breadth(compacted, None, settings.get("ef_search"))
    log.info(
        f"compacted the graph: {loaded.index.ntotal - len(live)} removed rows purged, {len(live)} rebuilt "
        f"({time.perf_counter() - started:.1f} s)"
    )
    return compacted


def held_rows(index, row_count: int) -> np.ndarray:
    """The row numbers a graph holds (removed ones included): its positions, or the ids of a compacted one."""
    import faiss

    if kinds.positional(index):
        return np.arange(row_count, dtype=np.int64)
    id_map: Any = faiss.downcast_index(index)  # an IndexIDMap2, which faiss's stubs type as the base Index
    return faiss.vector_to_array(id_map.id_map).astype(np.int64)
