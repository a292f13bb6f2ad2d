"""Updates that keep their recall: a streaming runbook in the spirit of the NeurIPS'23 big-ann streaming track
(Simhadri et al., "Results of the Big ANN: NeurIPS'23 competition", 2024), scaled to 2 cores (issue 36, item 5).

The data (bench/real_vectors.py, runs/real/): 953,433 overlapping 12-word windows of the shared corpora through
all-MiniLM-L6-v2 ONNX int8 (384-d, minilm.npy) and 1,000 STS-B/SICK test sentences as queries
(minilm.queries.npy). A seeded permutation of the windows: the first n0 = (N - 2,000) / (1 + rounds x share) are
indexed (`sembed index records.jsonl --npy minilm.npy --type hnsw`, records naming their rows), the rest arrive a
round at a time. Each of --rounds rounds, as a nightly job would: share x n0 new windows arrive and as many live
ones, drawn at random, go; the input is every live window in corpus order, applied with `sembed index --update DIR
--sync` (its own process: wall seconds, CPU-seconds and peak RSS); then the queries are searched through the index
as it is (VectorIndex.search at the breadth the update measured) and their recall@10 taken against exact search
over the rows live after that round (FAISS flat inner product over the live vectors, in blocks; ties with the
10th exact cosine count as hits, as sembed's own measurement does). Compaction (sembed_cli/indexes/compaction.py)
runs in the update whose removed rows pass its share: the round says so.

Last, an update of 2,000 new records (plain `--update`, no sync) under cProfile: its wall time and where it goes.

    nice -n 10 python bench/streaming.py [--rounds 20] [--share 0.01] [--threads 2] [--work runs/streaming]
Results: bench/results/streaming.json; --work keeps the index and progress.json, from which a run cut short
resumes (delete --work to start afresh).
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.ann_real import REAL, records_file
from bench.common import log, save

K = 10
TIE = 1e-5
BLOCK = 100_000
LAST_UPDATE = 2_000  # records of the timed plain update
PHASES = {  # where a plain update's time goes: cProfile's cumulative seconds of these functions
    "load the index (FAISS mapped, checksums verified)": ("directory.py", "load"),
    "read and stage the records (SQLite lookups, inserts)": ("staging.py", "stage"),
    "read FAISS whole to change it (a fold)": ("directory.py", "faiss_in_memory"),
    "fold the fresh rows into the graph": ("update.py", "fold"),
    "compaction": ("compaction.py", "compact"),
    "write the new FAISS file (synced)": ("staging.py", "write_faiss"),
    "measure the recall again": ("recall.py", "measure_update"),
    "commit (SQLite)": ("store.py", "commit"),
}


def sembed_command(threads: int) -> tuple[list[str], dict]:
    env = {**os.environ, "SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    return [sys.executable, "-m", "sembed_cli"], env


def timed(command: list[str], env: dict, stdin: Path | None = None) -> dict:
    """Run `command` under /usr/bin/time: wall seconds, CPU-seconds and peak RSS; its stderr's last lines."""
    started = time.perf_counter()
    with open(stdin or os.devnull, "rb") as given:
        run = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", *command], stdin=given, capture_output=True, text=True, env=env
        )
    if run.returncode:
        raise RuntimeError(run.stderr[-3000:])
    lines = run.stderr.strip().splitlines()
    rss_kb, user, system = lines[-1].split()
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(float(user) + float(system), 2),
        "peak_rss_gb": round(int(rss_kb) / 1e6, 3),
        "load_average": round(os.getloadavg()[0], 2),
        "log": [line for line in lines[:-1] if "compacted" in line or line.startswith("warning")],
    }


def write_input(path: Path, lines: list[bytes], rows: np.ndarray) -> Path:
    with open(path, "wb") as out:
        out.writelines(lines[row] for row in np.sort(rows))
    return path


def exact_truth(queries: np.ndarray, corpus: np.ndarray, live: np.ndarray) -> np.ndarray:
    """The 10th exact cosine of each query over the `live` rows (FAISS flat inner product, in blocks)."""
    import faiss

    best = np.full((len(queries), K), -np.inf, dtype=np.float32)
    for start in range(0, len(live), BLOCK):
        block = np.ascontiguousarray(corpus[np.sort(live[start : start + BLOCK])], dtype=np.float32)
        scores, _ = faiss.knn(queries, block, K, metric=faiss.METRIC_INNER_PRODUCT)
        best = -np.sort(-np.concatenate([best, scores], axis=1), axis=1)[:, :K]
    return best[:, K - 1]


def recall_at_10(queries: np.ndarray, corpus: np.ndarray, found: np.ndarray, kth: np.ndarray) -> float:
    """Found rows whose exact cosine reaches the 10th exact one (ties count), over k."""
    valid = found >= 0
    cosines = np.einsum("qkd,qd->qk", corpus[np.where(valid, found, 0)].astype(np.float32), queries)
    return float(((cosines >= kth[:, None] - TIE) & valid).sum() / (len(queries) * K))


def search_round(
    directory: Path, queries: np.ndarray, threads: int, windows: dict[str, int]
) -> tuple[np.ndarray, dict, float]:
    """The windows (rows of minilm.npy, by their ids) the index finds for each query, its recall settings and
    queries/s."""
    import faiss

    from sembed_cli.indexes.directory import VectorIndex

    faiss.omp_set_num_threads(threads)
    with VectorIndex.load(directory) as index:
        started = time.perf_counter()
        found = index.search(queries, K)[1]
        seconds = time.perf_counter() - started
        ids = index.records(found.ravel())
        rows = np.array([windows[ids[row][0]] if row in ids else -1 for row in found.ravel()]).reshape(found.shape)
        return rows, index.settings.get("recall", {}), round(len(queries) / seconds, 1)


def profiled_update(command: list[str], env: dict, directory: Path, records: Path, work: Path) -> dict:
    """A plain update of LAST_UPDATE new records under cProfile: wall time and the seconds of each phase."""
    profile = work / "update.prof"
    profiled = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "sembed_cli"]
    run = timed([*profiled, "index", "-q", "--update", str(directory), "--npy", str(REAL / "minilm.npy")], env, records)
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]  # (file, line, name) -> (.., cumtime, ..)
    phases = {}
    for phase, (file, name) in PHASES.items():
        spent = [v[3] for (f, _, n), v in stats.items() if f.endswith(file) and n == name]
        phases[phase] = round(max(spent, default=0.0), 3)
    total = max(v[3] for v in stats.values())
    phases["the rest (start-up, imports, sembed.json)"] = round(total - sum(phases.values()), 3)
    return {**run, "records": LAST_UPDATE, "profiled_seconds": round(total, 3), "phases": phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--share", type=float, default=0.01, help="windows inserted and removed a round, of n0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--limit", type=int, default=None, help="use the first N windows only (a smoke test)")
    parser.add_argument("--work", type=Path, default=Path("runs/streaming"))
    parser.add_argument("--result", default="streaming")
    parser.add_argument("--report", action="store_true", help="write the results of the rounds done so far, only")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    corpus = np.load(REAL / "minilm.npy", mmap_mode="r")
    total = args.limit or len(corpus)
    queries = np.array(np.load(REAL / "minilm.queries.npy", mmap_mode="r")[:1000], dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    lines = records_file("minilm", Path("/work/main/runs/ann_real")).read_bytes().splitlines(keepends=True)[:total]
    windows = {json.loads(line)["id"]: row for row, line in enumerate(lines)}
    order = np.random.default_rng(args.seed).permutation(total)
    first = int((total - LAST_UPDATE) / (1 + args.rounds * args.share))
    step = int(args.share * first)
    live, arriving = order[:first], order[first:]
    if args.report:
        return report(args, json.loads((args.work / "progress.json").read_text()), total, first, step)
    rng = np.random.default_rng(args.seed + 1)
    command, env = sembed_command(args.threads)
    npy = ["--npy", str(REAL / "minilm.npy")]
    directory = args.work / "index"
    progress_file = args.work / "progress.json"  # what a run cut short did: resumed from it
    progress = json.loads(progress_file.read_text()) if progress_file.exists() else {"applied": 0, "rounds": []}

    def checkpoint() -> None:
        progress_file.write_text(json.dumps(progress, indent=1))

    if "build" not in progress:
        log(f"building the first {first} windows ({step} in and out a round, {args.rounds} rounds)")
        progress["build"] = timed(
            [*command, "index", "-q", "--type", "hnsw", "-o", str(directory), "--force", *npy],
            env,
            write_input(args.work / "input.jsonl", lines, live),
        )
        checkpoint()
        log(f"  {progress['build']}")
    rounds = progress["rounds"]
    for number in range(args.rounds + 1):
        if number:
            gone = rng.choice(len(live), size=step, replace=False)  # drawn in every round, resumed or not
            live = np.concatenate([np.delete(live, gone), arriving[:step]])
            arriving = arriving[step:]
        if number < len(rounds):
            continue
        update: dict = {"not_timed": "applied by a run cut short before it searched"}
        if number > progress["applied"]:
            update = timed(
                [*command, "index", "-q", "--update", str(directory), "--sync", *npy],
                env,
                write_input(args.work / "input.jsonl", lines, live),
            )
            progress["applied"] = number
            checkpoint()
        found, measured, qps = search_round(directory, queries, args.threads, windows)
        kth = exact_truth(queries, corpus, live)
        meta = json.loads((directory / "sembed.json").read_text())
        assert meta["count"] == len(live), "the index holds other rows than this run's rounds (--work of another run)"
        rounds.append(
            {
                "round": number,
                "live": len(live),
                "recall_at_10": round(recall_at_10(queries, corpus, found, kth), 4),
                "target": measured.get("target"),
                "ef_search": meta["settings"].get("ef_search"),
                "measured_on_own_vectors": measured.get("measured"),
                "queries_per_second": qps,
                "compacted": meta["data"].get("update", {}).get("compacted", 0) if number else 0,
                "update": update if number else {},
            }
        )
        checkpoint()
        log(f"  {rounds[-1]}")
    if "plain_update" not in progress:
        last = write_input(args.work / "last.jsonl", lines, arriving[:LAST_UPDATE])
        progress["plain_update"] = profiled_update(command, env, directory, last, args.work)
        checkpoint()
        log(f"  {progress['plain_update']}")
    report(args, progress, total, first, step)


def report(args, progress: dict, total: int, first: int, step: int) -> None:
    """bench/results/NAME.json from the progress so far (`--report`: of a run still going or cut short)."""
    rounds = progress["rounds"]
    updates = [r["update"] for r in rounds if "cpu_seconds" in r["update"]]
    save(
        args.result,
        {
            "data": "runs/real/minilm.npy (953,433 MiniLM int8 window vectors), minilm.queries.npy[:1000]",
            "threads": args.threads,
            "windows": total,
            "first_indexed": first,
            "per_round": step,
            "rounds": args.rounds,
            "rounds_done": len(rounds) - 1,
            "build": progress.get("build"),
            "min_recall_at_10": min((r["recall_at_10"] for r in rounds), default=None),
            "target": rounds[0]["target"] if rounds else None,
            "compactions": [r["round"] for r in rounds if r["compacted"]],
            "median_update_cpu_seconds": float(np.median([u["cpu_seconds"] for u in updates])) if updates else None,
            "per_round_results": rounds,
            "plain_update": progress.get("plain_update"),
        },
    )


if __name__ == "__main__":
    main()
