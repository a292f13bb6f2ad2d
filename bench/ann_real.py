"""Approximate nearest neighbours on real text: recall@10 against batched queries/s, for sembed's index types and
the same FAISS factories built directly, plus hnswlib and usearch, in one run (issue 36).

The data (bench/real_vectors.py, runs/real/): 953,433 overlapping 12-word windows of the shared corpora (abc,
state_union, inaugural, webtext, movie_reviews; stride 3) through all-MiniLM-L6-v2 ONNX int8 (384-d), NAME.npy;
queries from outside the corpus, STS-B and SICK test sentences (the first --queries of NAME.queries.npy); truth,
the exact top-100 over all windows (NAME.truth.npy). recall@10 counts ties as hits: a returned row whose exact
cosine reaches the 10th exact cosine is a hit (as sembed's own measurement, sembed_cli/indexes/recall.py).

Each engine runs in its own process (so its peak RSS is its own), builds once and sweeps its search breadth:
- sembed: `sembed index records.jsonl --npy NAME.npy --type T` (records naming their rows, with their text as
  payload), which measures its recall on its own vectors and sets its breadth for --recall 0.95 (sembed-auto: the
  type `--type auto` measured cheapest on a sample, what each candidate measured kept in its result); then
  VectorIndex.search plus the neighbours' payloads from SQLite at each breadth of the curve it measured (which
  includes the breadths `search --recall R` picks); build CPU-seconds and peak RSS of the `sembed index` process;
- FAISS directly: the factory built from the float32 matrix in RAM (IVF cells trained on 39 a cell by the same
  two-level k-means sembed uses), re-ranked where named by FAISS's own RFlat (IndexRefineFlat over the float32
  rows, exact cosine of the top 10 k; until 2026-11-28 by numpy, 0.86x RFlat's queries/s at nprobe 512);
- hnswlib (M 16, ef_construction 100) and usearch (connectivity 16, expansion_add 128), inner product, float32.
Build CPU-seconds are the process's user + system time around the build (the matrix's loading left out); peak RSS
is the whole process's (the float32 matrix, 1.46 GB, is in it for the direct engines). Queries/s: one batch of all
queries at --threads threads (FAISS's OpenMP, hnswlib's and usearch's own threads), best of two.

    python bench/ann_real.py [--name minilm] [--queries 1000] [--threads 2] [--engines faiss-hnsw32,...] \
        [--rerank-factors 10,30,100] [--built DIR_OR_FAISS_FILE]
--name static10m: the 11,308,664 static windows (bench/real_vectors.py's 10M set, 256-d), searched mapped from disk;
its indexes are built and timed by bench/build_cost.py and searched here with --built (one engine a run).
--rerank-factors: sembed types that re-rank from kept vectors at those depths (x k; default the index's own).
Results: bench/results/ann_real_NAME.json and ann_real_NAME.png (the Pareto plot); per-engine results are kept
under --work, so a run cut short resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, log, save

REAL = Path(os.environ.get("SEMBED_REAL", "/work/main/runs/real"))
PYTHON = str(ROOT / ".venv" / "bin" / "python")
SEMBED = str(ROOT / ".venv" / "bin" / "sembed")
K = 10
EF = (16, 32, 64, 128, 256, 512, 1024)
NPROBE = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
MAPPED_FROM = 4 << 30  # bytes of vectors from which the corpus is mapped, not read into RAM (the 10M sets)

ENGINES = {
    # name: (kind, spec)
    "sembed-hnsw": ("sembed", "hnsw"),
    "faiss-HNSW32": ("faiss", "HNSW32"),
    "faiss-IVF4096-PQ96x4fs-rerank": ("faiss", "IVF4096,PQ96x4fs"),
    "faiss-IVF4096-PQ192x4fs-rerank": ("faiss", "IVF4096,PQ192x4fs"),  # d/2 codes, as auto's ivfpq-fs has them
    "sembed-ivfpq": ("sembed", "ivfpq"),
    "faiss-HNSW32-SQ8": ("faiss", "HNSW32,SQ8"),
    "hnswlib-M16": ("hnswlib", ""),
    "usearch-M16": ("usearch", ""),
    "sembed-IVF4096-PQ96x4fs": ("sembed", "IVF4096,PQ96x4fs"),
    "sembed-HNSW32-SQ8": ("sembed", "HNSW32,SQ8"),
    "faiss-IVF4096_HNSW32-PQ96-rerank": ("faiss", "IVF4096_HNSW32,PQ96"),
    "sembed-IVF4096_HNSW32-PQ192x4fs": ("sembed", "IVF4096_HNSW32,PQ192x4fs"),  # auto's ivfpq-fs at 1M
    "sembed-auto": ("sembed", "auto"),  # the type auto measured cheapest on a 50,000-row sample (indexes/auto.py)
    # 10M (--name static10m): FAISS's 4 sqrt(N) cells, 4-bit fast-scan codes (32 bytes a vector), re-ranked
    "sembed-IVF16384_HNSW32-PQ64x4fs": ("sembed", "IVF16384_HNSW32,PQ64x4fs"),
    "sembed-IVF16384_HNSW32-PQ128x4fs": ("sembed", "IVF16384_HNSW32,PQ128x4fs"),
    "faiss-IVF16384_HNSW32-PQ64x4fs-rerank": ("faiss", "IVF16384_HNSW32,PQ64x4fs"),
    "faiss-IVF16384_HNSW32-PQ128x4fs-rerank": ("faiss", "IVF16384_HNSW32,PQ128x4fs"),  # 2 dimensions a code
}


# --- data and recall ---------------------------------------------------------------------------------------------


def load_corpus(name: str) -> np.ndarray:
    """The float32 unit vectors, in RAM; mapped (read as needed) past MAPPED_FROM bytes, already unit length (a
    static model's vectors are; checked on a sample)."""
    mapped = np.load(REAL / f"{name}.npy", mmap_mode="r")
    if mapped.nbytes > MAPPED_FROM:
        norms = np.linalg.norm(np.asarray(mapped[:: max(1, len(mapped) // 10_000)], dtype=np.float32), axis=1)
        assert np.allclose(norms, 1, atol=1e-4), "a mapped corpus must hold unit vectors"
        return mapped
    corpus = np.empty(mapped.shape, dtype=np.float32)
    for start in range(0, len(mapped), 100_000):
        block = np.asarray(mapped[start : start + 100_000], dtype=np.float32)
        corpus[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return corpus


def load_queries(name: str, count: int, work: Path) -> tuple[np.ndarray, np.ndarray]:
    """The first `count` queries (unit) and their exact top 10: from NAME.truth.npy (bench/real_vectors.py), or
    computed here once (kept under --work) where that is not there."""
    queries = np.load(REAL / f"{name}.queries.npy")[:count].astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    if (REAL / f"{name}.truth.npy").exists():
        return queries, np.load(REAL / f"{name}.truth.npy")[:count]
    kept = work / f"{name}.truth{count}.npy"
    if not kept.exists():
        import faiss

        from sembed_cli.indexes.recall import exact_top

        corpus = np.load(REAL / f"{name}.npy", mmap_mode="r")

        def chunks():
            for start in range(0, len(corpus), 100_000):
                block = np.asarray(corpus[start : start + 100_000], dtype=np.float32)
                yield np.arange(start, start + len(block)), block / np.linalg.norm(block, axis=1, keepdims=True)

        faiss.omp_set_num_threads(2)
        np.save(kept, exact_top(queries, chunks, K)[1])
    return queries, np.load(kept)


class Truth:
    """recall@10 of found rows, ties counted: a row whose exact cosine reaches the query's 10th exact one is a hit."""

    def __init__(self, corpus, queries: np.ndarray, truth: np.ndarray):
        self.corpus, self.queries = corpus, queries
        self.kth = np.einsum("nd,nd->n", np.asarray(corpus[truth[:, K - 1]], dtype=np.float32), queries)

    def recall(self, found: np.ndarray) -> float:
        found = found[:, :K]
        valid = found >= 0
        exact = np.full(found.shape, -np.inf, dtype=np.float32)
        rows = found[valid]
        order = np.argsort(rows)
        vectors = np.empty((len(rows), self.queries.shape[1]), dtype=np.float32)
        vectors[order] = self.corpus[rows[order]]
        exact[valid] = np.einsum("nd,nd->n", vectors, np.repeat(self.queries, valid.sum(axis=1), axis=0))
        return float((exact >= self.kth[:, None] - 1e-5).sum() / (len(found) * K))


def rerank(corpus: np.ndarray, queries: np.ndarray, candidates: np.ndarray, k: int = K) -> np.ndarray:
    """The k best candidates of each query by exact cosine (what FAISS's RFlat / IndexRefineFlat does)."""
    safe = np.maximum(candidates, 0)
    exact = np.einsum("qkd,qd->qk", corpus[safe], queries)
    exact[candidates < 0] = -np.inf
    return np.take_along_axis(candidates, np.argsort(-exact, axis=1)[:, :k], 1)


def timed_search(search, queries: np.ndarray) -> tuple[np.ndarray, float]:
    """(found rows, queries/s): the best of two batched runs."""
    best, found = 0.0, None
    for _ in range(2):
        started = time.perf_counter()
        found = search(queries)
        best = max(best, len(queries) / (time.perf_counter() - started))
    assert found is not None
    return found, round(best, 1)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build_figures(before: float, started: float) -> dict:
    """A build's CPU and wall seconds since `before` (cpu_seconds) and `started` (perf_counter), logged."""
    build = {
        "build_cpu_seconds": round(cpu_seconds() - before, 1),
        "build_seconds": round(time.perf_counter() - started, 1),
    }
    log(f"  built in {build['build_seconds']} s ({build['build_cpu_seconds']} CPU-s)")
    return build


def peak_rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 3)


# --- engines (each in its own process) --------------------------------------------------------------------------


def run_faiss(spec: str, corpus, queries, truth: Truth, threads: int, seed: int, built: Path | None) -> dict:
    """Build the factory `spec` from the corpus in RAM, or read the index `built` (by bench/build_cost.py's raw
    child, which timed it), then sweep its breadth. Lossy codes are re-ranked by FAISS's own refine: built here,
    `spec,RFlat` (IndexRefineFlat: the float32 rows in RAM, its multithreaded exact distances; numpy's re-rank of
    the same candidates gave 0.86x its queries/s at nprobe 512, 1M); read from `built` (the 10M sets, whose float32
    rows do not fit beside it), the mapped rows re-ranked by numpy (`rerank`)."""
    import faiss

    from sembed_cli.indexes import kinds

    faiss.omp_set_num_threads(threads)
    lossy = kinds.Kind("factory", spec).lossy
    before, started = cpu_seconds(), time.perf_counter()
    if built is not None:
        index = faiss.read_index(str(built))
        build: dict = {"built_by": "bench/build_cost.py's raw FAISS child"}
        base = index
    else:
        index = faiss.index_factory(corpus.shape[1], spec + (",RFlat" if lossy else ""), faiss.METRIC_INNER_PRODUCT)
        base = faiss.downcast_index(index.base_index) if lossy else index
        if not base.is_trained:
            size = kinds.training_size(base, len(corpus))  # the sample sembed's build and build_cost.py take
            sample = corpus[np.sort(np.random.default_rng(seed).choice(len(corpus), size, replace=False))]
            kinds.train(base, sample, seed)  # IVF cells: the two-level k-means sembed uses (FAISS contrib's)
            index.is_trained = True
        if kinds.hnsw_of(base) is not None:
            log(f"  efConstruction {kinds.hnsw_of(base).hnsw.efConstruction}")
        for start in range(0, len(corpus), 100_000):
            index.add(corpus[start : start + 100_000])
        build = build_figures(before, started)
    points = []
    ivf, graph = kinds.ivf_of(base), kinds.hnsw_of(base)
    depths = (K * 10,) if lossy and ivf is not None else (0, 2 * K) if lossy else (0,)
    for breadth in NPROBE if ivf is not None else EF:
        if ivf is not None:
            kinds.set_search_breadth(base, breadth, None)
        else:
            graph.hnsw.efSearch = breadth
        for depth in depths:

            def search(q, depth=depth):
                if not depth:
                    return base.search(q, K)[1]
                if built is not None:
                    return rerank(corpus, q, base.search(q, depth)[1])
                params = faiss.IndexRefineSearchParameters(k_factor=depth // K)  # the breadth set on base above
                return index.search(q, K, params=params)[1]

            found, qps = timed_search(search, queries)
            points.append(
                {
                    "breadth": {"nprobe" if ivf is not None else "efSearch": breadth, "rerank_depth": depth},
                    "recall": round(truth.recall(found), 4),
                    "queries_per_second": qps,
                }
            )
            log(f"  {points[-1]}")
    reranked = {"rerank": "numpy, mapped float32 rows" if built else "FAISS RFlat"} if lossy else {}
    return {**build, "points": points, **reranked}


def run_hnswlib(corpus, queries, truth: Truth, threads: int, seed: int) -> dict:
    import hnswlib

    before, started = cpu_seconds(), time.perf_counter()
    index = hnswlib.Index(space="ip", dim=corpus.shape[1])
    index.init_index(max_elements=len(corpus), M=16, ef_construction=100, random_seed=seed)
    index.set_num_threads(threads)
    index.add_items(corpus, np.arange(len(corpus)))
    build = build_figures(before, started)
    points = []
    for ef in EF:
        index.set_ef(max(ef, K))
        found, qps = timed_search(lambda q: index.knn_query(q, k=K, num_threads=threads)[0].astype(np.int64), queries)
        points.append({"breadth": {"ef": ef}, "recall": round(truth.recall(found), 4), "queries_per_second": qps})
        log(f"  {points[-1]}")
    return {**build, "points": points}


def run_usearch(corpus, queries, truth: Truth, threads: int, seed: int) -> dict:
    from usearch.index import Index

    before, started = cpu_seconds(), time.perf_counter()
    index = Index(ndim=corpus.shape[1], metric="ip", dtype="f32", connectivity=16, expansion_add=128)
    index.add(np.arange(len(corpus)), corpus, threads=threads)
    build = build_figures(before, started)
    points = []
    for ef in EF:
        index.expansion_search = ef
        found, qps = timed_search(
            lambda q: np.asarray(index.search(q, K, threads=threads).keys, dtype=np.int64), queries
        )
        points.append(
            {"breadth": {"expansion_search": ef}, "recall": round(truth.recall(found), 4), "queries_per_second": qps}
        )
        log(f"  {points[-1]}")
    return {**build, "points": points}


def records_file(name: str, work: Path) -> Path:
    """The windows as records naming their rows of NAME.npy (with their text as payload), made once."""
    path = work / f"{name}.records.jsonl"
    if path.exists():
        return path
    described = REAL / f"{name}.npy.json"
    if not described.exists():
        described = REAL / f"{name}.queries.npy.json"  # the same model: written first
    identity = json.loads(described.read_text())["embedding_model"]
    texts = REAL / ("windows10m.jsonl" if name.endswith("10m") else "windows.jsonl")
    with open(texts, encoding="utf-8") as windows, open(path.with_suffix(".tmp"), "w") as out:
        for row, line in enumerate(windows):
            record = json.loads(line)
            record.update(embedding_row=row, embedding_model=identity)
            out.write(json.dumps(record) + "\n")
    path.with_suffix(".tmp").rename(path)
    return path


def run_sembed(
    spec: str,
    name: str,
    corpus,
    queries,
    truth: Truth,
    threads: int,
    seed: int,
    work: Path,
    built: Path | None,
    depths: tuple[int, ...],
) -> dict:
    """Build with `sembed index` (its own process, timed), or take the index `built` (by bench/build_cost.py, which
    timed it), then search through VectorIndex at each breadth measured and of the ladder."""
    import faiss

    from sembed_cli.indexes import recall as measured
    from sembed_cli.indexes.directory import VectorIndex

    directory = built or work / f"sembed-{name}-{spec.replace(',', '_')}"
    build: dict = {"built_by": f"bench/build_cost.py (build_cost_{name}.json)"}
    warnings: list[str] = []
    if built is None:
        records = records_file(name, work)
        env = {**os.environ, "SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
        command = [SEMBED, "index", "-q", str(records), "--npy", str(REAL / f"{name}.npy"), "--type", spec]
        command += ["-o", str(directory), "--force", "--seed", str(seed)]
        started = time.perf_counter()
        run = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *command], capture_output=True, text=True, env=env)
        if run.returncode:
            raise RuntimeError(run.stderr[-2000:])
        rss_kb, user, system = run.stderr.strip().splitlines()[-1].split()
        build = {
            "build_seconds": round(time.perf_counter() - started, 1),
            "build_cpu_seconds": round(float(user) + float(system), 1),
            "build_peak_rss_gb": round(int(rss_kb) / 1e6, 3),
        }
        warnings = [line for line in run.stderr.splitlines() if line.startswith("warning")]
    settings = json.loads((directory / "sembed.json").read_text())["settings"]
    build |= {
        "factory": settings["factory"],
        "measured_at_build": settings.get("recall"),
        **({"auto": settings["auto"]} if "auto" in settings else {}),
        "warnings": warnings,
    }
    log(
        f"  built {settings['factory']} in {build.get('build_seconds', '(timed apart)')} s, "
        f"recall {settings.get('recall', {}).get('measured')}"
    )
    faiss.omp_set_num_threads(threads)
    points = []
    with VectorIndex.load(directory) as index:
        setting = settings.get("recall", {}).get("parameter") or measured.parameter(index.index)[0]
        curve = {int(b): r for b, r in settings.get("recall", {}).get("curve", [])}
        picks = picked(curve, setting)
        ladder = set(EF if setting == "ef_search" else NPROBE)
        factors = (depths or (index.rerank_factor,)) if index.vectors is not None else (None,)
        sweep = [(b, f) for b in (sorted(set(curve) | ladder) if setting else [None]) for f in factors]
        for breadth, factor in sweep:
            if setting:
                measured.set_breadth(index.index, setting, breadth)
            if factor is not None:
                measured.rerank_at(index, factor)  # candidates re-ranked: factor x k

            def search(q):
                rows = index.search(q, K)[1]
                index.records(rows.ravel())  # the neighbours' payloads, as search writes them
                return rows

            found, qps = timed_search(search, queries)
            points.append(
                {
                    "breadth": {measured.NAMES.get(setting, "none"): breadth}
                    | ({"rerank_depth": factor * K} if factor is not None else {}),
                    "recall": round(truth.recall(found), 4),
                    "queries_per_second": qps,
                    "recall_on_own_vectors": curve.get(breadth) if breadth is not None else None,
                    "picked_for_recall": [t for t, b in picks.items() if b == breadth],
                }
            )
            log(f"  {points[-1]}")
    return {**build, "points": points, "disk_bytes": sum(p.stat().st_size for p in directory.iterdir())}


def picked(curve: dict[int, float], setting: str | None) -> dict[str, int | None]:
    """The breadth `search --recall R` picks from the measured curve for R = 0.9, 0.95, 0.99 (recall.apply_target:
    the cheapest that reached recall.aimed(R), else the widest)."""
    from sembed_cli.indexes import recall

    picks = {}
    for target in (0.9, 0.95, 0.99):
        meeting = [b for b, r in curve.items() if r >= recall.aimed(setting, target)]
        picks[str(target)] = min(meeting) if meeting else max(curve, default=None)
    return picks


def child(args) -> None:
    kind, spec = ENGINES[args.child]
    queries, truth_rows = load_queries(args.name, args.queries, args.work)
    loading = cpu_seconds()
    corpus = load_corpus(args.name)
    truth = Truth(corpus, queries, truth_rows)
    log(
        f"{args.child}: {len(corpus)} x {corpus.shape[1]} loaded ({cpu_seconds() - loading:.0f} CPU-s), "
        f"{len(queries)} queries"
    )
    if kind == "faiss":
        result = run_faiss(spec, corpus, queries, truth, args.threads, args.seed, args.built)
    elif kind == "hnswlib":
        result = run_hnswlib(corpus, queries, truth, args.threads, args.seed)
    elif kind == "usearch":
        result = run_usearch(corpus, queries, truth, args.threads, args.seed)
    else:
        depths = tuple(int(f) for f in args.rerank_factors.split(",") if f)
        result = run_sembed(
            spec, args.name, corpus, queries, truth, args.threads, args.seed, args.work, args.built, depths
        )
    result.update(engine=args.child, peak_rss_gb=peak_rss_gb(), load_average=round(os.getloadavg()[0], 2))
    (args.work / f"{args.name}.{args.child}.json").write_text(json.dumps(result, indent=1) + "\n")


# --- the run ----------------------------------------------------------------------------------------------------------


def pareto_plot(results: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(9, 6))
    for engine, result in results.items():
        points = sorted((p["recall"], p["queries_per_second"]) for p in result.get("points", []))
        if points:
            style = "-o" if engine.startswith("sembed") else "--s" if engine.startswith("faiss") else ":^"
            axes.plot([r for r, _ in points], [q for _, q in points], style, label=engine, markersize=4)
    axes.set_yscale("log")
    axes.set_xlabel("recall@10 (ties counted)")
    axes.set_ylabel("queries/s (batched)")
    axes.axvline(0.95, color="grey", linewidth=0.5)
    axes.axhline(1000, color="grey", linewidth=0.5)
    axes.set_title(title, fontsize=9)
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def table(results: dict) -> str:
    """A markdown table: each engine's fastest measured point at recall@10 >= 0.90 / 0.95 / 0.99, build cost."""
    lines = [
        "| engine | build CPU-s | peak RSS GB | q/s at recall >= 0.90 | >= 0.95 | >= 0.99 | best recall |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for engine, result in results.items():
        points = result.get("points", [])
        cells = []
        for floor in (0.9, 0.95, 0.99):
            meeting = [p for p in points if p["recall"] >= floor]
            best = max(meeting, key=lambda p: p["queries_per_second"], default=None)
            cells.append(
                f"{best['queries_per_second']:,.0f} ({best['recall']:.3f}, "
                + ", ".join(f"{k} {v}" for k, v in best["breadth"].items() if v)
                + ")"
                if best
                else "-"
            )
        rss = result.get("build_peak_rss_gb", result.get("peak_rss_gb"))
        top = max((p["recall"] for p in points), default=0)
        lines.append(f"| {engine} | {result.get('build_cpu_seconds')} | {rss} | {' | '.join(cells)} | {top:.3f} |")
    return "\n".join(lines)


def arguments(description: str) -> argparse.ArgumentParser:
    """The options of a benchmark on the real set: its name, queries, threads, seed and working folder."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--name", default="minilm")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "ann_real")
    return parser


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--rerank-factors",
        default="",
        help="sembed types that re-rank from kept vectors: sweep re-rank depths of these multiples of k (default: "
        "the index's own, settings.rerank_factor)",
    )
    parser.add_argument(
        "--built", type=Path, help="search this index (built and timed by build_cost.py): a sembed directory or .faiss"
    )
    parser.add_argument("--table", action="store_true", help="print the results' markdown table and stop")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.table:
        print(table(json.loads((RESULTS / f"ann_real_{args.name}.json").read_text())["engines"]))
        return None
    if args.child:
        return child(args)
    results = {}
    for engine in args.engines.split(","):
        done = args.work / f"{args.name}.{engine}.json"
        if not done.exists():
            log(f"{engine} ...")
            command = [PYTHON, __file__, "--child", engine, "--name", args.name, "--queries", str(args.queries)]
            command += ["--threads", str(args.threads), "--seed", str(args.seed), "--work", str(args.work)]
            command += ["--built", str(args.built)] if args.built else []
            command += ["--rerank-factors", args.rerank_factors]
            env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(args.threads)}
            if subprocess.run(command, env=env).returncode:
                log(f"{engine} failed")
                continue
        results = {  # every engine measured so far, this run's or an earlier one's (runs may go side by side)
            name: json.loads((args.work / f"{args.name}.{name}.json").read_text())
            for name in ENGINES
            if (args.work / f"{args.name}.{name}.json").exists()
        }
        summary = {
            "how": __doc__.split("\n\n")[1] + "\n\n" + __doc__.split("\n\n")[2],
            "data": {
                "corpus": f"{REAL}/{args.name}.npy",
                "queries": args.queries,
                "threads": args.threads,
                "recall": "recall@10 against exact search, ties counted",
            },
            "engines": results,
        }
        save(f"ann_real_{args.name}", summary)
        pareto_plot(
            results,
            RESULTS / f"ann_real_{args.name}.png",
            f"{args.name}: {args.queries} STS-B/SICK queries over "
            f"{json.loads((REAL / f'{args.name}.npy.json').read_text())['rows']:,} windows, {args.threads} threads",
        )


if __name__ == "__main__":
    sys.exit(main())
