"""What `sembed index` costs over raw FAISS building the same factory, on real vectors (issue 36, item 4).

The data (bench/real_vectors.py, runs/real/): the first --sizes of the 953,433 MiniLM int8 window vectors
(minilm.npy), given to sembed as records naming their rows (`sembed index records.jsonl --npy minilm.npy --type
T`, the records of bench/ann_real.py: id, doc_id, text, embedding_row), so sembed does all its per-record work
(parsing, the vector fetch, normalising, hashing, SQLite rows, checks and the keyword index) and raw FAISS none:
the same factory built from the memory-mapped matrix (normalised a block at a time, added, written to disk).
Each in its own process under /usr/bin/time, interleaved: CPU-seconds (user + system, what other jobs on a shared
machine change least), wall seconds and peak RSS. sembed runs with --recall 0 (the build alone; the recall
measurement is timed apart, as `measure_seconds`, by a third run at the smallest size).

    nice -n 10 python bench/build_cost.py [--sizes 100000,953433] [--type hnsw] [--threads 2]
Results: bench/results/build_cost.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.ann_real import REAL, records_file
from bench.common import RESULTS, log, save

RECORDS = Path("/work/main/runs/ann_real")  # where ann_real made the records naming their rows, once


def timed(command: list[str], threads: int) -> dict:
    env = {**os.environ, "SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    run = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *command], capture_output=True, text=True, env=env)
    if run.returncode:
        raise RuntimeError(run.stderr[-3000:])
    rss_kb, user, system = run.stderr.strip().splitlines()[-1].split()
    return {
        "cpu_seconds": round(float(user) + float(system), 2),
        "seconds": round(time.perf_counter() - started, 2),
        "peak_rss_gb": round(int(rss_kb) / 1e6, 3),
        "load_average": round(os.getloadavg()[0], 2),
    }


def raw(size: int, factory: str, output: Path) -> None:
    """The child: FAISS builds `factory` from the first `size` rows directly."""
    import faiss
    import numpy as np

    matrix = np.load(REAL / "minilm.npy", mmap_mode="r")
    index = faiss.index_factory(matrix.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if "HNSW" in factory:  # sembed's construction breadth (kinds.HNSW_EF_CONSTRUCTION)
        from sembed_cli.indexes import kinds

        kinds.hnsw_of(index).hnsw.efConstruction = kinds.HNSW_EF_CONSTRUCTION
    for start in range(0, size, 100_000):
        block = np.array(matrix[start : min(size, start + 100_000)], dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        index.add(block)
    faiss.write_index(index, str(output))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,953433")
    parser.add_argument("--type", default="hnsw", help="sembed's --type (its factory is built raw)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("runs/build_cost"))
    parser.add_argument("--raw", nargs=3, metavar=("SIZE", "FACTORY", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.raw:
        return raw(int(args.raw[0]), args.raw[1], Path(args.raw[2]))
    args.work.mkdir(parents=True, exist_ok=True)
    lines = records_file("minilm", RECORDS).open("rb")
    sembed = [sys.executable, "-m", "sembed_cli", "index", "-q", "--npy", str(REAL / "minilm.npy")]
    results = []
    for size in map(int, args.sizes.split(",")):
        records = args.work / f"records.{size}.jsonl"
        with open(records, "wb") as out:
            lines.seek(0)
            out.writelines(line for _, line in zip(range(size), lines))
        directory = args.work / f"sembed.{size}"
        built = [*sembed, str(records), "--type", args.type, "-o", str(directory), "--force"]
        ours = timed([*built, "--recall", "0"], args.threads)
        factory = json.loads((directory / "sembed.json").read_text())["settings"]["factory"]
        theirs = timed(
            [sys.executable, __file__, "--raw", str(size), factory, str(args.work / "raw.faiss")], args.threads
        )
        result = {
            "size": size,
            "factory": factory,
            "threads": args.threads,
            "sembed": ours,
            "raw_faiss": theirs,
            "cpu_ratio": round(ours["cpu_seconds"] / theirs["cpu_seconds"], 3),
            "record_path_us": round(1e6 * (ours["cpu_seconds"] - theirs["cpu_seconds"]) / size, 1),
        }
        if size == min(map(int, args.sizes.split(","))):
            measured = timed(built, args.threads)
            result["measure_seconds"] = {"cpu_seconds": round(measured["cpu_seconds"] - ours["cpu_seconds"], 2)}
        log(f"  {result}")
        results.append(result)
        records.unlink()
    path = RESULTS / "build_cost.json"  # merged by size: sizes run apart keep each other's figures
    earlier = json.loads(path.read_text())["results"] if path.exists() else []
    done = {r["size"] for r in results}
    results = sorted([r for r in earlier if r["size"] not in done] + results, key=lambda r: r["size"])
    save("build_cost", {"data": "runs/real/minilm.npy (MiniLM int8 window vectors, 384-d)", "results": results})


if __name__ == "__main__":
    main()
