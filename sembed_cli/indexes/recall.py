"""Recall that is measured, not assumed: an index's search breadth tuned to the recall@10 a user asks for.

At build (`sembed index --recall R`, default 0.95) SAMPLE seeded queries made from the corpus's own vectors are
searched through the index's own search path (`VectorIndex.search`: the graph's removed rows skipped, lossy codes
re-ranked from the kept vectors), and each answer is compared with the exact top-k over every live row (FAISS
IndexFlatIP over the unit vectors, a block of rows at a time); ties count as hits (a returned row whose exact
cosine reaches the k-th exact cosine). A query is not a row itself but unit(x + 0.6 y) of two drawn rows: rows
as queries (own row left out) measured 0.950 at efSearch 26 on 953,433 MiniLM vectors of overlapping windows,
where STS-B/SICK sentences found 0.760 (their near-copies make rows easy); blends of 0.5 / 0.6 / 0.7 bracket
the real queries' curve at the breadths that give 0.95 on a graph, the 0.6 on the safe side there (at efSearch
256 they miss 0.049, the real queries 0.026).

Inverted lists are the other way round: there the blended queries miss only 0.55-0.72 of what the real queries
miss (ivfpq, IVF4096_HNSW32,PQ96 re-ranked: 0.057 vs 0.079 at nprobe 256, 0.027 vs 0.044 at 512, 0.011 vs 0.020
at 1,024), so --recall 0.95 chose nprobe 320, where real queries found 0.933. A query made of corpus rows sits
where the cells were trained, near the centroids of its neighbours' cells; a sentence from outside the corpus
falls between cells, and its neighbours' cells rank lower among its centroids. Queries further from the corpus
do not close the gap: blends of four rows, unit(x + y + z + w), missed 0.064 / 0.024 at nprobe 256 / 512, and a
row with a random direction of 1.6 times its length added, whose nearest row is as far as a real query's
(cosine 0.53), 0.066 / 0.034 (500 queries each; real 0.076 / 0.042). At 10M (11.3M static
window vectors, IVF16384_HNSW32,PQ128x4fs) the share was lower still: aimed at 0.975, the blended queries found
0.9755 at nprobe 416 and real ones 0.947 (0.46). So on inverted lists the ladder aims at missing IVF_MISS_SHARE
of what the target allows (`aimed`: 0.98 for 0.95), a margin measured on these two real sets and kept on the safe
side of both (bench/recall_calibration.py records proxy against real for both types).
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
the deeper depth is kept when it meets the target at half the nprobe or less and its search, timed on the sample's
queries (best of three), takes at most DEEPER_GAIN of the shallower one's (`cheapest_depth`). The depth chosen
goes into sembed.json (`settings.rerank_factor`), where search reads it, and `search -v` prints it. Like `--type
auto`'s choice, the depth is the machine's when two are near: the recall of each is deterministic, the timing
is not.

The method is the one ANN benchmarks use (ann-benchmarks, big-ann-benchmarks: recall@k against exact search,
ties counted), with queries made from the corpus itself, since a build has no others.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import kinds
from .entries import unit_rows

if TYPE_CHECKING:
    from .directory import VectorIndex
    from .staging import IndexSettings
    from .vector_file import VectorFile

log = logging.getLogger(__name__)

DEFAULT_TARGET = 0.95
SAMPLE = 1_000  # queries drawn from the corpus: the recall's standard error is about 0.005 at 0.95
BLEND = 0.6  # a query is unit(x + BLEND y) of two drawn rows: calibrated against real queries (held_out)
K = 10
IVF_MISS_SHARE = 0.4  # inverted lists aim to miss this share of what the target allows (aimed(), module doc)
CURVE_UP_TO = 0.99  # the ladder climbs this far (or until recall stops growing), so search --recall can ask more
PLATEAU = 0.0005  # a doubling that gains less than this ends the climb
TIE = 1e-5  # cosines this close to the k-th exact one count as ties (hits)
BLOCK = 100_000  # rows a time for the exact search
REMEASURE_SHARE = 0.01  # an update measures again once this share of the rows changed since the last measurement
REMEASURE_ALWAYS_BELOW = 100_000  # rows under which every update measures again (a second or less)
NAMES = {"ef_search": "efSearch", "nprobe": "nprobe"}
RERANK_FACTORS = (kinds.RERANK_FACTOR, 3 * kinds.RERANK_FACTOR, 10 * kinds.RERANK_FACTOR)  # depths x k, in turn
DEEPER_GAIN = 0.8  # a deeper re-rank that meets the target is kept when its search takes at most this share

Chunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]  # (row numbers, float32 unit vectors) per block


# --- what the search widens ------------------------------------------------------------------------------------


def parameter(index) -> tuple[str | None, int, int]:
    """(setting, first rung, last rung) of the breadth the ladder climbs: nprobe of inverted lists, efSearch of a
    graph, or (None, 0, 0) where search has no breadth (flat: exact)."""
    ivf = kinds.ivf_of(index)
    if ivf is not None:  # a quarter of the lists at most: wider, a flat scan costs less
        return "nprobe", 1, min(int(ivf.nlist), max(64, int(ivf.nlist) // 4))
    if kinds.hnsw_of(index) is not None:
        return "ef_search", 16, 4096
    return None, 0, 0


def set_breadth(index, setting: str | None, breadth: int) -> None:
    if setting == "nprobe":
        kinds.set_search_breadth(index, breadth, None)
    elif setting == "ef_search":
        kinds.set_search_breadth(index, None, breadth)


def aimed(setting: str | None, target: float) -> float:
    """The recall on the blended queries that a target asks for: on inverted lists (nprobe) 1 - IVF_MISS_SHARE
    (1 - target), since there the blended queries miss 0.55-0.72 of what real queries miss (module doc); on a
    graph, where they miss more than real queries, the target itself."""
    return 1 - (1 - target) * IVF_MISS_SHARE if setting == "nprobe" else target


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
    """The held-out queries: their rows, unit vectors and the exact k-th cosine of each (own row left out)."""

    rows: np.ndarray
    queries: np.ndarray
    kth: np.ndarray
    k: int

    def recall(self, found: np.ndarray, vectors: Callable[[np.ndarray], np.ndarray]) -> float:
        """recall@k of `found` (k + 1 rows a query, as the index answered), ties counted as hits."""
        found = without_self(found, self.rows, self.k)
        valid = found >= 0
        exact = np.zeros(found.shape, dtype=np.float32)
        if valid.any():
            exact[valid] = np.einsum(
                "nd,nd->n", vectors(found[valid]), np.repeat(self.queries, valid.sum(axis=1), axis=0)
            )
        hits = valid & (exact >= self.kth[:, None] - TIE)
        return float(hits.sum() / (len(found) * self.k))


def held_out(live: np.ndarray, seed: int, vectors: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """SAMPLE seeded query vectors from the live rows: each unit(x + BLEND y), a drawn row x blended with another
    drawn row y. A row itself is too easy a query: a corpus of overlapping windows or near-duplicate sentences
    holds its near-copies, which text from outside the corpus has not (issue 36)."""
    rng = np.random.default_rng(seed)
    size = min(SAMPLE, len(live))
    rows, others = rng.choice(live, size=size, replace=False), rng.choice(live, size=size, replace=True)
    return np.ascontiguousarray(unit_rows(vectors(np.sort(rows)) + BLEND * vectors(others)), dtype=np.float32)


def draw(live: np.ndarray, seed: int, vectors: Callable[[np.ndarray], np.ndarray], chunks: Chunks) -> Sample | None:
    """The held-out queries with their exact truth; None when too few rows to measure."""
    if len(live) < 2:
        return None
    k = min(K, len(live) - 1)
    queries = held_out(live, seed, vectors)
    scores, _ = exact_top(queries, chunks, k)
    return Sample(np.full(len(queries), -1, dtype=np.int64), queries, scores[:, k - 1].copy(), k)


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

    def measure(breadth: int) -> float:
        set_breadth(view.index, setting, breadth)
        return sample.recall(view.search(sample.queries, sample.k + 1)[1], vectors)

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
        margin = f"; aimed at {goal:.4g} on inverted lists" if goal != target else ""
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
        "met": reached >= goal,
        "seconds": round(time.perf_counter() - started, 1),  # the searches of the ladder (the truth not counted)
        "method": f"queries unit(x + {BLEND} y) of drawn rows against exact search, ties hits",
    }
    depth = {"rerank_factor": view.rerank_factor} if deepens else {}
    tried = {"depths": depths} if depths else {}
    return {"recall": recall | depth | tried, **({setting: chosen} if setting else {}), **depth}


def cheapest_depth(
    view: VectorIndex, sample: Sample, measure: Callable[[int], float], first: int, last: int, goal: float
) -> tuple[int, dict[int, float], list[dict]]:
    """(nprobe, its curve, each depth tried) of the re-rank depth that meets `goal` in the least time, left set on
    `view`: the nprobe climb at each depth of RERANK_FACTORS in turn, deeper while a depth is unmet, or met at
    half the nprobe of the one before or less and, timed, faster by DEEPER_GAIN (re-ranking 3x the candidates can
    cost less than probing twice the lists: at 10M real queries found more at depth 300 and nprobe 256 than at
    100 and 640, faster; module doc)."""
    met: tuple[float, int, int, dict[int, float]] | None = None  # the fastest met: (seconds, factor, nprobe, curve)
    unmet: tuple[int, int, dict[int, float]] = (0, 0, {})  # the deepest that did not: (factor, nprobe, curve)
    tried: list[dict] = []  # what sembed.json keeps of each: its depth, nprobe, recall and search seconds
    for factor in RERANK_FACTORS:
        widest = last if met is None else met[2] // 2  # past half the lists a deeper depth cannot pay
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
        seconds = tried[-1]["seconds"] = search_seconds(view, sample, chosen)
        if met is not None and seconds > DEEPER_GAIN * met[0]:
            break
        met = (seconds, factor, chosen, curve)
    factor, chosen, curve = met[1:] if met is not None else unmet
    rerank_at(view, factor)
    return chosen, curve, tried


def search_seconds(view: VectorIndex, sample: Sample, nprobe: int) -> float:
    """The least of three timings of the sample's search at `nprobe` (the view's depth)."""
    set_breadth(view.index, "nprobe", nprobe)
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        view.search(sample.queries, sample.k + 1)
        timings.append(time.perf_counter() - started)
    return min(timings)


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
    view = view_of(index, raw, kept.unmapped() if kept is not None else None, count)

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
    store = loaded.store
    kept = loaded.vectors.unmapped() if loaded.vectors is not None else None  # as at build (VectorFile.unmapped)
    view = dataclasses.replace(loaded, removed=np.asarray(store.removed(), dtype=np.int64), vectors=kept)
    live = np.fromiter(cast(Any, store).row_numbers(), dtype=np.int64)

    def vectors(rows: np.ndarray) -> np.ndarray:
        return view.vectors_of(np.asarray(rows, dtype=np.int64))

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, len(live), BLOCK):
            rows = live[start : start + BLOCK]
            yield rows, loaded.vectors_of(rows)  # every live row, in order: through the map, let go a block at a time
            if loaded.vectors is not None:
                loaded.vectors.let_go()

    sample = draw(live, seed, vectors, chunks)
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
    margin = f", aimed at {goal} on inverted lists" if goal != recall.get("target") else ""
    return (
        f"recall@{recall.get('k', K)} {recall.get('measured', 0):.3f} measured at {recall.get('when', 'build')} "
        f"({breadth}target {recall.get('target')}{margin})"
    )


def apply_target(index: VectorIndex, target: float) -> None:
    """`search --recall R`: the cheapest breadth of the index's measured curve that reached R (the widest measured,
    with a warning, where none did)."""
    recall = index.settings.get("recall")
    if not isinstance(recall, dict):
        log.warning(
            f"--recall {target}: the index at '{index.path}' has no measured recall, so it is searched at its own "
            "breadth (rebuild it, or run sembed index --update on it, to measure one)"
        )
        return
    setting, curve = recall.get("parameter"), [(int(b), float(r)) for b, r in recall.get("curve", [])]
    if setting is None or not curve:
        if float(recall.get("measured", 1)) < target:
            log.warning(f"--recall {target}: this index measured {recall.get('measured')} and has no breadth to widen")
        return
    meeting = [b for b, r in curve if r >= aimed(setting, target)]
    breadth = min(meeting) if meeting else max(curve, key=lambda point: (point[1], -point[0]))[0]
    if not meeting:
        reached = dict(curve)[breadth]
        log.warning(
            f"--recall {target}: the index measured at most {reached:.3f} (at {NAMES[setting]} {breadth}); "
            "searching at that",
        )
    set_breadth(index.index, setting, breadth)
