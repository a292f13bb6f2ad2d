"""Recall that is measured, not assumed: an index's search breadth tuned to the recall@10 a user asks for.

At build (`sembed index --recall R`, default 0.95) SAMPLE seeded queries made from the corpus's own vectors are
searched through the index's own search path (`VectorIndex.search`: the graph's removed rows skipped, lossy codes
re-ranked from the kept vectors), and each answer is compared with the exact top-k over every live row (FAISS
IndexFlatIP over the unit vectors, a block of rows at a time); ties count as hits (a returned row whose exact
cosine reaches the k-th exact cosine).

A query is a drawn row x moved by a random unit direction r: unit(x + NOISE r), NOISE 1.6, so x is at cosine
about 0.53 and its nearest rows are about as far as a sentence from outside the corpus finds its own (10th cosine
0.35 on 953,433 MiniLM windows, 0.48 on 11.3M static windows). A row itself is far too easy (own row left out:
0.950 at efSearch 26 where STS-B/SICK sentences found 0.760: overlapping windows and near-duplicate sentences are
its near-copies). Until 2026-11-27 a query was a blend unit(x + 0.6 y) of two drawn rows; its neighbourhood is
dense (10th cosine 0.78 at 10M), so it did not see what a deeper re-rank buys (+0.005 where real queries gain
+0.02) and erred both ways: a graph's breadth twice what real text needs (0.951 where real found 0.974 at
efSearch 256), inverted lists' too narrow (0.46-0.72 of real's misses). The moved row errs less, and the same way
on both structures where it matters, narrow breadths: at 1M it misses 0.81-0.85 of what real queries miss on a
graph below efSearch 100 (more than real past 128) and 0.69-0.83 on 8-bit inverted lists; at 10M on 4-bit
fast-scan lists 0.8-1.0 re-ranking 100 and 1.0-1.2 re-ranking 300 (bench/results/recall_calibration.json,
recall_calibration_static10m.json). So the ladder aims at missing MISS_SHARE of what the target allows (`aimed`:
a graph 0.8, 0.96 for 0.95; inverted lists 0.65, 0.9675 for 0.95), on the safe side of every breadth measured.
Measured against real queries at the breadth chosen: a graph at 1M 0.907 / 0.967 / 0.993 for R 0.9 / 0.95 / 0.99
(the blend chose efSearch 256 for 0.95, now 192: 1.3x the queries/s), 8-bit lists 0.927 / 0.963, 4-bit fast-scan
lists 0.932 / 0.966 / 0.989 (the last at nprobe 1,408 of 4,096, past the quarter of the lists 8-bit ones stop at:
`parameter`), and at 10M 0.943 / 0.959 / 0.993 (2,811 and 472 q/s for 0.95 and 0.99: the cells scanned,
coarse.py, and rows added to their nearest cell, kinds.QUANTIZER_ADD_EF_SEARCH).

The breadth (efSearch of a graph, nprobe of inverted lists) climbs a ladder, doubling until the recall reaches
CURVE_UP_TO (or stops growing), then bisects for the cheapest breadth that meets R. The whole
curve (breadth -> recall) goes into sembed.json (`settings.recall`), with the chosen breadth where the search reads
it (`settings.ef_search` / `settings.nprobe`), so `search --recall R2` picks another point of the same curve
without measuring again. `index --update` measures again after the rows it changed (once they reach 1% of an index of
100,000 rows or more: the exact search over every row costs seconds at a million): at the index's breadth, and up
the ladder again only where the recall fell under the target.

Lossy codes re-ranked from the kept vectors have a second breadth: the re-rank depth, RERANK_FACTORS x k
candidates. Where the codes rank the true neighbours too low, no nprobe finds them in the first 10 k: at 10M static
windows (IVF16384_HNSW32,PQ128x4fs) real queries found 0.939 at nprobe 256 and 100 candidates, 0.959 with 300
(bench/results/ann_real_static10m.json). So on inverted lists with kept vectors, a climb that ends under the target
climbs again at the next depth; and one that meets it climbs again at the next depth too, where that can pay:
the deeper depth is kept when it meets the target at DEEPER_LISTS of the nprobe or less and its search of the
sample's queries, timed in turn with the shallower one's (best of three, the candidates' vectors read into RAM
beforehand as a searched index's are in the page cache), is no slower: it finds more (`cheapest_depth`). The
depth chosen goes into sembed.json (`settings.rerank_factor`), where search reads it, and `search -v` prints it;
each depth tried, with the timings of each race, goes into `settings.recall.depths`. Like `--type auto`'s
choice, the depth is the machine's when two are near: the recall of each is deterministic, the timing is not.

Each breadth measured also records `nearest`: the share of the queries whose exact nearest row (ties counted) is
among the k the index answered, from the same answers (no search more). `search --spelling` is searched at the
cheapest breadth whose `nearest` meets the target (aimed as recall@k is; `apply_target`): it re-ranks 10 k
candidates by spelling, and what it needs of the vectors is the name meant among them, which is the query's
nearest or near it, not the whole exact top 10. Over the POI reproduction's 202,179 names plus 10x as many
distractors (a graph, HNSW32, 2026-11-29, AMD EPYC, 2,000 perturbed names), recall@10 by kind after the re-rank at
efSearch 16 / 32 / 64 / 128 / 768: all 0.9525 / 0.9535 / 0.9545 / 0.9545 / 0.954, where the held-out queries'
recall@10 asked for 768 for 0.95 and their `nearest` reached 0.919 / 0.959 / 0.981 / 0.991 / 0.999; over the
202,179 names alone every breadth from 16 found the same (all 0.975-0.976; `nearest` 0.987 at 16).

The method is the one ANN benchmarks use (ann-benchmarks, big-ann-benchmarks: recall@k against exact search,
ties counted), with queries made from the corpus itself, since a build has no others.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import coarse, kinds
from .entries import unit_rows
from .vector_file import as_float32

if TYPE_CHECKING:
    from .directory import VectorIndex
    from .staging import IndexSettings
    from .vector_file import VectorFile

log = logging.getLogger(__name__)

DEFAULT_TARGET = 0.95
SAMPLE = 1_000  # queries drawn from the corpus: the recall's standard error is about 0.005 at 0.95
NOISE = 1.6  # a query is unit(x + NOISE r), a drawn row and a random unit direction (held_out, module doc)
K = 10
MISS_SHARE = {"nprobe": 0.65, "ef_search": 0.8}  # each structure aims to miss this share of what R allows (aimed)
CURVE_UP_TO = 0.99  # the ladder climbs this far (or until recall stops growing), so search --recall can ask more
PLATEAU = 0.0005  # a doubling that gains less than this ends the climb
TIE = 1e-5  # cosines this close to the k-th exact one count as ties (hits)
BLOCK = 100_000  # rows a time for the exact search
REMEASURE_SHARE = 0.01  # an update measures again once this share of the rows changed since the last measurement
REMEASURE_ALWAYS_BELOW = 100_000  # rows under which every update measures again (a second or less)
NAMES = {"ef_search": "efSearch", "nprobe": "nprobe"}
RERANK_FACTORS = (kinds.RERANK_FACTOR, 3 * kinds.RERANK_FACTOR, 10 * kinds.RERANK_FACTOR)  # depths x k, in turn
DEEPER_LISTS = 0.9  # a deeper re-rank is climbed up to this share of the shallower one's nprobe (cheapest_depth)
RERANK_BYTES = 256 << 20  # the float32 candidate rows a measurement's search re-ranks at a time (answers)
REMEMBERED_BYTES = 256 << 20  # the kept rows a measurement holds once read, as the file holds them (_Remembered)

Chunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]  # (row numbers, float32 unit vectors) per block


# --- what the search widens ------------------------------------------------------------------------------------


def parameter(index) -> tuple[str | None, int, int]:
    """(setting, first rung, last rung) of the breadth the ladder climbs: nprobe of inverted lists, efSearch of a
    graph, or (None, 0, 0) where search has no breadth (flat: exact)."""
    ivf = kinds.ivf_of(index)
    if ivf is not None:  # a quarter of the lists at most, half of 4-bit fast-scan ones: wider, a flat scan costs less
        lists = int(ivf.nlist)
        return "nprobe", 1, min(lists, max(64, lists // (2 if kinds.fast_scan(ivf) else 4)))
    if kinds.hnsw_of(index) is not None:
        return "ef_search", 16, 4096
    return None, 0, 0


def set_breadth(index, setting: str | None, breadth: int) -> None:
    if setting == "nprobe":
        kinds.set_search_breadth(index, breadth, None)
    elif setting == "ef_search":
        kinds.set_search_breadth(index, None, breadth)


def aimed(setting: str | None, target: float) -> float:
    """The recall on the held-out queries that a target asks for: 1 - MISS_SHARE (1 - target) of the structure
    searched, since they miss less than real queries where real ones miss most (inverted lists; a graph at narrow
    breadths; module doc); the target itself where search has no breadth (flat: exact)."""
    return 1 - (1 - target) * MISS_SHARE[setting] if setting in MISS_SHARE else target


# --- exact truth and recall --------------------------------------------------------------------------------------


def exact_top(queries: np.ndarray, chunks: Chunks, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(cosines, rows) of the `depth` nearest live rows of each query, exactly, a block of rows at a time."""
    import faiss

    best_scores = np.full((len(queries), depth), -np.inf, dtype=np.float32)
    best_rows = np.full((len(queries), depth), -1, dtype=np.int64)
    for rows, block in chunks():
        flat = faiss.IndexFlatIP(block.shape[1])
        flat.add(np.ascontiguousarray(block, dtype=np.float32))
        scores, found = flat.search(queries, min(depth, len(block)))
        found_rows = np.where(found >= 0, rows[np.maximum(found, 0)], -1)
        scores = np.concatenate([best_scores, scores], axis=1)
        merged = np.concatenate([best_rows, found_rows], axis=1)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
        best_scores, best_rows = np.take_along_axis(scores, order, 1), np.take_along_axis(merged, order, 1)
    return best_scores, best_rows


def without_self(rows: np.ndarray, own: np.ndarray, k: int) -> np.ndarray:
    """Each row of `rows` with the query's own row left out, cut to k (the last one dropped where it is absent)."""
    out = np.empty((len(rows), k), dtype=rows.dtype)
    for n, (found, me) in enumerate(zip(rows, own)):
        kept = found[found != me]
        out[n] = kept[:k] if len(kept) >= k else np.pad(kept, (0, k - len(kept)), constant_values=-1)
    return out


@dataclasses.dataclass
class Sample:
    """The held-out queries: their rows, unit vectors, the exact k-th and first cosine of each (own row left
    out)."""

    rows: np.ndarray
    queries: np.ndarray
    kth: np.ndarray
    k: int
    first: np.ndarray

    def recall(self, found: np.ndarray, vectors: Callable[[np.ndarray], np.ndarray]) -> tuple[float, float]:
        """(recall@k, nearest) of `found` (k + 1 rows a query, as the index answered), ties counted as hits:
        nearest, the share of queries whose exact nearest row is among the k (--spelling's breadth: module doc)."""
        found = without_self(found, self.rows, self.k)
        valid = found >= 0
        exact = np.zeros(found.shape, dtype=np.float32)
        if valid.any():
            exact[valid] = np.einsum(
                "nd,nd->n", vectors(found[valid]), np.repeat(self.queries, valid.sum(axis=1), axis=0)
            )
        hits = valid & (exact >= self.kth[:, None] - TIE)
        nearest = (valid & (exact >= self.first[:, None] - TIE)).any(axis=1)
        return float(hits.sum() / (len(found) * self.k)), float(nearest.mean())


def held_out(live: np.ndarray, seed: int, vectors: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """SAMPLE seeded query vectors from the live rows: each unit(x + NOISE r), a drawn row x moved by a random unit
    direction r, so that its nearest rows are as far as a sentence from outside the corpus finds its own (cosine
    about 0.5). A row itself is too easy a query: a corpus of overlapping windows or near-duplicate sentences holds
    its near-copies, which text from outside the corpus has not (issue 36)."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(live, size=min(SAMPLE, len(live)), replace=False))
    drawn = vectors(rows)
    directions = unit_rows(rng.standard_normal(drawn.shape).astype(np.float32))
    return np.ascontiguousarray(unit_rows(drawn + NOISE * directions), dtype=np.float32)


def draw(live: np.ndarray, seed: int, vectors: Callable[[np.ndarray], np.ndarray], chunks: Chunks) -> Sample | None:
    """The held-out queries with their exact truth; None when too few rows to measure."""
    if len(live) < 2:
        return None
    k = min(K, len(live) - 1)
    queries = held_out(live, seed, vectors)
    scores, _ = exact_top(queries, chunks, k)
    own = np.full(len(queries), -1, dtype=np.int64)
    return Sample(own, queries, scores[:, k - 1].copy(), k, scores[:, 0].copy())


# --- the ladder ----------------------------------------------------------------------------------------------------


def climb(measure: Callable[[int], float], first: int, last: int, target: float, curve: dict[int, float]) -> int:
    """The cheapest breadth in first..last whose measured recall meets `target` (else the widest measured):
    doubling from `first` until CURVE_UP_TO (or a plateau, or `last`), then bisecting below the first that met
    it. Every measurement goes into `curve`."""
    breadth = first
    while True:
        if breadth not in curve:
            curve[breadth] = measure(breadth)
        below = [curve[b] for b in curve if b < breadth]
        flat = below and curve[breadth] - max(below) < PLATEAU  # wider no longer finds more
        if curve[breadth] >= max(target, CURVE_UP_TO) or breadth >= last or flat:
            break
        breadth = min(last, breadth * 2)
    meeting = sorted(b for b in curve if curve[b] >= target)
    if not meeting:
        return max(curve, key=lambda b: (curve[b], -b))
    high = meeting[0]
    low = max((b for b in curve if b < high), default=None)
    while low is not None and high - low > max(1, low // 8):
        middle = (low + high) // 2
        curve[middle] = measure(middle)
        low, high = (low, middle) if curve[middle] >= target else (middle, high)
    return min(b for b in curve if curve[b] >= target)


def measure_index(
    view: VectorIndex,
    sample: Sample,
    vectors: Callable[[np.ndarray], np.ndarray],
    target: float,
    fixed: int | None,
    previous: dict | None = None,
    warn: bool = True,
) -> dict:
    """Measure `view` on `sample` and set its breadth: the settings to merge into sembed.json's `settings`.
    `fixed`: a breadth the user chose (--nprobe), measured but not tuned; `previous`: the recall settings of an
    earlier measurement, whose breadth is tried first (an update); `warn`: warn where the target was not met."""
    started = time.perf_counter()
    setting, first, last = parameter(view.index)
    if setting == "ef_search" and view.vectors is not None:  # a re-ranked graph searches at least this wide
        first = max(first, kinds.RERANK_FACTOR * (sample.k + 1))

    nearest: dict[tuple[int, int], float] = {}  # (re-rank factor, breadth): the nearest row's share (--spelling)

    def measure(breadth: int) -> float:
        set_breadth(view.index, setting, breadth)
        found, nearest[view.rerank_factor, breadth] = sample.recall(answers(view, sample), vectors)
        return found

    goal = aimed(setting, target)
    curve: dict[int, float] = {}
    depths: list[dict] = []  # the re-rank depths tried (cheapest_depth)
    deepens = setting == "nprobe" and view.vectors is not None  # a second breadth: the re-rank depth (module doc)
    if deepens:
        rerank_at(view, int((previous or {}).get("rerank_factor", kinds.RERANK_FACTOR)))
    if setting is None:
        chosen, curve[0] = 0, measure(0)
    elif fixed is not None:
        chosen, curve[fixed] = fixed, measure(fixed)
    else:
        chosen = 0
        if previous is not None and previous.get("breadth"):
            chosen = int(previous["breadth"])
            curve[chosen] = measure(chosen)
            old = {int(b): r for b, r in previous.get("curve", []) if int(b) > chosen}
            if curve[chosen] >= aimed(setting, previous.get("target", target)):  # still met: wider points kept
                curve.update(old)
                factor = view.rerank_factor
                nearest.update({(factor, int(b)): r for b, r in previous.get("nearest", []) if int(b) > chosen})
            else:
                chosen = 0
        if not chosen and deepens:
            chosen, curve, depths = cheapest_depth(view, sample, measure, first, last, goal)
        elif not chosen:
            chosen = climb(measure, first, last, goal, curve)
    set_breadth(view.index, setting, chosen)
    reached = curve[chosen]
    if reached < goal and warn:
        widest = f" at {NAMES[setting]} {chosen}, the widest measured" if setting else ""
        margin = f"; aimed at {goal:.4g}" if goal != target else ""
        log.warning(
            f"recall@{sample.k} {reached:.3f}{widest} is under the target {target} (--recall{margin}) for this index "
            "type: a type that keeps more (--type hnsw, ivf or flat) or a lower --recall meets it"
        )
    recall = {
        "target": target,
        "aimed": round(goal, 4),
        "measured": round(reached, 4),
        "k": sample.k,
        "queries": len(sample.rows),
        "parameter": setting,
        "breadth": chosen if setting else None,
        "curve": [[b, round(r, 4)] for b, r in sorted(curve.items())] if setting else [],
        "nearest": [[b, round(nearest[key], 4)] for b in sorted(curve) if (key := (view.rerank_factor, b)) in nearest]
        if setting
        else [],
        "met": reached >= goal,
        "seconds": round(time.perf_counter() - started, 1),  # the searches of the ladder (the truth not counted)
        "method": f"queries unit(x + {NOISE} r), a drawn row and a random direction, against exact search, ties hits",
    }
    depth = {"rerank_factor": view.rerank_factor} if deepens else {}
    tried = {"depths": depths} if depths else {}
    return {"recall": recall | depth | tried, **({setting: chosen} if setting else {}), **depth}


def cheapest_depth(
    view: VectorIndex, sample: Sample, measure: Callable[[int], float], first: int, last: int, goal: float
) -> tuple[int, dict[int, float], list[dict]]:
    """(nprobe, its curve, each depth tried) of the re-rank depth that meets `goal` in the least time, left set on
    `view`: the nprobe climb at each depth of RERANK_FACTORS in turn, deeper while a depth is unmet, or met at
    DEEPER_LISTS of the nprobe of the one before or less and, timed against it, no slower (re-ranking 3x the
    candidates can cost less than probing more lists: at 10M real queries found more at depth 300 and nprobe 256
    than at 100 and 640, faster; module doc)."""
    met: tuple[int, int, dict[int, float]] | None = None  # the depth kept: (factor, nprobe, curve)
    unmet: tuple[int, int, dict[int, float]] = (0, 0, {})  # the deepest that did not meet it
    tried: list[dict] = []  # what sembed.json keeps of each: its depth, nprobe, recall (and seconds, where raced)
    for factor in RERANK_FACTORS:
        widest = last if met is None else int(DEEPER_LISTS * met[1])  # deeper re-ranks cost more a list probed
        if widest < first:
            break
        rerank_at(view, factor)
        curve: dict[int, float] = {}
        chosen = climb(measure, first, widest, goal, curve)
        tried.append({"rerank_factor": factor, "breadth": chosen, "measured": round(curve[chosen], 4)})
        if curve[chosen] < goal:
            if met is not None:
                break
            unmet = (factor, chosen, curve)
            continue
        if met is not None:
            shallower, deeper = search_seconds(view, sample, [met[:2], (factor, chosen)])
            tried[-1].update(seconds=round(deeper, 3), shallower_seconds=round(shallower, 3))
            if deeper > shallower:
                break
        met = (factor, chosen, curve)
    factor, chosen, curve = met if met is not None else unmet
    rerank_at(view, factor)
    return chosen, curve, tried


def answers(view: VectorIndex, sample: Sample) -> np.ndarray:
    """The rows `view` answers for the sample's queries (k + 1 each: the own row may be one), a batch of queries at
    a time whose re-ranked candidates fit RERANK_BYTES: all 1,000 at once re-ranking 1,000 deep held 1.1 GB of
    float32 rows at 10M, and the build's peak rose from 1.8 to 3.4 GB."""
    k, queries = sample.k + 1, sample.queries
    step = len(queries)
    if view.vectors is not None:
        step = max(1, RERANK_BYTES // (k * view.rerank_factor * queries.shape[1] * 4))
    return np.concatenate([view.search(queries[at : at + step], k)[1] for at in range(0, len(queries), step)])


def search_seconds(view: VectorIndex, sample: Sample, settings: list[tuple[int, int]]) -> list[float]:
    """The least of three timings of the sample's search at each (re-rank factor, nprobe) of `settings`, timed in
    turn so that a shared machine's drift falls on each alike (timed apart, a depth climbed tens of seconds after
    the other, the same two settings at 10M measured 0.75-0.97 of each other). Each search's candidates' kept
    vectors are read beforehand into RAM (`_Gathered`), as a searched index finds them in the page cache: the
    measurement's row-by-row reads (VectorFile.rows, about 1.5 us a row) would charge a deeper re-rank three times
    what a mapped search pays (at 10M they made depth 300 at nprobe 480 time 1.6x depth 100 at 704)."""
    assert view.vectors is not None
    searches = []
    for factor, nprobe in settings:
        rerank_at(view, factor)
        set_breadth(view.index, "nprobe", nprobe)
        candidates = coarse.search(view.index, sample.queries, (sample.k + 1) * factor)[1]
        searches.append(dataclasses.replace(view, vectors=cast(Any, _Gathered(view.vectors, candidates))))
    timings: list[list[float]] = [[] for _ in settings]
    for _ in range(3):
        for (factor, nprobe), timed, spent in zip(settings, searches, timings):
            rerank_at(view, factor)  # the metadata `timed` shares with `view`
            set_breadth(view.index, "nprobe", nprobe)
            started = time.perf_counter()
            answers(timed, sample)
            spent.append(time.perf_counter() - started)
    return [min(spent) for spent in timings]


class _Gathered:
    """The kept vectors of a search's candidate rows, read once and held in RAM as the file holds them (what
    `search_seconds` times with; decoded as a mapped read decodes them)."""

    def __init__(self, kept: VectorFile, candidates: np.ndarray):
        self.row_numbers = np.unique(candidates[candidates >= 0])
        parts = np.array_split(self.row_numbers, max(1, len(self.row_numbers) // BLOCK))  # a block at a time
        self.vectors = np.concatenate([kept.stored(part) for part in parts])

    def exact_index(self, rows: int) -> None:
        """None: re-ranked in numpy (VectorIndex.rerank), as the measurement's `answers` are. FAISS's refine, which
        a search uses, reads rows by their row number: the candidates' rows placed there (an array the size of the
        file, untouched pages never allocated) would hold a 4 KB page for each 512-768-byte row."""
        return None

    def read(self, rows: np.ndarray, committed: int) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.row_numbers, rows), len(self.row_numbers) - 1)  # others: masked after
        return as_float32(np.take(self.vectors, at, axis=0))


class _Remembered:
    """The kept vectors a measurement re-ranks with, read row by row (VectorFile.unmapped) and each row read once:
    held, as the file holds them, while the rows held fit REMEMBERED_BYTES (the first ones read; the rest read each
    time). A climb searches the same 1,000 queries at a dozen breadths and three depths, whose candidates are
    mostly the same rows: at 953,433 static windows (IVF4096_HNSW32,PQ128x4fs, float16 kept) the measurement read
    rows 23.6M times, two thirds of its 66.5 CPU-s at 1.5-2.5 us a read; holding 524,288 of them it reads 3.6M and
    takes 42.9, the same curve."""

    def __init__(self, kept: VectorFile, rows: int, budget: int | None = None):
        self.kept, self.dtype, self.dim = kept, kept.dtype, kept.dim
        self.at = np.full(rows, -1, dtype=np.int32)  # row -> its place in `held` (-1: not held)
        room = (budget if budget is not None else REMEMBERED_BYTES) // (kept.dim * kept.dtype.itemsize)
        self.held = np.empty((max(1, room), kept.dim), dtype=kept.dtype)
        self.count = 0
        self.lock = threading.Lock()  # VectorIndex.rerank reads from its blocks' threads at once

    def stored(self, rows: np.ndarray) -> np.ndarray:
        """`rows` as the file holds them, in their order: the held ones from RAM, the others read (and held while
        there is room)."""
        with self.lock:
            return self._stored(np.asarray(rows, dtype=np.int64))

    def _stored(self, rows: np.ndarray) -> np.ndarray:
        at = self.at[rows]
        missing = np.unique(rows[at < 0])
        if not len(missing):
            return self.held[at]
        read = self.kept.stored(missing)
        room = min(len(missing), len(self.held) - self.count)
        self.held[self.count : self.count + room] = read[:room]
        self.at[missing[:room]] = np.arange(self.count, self.count + room, dtype=np.int32)
        self.count += room
        out = np.empty((len(rows), self.dim), dtype=self.dtype)
        known = at >= 0
        out[known] = self.held[at[known]]
        out[~known] = read[np.searchsorted(missing, rows[~known])]
        return out

    def rows(self, rows: np.ndarray) -> np.ndarray:
        return as_float32(self.stored(rows))

    def read(self, rows: np.ndarray, committed: int) -> np.ndarray:
        return self.rows(rows)

    def exact_index(self, rows: int) -> None:
        """None: re-ranked in numpy (VectorIndex.rerank), as from the file row by row."""
        return None

    def __getattr__(self, name: str) -> Any:
        """The rest as the file (`matrix` for an index's few fresh rows, `base`, ...)."""
        return getattr(self.kept, name)


def remembered(kept: VectorFile | None, rows: int) -> Any:
    """`kept` read row by row and remembered (`_Remembered`), as a VectorIndex's vectors; None without."""
    return _Remembered(kept.unmapped(), rows) if kept is not None else None


def rerank_at(view: VectorIndex, factor: int) -> None:
    """Search `view` re-ranking `factor` x k candidates (its settings.rerank_factor, which VectorIndex.search
    reads)."""
    view.metadata.setdefault("settings", {})["rerank_factor"] = factor


# --- at build, at update ----------------------------------------------------------------------------------------


class _Rows:
    """What VectorIndex.search reads of a store, for an index still being built."""

    def __init__(self, count: int):
        self.next_row = self.count = count

    def removed(self) -> list[int]:
        return []


def view_of(index, raw: VectorFile, kept: VectorFile | None, count: int) -> VectorIndex:
    """A VectorIndex over `index` still being built, of `count` rows in `raw`, re-ranked from `kept` (lossy types)."""
    from .directory import VectorIndex

    return VectorIndex(raw.path.parent, index, cast(Any, _Rows(count)), {"dimension": raw.dim}, kept)


def measure_build(
    index, raw: VectorFile, kept: VectorFile | None, count: int, settings: IndexSettings, warn: bool = True
) -> dict:
    """sembed.json settings for a new index of `count` rows: raw holds their float32 unit vectors, kept the
    vectors search re-ranks with (lossy types); the target and seed are `settings`' (--nprobe: measured, not
    tuned)."""
    view = view_of(index, raw, remembered(kept, count), count)

    def vectors(rows: np.ndarray) -> np.ndarray:
        return raw.rows(np.asarray(rows, dtype=np.int64))

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for first, block in raw.chunks(count, size=BLOCK):
            yield np.arange(first, first + len(block), dtype=np.int64), block

    sample = draw(np.arange(count, dtype=np.int64), settings.seed, vectors, chunks)
    if sample is None or settings.recall is None:
        return {}
    fixed = settings.nprobe if parameter(index)[0] == "nprobe" else None
    log.info(f"measuring recall@{sample.k} of {len(sample.rows)} queries made from the index's vectors (exact search)")
    measured = measure_index(view, sample, vectors, settings.recall, fixed, warn=warn)
    measured["recall"].update(when="build", fixed=fixed is not None)
    return measured


def drawn_from(loaded: VectorIndex, seed: int) -> tuple[VectorIndex, Callable[[np.ndarray], np.ndarray], Sample | None]:
    """(view, vectors, sample) to measure the index `loaded` with: the view of its store's removed rows, reading the
    kept vectors row by row as at build (VectorFile.unmapped); the held-out queries' exact truth over every live row,
    read through the map in order and let go a block at a time."""
    store = loaded.store
    kept = remembered(loaded.vectors, loaded.row_count)
    view = dataclasses.replace(loaded, removed=np.asarray(store.removed(), dtype=np.int64), vectors=kept)
    live = np.fromiter(cast(Any, store).row_numbers(), dtype=np.int64)

    def vectors(rows: np.ndarray) -> np.ndarray:
        return view.vectors_of(np.asarray(rows, dtype=np.int64))

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(live), BLOCK):
            rows = live[start : start + BLOCK]
            yield rows, loaded.vectors_of(rows)
            if loaded.vectors is not None:
                loaded.vectors.let_go()

    return view, vectors, draw(live, seed, vectors, chunks)


def measure_update(loaded: VectorIndex, settings: dict, seed: int, changed: int, afresh: bool = False) -> dict:
    """sembed.json settings for the index `loaded` after an update of `changed` rows (added, replaced or removed),
    inside its transaction: measured again at its breadth, and re-tuned where it fell under its target, once the
    rows changed since the last measurement reach REMEASURE_SHARE of the index (every update of a small one); till
    then they are counted. An index built without a measurement stays without. `afresh` (a merge: a new index
    whose pieces were tuned to their own sizes): tuned from the start, as a build is."""
    previous = settings.get("recall")
    if not isinstance(previous, dict):
        return {}
    pending = int(previous.get("changed_since", 0)) + changed
    if not afresh and loaded.count >= REMEASURE_ALWAYS_BELOW and pending < REMEASURE_SHARE * loaded.count:
        return {"recall": {**previous, "changed_since": pending}}
    view, vectors, sample = drawn_from(loaded, seed)
    if sample is None:
        return {}
    fixed = previous.get("breadth") if previous.get("fixed") else None
    target = float(previous.get("target", DEFAULT_TARGET))
    measured = measure_index(view, sample, vectors, target, fixed, None if afresh else previous)
    measured["recall"].update(when="merge" if afresh else "update", fixed=bool(previous.get("fixed")), changed_since=0)
    return measured


# --- at search ------------------------------------------------------------------------------------------------------


def describe(settings: dict) -> str:
    """`search -v`'s line: the measured recall, its breadth and target (or that none was measured)."""
    recall = settings.get("recall")
    if not isinstance(recall, dict):
        return "recall not measured (an index built before sembed measured it: rebuild, or --update, to measure it)"
    setting = recall.get("parameter")
    breadth = f"{NAMES.get(setting, setting)} {recall.get('breadth')}, " if setting else ""
    if "rerank_factor" in recall:
        breadth += f"re-rank depth {recall['rerank_factor'] * recall.get('k', K)}, "
    goal = recall.get("aimed", recall.get("target"))
    margin = f", aimed at {goal}" if goal != recall.get("target") else ""
    return (
        f"recall@{recall.get('k', K)} {recall.get('measured', 0):.3f} measured at {recall.get('when', 'build')} "
        f"({breadth}target {recall.get('target')}{margin})"
    )


def apply_target(index: VectorIndex, target: float | None, spelling: bool = False) -> str | None:
    """Set the breadth `search --recall R` asks for: the cheapest of the index's measured curve that reached R (the
    widest measured, with a warning, where none did). `spelling` (`search --spelling`, R the index's own target
    where not given): of its `nearest` curve, the queries whose nearest row was among the k found (module doc); an
    index measured before that curve (2026-11-29) is searched as without --spelling. Returns `search -v`'s line for
    a breadth --spelling chose."""
    recall = index.settings.get("recall")
    if not isinstance(recall, dict):
        if target is not None:
            log.warning(
                f"--recall {target}: the index at '{index.path}' has no measured recall, so it is searched at its "
                "own breadth (rebuild it, or run sembed index --update on it, to measure one)"
            )
        return None
    of_nearest = spelling and bool(recall.get("nearest"))
    if target is None and not of_nearest:
        return None  # the breadth the build chose
    asked = f"--recall {target}" if target is not None else f"--spelling (the index's target {recall.get('target')})"
    target = float(recall.get("target", DEFAULT_TARGET)) if target is None else target
    setting = recall.get("parameter")
    curve = [(int(b), float(r)) for b, r in recall.get("nearest" if of_nearest else "curve", [])]
    if setting is None or not curve:
        if float(recall.get("measured", 1)) < target:
            log.warning(f"--recall {target}: this index measured {recall.get('measured')} and has no breadth to widen")
        return None
    goal = aimed(setting, target)
    meeting = [b for b, r in curve if r >= goal]
    breadth = min(meeting) if meeting else max(curve, key=lambda point: (point[1], -point[0]))[0]
    reached = dict(curve)[breadth]
    if not meeting:
        measured = "its held-out queries' nearest row found for" if of_nearest else "the index measured"
        log.warning(
            f"{asked}: {measured} at most {reached:.4g} (at {NAMES[setting]} {breadth}) where "
            f"{goal:.4g} on its held-out queries stands for {target} on real ones; searching at that",
        )
    set_breadth(index.index, setting, breadth)
    if not of_nearest:
        return None
    return (
        f"--spelling searches at {NAMES[setting]} {breadth}: the nearest row among the first {recall.get('k', K)} "
        f"for {reached:.3f} of the held-out queries (aimed at {goal:.4g} for {target})"
    )
