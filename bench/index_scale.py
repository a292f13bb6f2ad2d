"""sembed index and search at corpus scale against the same FAISS index built directly, in one run.

A scale smoke test only: its vectors are synthetic near-duplicates (every vector within cosine 0.78-0.98 of one of
60,000 centres), where any index finds the neighbours, so its recall figures say nothing of real text (issue 36
found recall@10 0.87 on real windows where this data gave 1.000). It shows build time, memory, disk, start-up and
update cost as the count grows; recall against queries/s on real vectors is bench/ann_real.py's.

The vectors: 60,000 real all-MiniLM-L6-v2 vectors of shared-corpus sentences (abc, brown, state_union; embedded
with `sembed embed --backend onnx --quantize int8`, runs/index_scale/base.npy) are the centres; vector i is
unit(c_j + s_i g_i) with c_j a centre drawn at random, g_i Gaussian of norm about 1 and s_i uniform in [0.2, 0.8]
(cosine 0.78-0.98 to its centre), so a vector's neighbours are other vectors of its sentence and of nearby
sentences, as paraphrases and near-duplicates are in a real corpus. Stored as a float16 .npy with records naming
their rows (`sembed index --npy`); queries are 1,000 more vectors made the same way (seeded).

For each size (1x, 10x, ...), timed at --threads, each step a separate process measured by /usr/bin/time:
- sembed: `sembed index records.jsonl --npy vectors.npy -o DIR` (the type `auto` chooses by count);
- raw FAISS: the same factory string (read from sembed's metadata), trained on a sample of the same size by FAISS
  contrib's two-level clustering, vectors added by id in chunks, written to disk; search re-ranks FAISS's 10 k
  candidates from a memory-mapped float16 copy, as sembed does;
- build time, peak RSS, bytes on disk; search start-up (process start to the first result of one `--query` text,
  embedded on the ONNX int8 backend); queries/s of 1,000 batched vector queries (sembed: VectorIndex.search plus
  the neighbours' payloads from SQLite; raw: FAISS search plus the re-rank); recall@10 against exact search (brute
  force over the matrix in chunks); `--update` with 1,000 new and 1,000 changed records (raw: remove_ids +
  add_with_ids + write).

    python bench/index_scale.py --sizes 1000000 [--threads 2] [--work runs/index_scale]
Results: bench/results/index_scale.json (merged by size). The 10M run needs ~30 GB of disk under --work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, log, save

SEMBED = [str(ROOT / ".venv" / "bin" / "sembed")]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
QUERIES = 1000
K = 10


def timed(command: list[str], env: dict | None = None, stdin=None) -> dict:
    """Run `command` under /usr/bin/time: wall seconds, CPU seconds (user + system: what a shared machine's other
    jobs change least) and peak RSS (GB)."""
    started = time.perf_counter()
    run = subprocess.run(
        ["/usr/bin/time", "-f", "%M %U %S", *command],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        stdin=stdin,
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {run.stderr[-2000:]}")
    rss_kb, user, system = run.stderr.strip().splitlines()[-1].split()
    return {
        "seconds": round(wall, 2),
        "cpu_seconds": round(float(user) + float(system), 2),
        "peak_rss_gb": round(int(rss_kb) / 1e6, 3),
        "load_average": round(os.getloadavg()[0], 2),
        "stdout": run.stdout,
    }


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


# --- data ----------------------------------------------------------------------------------------------------


def spread(centres: np.ndarray, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """`count` unit vectors around randomly drawn centres, and which centre each came from."""
    picked = rng.integers(0, len(centres), count)
    noise = rng.standard_normal((count, centres.shape[1]), dtype=np.float32) / np.sqrt(centres.shape[1])
    scale = rng.uniform(0.2, 0.8, (count, 1)).astype(np.float32)
    vectors = centres[picked] + scale * noise
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True), picked


def make_data(work: Path, size: int, seed: int) -> dict:
    """vectors.npy (float16), records.jsonl, queries.npy, update.{npy,jsonl} for `size` vectors under work/SIZE."""
    folder = work / str(size)
    folder.mkdir(parents=True, exist_ok=True)
    done = folder / "made.json"
    if done.exists():
        return json.loads(done.read_text())
    base = work / "base.npy"
    centres = np.load(base).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    with open(work / "base.jsonl", encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines][: len(centres)]
    identity = json.loads((work / "base.npy.json").read_text())["embedding_model"]
    rng = np.random.default_rng(seed)
    matrix = np.lib.format.open_memmap(folder / "vectors.npy", mode="w+", dtype=np.float16, shape=(size, 384))
    started = time.perf_counter()
    with open(folder / "records.jsonl", "w", encoding="utf-8") as records:
        for start in range(0, size, 500_000):
            count = min(500_000, size - start)
            vectors, picked = spread(centres, count, rng)
            matrix[start : start + count] = vectors.astype(np.float16)
            records.writelines(
                json.dumps({"id": start + n, "text": texts[j], "embedding_row": start + n, "embedding_model": identity})
                + "\n"
                for n, j in enumerate(picked)
            )
    matrix.flush()
    del matrix
    (folder / "vectors.npy.json").write_text(json.dumps({"embedding_model": identity}))
    queries, _ = spread(centres, QUERIES, rng)
    np.save(folder / "queries.npy", queries.astype(np.float32))
    new, picked = spread(centres, 2000, rng)  # rows 0-999: 1,000 changed records; 1000-1999: 1,000 new ones
    np.save(folder / "update.npy", new.astype(np.float32))
    (folder / "update.npy.json").write_text(json.dumps({"embedding_model": identity}))
    with open(folder / "update.jsonl", "w", encoding="utf-8") as f:
        for n, j in enumerate(picked):
            record_id = n if n < 1000 else size + n - 1000
            f.write(
                json.dumps({"id": record_id, "text": texts[j], "embedding_row": n, "embedding_model": identity}) + "\n"
            )
    made = {"size": size, "seconds": round(time.perf_counter() - started, 1), "identity": identity}
    done.write_text(json.dumps(made))
    return made


def exact_neighbours(folder: Path, queries: np.ndarray) -> np.ndarray:
    """Exact top-K rows of each query by brute force over the matrix, a chunk at a time (cached)."""
    cached = folder / "exact.npy"
    if cached.exists():
        return np.load(cached)
    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    best_scores = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), K), dtype=np.int64)
    for start in range(0, len(matrix), 500_000):
        block = np.asarray(matrix[start : start + 500_000], dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        scores = queries @ block.T
        top = np.argpartition(-scores, K, axis=1)[:, :K]
        joined_scores = np.concatenate([best_scores, np.take_along_axis(scores, top, 1)], axis=1)
        joined_rows = np.concatenate([best_rows, top + start], axis=1)
        order = np.argsort(-joined_scores, axis=1)[:, :K]
        best_scores, best_rows = np.take_along_axis(joined_scores, order, 1), np.take_along_axis(joined_rows, order, 1)
    np.save(cached, best_rows)
    return best_rows


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found.tolist(), exact.tolist())]))


# --- raw FAISS, each step run in its own process ---------------------------------------------------------------


def raw_build(folder: Path, factory: str, sample_size: int, seed: int, threads: int) -> None:
    """The factory built directly: trained (two-level clustering for many cells), added by id in chunks."""
    import faiss
    from faiss.contrib.clustering import two_level_clustering

    faiss.omp_set_num_threads(threads)
    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    index = faiss.index_factory(matrix.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.extract_index_ivf(index)
    if hasattr(faiss.downcast_index(ivf), "do_polysemous_training"):
        faiss.downcast_index(ivf).do_polysemous_training = False  # as sembed: FAISS's default trains for hours
    if not index.is_trained:
        rows = np.sort(np.random.default_rng(seed).choice(len(matrix), size=sample_size, replace=False))
        sample = np.asarray(matrix[rows], dtype=np.float32)
        sample /= np.linalg.norm(sample, axis=1, keepdims=True)
        ivf = faiss.extract_index_ivf(index)
        if ivf.nlist >= 1024:
            centroids, _ = two_level_clustering(sample, int(np.sqrt(ivf.nlist)), ivf.nlist, spherical=True)
            ivf.quantizer.add(np.ascontiguousarray(centroids, dtype=np.float32))
        index.train(sample)
    for start in range(0, len(matrix), 100_000):
        block = np.asarray(matrix[start : start + 100_000], dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        index.add_with_ids(block, np.arange(start, start + len(block), dtype=np.int64))
    faiss.write_index(index, str(folder / "raw.faiss"))


def raw_search(folder: Path, nprobe: int, threads: int) -> None:
    """1,000 batched queries: FAISS's 10 k candidates re-ranked from the float16 matrix; prints JSON."""
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.read_index(str(folder / "raw.faiss"), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    ivf = faiss.extract_index_ivf(index)
    ivf.nprobe = nprobe
    quantizer = faiss.downcast_index(ivf.quantizer)
    if isinstance(quantizer, faiss.IndexHNSW):
        quantizer.hnsw.efSearch = 2 * nprobe  # as sembed sets it
    matrix = np.load(folder / "vectors.npy", mmap_mode="r")
    queries = np.load(folder / "queries.npy")
    started, cpu = time.perf_counter(), time.process_time()
    _, candidates = index.search(queries, K * 10)
    rows = np.empty((len(queries), K), dtype=np.int64)
    for n, found in enumerate(candidates):
        found = found[found >= 0]
        order = np.argsort(found)
        vectors = np.asarray(matrix[found[order]], dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows[n] = found[order][np.argsort(-(vectors @ queries[n]))[:K]]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    np.save(folder / "raw_found.npy", rows)
    print(
        json.dumps(
            {
                "queries_per_second": round(len(queries) / seconds, 1),
                "queries_per_cpu_second": round(len(queries) / cpu, 1),
            }
        )
    )


def raw_update(folder: Path, size: int, threads: int) -> None:
    """1,000 changed and 1,000 new vectors: remove_ids + add_with_ids on the index read whole, then written."""
    import faiss

    faiss.omp_set_num_threads(threads)
    index = faiss.read_index(str(folder / "raw.faiss"))
    new = np.load(folder / "update.npy")
    ids = np.concatenate([np.arange(1000), np.arange(size, size + 1000)]).astype(np.int64)
    index.remove_ids(np.arange(1000, dtype=np.int64))
    index.add_with_ids(new, ids)
    faiss.write_index(index, str(folder / "raw-updated.faiss"))


def sembed_search(directory: Path, folder: Path, threads: int) -> None:
    """1,000 batched vector queries through sembed's VectorIndex, with the neighbours' payloads; prints JSON."""
    import faiss

    from sembed_cli.indexes.directory import VectorIndex

    faiss.omp_set_num_threads(threads)
    queries = np.load(folder / "queries.npy")
    with VectorIndex.load(directory) as index:
        started, cpu = time.perf_counter(), time.process_time()
        _, rows = index.search(queries, K)
        found = index.records(rows.ravel())
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert len(found) == len(set(rows.ravel().tolist()) - {-1})
    np.save(folder / "sembed_found.npy", rows)
    print(
        json.dumps(
            {
                "queries_per_second": round(len(queries) / seconds, 1),
                "queries_per_cpu_second": round(len(queries) / cpu, 1),
            }
        )
    )


# --- one size ----------------------------------------------------------------------------------------------


def run_size(
    work: Path,
    size: int,
    threads: int,
    seed: int,
    index_type: str,
    checkpoint=lambda result: None,
    reuse: dict | None = None,
    raw_too: bool = True,
) -> dict:
    """One size's figures; `reuse`: a partial result of an earlier run whose sembed index is on disk (its build
    figures are kept, the rest measured now); without `raw_too` FAISS alone is not built (a long run cut short)."""
    folder = work / str(size)
    made = make_data(work, size, seed)
    log(f"{size}: data made ({made['seconds']} s)")
    env = {"SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    index_dir = folder / "sembed-index"
    result: dict = {"size": size, "threads": threads, "type_asked": index_type}
    if reuse is not None and (index_dir / "sembed.json").exists():
        result["sembed"] = dict(reuse["sembed"])
        meta = json.loads((index_dir / "sembed.json").read_text())
        return measure(work, size, threads, seed, index_type, result, meta, checkpoint, raw_too, env, folder, index_dir)
    build = timed(
        [
            *SEMBED,
            "index",
            "-q",
            str(folder / "records.jsonl"),
            "--npy",
            str(folder / "vectors.npy"),
            "--type",
            index_type,
            "-o",
            str(index_dir),
            "--force",
            "--seed",
            str(seed),
        ],
        env,
    )
    meta = json.loads((index_dir / "sembed.json").read_text())
    settings = meta["settings"]
    result["sembed"] = {
        "build_seconds": build["seconds"],
        "build_cpu_seconds": build["cpu_seconds"],
        "build_load_average": build["load_average"],
        "build_peak_rss_gb": build["peak_rss_gb"],
        "disk_bytes": disk_bytes(index_dir),
        "type": meta["type"],
        "factory": settings["factory"],
        "nprobe": settings.get("nprobe"),
        "bytes_per_vector": settings.get("bytes_per_vector"),
    }
    checkpoint(result)
    log(
        f"{size}: sembed built {meta['type']} ({settings['factory']}) in {build['seconds']} s, "
        f"{build['peak_rss_gb']} GB"
    )
    return measure(work, size, threads, seed, index_type, result, meta, checkpoint, raw_too, env, folder, index_dir)


def measure(
    work: Path,
    size: int,
    threads: int,
    seed: int,
    index_type: str,
    result: dict,
    meta: dict,
    checkpoint,
    raw_too: bool,
    env: dict,
    folder: Path,
    index_dir: Path,
) -> dict:
    """Everything after sembed's build: FAISS's own build, search, start-up, update."""
    from sembed_cli.indexes import kinds

    settings = meta["settings"]
    raw_too = raw_too and settings.get("nprobe") is not None
    sample = kinds.training_size(kinds.create(kinds.Kind(meta["type"], settings["factory"]), 384), size)
    if raw_too:
        raw = timed(
            [PYTHON, __file__, "raw-build", str(folder), settings["factory"], str(sample), str(seed), str(threads)], env
        )
    result["raw_faiss"] = (
        {}
        if not raw_too
        else {
            "build_seconds": raw["seconds"],
            "build_cpu_seconds": raw["cpu_seconds"],
            "build_load_average": raw["load_average"],
            "build_peak_rss_gb": raw["peak_rss_gb"],
            "disk_bytes": disk_bytes(folder / "raw.faiss") + disk_bytes(folder / "vectors.npy") // 1,
        }
    )
    checkpoint(result)
    if raw_too:
        log(f"{size}: raw FAISS built in {raw['seconds']} s, {raw['peak_rss_gb']} GB")
    exact = exact_neighbours(folder, np.load(folder / "queries.npy"))
    searched = timed([PYTHON, __file__, "sembed-search", str(index_dir), str(folder), str(threads)], env)
    result["sembed"].update(
        json.loads(searched["stdout"]),
        search_peak_rss_gb=searched["peak_rss_gb"],
        recall_at_10=recall(np.load(folder / "sembed_found.npy"), exact),
    )
    if raw_too:
        raw_searched = timed([PYTHON, __file__, "raw-search", str(folder), str(settings["nprobe"]), str(threads)], env)
        result["raw_faiss"].update(
            json.loads(raw_searched["stdout"]),
            search_peak_rss_gb=raw_searched["peak_rss_gb"],
            recall_at_10=recall(np.load(folder / "raw_found.npy"), exact),
        )
    checkpoint(result)
    query = [
        *SEMBED,
        "search",
        "-q",
        "-i",
        str(index_dir),
        "--query",
        "The minister denied knowing of the payments",
        "--backend",
        "onnx",
        "--quantize",
        "int8",
        "--k",
        "10",
    ]
    timed(query, env)  # the first run exports and quantises the ONNX model once
    startup = timed(query, env)
    result["sembed"]["search_startup_seconds"] = startup["seconds"]
    result["sembed"]["search_startup_cpu_seconds"] = startup["cpu_seconds"]
    result["sembed"]["search_startup_peak_rss_gb"] = startup["peak_rss_gb"]
    checkpoint(result)
    updated = timed(
        [
            *SEMBED,
            "index",
            "-q",
            "--update",
            str(index_dir),
            str(folder / "update.jsonl"),
            "--npy",
            str(folder / "update.npy"),
        ],
        env,
    )
    result["sembed"]["update_2000_seconds"] = updated["seconds"]
    result["sembed"]["update_2000_cpu_seconds"] = updated["cpu_seconds"]
    result["sembed"]["update_2000_peak_rss_gb"] = updated["peak_rss_gb"]
    if raw_too:
        raw_updated = timed([PYTHON, __file__, "raw-update", str(folder), str(size), str(threads)], env)
        result["raw_faiss"]["update_2000_seconds"] = raw_updated["seconds"]
        result["raw_faiss"]["update_2000_cpu_seconds"] = raw_updated["cpu_seconds"]
        result["raw_faiss"]["update_2000_peak_rss_gb"] = raw_updated["peak_rss_gb"]
    log(json.dumps(result))
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("raw-build", "raw-search", "raw-update", "sembed-search"):
        step, *args = sys.argv[1:]
        folder = Path(args[0])
        if step == "raw-build":
            raw_build(folder, args[1], int(args[2]), int(args[3]), int(args[4]))
        elif step == "raw-search":
            raw_search(folder, int(args[1]), int(args[2]))
        elif step == "raw-update":
            raw_update(folder, int(args[1]), int(args[2]))
        else:
            sembed_search(folder, Path(args[1]), int(args[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--type", default="auto")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "index_scale")
    parser.add_argument("--name", default="index_scale")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure again over a sembed index an earlier (partial) run left, keeping its build figures",
    )
    parser.add_argument("--no-raw", action="store_true", help="leave FAISS's own build out (a long run cut short)")
    args = parser.parse_args()
    path = RESULTS / f"{args.name}.json"
    previous = json.loads(path.read_text()).get("runs", []) if path.exists() else []
    runs = [r for r in previous if not any(r["size"] == s and r.get("type_asked") == args.type for s in args.sizes)]
    for size in args.sizes:

        def checkpoint(result: dict, size: int = size) -> None:  # a long run keeps what it has measured so far
            partial = [r for r in runs if r["size"] != size] + [{**result, "partial": True}]
            save(args.name, {"how": __doc__.split("\n\n")[1], "runs": sorted(partial, key=lambda r: r["size"])})

        earlier = next((r for r in previous if r["size"] == size and "sembed" in r), None) if args.reuse else None
        runs.append(run_size(args.work, size, args.threads, args.seed, args.type, checkpoint, earlier, not args.no_raw))
        save(args.name, {"how": __doc__.split("\n\n")[1], "runs": sorted(runs, key=lambda r: r["size"])})


if __name__ == "__main__":
    main()
