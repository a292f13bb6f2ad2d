"""Which inverted lists a query probes: FAISS's search of an index, with the cells of inverted lists over a graph
quantiser (`IVF{K}_HNSW32,...`) found by scanning every centroid where the graph would compare the query with as
many of them.

A graph over the cells (FAISS's guideline from a few thousand cells up) finds a query's nearest cells without
scanning them all, but the graph must be searched wider than the cells it returns (efSearch 2 x nprobe,
kinds.set_search_breadth), and at the breadths a recall of 0.95 asks for it compares each query with more
centroids than there are: at nprobe 512 of 4,096 cells (efSearch 1,024, 64 links a node) the cell graph took
two thirds of FAISS's search. One matrix product over the centroids does it in a tenth of the time and finds the
exact nearest cells. Measured on real vectors (docs/indexes.md, 1,000 STS-B/SICK queries, 2 threads), FAISS's
search with the cells found either way:

    953,433 MiniLM windows, IVF4096_HNSW32,PQ192x4fs     nprobe 32: 0.042 -> 0.037 s    512: 0.45 -> 0.19 s
    11.3M static windows, IVF16384_HNSW32,PQ128x4fs      nprobe 128: 0.29 -> 0.23 s     2,342: 4.8 -> 1.1 s

The scan is taken where efSearch x the graph's links on its ground layer reach the cell count (SCAN_FROM x): from
nprobe 32 of 4,096 cells and 128 of 16,384, where the two ways cost about the same (the graph is cheaper below:
nprobe 16 of 4,096 0.012 against 0.015 s, 64 of 16,384 0.067 against 0.083 s for the cells alone). The vectors
were assigned to their cells by the graph when they were added; searching the exact nearest cells finds them as
well or better (the graph's cells and the exact ones overlap 0.97-0.999 at these breadths).
"""

from __future__ import annotations

import weakref

import numpy as np

SCAN_FROM = 1.0  # scan every centroid where efSearch x ground-layer links >= this x the cell count

PARALLEL_OVER_QUERIES = 3  # FAISS IndexIVF.parallel_mode: search_preassigned splits the queries among threads
_scans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # index -> a flat index of its centroids


def search(index, queries: np.ndarray, k: int, params=None) -> tuple[np.ndarray, np.ndarray]:
    """(scores, ids) of FAISS's search of `index` for the k nearest of each query (params: FAISS SearchParameters,
    or None), the cells probed found by a scan of the centroids where that is the cheaper way (`scanned`)."""
    scan = scanned(index)
    if scan is None:
        return index.search(queries, k, params=params) if params is not None else index.search(queries, k)
    import faiss

    queries = np.ascontiguousarray(queries, dtype=np.float32)
    nprobe = min(params.nprobe if params is not None and hasattr(params, "nprobe") else index.nprobe, index.nlist)
    cell_scores, cells = scan.search(queries, nprobe)
    scores = np.empty((len(queries), k), dtype=np.float32)
    ids = np.empty((len(queries), k), dtype=np.int64)
    # FAISS's C++ call: its Python wrapper takes no SearchParameters (a selector of the rows allowed). In FAISS's
    # default parallel mode (0) IndexIVF.search splits the queries among threads before its own quantiser search,
    # and search_preassigned runs on one thread: mode 3 has it split them itself (an 8-bit PQ search took twice
    # the time without). Fast-scan lists split them either way.
    at = faiss.swig_ptr
    n = len(queries)
    mode = index.parallel_mode
    index.parallel_mode = mode or PARALLEL_OVER_QUERIES
    try:
        index.search_preassigned_c(n, at(queries), k, at(cells), at(cell_scores), at(scores), at(ids), False, params)
    finally:
        index.parallel_mode = mode
    return scores, ids


def scanned(index):
    """A flat index of the centroids of `index` where the nearest cells are found faster by scanning them all than
    by its graph quantiser at the graph's efSearch; None where FAISS's own search is kept (no inverted lists, lists
    under a transform, a flat quantiser, a narrow graph search)."""
    import faiss

    if not isinstance(index, faiss.IndexIVF):
        return None
    quantizer = faiss.downcast_index(index.quantizer)
    if not isinstance(quantizer, faiss.IndexHNSW):
        return None
    links = quantizer.hnsw.nb_neighbors(0)  # type: ignore[attr-defined]  # not in the stubs; 2 M on the ground layer
    if quantizer.hnsw.efSearch * links < SCAN_FROM * index.nlist:
        return None
    scan = _scans.get(index)
    if scan is None:
        scan = faiss.IndexFlat(index.d, quantizer.metric_type)
        scan.add(quantizer.reconstruct_n(0, quantizer.ntotal))
        _scans[index] = scan
    return scan
