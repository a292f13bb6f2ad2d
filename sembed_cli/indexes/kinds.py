"""Which FAISS index holds the vectors, and what each choice costs: by the count here (`choose`); `--type auto`
past AUTO_EXACT_LIMIT measures its candidates on a sample instead (auto.py).

FAISS's "Guidelines to choose an index" (wiki) by corpus size, with the
cost per 384-d vector (d = 384; float32 is 4 d = 1,536 bytes):

    flat   exact inner product ("IDMap2,Flat")          4 d bytes     recall 1       up to 100,000 (auto)
    hnsw   HNSW graph, M 32 ("HNSW32")                   4 d + 256     by efSearch    below 1,000,000 (auto)
    ivf    inverted lists of exact vectors ("IVF{K},Flat")  4 d + 8    by nprobe
    ivfpq  inverted lists of PQ codes, d/4 bytes ("IVF{K}_HNSW32,PQ{d/4}")  d/4 + 8 in RAM,
           + 2 d on disk for re-ranking (float16)        by nprobe      from 1,000,000 (auto)

Recall is not a property of the type but of its search breadth and the data: each build measures it and sets
the breadth for --recall (recall.py). On real text (953,433 MiniLM vectors of overlapping corpus windows,
STS-B/SICK queries; bench/ann_real.py) hnsw gave recall@10 0.887 / 0.944 / 0.974 / 0.987 at efSearch 64 / 128 /
256 / 512, ivfpq (IVF4096_HNSW32,PQ96 re-ranked from 100) 0.921 / 0.956 / 0.980 at nprobe 256 / 512 / 1,024; the
synthetic near-duplicates of bench/index_scale.py, where every type reached 0.998-1, cannot show it.

or any FAISS factory string (`--type 'OPQ32,IVF4096,PQ32'`). K, the cell count, is FAISS's 4 sqrt(N) rounded to a
power of two (16,384 at 10 million), trained on 39 K sampled vectors (the fewest FAISS trains K cells on without a
warning) by two-level k-means (FAISS contrib's method for many cells: sqrt(K) coarse cells, then each split),
which a 2-core CPU does in minutes where flat k-means over 16,384 cells takes an hour. Lossy types keep the
vectors on disk and re-rank RERANK_FACTOR x k candidates by exact cosine.

Row numbers are FAISS ids: most types store them (`add_with_ids`, `remove_ids`); a graph (HNSW) has neither, so
its rows are its positions and removed rows are filtered out at search time (`removed` in the store).
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import SembedError

NAMES = ("auto", "flat", "hnsw", "ivf", "ivfpq")
AUTO_EXACT_LIMIT = 100_000
AUTO_GRAPH_LIMIT = 1_000_000
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 64
IVF_NPROBE = 16
MAX_NPROBE = 256
TRAINING_POINTS_PER_CELL = 39  # FAISS warns below this many training vectors a cell
TWO_LEVEL_FROM = 1024  # cells from which k-means is done in two levels
QUANTIZER_EF_SEARCH = 16  # a graph quantiser's least efSearch (FAISS's default), 2 x nprobe above it
# a graph quantiser's efSearch while rows are added: FAISS's 16 put 2.7% of 1M MiniLM windows and 8.6% of 11.3M
# static ones into a cell not their nearest (32: 1.0% / 4.5%, for 0.7-0.9 CPU-s more a 100,000 rows)
QUANTIZER_ADD_EF_SEARCH = 32
RERANK_FACTOR = 10  # lossy codes: FAISS's best RERANK_FACTOR x k, re-ranked by exact cosine


@dataclass(frozen=True)
class Kind:
    """A FAISS index recipe: its name (a NAMES entry or 'factory'), the factory string, and how it holds rows."""

    name: str
    factory: str
    nprobe: int | None = None  # inverted lists probed per query
    auto: dict | None = field(default=None, compare=False, hash=False)  # what --type auto measured (auto.py)

    @property
    def lossy(self) -> bool:
        """Codes that lose precision (PQ, SQ, LSH...): search re-ranks from the kept vectors."""
        last = self.factory.split(",")[-1]
        return not (last == "Flat" or re.fullmatch(r"HNSW\d+(_Flat)?", last) is not None)

    def describe(self) -> dict:
        return {
            "type": self.name,
            "factory": self.factory,
            **({"nprobe": self.nprobe} if self.nprobe else {}),
            **({"auto": self.auto} if self.auto else {}),
        }


def cells(count: int) -> int:
    """FAISS's 4 sqrt(N) inverted lists, as a power of two, with at least TRAINING_POINTS_PER_CELL vectors each."""
    wanted = 2 ** round(math.log2(max(1.0, 4 * math.sqrt(count))))
    return max(1, min(wanted, count // TRAINING_POINTS_PER_CELL))


def nprobe(cell_count: int) -> int:
    """Lists probed: a sixteenth of them (recall@10 0.97 re-ranked at 2,048 cells, bench/index_scale.py), at least
    IVF_NPROBE and at most MAX_NPROBE, never more than there are."""
    return min(cell_count, max(IVF_NPROBE, min(MAX_NPROBE, cell_count // 16)))


def pq_bytes(dim: int) -> int:
    """PQ sub-quantizers: one byte for each 4 dimensions (96 at 384-d: d/8 bytes lost 0.03-0.05 of recall@10 after
    re-ranking on bench/index_scale.py's vectors), or the largest divisor of dim under that."""
    return next(m for m in range(max(1, dim // 4), 0, -1) if dim % m == 0)


def lists(cell_count: int) -> str:
    """The inverted lists of a factory string: `cell_count` cells, over a graph of them from TWO_LEVEL_FROM."""
    return f"IVF{cell_count}_HNSW{HNSW_M}" if cell_count >= TWO_LEVEL_FROM else f"IVF{cell_count}"


def fast_scan_quantizers(dim: int) -> int:
    """4-bit fast-scan sub-quantizers: one for each 2 dimensions, the bytes of pq_bytes's 8-bit codes (d/4 of them
    capped recall@10 at 0.81 on 10M real windows and at 0.91 on 1M, docs/indexes.md), or the largest divisor of dim
    under that."""
    return next(m for m in range(max(1, dim // 2), 0, -1) if dim % m == 0)


def choose(requested: str, count: int, dim: int, nprobe_given: int | None = None) -> Kind:
    """The Kind of `requested` (a name or a factory string) for `count` vectors of `dim` dimensions."""
    name = requested
    if name == "auto":
        name = "flat" if count <= AUTO_EXACT_LIMIT else "hnsw" if count < AUTO_GRAPH_LIMIT else "ivfpq"
    if name == "flat":
        return Kind("flat", "IDMap2,Flat")
    if name == "hnsw":
        return Kind("hnsw", f"HNSW{HNSW_M}")
    if name in ("ivf", "ivfpq"):
        k = cells(count)
        codes = "Flat" if name == "ivf" else f"PQ{pq_bytes(dim)}"
        return Kind(name, f"{lists(k)},{codes}", nprobe_given or nprobe(k))
    check_factory(requested, dim)
    listed = re.search(r"IVF(\d+)", requested)
    return Kind("factory", requested, (nprobe_given or nprobe(int(listed.group(1)))) if listed else None)


def check_factory(factory: str, dim: int) -> None:
    """A factory string FAISS can build for `dim`-d vectors, else a one-line error."""
    import faiss

    try:
        faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        reason = str(e).strip().splitlines()[-1] if str(e).strip() else "not understood"
        raise SembedError(
            f"--type '{factory}' is not an index FAISS can build for {dim}-d vectors: {reason}",
            f"use one of {', '.join(NAMES)}, or a FAISS factory string such as 'IVF4096,PQ{pq_bytes(dim)}'",
        ) from None


def parses(factory: str) -> bool:
    """FAISS reads `factory` as an index description (for a dimension most sub-quantizer counts divide)."""
    import faiss

    try:
        faiss.index_factory(768, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as e:
        return "could not parse" not in str(e) and "unknown" not in str(e).lower()
    return True


def create(kind: Kind, dim: int):
    """An empty FAISS index of `kind` (inner product over unit vectors), wrapped to store ids where it cannot."""
    import faiss

    index = faiss.index_factory(dim, kind.factory, faiss.METRIC_INNER_PRODUCT)
    if (graph := hnsw_of(index)) is not None:
        graph.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        graph.hnsw.efSearch = HNSW_EF_SEARCH
    ivf = ivf_of(index)
    # Any: downcast_index returns the concrete class (IndexIVFPQ, ...), which faiss's stubs type as the base Index
    concrete: Any = faiss.downcast_index(ivf) if ivf is not None else None
    if hasattr(concrete, "do_polysemous_training"):
        concrete.do_polysemous_training = False  # hours of training for codes we re-rank anyway
    if not positional(index) and not stores_ids(index):
        index = faiss.IndexIDMap2(index)
    return index


def unwrap(index):
    """The index under PreTransform (OPQ, PCA...) wrappers."""
    import faiss

    index = faiss.downcast_index(index)
    while isinstance(index, faiss.IndexPreTransform):
        index = faiss.downcast_index(index.index)
    return index


def ivf_of(index):
    """The IndexIVF inside `index`, or None."""
    import faiss

    try:
        return faiss.extract_index_ivf(index)
    except (RuntimeError, AttributeError):
        return None


def fast_scan(ivf) -> bool:
    """Whether inverted lists hold 4-bit fast-scan codes (PQ{M}x4fs), which scan several times faster than 8-bit
    ones: the recall ladder may probe half of them (recall.parameter)."""
    import faiss

    return isinstance(faiss.downcast_index(ivf), faiss.IndexIVFFastScan)


def hnsw_of(index):
    """The HNSW graph inside `index` (under an IDMap2 too: a graph compacted by an update, indexes/compaction.py)."""
    import faiss

    inner = unwrap(index)
    if isinstance(inner, (faiss.IndexIDMap, faiss.IndexIDMap2)):
        inner = unwrap(inner.index)
    return inner if isinstance(inner, faiss.IndexHNSW) else None


def stores_ids(index) -> bool:
    """The index keeps the ids it is given: inverted lists, or an IDMap."""
    import faiss

    inner = unwrap(index)
    return ivf_of(index) is not None or isinstance(inner, (faiss.IndexIDMap, faiss.IndexIDMap2))


def positional(index) -> bool:
    """A graph whose rows are its positions (no add_with_ids, no remove_ids): not one compacted under an IDMap2."""
    return hnsw_of(index) is not None and not stores_ids(index)


def needs_training(index) -> bool:
    return not index.is_trained


def training_size(index, count: int) -> int:
    """How many sampled vectors train `index`: 39 per inverted list (and at least 10,000 for PQ codebooks)."""
    ivf = ivf_of(index)
    wanted = TRAINING_POINTS_PER_CELL * ivf.nlist if ivf is not None else 0
    return min(count, max(wanted, 10_000))


def train(index, sample, seed: int) -> None:
    """Train `index` on the unit vectors `sample`: inverted lists of many cells by two-level spherical k-means
    (faiss.contrib.clustering's method), then FAISS's own training of the rest (codebooks, transforms)."""
    import faiss
    import numpy as np

    ivf = ivf_of(index)
    direct = not isinstance(faiss.downcast_index(index), faiss.IndexPreTransform)  # else the sample is transformed
    if ivf is not None and ivf.nlist >= TWO_LEVEL_FROM and direct:
        centroids = two_level_kmeans(sample, ivf.nlist, seed)
        ivf.quantizer.train(centroids)
        ivf.quantizer.add(centroids)
    elif ivf is not None:
        ivf.cp.seed = seed
        ivf.cp.spherical = True
    training_breadth(index)  # a graph quantiser's breadth as the rows are added to cells; a search sets its own
    index.train(np.ascontiguousarray(sample, dtype=np.float32))


def two_level_kmeans(sample, k: int, seed: int):
    """k unit centroids of `sample`: sqrt(k) coarse cells, then each cell split into a share of k proportional to
    its size (faiss.contrib.clustering.two_level_clustering, spherical, without its printing)."""
    import faiss
    import numpy as np

    sample = np.ascontiguousarray(sample, dtype=np.float32)
    dim, coarse = sample.shape[1], max(1, int(math.sqrt(k)))
    first = faiss.Kmeans(dim, coarse, niter=20, seed=seed, spherical=True, max_points_per_centroid=2000)
    first.train(sample)
    coarse_centroids = first.centroids
    assert coarse_centroids is not None  # set by train()
    _, assigned = first.index.search(sample, 1)
    assigned = assigned.ravel()
    sizes = np.bincount(assigned, minlength=coarse)
    shares = np.cumsum(sizes) * k // len(sample)
    shares[1:] -= shares[:-1].copy()
    centroids = []
    for cell in range(coarse):
        members, share = sample[assigned == cell], int(shares[cell])
        if share == 0:
            continue
        if len(members) <= share:  # too few to cluster: each member is a centroid, the rest near the coarse one
            extra = np.repeat(coarse_centroids[cell : cell + 1], share - len(members), axis=0)
            centroids.append(np.concatenate([members, extra]) if len(members) else extra)
            continue
        second = faiss.Kmeans(
            dim,
            share,
            niter=20,
            seed=seed + cell,
            spherical=True,
            max_points_per_centroid=256,
            min_points_per_centroid=1,
        )  # shares follow sizes: ~39 a cell, some a little under
        second.train(members)
        assert second.centroids is not None  # set by train()
        centroids.append(second.centroids)
    return np.ascontiguousarray(np.concatenate(centroids)[:k], dtype=np.float32)


def set_search_breadth(index, kind_nprobe: int | None, ef_search: int | None) -> None:
    """The index's own nprobe (inverted lists) and efSearch (graphs), through any wrappers."""
    ivf, graph = ivf_of(index), hnsw_of(index)
    if ivf is not None and kind_nprobe:
        ivf.nprobe = min(kind_nprobe, ivf.nlist)
        quantizer = graph_quantizer(index)
        if quantizer is not None:  # a graph over the cells must look wider than the cells it returns
            # set, not raised: a recall ladder that climbed to nprobe 2,048 left efSearch 4,096 in the saved file,
            # and every search at nprobe 64 walked the cell graph that wide (16x slower at 11.3M rows)
            quantizer.hnsw.efSearch = max(QUANTIZER_EF_SEARCH, 2 * ivf.nprobe)
    if graph is not None:
        graph.hnsw.efSearch = ef_search or HNSW_EF_SEARCH


def training_breadth(index) -> None:
    """Give `index` the search breadth `train` leaves a new index with (FAISS's nprobe 1, a graph quantiser's
    QUANTIZER_ADD_EF_SEARCH, a graph's HNSW_EF_SEARCH): what its trained digest is made at (build.trained_digest)."""
    ivf, graph, quantizer = ivf_of(index), hnsw_of(index), graph_quantizer(index)
    if ivf is not None:
        ivf.nprobe = 1
    if quantizer is not None:
        quantizer.hnsw.efSearch = QUANTIZER_ADD_EF_SEARCH
    if graph is not None:
        graph.hnsw.efSearch = HNSW_EF_SEARCH


@contextlib.contextmanager
def adding(index):
    """Rows added inside go to the cells a build puts them in: a graph quantiser is searched at
    QUANTIZER_ADD_EF_SEARCH, as a new index leaves `train`, not at the search breadth a loaded index carries (2 x
    nprobe: an update, a fold of fresh rows or a merge would otherwise file rows as no build would), and gets its
    own breadth back after."""
    quantizer = graph_quantizer(index)
    if quantizer is None:
        yield
        return
    kept = quantizer.hnsw.efSearch
    quantizer.hnsw.efSearch = QUANTIZER_ADD_EF_SEARCH
    try:
        yield
    finally:
        quantizer.hnsw.efSearch = kept


def graph_quantizer(index):
    """The HNSW graph over an inverted-list index's cells (`IVF{n}_HNSW{m}`), or None."""
    import faiss

    ivf = ivf_of(index)
    quantizer = faiss.downcast_index(ivf.quantizer) if ivf is not None else None
    return quantizer if isinstance(quantizer, faiss.IndexHNSW) else None


def bytes_per_vector(kind: Kind, dim: int, rerank_bytes: int) -> int:
    """What one vector costs: in the FAISS index (codes and id) and in the re-ranking file."""
    import faiss

    index = create(kind, dim)
    codes = faiss.downcast_index(unwrap(index))
    if isinstance(codes, faiss.IndexHNSW):  # the graph's vectors are its storage's codes (SQ8: d bytes)
        codes = faiss.downcast_index(codes.storage)
    size = getattr(codes, "code_size", None)
    if size is None:
        size = 4 * dim
    extra = 8 if stores_ids(index) else 2 * HNSW_M * 4 if positional(index) else 0
    return int(size) + extra + (rerank_bytes if kind.lossy else 0)
