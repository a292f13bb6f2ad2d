"""index --recall R: recall@10 measured at build on queries made from the corpus's own vectors, the breadth tuned
to R, re-measured by --update, and search --recall / -v (sembed_cli/indexes/recall.py)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import jsonl, sembed

from sembed_cli.indexes import coarse, fresh, recall
from sembed_cli.indexes.directory import VectorIndex
from sembed_cli.indexes.entries import unit_rows

pytest.importorskip("faiss")

DIM = 32


def vectors(count: int, seed: int = 0) -> np.ndarray:
    """Clustered unit vectors: hard enough that a narrow search misses neighbours."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((count // 20, DIM))
    return unit_rows(centres[rng.integers(0, len(centres), count)] + 0.7 * rng.standard_normal((count, DIM)))


def records(matrix: np.ndarray, start: int = 0) -> str:
    return jsonl(
        *({"id": f"r{start + n}", "embedding": [round(float(x), 6) for x in row]} for n, row in enumerate(matrix))
    )


def build(tmp_path: Path, tiny_model: str, kind: str, *extra: str, count: int = 4000) -> tuple[Path, dict]:
    out = tmp_path / kind
    run = sembed("index", "-q", "-m", tiny_model, "--type", kind, "-o", str(out), *extra, input=records(vectors(count)))
    assert run.exit_code == 0, run.stderr
    return out, json.loads((out / "sembed.json").read_text())["settings"]


def exact_recall(index_dir: Path, matrix: np.ndarray, rerank_factor: int | None = None, nearest: bool = False) -> float:
    """recall@10 of the index as loaded (re-ranking `rerank_factor` x 10 candidates where given) on the queries
    recall.held_out makes from `matrix` (seed 42), by brute force; `nearest`: the share whose nearest row was found."""
    queries = recall.held_out(np.arange(len(matrix)), 42, lambda rows: matrix[rows])
    kth = np.sort(queries @ matrix.T, axis=1)[:, -1 if nearest else -10]
    with VectorIndex.load(index_dir) as index:
        if rerank_factor is not None:
            recall.rerank_at(index, rerank_factor)
            assert index.rerank_factor == rerank_factor
        found = index.search(queries, 10)[1]
    exact = np.take_along_axis(queries @ matrix.T, np.maximum(found, 0), 1)
    hits = (exact >= kth[:, None] - 1e-5) & (found >= 0)
    return float(hits.any(axis=1).mean() if nearest else hits.mean())


def test_the_ladder_finds_the_cheapest_breadth_and_keeps_the_curve():
    measured: list[int] = []

    def measure(breadth: int) -> float:
        measured.append(breadth)
        return min(1.0, 0.5 + breadth / 100)

    curve: dict[int, float] = {}
    assert recall.climb(measure, 1, 1024, 0.9, curve) == 40  # 0.5 + 40/100 = 0.9 exactly
    assert max(curve) == 64 and curve[64] == 1.0  # climbed on past the target, to CURVE_UP_TO
    assert measured[:7] == [1, 2, 4, 8, 16, 32, 64]  # doubling, then bisecting between 32 and 64
    curve = {}
    assert recall.climb(lambda b: 0.5, 1, 8, 0.9, curve) == 1  # never met: the cheapest of the best measured
    assert sorted(curve) == [1, 2]  # a doubling that finds no more ends the climb


def test_the_ladder_probes_a_quarter_of_8_bit_lists_and_half_of_4_bit_fast_scan_ones():
    import faiss

    def ladder(factory: str) -> tuple:
        return recall.parameter(faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT))

    assert ladder("IVF4096_HNSW32,PQ16") == ("nprobe", 1, 1024)
    assert ladder("IVF4096_HNSW32,PQ16x4fs") == ("nprobe", 1, 2048)  # 1M MiniLM: 0.99 needs ~1,500 (0.983 at 1,024)
    assert ladder("IVF100,PQ16x4fs") == ("nprobe", 1, 64)  # at least 64 of the lists
    assert ladder("HNSW32") == ("ef_search", 16, 4096)


def test_ties_count_as_hits_and_the_own_row_is_left_out():
    query, k = np.array([[1.0, 0.0]], dtype=np.float32), 2
    sample = recall.Sample(np.array([0]), query, np.array([0.5], np.float32), k, np.array([0.5], np.float32))
    corpus = np.array([[1, 0], [0.5, 0.866], [0.5, -0.866], [0, 1]], dtype=np.float32)
    # rows 1 and 2 tie at cosine 0.5 with the 1st and 2nd exact ones: either is a hit; row 0 is the query's own
    assert sample.recall(np.array([[0, 2, 1]]), lambda rows: corpus[rows]) == (1.0, 1.0)
    assert sample.recall(np.array([[0, 2, 3]]), lambda rows: corpus[rows]) == (0.5, 1.0)
    assert sample.recall(np.array([[2, 3, 0]]), lambda rows: corpus[rows]) == (0.5, 1.0)  # own row anywhere left out
    assert sample.recall(np.array([[0, 3, 0]]), lambda rows: corpus[rows]) == (0.0, 0.0)  # the nearest not found


def test_nearest_counts_queries_whose_nearest_row_was_found():
    """`nearest`: a query scores when its exact nearest row is anywhere in its k, not the share of the k."""
    corpus = np.array([[1, 0], [0.8, 0.6], [0.6, 0.8], [0, 1]], dtype=np.float32)
    queries = np.array([[1, 0], [0, 1]], dtype=np.float32)
    own, kth, first = np.array([-1, -1]), np.array([0.8, 0.8], np.float32), np.array([1.0, 1.0], np.float32)
    sample = recall.Sample(own, queries, kth, 2, first)
    # query 0 finds its nearest (row 0) second and misses row 1; query 1 finds row 2 but not its nearest (row 3)
    assert sample.recall(np.array([[2, 0, 3], [2, 1, 0]]), lambda rows: corpus[rows]) == (0.5, 0.5)


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "ivfpq"])
def test_build_measures_recall_and_sets_the_cheapest_breadth_that_meets_it(tiny_model, tmp_path, kind):
    out, settings = build(tmp_path, tiny_model, kind, "--recall", "0.9")
    measured = settings["recall"]
    parameter = "ef_search" if kind == "hnsw" else "nprobe"
    assert measured["parameter"] == parameter and measured["target"] == 0.9 and measured["met"]
    assert settings[parameter] == measured["breadth"] and measured["when"] == "build"
    goal = measured["aimed"]  # aimed higher than asked: the held-out queries miss less than real ones (most on lists)
    assert goal == pytest.approx(0.935 if kind != "hnsw" else 0.92) == recall.aimed(parameter, 0.9)
    curve = dict(measured["curve"])
    assert curve[measured["breadth"]] == measured["measured"] >= goal
    assert all(r < goal for b, r in curve.items() if b < measured["breadth"])  # nothing cheaper met it
    # the figure is what the index as loaded answers: checked here by brute force on the same seeded sample
    assert exact_recall(out, vectors(4000)) == pytest.approx(measured["measured"], abs=0.002)
    nearest = dict(measured["nearest"])  # --spelling's curve: measured at every breadth of the same searches
    assert sorted(nearest) == sorted(curve) and all(0 < r <= 1 for r in nearest.values())
    assert exact_recall(out, vectors(4000), nearest=True) == pytest.approx(nearest[measured["breadth"]], abs=0.002)


def test_spelling_searches_as_wide_as_finds_the_nearest_row(tiny_model, tmp_path, caplog):
    """search --spelling: the cheapest breadth whose held-out queries found their nearest row for the target's
    share, narrower than recall@10's; an index measured before that curve is searched at its own breadth."""
    matrix = vectors(4000)
    given = [{"id": f"r{n}", "text": f"name {n}", "embedding": [round(float(x), 6) for x in row]} for n, row in
             enumerate(matrix)]  # fmt: skip
    out = tmp_path / "names"
    run = sembed("index", "-q", "-m", tiny_model, "--type", "hnsw", "--recall", "0.95", "-o", str(out),
                 input=jsonl(*given))  # fmt: skip
    assert run.exit_code == 0, run.stderr
    measured = json.loads((out / "sembed.json").read_text())["settings"]["recall"]
    goal = recall.aimed("ef_search", 0.95)
    narrower = min(b for b, r in measured["nearest"] if r >= goal)
    assert narrower < measured["breadth"]  # clustered rows: the nearest is found long before the whole top 10
    with VectorIndex.load(out) as index:
        line = recall.apply_target(index, None, spelling=True)
        assert recall.kinds.hnsw_of(index.index).hnsw.efSearch == narrower
        assert line == (
            f"--spelling searches at efSearch {narrower}: the nearest row among the first 10 for "
            f"{dict(measured['nearest'])[narrower]:.3f} of the held-out queries (aimed at {goal:.4g} for 0.95)"
        )
        wider = min(b for b, r in measured["nearest"] if r >= recall.aimed("ef_search", 0.99))
        recall.apply_target(index, 0.99, spelling=True)  # --recall R: R of the same curve
        assert recall.kinds.hnsw_of(index.index).hnsw.efSearch == wider >= narrower
        assert recall.apply_target(index, None) is None  # without --spelling: the build's breadth stays
        index.settings["recall"]["target"] = 2.0  # beyond every share: the widest, with a warning naming --spelling
        with caplog.at_level("WARNING"):
            recall.apply_target(index, None, spelling=True)
        assert "--spelling (the index's target 2.0): its held-out queries' nearest row found for at most" in caplog.text
        index.settings["recall"]["target"] = 0.95
        del index.settings["recall"]["nearest"]  # measured before 2026-11-29
        index.index.hnsw.efSearch = measured["breadth"]
        assert recall.apply_target(index, None, spelling=True) is None
        assert recall.kinds.hnsw_of(index.index).hnsw.efSearch == measured["breadth"]
    run = sembed("search", "-v", "--spelling", "--index", str(out), "--query", "name 12")
    assert run.exit_code == 0, run.stderr
    assert f"--spelling searches at efSearch {narrower}:" in run.stderr
    assert json.loads(run.stdout)["neighbors"][0]["text"] == "name 12"


def test_search_verbose_prints_the_measured_recall_and_recall_asks_for_more(tiny_model, tmp_path):
    out, settings = build(tmp_path, tiny_model, "ivf", "--recall", "0.8")
    query = records(vectors(4000)[:1])
    run = sembed("search", "-v", "--index", str(out), input=query)
    breadth = settings["recall"]["breadth"]
    line = f"recall@10 {settings['recall']['measured']:.3f} measured at build (nprobe {breadth}, target 0.8, aimed"
    line += f" at {recall.aimed('nprobe', 0.8):.4g})"
    assert line in run.stderr
    wider = min(b for b, r in settings["recall"]["curve"] if r >= recall.aimed("nprobe", 0.94))
    with VectorIndex.load(out) as index:
        recall.apply_target(index, 0.94)
        assert recall.kinds.ivf_of(index.index).nprobe == wider > breadth
    run = sembed("search", "--index", str(out), "--recall", "0.999", input=query)
    assert run.exit_code == 0 and ("--recall 0.999: the index measured at most" in run.stderr) == (
        max(r for _, r in settings["recall"]["curve"]) < recall.aimed("nprobe", 0.999)
    )
    if "measured at most" in run.stderr:  # what the held-out queries had to reach, said beside what they reached
        assert f"where {recall.aimed('nprobe', 0.999):.4g} on its held-out queries stands for 0.999" in run.stderr


def test_an_index_without_a_measured_recall_says_so(tiny_model, tmp_path):
    out, settings = build(tmp_path, tiny_model, "hnsw", "--recall", "0", count=500)
    assert "recall" not in settings
    run = sembed("search", "-v", "--index", str(out), "--recall", "0.9", input=records(vectors(500)[:1]))
    assert run.exit_code == 0
    assert "recall not measured" in run.stderr and "has no measured recall" in run.stderr


def test_an_unreachable_target_warns_with_what_was_reached(tiny_model, tmp_path):
    out = tmp_path / "pq"
    run = sembed(
        "index", "-m", tiny_model, "--type", "IVF16,PQ4", "--rerank", "none", "--recall", "0.999", "-o", str(out),
        input=records(vectors(2000)),
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    measured = json.loads((out / "sembed.json").read_text())["settings"]["recall"]
    assert not measured["met"] and measured["breadth"] == 16  # all 16 lists: the codes alone cannot reach it
    warning = [line for line in run.stderr.splitlines() if "under the target 0.999" in line]
    assert len(warning) == 1 and f"recall@10 {measured['measured']:.3f} at nprobe 16" in warning[0]


def test_update_measures_again_after_the_rows_it_changed(tiny_model, tmp_path):
    out, _ = build(tmp_path, tiny_model, "hnsw", "--recall", "0.95", count=3000)
    more = vectors(1000, seed=1)
    run = sembed("index", "-q", "--update", str(out), input=records(more, start=3000))
    assert run.exit_code == 0, run.stderr
    after = json.loads((out / "sembed.json").read_text())["settings"]
    assert after["recall"]["when"] == "update" and after["recall"]["target"] == 0.95
    assert after["recall"]["measured"] >= 0.95 and after["ef_search"] == after["recall"]["breadth"]
    everything = np.concatenate([vectors(3000), more])
    assert exact_recall(out, everything) == pytest.approx(after["recall"]["measured"], abs=0.002)
    nearest = dict(after["recall"]["nearest"])  # --spelling's share, measured again with it
    assert sorted(nearest) == [b for b, _ in after["recall"]["curve"]]
    assert exact_recall(out, everything, nearest=True) == pytest.approx(nearest[after["ef_search"]], abs=0.002)


def test_a_large_index_measures_again_once_a_share_of_its_rows_changed(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(recall, "REMEASURE_ALWAYS_BELOW", 0)  # as an index of a million rows would
    monkeypatch.setattr(fresh, "SHARE", 0.0)  # rows go into the graph at once (fresh rows count once folded)
    out, settings = build(tmp_path, tiny_model, "hnsw", "--recall", "0.9", count=3000)
    more = vectors(40, seed=1)
    assert sembed("index", "-q", "--update", str(out), input=records(more[:20], start=3000)).exit_code == 0
    after = json.loads((out / "sembed.json").read_text())["settings"]["recall"]
    assert after == {**settings["recall"], "changed_since": 20}  # 20 of 3,020 rows: under 1%, counted
    assert sembed("index", "-q", "--update", str(out), input=records(more[20:], start=3020)).exit_code == 0
    after = json.loads((out / "sembed.json").read_text())["settings"]["recall"]
    assert after["when"] == "update" and after["changed_since"] == 0  # 40 of 3,040: measured again


def test_lossy_codes_under_the_target_climb_again_at_a_deeper_re_rank(tiny_model, tmp_path):
    """Codes so coarse that the first 100 candidates miss neighbours whatever the nprobe: the ladder climbs again
    re-ranking 3x and 10x as many, keeps the first depth that meets the target, and search uses it."""
    out, settings = build(tmp_path, tiny_model, "IVF16,PQ4x4fs", "--recall", "0.9")
    measured = settings["recall"]
    assert settings["rerank_factor"] == measured["rerank_factor"] in recall.RERANK_FACTORS[1:]
    assert measured["met"] and measured["measured"] >= measured["aimed"]
    run = sembed("search", "-v", "--index", str(out), input=records(vectors(4000)[:1]))
    assert f"(nprobe {measured['breadth']}, re-rank depth {measured['rerank_factor'] * 10}, target 0.9" in run.stderr
    deep = exact_recall(out, vectors(4000))  # the measurement asks k + 1 rows (a deeper re-rank by a tenth)
    assert deep == pytest.approx(measured["measured"], abs=0.01)
    assert exact_recall(out, vectors(4000), recall.RERANK_FACTORS[0]) < deep - 0.02  # the first depth, same nprobe


def test_a_narrower_nprobe_narrows_the_cell_graph_too():
    """The cell graph of IVF{K}_HNSW32 looks 2 x nprobe wide, set with nprobe and not only raised: a ladder that
    climbed to nprobe 2,048 before choosing 384 left efSearch 4,096 in a 10M index, 16x slower at every search."""
    import faiss

    index = faiss.index_factory(DIM, "IVF64_HNSW32,Flat", faiss.METRIC_INNER_PRODUCT)
    quantizer = faiss.downcast_index(recall.kinds.ivf_of(index).quantizer)
    for nprobe, ef in ((32, 64), (64, 128), (4, recall.kinds.QUANTIZER_EF_SEARCH), (48, 96)):
        recall.set_breadth(index, "nprobe", nprobe)
        assert (recall.kinds.ivf_of(index).nprobe, quantizer.hnsw.efSearch) == (nprobe, ef)


def test_the_build_measures_without_mapping_the_kept_vectors(tiny_model, tmp_path, monkeypatch):
    """A measurement's re-ranking reads a thousand queries' candidates from all over the kept vectors: through a
    map, each row brings the pages around it into the process (5.8 GB of float16 rows at 10M), so it reads row
    by row, and the measured recall is what the index as loaded gives."""
    from sembed_cli.indexes.vector_file import VectorFile

    mapped = []
    real_matrix = VectorFile.matrix
    monkeypatch.setattr(
        VectorFile,
        "matrix",
        lambda self, rows, descriptor=None: mapped.append(self.path.name) or real_matrix(self, rows, descriptor),
    )
    out, settings = build(tmp_path, tiny_model, "IVF16,PQ8", "--recall", "0.9")
    assert mapped == [] and settings["recall"]["met"]
    assert exact_recall(out, vectors(4000)) == pytest.approx(settings["recall"]["measured"], abs=0.01)
    assert "vectors.f16" in mapped  # a search maps them


@pytest.mark.parametrize(
    ("misses", "seconds", "kept", "raced"),
    [
        # 300 meets at a third of the lists, faster; 1000 does not meet it within 0.9 of 300's lists: not timed
        ({10: 1.0, 30: 0.3, 100: 0.28}, {10: 1.0, 30: 0.5, 100: 0.1}, 30, [30]),
        ({10: 1.0, 30: 0.3, 100: 0.1}, {10: 1.0, 30: 1.05, 100: 0.1}, 10, [30]),  # 300 slower
        ({10: 1.0, 30: 0.95, 100: 0.1}, {10: 1.0, 30: 0.1, 100: 0.1}, 10, []),  # 300 meets only past 0.9 of them
        ({10: 9.0, 30: 9.0, 100: 1.0}, {10: 0.1, 30: 0.1, 100: 2.0}, 100, []),  # only 1000 meets the target
    ],
)
def test_the_re_rank_depth_is_the_one_that_meets_the_target_fastest(monkeypatch, misses, seconds, kept, raced):
    """recall.cheapest_depth: a deeper re-rank is kept where it meets the target at DEEPER_LISTS (0.9) of the
    nprobe or less and its search, timed in turn with the shallower one's, is no slower. Recall at a depth: 1 -
    misses / nprobe, so 0.95 needs nprobe 20 x misses; the ladder goes up to 64."""
    from types import SimpleNamespace

    view = SimpleNamespace(metadata={})
    factor = lambda: view.metadata["settings"]["rerank_factor"]  # noqa: E731
    races = []
    monkeypatch.setattr(
        recall,
        "search_seconds",
        lambda view, sample, settings: races.append([f for f, _ in settings]) or [seconds[f] for f, _ in settings],
    )
    nprobe, curve, tried = recall.cheapest_depth(view, None, lambda b: 1 - misses[factor()] / b, 1, 64, 0.95)
    assert factor() == kept and curve[nprobe] >= 0.95 and all(r < 0.95 for b, r in curve.items() if b < nprobe)
    assert nprobe >= 20 * misses[kept] and races == [[10, deeper] for deeper in raced]
    assert [t["rerank_factor"] for t in tried if "seconds" in t] == raced and tried[-1]["rerank_factor"] >= kept


def test_the_measurement_re_ranks_a_batch_of_queries_at_a_time(tiny_model, tmp_path, monkeypatch):
    """The measurement's searches hold at most RERANK_BYTES of float32 candidate rows (all 1,000 queries re-ranked
    1,000 deep held 1.1 GB at 10M) and find what one search of all the queries finds."""
    _, whole = build(tmp_path / "whole", tiny_model, "IVF16,PQ8", "--recall", "0.9", "--nprobe", "4")
    batches: list[int] = []
    search = VectorIndex.search
    monkeypatch.setattr(
        VectorIndex,
        "search",
        lambda self, queries, k, **options: batches.append(len(queries)) or search(self, queries, k, **options),
    )
    monkeypatch.setattr(recall, "RERANK_BYTES", 11 * 10 * DIM * 4 * 64)  # 64 queries re-ranked 100 deep
    _, batched = build(tmp_path / "batched", tiny_model, "IVF16,PQ8", "--recall", "0.9", "--nprobe", "4")
    assert batches == [64] * 15 + [40]  # the 1,000 queries, 64 at a time
    assert batched["recall"]["curve"] == whole["recall"]["curve"] and batched["recall"]["measured"] > 0.5


def test_the_depth_race_times_searches_of_the_candidates_read_beforehand(tiny_model, tmp_path):
    """recall.search_seconds times each (depth, nprobe) with the candidates' kept vectors read into RAM first,
    re-ranked in numpy (_Gathered gives FAISS's refine no index): the answers are the index's own."""
    out, _ = build(tmp_path, tiny_model, "IVF16,PQ8", "--recall", "0.9", "--nprobe", "4")
    with VectorIndex.load(out) as index:
        assert index.vectors is not None
        queries = index.vectors_of(np.arange(0, 400, 10)) + 0.01
        zeros = np.zeros(40, dtype=np.float32)
        sample = recall.Sample(np.arange(40), unit_rows(queries), zeros, 10, zeros)
        timings = recall.search_seconds(index, sample, [(10, 4), (30, 8)])
        assert len(timings) == 2 and all(0 < seconds < 5 for seconds in timings)
        candidates = coarse.search(index.index, sample.queries, 11 * 30)[1]
        gathered = recall._Gathered(index.vectors, candidates)
        assert gathered.exact_index(index.row_count) is None
        raced = dataclasses.replace(index, vectors=gathered).search(sample.queries, 11)
        searched = index.search(sample.queries, 11)
    assert np.array_equal(raced[1], searched[1]) and raced[0] == pytest.approx(searched[0], abs=1e-6)


def test_the_measurement_reads_a_kept_row_once_while_the_rows_read_fit_its_budget(tmp_path):
    """recall._Remembered: a climb re-ranks mostly the same candidates at each breadth, so the kept rows read are
    held (as stored) up to a budget and read once; past it the rest are read each time; either way every read
    gives the file's rows, in the order asked."""
    from sembed_cli.indexes.vector_file import VectorFile

    rng = np.random.default_rng(4)
    file = VectorFile(tmp_path / "v.f16", 8, "float16")
    file.append(unit_rows(rng.standard_normal((100, 8)).astype(np.float32)), 0)
    kept = file.unmapped()
    reads: list[int] = []
    stored = kept.stored
    kept.stored = lambda rows: reads.append(len(rows)) or stored(rows)  # type: ignore[method-assign]
    remembered = recall._Remembered(kept, 100, budget=40 * 8 * 2)  # room for 40 rows
    asked = [rng.integers(0, 100, 60) for _ in range(5)] + [np.arange(30), np.arange(30)]
    for rows in asked:
        assert np.array_equal(remembered.read(rows, 100), file.unmapped().rows(rows))
    assert remembered.count == 40 and reads[0] == len(np.unique(asked[0]))
    held = np.flatnonzero(remembered.at >= 0)
    before = len(reads)
    assert np.array_equal(remembered.rows(held[::-1]), file.unmapped().rows(held[::-1])) and len(reads) == before


def test_a_measurement_within_its_budget_or_past_it_finds_the_same_curve(tiny_model, tmp_path, monkeypatch):
    """The rows held (recall._Remembered) change what is read from disk, never what is measured."""
    _, held = build(tmp_path / "held", tiny_model, "IVF16,PQ8", "--recall", "0.9")
    monkeypatch.setattr(recall, "REMEMBERED_BYTES", 2 * DIM * 10)  # ten rows held: nearly all read each time
    _, read = build(tmp_path / "read", tiny_model, "IVF16,PQ8", "--recall", "0.9")
    assert read["recall"]["curve"] == held["recall"]["curve"] and read["recall"]["breadth"] == held["recall"]["breadth"]


def test_the_rows_held_are_the_files_when_read_from_threads_at_once(tmp_path):
    """VectorIndex.rerank reads a measurement's candidates from its blocks' threads at once: two reads must not
    place their rows in the same slots (at two threads the build's measurement found 0.85 where it finds 0.97)."""
    from concurrent.futures import ThreadPoolExecutor

    from sembed_cli.indexes.vector_file import VectorFile

    rng = np.random.default_rng(5)
    file = VectorFile(tmp_path / "v.f32", 256, "float32")
    file.append(unit_rows(rng.standard_normal((20_000, 256)).astype(np.float32)), 0)
    remembered = recall._Remembered(file.unmapped(), 20_000, budget=12_000 * 256 * 4)
    asked = [rng.integers(0, 20_000, 3_000) for _ in range(48)]
    with ThreadPoolExecutor(4) as pool:
        read = list(pool.map(remembered.rows, asked))
    assert all(np.array_equal(got, file.unmapped().rows(rows)) for got, rows in zip(read, asked))
    held = np.flatnonzero(remembered.at >= 0)
    assert np.array_equal(remembered.rows(held), file.unmapped().rows(held))
