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

import threading
import weakref

import numpy as np

SCAN_FROM = 1.0  # scan every centroid where efSearch x ground-layer links >= this x the cell count

PARALLEL_OVER_QUERIES = 3  # FAISS IndexIVF.parallel_mode: search_preassigned splits the queries among threads
# index -> (a flat index of its centroids, the lock of the calls that search with it)
_scans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def search(index, queries: np.ndarray, k: int, params=None, exact=None, factor: int = 1):
    """(scores, ids) of FAISS's search of `index` for the k nearest of each query (params: FAISS SearchParameters,
    or None), the cells probed found by a scan of the centroids where that is the cheaper way (`scanned`).
    exact: a FAISS index of the rows' exact vectors (VectorFile.exact_index): `factor` x k candidates are found
    and re-ranked by it (FAISS's IndexRefine), the k best kept."""
    import faiss

    searched = index
    if exact is not None:
        # given its refine index after it is made: IndexRefine asks the two to hold as many rows when given both,
        # and lists that number their rows by id (an update dropped some) hold fewer than their highest row
        searched = faiss.IndexRefine(index, None)
        searched.refine_index, searched.ntotal, searched.is_trained = exact, exact.ntotal, index.is_trained
        params = faiss.IndexRefineSearchParameters(k_factor=factor, base_index_params=params)  # type: ignore[call-arg]
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    scan = scanned(index)
    if scan is None:
        return searched.search(queries, k, params=params)
    # The cells found by the scan: the index searched with it as its quantiser for the call, one call at a time
    # (a lock of the index's own). In FAISS's default parallel mode (0) IndexIVF.search splits the queries among
    # threads before its own quantiser search, and the lists are searched on one thread each: mode 3 has them split
    # the queries themselves (an 8-bit PQ search took twice the time without). Fast-scan lists split them either
    # way.
    with _scans[index][1]:
        quantizer, mode = index.quantizer, index.parallel_mode
        index.quantizer, index.parallel_mode = scan, mode or PARALLEL_OVER_QUERIES
        try:
            return searched.search(queries, k, params=params)
        finally:
            index.quantizer, index.parallel_mode = quantizer, mode


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
    kept = _scans.get(index)
    if kept is None:
        scan = faiss.IndexFlat(index.d, quantizer.metric_type)
        scan.add(quantizer.reconstruct_n(0, quantizer.ntotal))
        kept = _scans[index] = (scan, threading.Lock())
    return kept[0]
