"""Fresh rows: an update's new rows kept beside the FAISS file and searched exactly, until an update folds them in.

An update that adds rows to FAISS reads the whole FAISS file, inserts into it and writes it anew: at a million rows
an update of 2,000 records spent 3.5 s inserting into the graph, 1.0 s writing the file and 0.9 s reading it
(bench/results/streaming.json, `plain_update`), whatever its size. So an update whose new rows stay few leaves the
FAISS file as it is. Rows from the state's `fresh_from` on are the fresh rows: FAISS holds none of them; their
vectors are in the kept vectors (lossy types) or, beside an index that keeps none, in `fresh.FIRST.f32` (float32,
appended by each update and checksummed as the kept vectors are); every search scores them exactly, one matrix
product over at most MAX_ROWS rows, and merges them with FAISS's answer (`merged`), so they can only add recall.
A fresh row an update removes joins the store's `removed`, as a graph's removed rows do.

The update that would leave more than SHARE of the index's rows or MAX_ROWS fresh, or that writes FAISS anyway
(a removal from inverted lists, a compaction, --retrain), folds the fresh rows into FAISS (update.py `fold`) and
writes its new generation. FreshDiskANN (Singh et al. 2021) likewise keeps its inserts in a small index searched
beside the large one and merges them in batches. MAX_ROWS bounds what the exact scan adds to a query: 20,000
rows of 384 float32 are 7.7 MFLOP, about a tenth of a millisecond a query in batches on 2 cores; SHARE keeps a
small index folding at once, as before.
"""

from __future__ import annotations

import numpy as np

STATE = "fresh_from"  # the state's key: the first row FAISS does not hold (absent: every row is in FAISS)
SHARE = 0.02  # at most this share of the index's rows stays fresh
MAX_ROWS = 20_000  # and at most this many


def file_name(first: int) -> str:
    """The fresh rows' own vectors, from row `first` on (named by it: a reader of an earlier fold's state finds its
    file gone, and reads the state again, rather than another file under the same name)."""
    return f"fresh.{first}.f32"


def keeps(fresh_rows: int, rows: int) -> bool:
    """Whether `fresh_rows` of an index of `rows` rows may stay fresh."""
    return fresh_rows <= min(MAX_ROWS, SHARE * rows)


def nearest(queries: np.ndarray, vectors: np.ndarray, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(cosines, rows) of the k of `rows` nearest each unit query, best first, by exact inner product with their
    `vectors` (FAISS's blocked search, on its threads); -1 (score -inf) fills where fewer exist."""
    import faiss

    if not len(rows):
        return np.full((len(queries), 1), -np.inf, dtype=np.float32), np.full((len(queries), 1), -1, dtype=np.int64)
    scores, found = faiss.knn(queries, vectors, min(k, len(rows)), metric=faiss.METRIC_INNER_PRODUCT)
    return np.where(found >= 0, scores, -np.inf).astype(np.float32), np.where(found >= 0, rows[found], -1)


def merged(
    scores: np.ndarray, rows: np.ndarray, fresh_scores: np.ndarray, fresh_rows: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best of FAISS's answer and the fresh rows' for each query, best first (-1 where fewer exist)."""
    scores = np.where(rows >= 0, scores, -np.inf)
    both_scores = np.concatenate([scores, fresh_scores], axis=1)
    both_rows = np.concatenate([rows, fresh_rows], axis=1)
    order = np.argsort(-both_scores, axis=1, kind="stable")[:, :k]
    best_scores, best_rows = np.take_along_axis(both_scores, order, 1), np.take_along_axis(both_rows, order, 1)
    best_rows[~np.isfinite(best_scores)] = -1
    return best_scores.astype(np.float32), best_rows
