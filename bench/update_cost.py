"""What a small update costs at a million rows (issue 36, item 5: 2,000 records in <= 1 s): fresh rows against
rewriting the FAISS file every time.

Takes an index of real vectors that bench/streaming.py left (--index: about 795,000 MiniLM windows, HNSW32, after
its 20 rounds) and its last input of 2,000 windows (--records), and copies the index twice under --work: one
copy updated by this tree's sembed (new rows stay fresh until they pass 2% of the rows, then an update folds them
in: sembed_cli/indexes/fresh.py), the other by the tree at --before (a git worktree of the commit before fresh
rows, which rewrote the FAISS file in every update), in turns. Each update adds 2,000 new records (the windows
again under new ids: the same vectors, new rows), its own process under /usr/bin/time: wall and CPU seconds, peak
RSS, and whether it folded. Then 1,000 real queries (minilm.queries.npy) are searched through the fresh copy with
its fresh rows and without them (FAISS alone), interleaved, after each update: what the exact scan of the fresh
rows costs (the figures of the update that left the most are kept).

    python bench/update_cost.py --index runs/streaming/index --records runs/streaming/last.jsonl \\
        --before /work/wt/before [--updates 10] [--threads 2] [--work runs/update_cost]
Results: bench/results/update_cost.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.ann_real import REAL
from bench.common import log, save
from bench.streaming import sembed_command, timed

ROOT = Path(__file__).resolve().parent.parent


def new_ids(records: Path, out: Path, n: int) -> Path:
    """`records` again under ids of their own (`:uN` appended): 2,000 new rows of the same vectors."""
    with open(records, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as written:
        for line in f:
            record = json.loads(line)
            record["id"] = f"{record['id']}:u{n}"
            written.write(json.dumps(record) + "\n")
    return out


def search_speed(index: Path, threads: int, rounds: int = 3) -> dict:
    """1,000 real queries through `index`, with its fresh rows and with FAISS alone, interleaved: queries/s."""
    import faiss

    from sembed_cli.indexes.directory import VectorIndex

    faiss.omp_set_num_threads(threads)
    queries = np.load(REAL / "minilm.queries.npy")[:1000].astype(np.float32)
    speeds: dict[str, list[float]] = {"with the fresh rows": [], "FAISS alone": []}
    with VectorIndex.load(index) as loaded:
        fresh_rows = loaded.row_count - loaded.fresh_start
        loaded.search(queries[:10], 10)
        for _ in range(rounds):
            for label in speeds:
                first = loaded.fresh_from
                if label == "FAISS alone":
                    loaded.fresh_from = None
                started = time.perf_counter()
                loaded.search(queries, 10)
                speeds[label].append(round(len(queries) / (time.perf_counter() - started), 1))
                loaded.fresh_from = first
    return {"fresh_rows": fresh_rows, "queries_per_s": speeds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True, help="a checkout of the commit before fresh rows")
    parser.add_argument("--updates", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "update_cost")
    args = parser.parse_args()
    command, env = sembed_command(args.threads)
    command = [sys.executable, "-P", *command[1:]]  # -P: PYTHONPATH names the tree, not the working directory
    trees = {"fresh rows": ROOT, "before (FAISS rewritten each update)": args.before.resolve()}
    copies = {}
    for n, name in enumerate(trees):
        copies[name] = args.work / f"index{n}"
        shutil.rmtree(copies[name], ignore_errors=True)
        shutil.copytree(args.index, copies[name])
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    searched: dict = {}
    for n in range(1, args.updates + 1):
        records = new_ids(args.records, args.work / f"new{n}.jsonl", n)
        for name, tree in trees.items():
            run = timed(
                [*command, "index", "--update", str(copies[name]), "--npy", str(REAL / "minilm.npy")],
                {**env, "PYTHONPATH": str(tree)},
                records,
            )
            meta = json.loads((copies[name] / "sembed.json").read_text())
            run["folded"] = meta["data"]["update"].get("folded", 0)
            run["count"] = meta["count"]
            runs[name].append(run)
            log(f"{name} {n}: {run}")
        speed = search_speed(copies["fresh rows"], args.threads)
        if speed["fresh_rows"] >= searched.get("fresh_rows", 0):  # the most fresh rows any update left
            searched = speed
    summary = {
        name: {
            "median_seconds": round(statistics.median(r["seconds"] for r in done), 3),
            "max_seconds": max(r["seconds"] for r in done),
            "total_seconds": round(sum(r["seconds"] for r in done), 2),
            "median_peak_rss_gb": round(statistics.median(r["peak_rss_gb"] for r in done), 3),
        }
        for name, done in runs.items()
    }
    result = {
        "index": str(args.index),
        "threads": args.threads,
        "records_an_update": len(args.records.read_bytes().splitlines()),
        "summary": summary,
        "updates": runs,
        "search": searched,
    }
    log(f"written {save('update_cost', result)}")
    log(json.dumps(summary))


if __name__ == "__main__":
    main()
