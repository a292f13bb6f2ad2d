"""Near-duplicate groups: `sembed dedup` as functions.

Each record's `neighbours` nearest records are found by FAISS (exact inner product for a stream of up to
EXACT_LIMIT records, an inverted file above it; an index answers with its own search), the pairs at or above the
cosine `threshold` are kept, and the groups are the connected components of the graph of those pairs: what
union-find over the pairs computes (scipy's connected_components does it in C). A group's representative is its
first record in input order (row order for an index), and each member's score is its cosine to the
representative: a member joined through a chain (A ~ B ~ C) may score below the threshold against A.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .. import console
from . import kinds
from .collection import BLOCK, Collection, IndexCollection

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.9
DEFAULT_NEIGHBOURS = 10
DEFAULT_NPROBE = 16  # near-duplicates lie in their own cell or the next: 16 lists find >= 0.99 of their pairs
EXACT_LIMIT = kinds.AUTO_EXACT_LIMIT  # exact search over all pairs up to 100,000 records (seconds), cells above
KEEP = ("all", "first", "duplicates")
MARGIN = 0.01  # candidates this far under the threshold by FAISS's score are scored again from the kept vectors
FIELDS = ("group", "representative", "score")

Search = Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]]  # (unit queries, k) -> (cosines, positions)


@dataclass(frozen=True)
class DedupSettings:
    """`sembed dedup`'s choices: the cosine a pair needs, neighbours looked at per record, which records come out,
    exact search or not (None: exact up to EXACT_LIMIT records), lists probed, the seed of the cells' training."""

    threshold: float = DEFAULT_THRESHOLD
    neighbours: int = DEFAULT_NEIGHBOURS
    keep: str = "all"
    exact: bool | None = None
    nprobe: int = DEFAULT_NPROBE
    seed: int = 42


@dataclass
class Pairs:
    """The pairs found at or above the threshold: positions a < b and their cosine."""

    a: np.ndarray
    b: np.ndarray
    score: np.ndarray

    def __len__(self) -> int:
        return len(self.a)


def vector_search(collection: Collection, settings: DedupSettings) -> tuple[Search, str]:
    """The search over the collection's own vectors, and what it is (for the report): an index's own, or FAISS
    over the spooled vectors, exact (a flat index) or over inverted lists."""
    import faiss

    if isinstance(collection, IndexCollection):
        index = collection.index

        def search_index(queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            scores, rows = index.search(queries, k)
            return scores, collection.positions(rows)

        return search_index, f"the index's own search ({index.metadata.get('type')})"
    count, dim = collection.count, collection.dimension
    exact = settings.exact if settings.exact is not None else count <= EXACT_LIMIT
    if exact:
        flat = faiss.IndexFlatIP(dim)
        for start in range(0, count, BLOCK):
            flat.add(collection.block(start, start + BLOCK))
            collection.release()
        return flat.search, "exact inner product"
    cells = kinds.cells(count)
    quantizer = f"IVF{cells}_HNSW{kinds.HNSW_M}" if cells >= kinds.TWO_LEVEL_FROM else f"IVF{cells}"
    kind = kinds.Kind("ivf", f"{quantizer},SQfp16", settings.nprobe)
    index = kinds.create(kind, dim)
    size = kinds.training_size(index, count)
    sample = np.sort(np.random.default_rng(settings.seed).choice(count, size=size, replace=False))
    log.info(f"training {cells} inverted lists on {size} sampled vectors")
    kinds.train(index, collection.rows(sample), settings.seed)
    for start in console.progress(range(0, count, BLOCK), "adding vectors", unit="blocks"):
        index.add(collection.block(start, start + BLOCK))
        collection.release()
    kinds.set_search_breadth(index, settings.nprobe, None)
    return index.search, f"{kind.factory}, {min(settings.nprobe, cells)} of {cells} lists probed"


def find_pairs(collection: Collection, search: Search, settings: DedupSettings) -> Pairs:
    """Every record's neighbours at or above the threshold (itself left out), each pair once (a < b). A pair's
    cosine is taken again from the kept vectors (FAISS's codes round otherwise: an inverted list's float16
    residuals, an index's PQ), so exact and approximate search judge a pair they both find alike."""
    found_a, found_b, found_score = [], [], []
    asked = settings.neighbours + 1  # the record itself comes back too
    for start in console.progress(range(0, collection.count, BLOCK), "finding neighbours", unit="blocks"):
        queries = collection.block(start, start + BLOCK)
        scores, positions = search(queries, asked)
        own = np.arange(start, start + len(queries))[:, None]
        keep = (positions >= 0) & (positions != own) & (scores >= settings.threshold - MARGIN)
        a = np.broadcast_to(own, positions.shape)[keep]
        b = positions[keep]
        score = np.einsum("nd,nd->n", queries[a - start], collection.rows(b))
        close = score >= settings.threshold
        a, b = a[close], b[close]
        found_a.append(np.minimum(a, b))
        found_b.append(np.maximum(a, b))
        found_score.append(score[close].astype(np.float32))
        collection.release()
    if not found_a:
        return Pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    a, b, score = np.concatenate(found_a), np.concatenate(found_b), np.concatenate(found_score)
    pairs, first = np.unique(np.stack([a, b], axis=1), axis=0, return_index=True)  # found from both ends: once
    return Pairs(pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64), score[first])


@dataclass
class Groups:
    """Which group each record is in (-1: none), its group's representative (its first record) and its score."""

    group: np.ndarray  # int64 per position: group number (0, 1, ... in order of their first record), or -1
    representative: np.ndarray  # int64 per position: the representative's position, or -1
    score: np.ndarray  # float32 per position: cosine to the representative (NaN outside groups)

    @property
    def count(self) -> int:
        return int(self.group.max()) + 1 if len(self.group) else 0

    @property
    def members(self) -> int:
        return int((self.group >= 0).sum())

    def kept(self, position: int, keep: str) -> bool:
        if keep == "all":
            return True
        grouped = self.group[position] >= 0
        if keep == "duplicates":
            return bool(grouped)
        return not grouped or self.representative[position] == position  # first


def join(collection: Collection, pairs: Pairs) -> Groups:
    """The groups of the pairs: connected components (union-find), numbered by their first record."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    count = collection.count
    graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs.a, pairs.b)), shape=(count, count)).tocsr()
    _, labels = connected_components(graph, directed=False)
    _, first, sizes = np.unique(labels, return_index=True, return_counts=True)  # first position of each component
    grouped_labels = np.flatnonzero(sizes >= 2)  # components in order of label; number them by first position
    order = grouped_labels[np.argsort(first[grouped_labels], kind="stable")]
    number = np.full(len(first), -1, dtype=np.int64)
    number[order] = np.arange(len(order))
    group = number[labels]
    representative = np.where(group >= 0, first[labels], -1)
    score = np.full(count, np.nan, dtype=np.float32)
    members = np.flatnonzero(group >= 0)
    for start in range(0, len(members), BLOCK):
        chunk = members[start : start + BLOCK]
        score[chunk] = np.einsum("nd,nd->n", collection.rows(chunk), collection.rows(representative[chunk]))
        collection.release()
    np.clip(score, -1.0, 1.0, out=score)  # float16 vectors: a cosine a little past 1
    score[representative == np.arange(count)] = 1.0
    return Groups(group, representative, score)


def dedup_records(collection: Collection, groups: Groups, keep: str) -> Iterator[dict]:
    """The collection's records, in order, each with `group`, `representative` (the first record's id) and `score`
    (null for a record in no group); `keep` first: only representatives and records in no group; duplicates: only
    records in a group."""
    names: dict[int, object] = {}  # representative position -> its id, met before its members
    replaced = False
    for position, record, record_id in collection.records():
        number = int(groups.group[position])
        if number >= 0 and groups.representative[position] == position:
            names[position] = record_id
        if not groups.kept(position, keep):
            continue
        if "score" in record and not replaced:
            log.warning("records' own 'score' field is replaced by the cosine to their group's representative")
            replaced = True
        if number < 0:
            record.update(group=None, representative=None, score=None)
        else:
            record.update(
                group=number,
                representative=names[int(groups.representative[position])],
                score=round(float(groups.score[position]), 6),
            )
        yield record


def near_duplicates(collection: Collection, settings: DedupSettings) -> tuple[Groups, Pairs, str]:
    """The groups of a collection whose vectors are read: (groups, pairs found, how they were searched)."""
    search, how = vector_search(collection, settings)
    log.info(f"searching {collection.count} vectors for near-duplicates: {how}")
    pairs = find_pairs(collection, search, settings)
    groups = join(collection, pairs)
    log.info(
        f"{len(pairs)} pair(s) at cosine >= {settings.threshold:g}: {groups.count} group(s) holding "
        f"{groups.members} of {collection.count} records"
    )
    return groups, pairs, how
