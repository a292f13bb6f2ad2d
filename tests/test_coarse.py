"""The cells an inverted-list search probes: found by a scan of every centroid where the index's graph quantiser
would compare a query with as many (sembed_cli/indexes/coarse.py)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import lists_of

from sembed_cli.indexes import coarse

faiss = pytest.importorskip("faiss")

DIM = 16


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus() -> np.ndarray:
    return unit(np.random.default_rng(7).standard_normal((12_000, DIM)))


def built(factory: str, corpus: np.ndarray):
    index = faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT)
    index.train(corpus)
    index.add(corpus)
    return index


def test_the_scan_is_taken_where_the_graph_would_compare_a_query_with_every_centroid(corpus):
    graph = built("IVF256_HNSW32,Flat", corpus)
    quantizer = faiss.downcast_index(graph.quantizer)
    quantizer.hnsw.efSearch = 3  # 3 x 64 ground-layer links < 256 cells
    assert coarse.scanned(graph) is None
    quantizer.hnsw.efSearch = 4  # 4 x 64 = 256
    scan = coarse.scanned(graph)
    assert scan is not None and scan.ntotal == 256 and coarse.scanned(graph) is scan  # made once an index
    np.testing.assert_array_equal(scan.reconstruct_n(0, 256), quantizer.reconstruct_n(0, 256))
    assert coarse.scanned(built("IVF64,Flat", corpus)) is None  # a flat quantiser is already a scan
    assert coarse.scanned(built("HNSW32", corpus)) is None


def test_the_scanned_cells_are_the_exact_nearest_and_the_search_keeps_its_parameters(corpus):
    graph = built("IVF256_HNSW32,PQ8x4fs", corpus)
    faiss.downcast_index(graph.quantizer).hnsw.efSearch = 512  # wide: scanned
    graph.nprobe = 16
    queries = unit(corpus[:40] + 0.3 * np.random.default_rng(1).standard_normal((40, DIM)))
    nearest_cells = np.argsort(-queries @ faiss.downcast_index(graph.quantizer).reconstruct_n(0, 256).T, axis=1)
    where = lists_of(graph)
    _, ids = coarse.search(graph, queries, 10)
    assert all(set(where[found]) <= set(cells[:16]) for found, cells in zip(ids, nearest_cells))
    np.testing.assert_array_equal(ids, graph.search(queries, 10)[1])  # the wide graph found the same cells
    narrower = faiss.SearchParametersIVF(nprobe=4, sel=faiss.IDSelectorRange(0, 6000))
    _, ids = coarse.search(graph, queries, 10, narrower)
    assert all(set(where[found[found >= 0]]) <= set(cells[:4]) for found, cells in zip(ids, nearest_cells))
    assert ids.max() < 6000 and (ids >= 0).sum() > 300  # the selector held, and rows were found


def test_searches_in_threads_share_the_scan_and_leave_the_graph_quantiser_in_place(corpus):
    """The scan is the lists' quantiser for the length of a call, one call at a time: searches from threads (a
    Python caller's) answer as one after the other do, re-ranked or not, and the graph is the quantiser after."""
    from concurrent.futures import ThreadPoolExecutor

    graph = built("IVF256_HNSW32,PQ8x4fs", corpus)
    quantizer = faiss.downcast_index(graph.quantizer)
    quantizer.hnsw.efSearch, graph.nprobe = 512, 16
    exact = faiss.IndexFlatIP(DIM)
    exact.add(corpus)
    queries = unit(corpus[:64] + 0.3 * np.random.default_rng(2).standard_normal((64, DIM)))
    alone = [coarse.search(graph, queries, 10), coarse.search(graph, queries, 10, exact=exact, factor=5)]
    with ThreadPoolExecutor(4) as pool:
        plain = list(pool.map(lambda _: coarse.search(graph, queries, 10), range(8)))
        refined = list(pool.map(lambda _: coarse.search(graph, queries, 10, exact=exact, factor=5), range(8)))
    assert all(np.array_equal(ids, alone[0][1]) for _, ids in plain)
    assert all(np.array_equal(ids, alone[1][1]) for _, ids in refined)
    assert isinstance(faiss.downcast_index(graph.quantizer), faiss.IndexHNSWFlat) and graph.parallel_mode == 0
    np.testing.assert_allclose(alone[1][0], np.take_along_axis(queries @ corpus.T, alone[1][1], 1), atol=1e-6)


def test_rows_are_added_to_their_nearest_cell():
    """The cell graph searches wider while rows are added (kinds.QUANTIZER_ADD_EF_SEARCH) than FAISS's 16, which put
    0.5% of these rows (8.6% of 11.3M real ones) outside their nearest cell."""
    from sembed_cli.indexes import kinds

    rows = unit(np.random.default_rng(3).standard_normal((41_000, 32)))
    index = faiss.index_factory(32, "IVF1024_HNSW32,Flat", faiss.METRIC_INNER_PRODUCT)
    kinds.train(index, rows[:40_000], 1)
    index.add(rows)
    centroids = faiss.downcast_index(index.quantizer).reconstruct_n(0, 1024)
    nearest = np.argmax(rows @ centroids.T, axis=1)
    assert (lists_of(index) == nearest).mean() >= 0.999
