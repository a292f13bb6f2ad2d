"""What `sembed index` costs over raw FAISS building the same factory, on real vectors (issue 36, item 4).

The data (bench/real_vectors.py, runs/real/): the first --sizes of the 953,433 MiniLM int8 window vectors
(minilm.npy), given to sembed as records naming their rows (`sembed index records.jsonl --npy minilm.npy --type
T`, the records of bench/ann_real.py: id, doc_id, text, embedding_row), so sembed does all its per-record work
(parsing, the vector fetch, normalising, hashing, SQLite rows, checks and the keyword index) and raw FAISS none:
the same factory built from the memory-mapped matrix (normalised a block at a time, added, written to disk).
Each in its own process under /usr/bin/time, interleaved: CPU-seconds (user + system, what other jobs on a shared
machine change least), wall seconds and peak RSS. sembed runs with --recall 0 (the build alone; the recall
measurement is timed apart, as `measure_seconds`, by a third run at the smallest size). A third process, the
store's floor (`floor`), does the same per-record work as straight-line batched Python with nothing else: its
`floor_ratio` ((raw FAISS + floor) / raw FAISS) is the least any build keeping these rows in SQLite can cost.
With --no-keywords a fourth process builds with `sembed index --no-keywords` (no FTS5 fill): `sembed_no_keywords`
and its `cpu_ratio_no_keywords`.

    nice -n 10 python bench/build_cost.py [--name minilm] [--sizes 100000,953433] [--type hnsw] [--threads 2] \
        [--no-measure] [--no-keywords]
--name static10m: the 11,308,664 static window vectors (256-d) and their records. Results:
bench/results/build_cost.json (--name minilm) or build_cost_NAME.json; --machine M adds _M (another machine's
figures beside the committed ones: build_cost_xeon.json).
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


def raw(name: str, size: int, factory: str, seed: int, output: Path) -> None:
    """The child: FAISS builds `factory` from the first `size` rows directly (inverted lists trained on the same
    seeded sample, by the same two-level k-means, as sembed's)."""
    import faiss
    import numpy as np

    from sembed_cli.indexes import kinds

    matrix = np.load(REAL / f"{name}.npy", mmap_mode="r")
    index = faiss.index_factory(matrix.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    if kinds.hnsw_of(index) is not None:  # sembed's construction breadth (kinds.HNSW_EF_CONSTRUCTION)
        kinds.hnsw_of(index).hnsw.efConstruction = kinds.HNSW_EF_CONSTRUCTION
    if not index.is_trained:
        rows = np.sort(np.random.default_rng(seed).choice(size, kinds.training_size(index, size), replace=False))
        sample = np.asarray(matrix[rows], dtype=np.float32)
        kinds.train(index, sample / np.linalg.norm(sample, axis=1, keepdims=True), seed)
    for start in range(0, size, 100_000):
        block = np.array(matrix[start : min(size, start + 100_000)], dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        index.add(block)
    faiss.write_index(index, str(output))


def floor(name: str, size: int, work: Path) -> None:
    """The child: the per-record work a build does besides FAISS, as straight-line batched Python with nothing
    else (no checks, no progress, no objects a record): each record parsed (orjson), its id and payload as JSON,
    its row read and made a unit vector, its hash (SHA-256 of text and float16 vector), its CRC-32, the SQLite rows
    with their unique id index, then the FTS5 keyword index filled from them. What sembed's store costs at the
    least, written the fastest way Python allows: the bar the build's record path is held to (issue 36, item 4)."""
    import hashlib
    import sqlite3
    import zlib

    import numpy as np
    import orjson

    from sembed_cli.indexes import keyword, store

    matrix = np.load(REAL / f"{name}.npy", mmap_mode="r")
    path = work / "floor.sqlite"
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=MEMORY")
    db.executescript(store.SCHEMA)
    db.execute("BEGIN")
    done = 0
    with open(records_file(name, RECORDS), "rb") as lines:
        while done < size:
            records = [orjson.loads(line) for _, line in zip(range(min(2_000, size - done)), lines)]
            keys = [orjson.dumps(record["id"]).decode() for record in records]
            payloads = [orjson.dumps({k: v for k, v in r.items() if not k.startswith("embedding")}) for r in records]
            block = np.asarray(matrix[[record["embedding_row"] for record in records]], dtype=np.float32)
            halves = (block / np.linalg.norm(block, axis=1, keepdims=True)).astype(np.float16)
            digests = [
                hashlib.sha256(record["text"].encode() + b"\0" + half.tobytes()).hexdigest()[:20]
                for record, half in zip(records, halves)
            ]
            checks = [
                zlib.crc32(payload, zlib.crc32(f"{key}\0{digest}\0".encode()))
                for key, digest, payload in zip(keys, digests, payloads)
            ]
            db.executemany(
                "INSERT INTO rows (row, id, hash, payload, crc) VALUES (?, ?, ?, ?, ?)",
                zip(range(done, done + len(records)), keys, digests, payloads, checks),
            )
            done += len(records)
    keyword.install(db, announce=False)
    db.execute("COMMIT")
    db.close()
    path.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="minilm", help="the vectors: runs/real/NAME.npy and its records")
    parser.add_argument("--sizes", default="100000,953433")
    parser.add_argument("--type", default="hnsw", help="sembed's --type (its factory is built raw)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("runs/build_cost"))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-measure", action="store_true", help="skip the third build that times the recall measure")
    parser.add_argument("--no-keywords", action="store_true", help="also build with --no-keywords (no FTS5 fill)")
    parser.add_argument("--machine", default="", help="a suffix of the results file: build_cost[_NAME]_MACHINE.json")
    parser.add_argument("--raw", nargs=3, metavar=("SIZE", "FACTORY", "OUTPUT"), help=argparse.SUPPRESS)
    parser.add_argument("--floor", type=int, metavar="SIZE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.raw:
        return raw(args.name, int(args.raw[0]), args.raw[1], args.seed, Path(args.raw[2]))
    if args.floor:
        return floor(args.name, args.floor, args.work)
    args.work.mkdir(parents=True, exist_ok=True)
    lines = records_file(args.name, RECORDS).open("rb")
    sembed = [sys.executable, "-m", "sembed_cli", "index", "-q", "--npy", str(REAL / f"{args.name}.npy")]
    results = []
    for size in map(int, args.sizes.split(",")):
        records = args.work / f"records.{size}.jsonl"
        whole = size >= json.loads((REAL / f"{args.name}.npy.json").read_text())["rows"]
        if whole:  # every row: the records file itself, not a copy of it
            records = records_file(args.name, RECORDS)
        else:
            with open(records, "wb") as out:
                lines.seek(0)
                out.writelines(line for _, line in zip(range(size), lines))
        directory = args.work / f"sembed.{size}"
        built = [*sembed, str(records), "--type", args.type, "-o", str(directory), "--force", "--seed", str(args.seed)]
        ours = timed([*built, "--recall", "0"], args.threads)
        factory = json.loads((directory / "sembed.json").read_text())["settings"]["factory"]
        theirs = timed(
            [sys.executable, __file__, "--name", args.name, "--seed", str(args.seed), "--raw", str(size), factory,
             str(args.work / "raw.faiss")],
            args.threads,
        )  # fmt: skip
        floor_run = [sys.executable, __file__, "--name", args.name, "--work", str(args.work), "--floor", str(size)]
        least = timed(floor_run, args.threads)
        result = {
            "size": size,
            "factory": factory,
            "threads": args.threads,
            "sembed": ours,
            "raw_faiss": theirs,
            "cpu_ratio": round(ours["cpu_seconds"] / theirs["cpu_seconds"], 3),
            "record_path_us": round(1e6 * (ours["cpu_seconds"] - theirs["cpu_seconds"]) / size, 1),
            "store_floor": least,  # `floor`: the record path in straight-line Python, without FAISS
            "store_floor_us": round(1e6 * least["cpu_seconds"] / size, 1),
            "floor_ratio": round((theirs["cpu_seconds"] + least["cpu_seconds"]) / theirs["cpu_seconds"], 3),
        }
        if args.no_keywords:  # the build a user who declines the keyword index pays
            declined = timed([*built, "--recall", "0", "--no-keywords"], args.threads)
            result["sembed_no_keywords"] = declined
            result["cpu_ratio_no_keywords"] = round(declined["cpu_seconds"] / theirs["cpu_seconds"], 3)
        if size == min(map(int, args.sizes.split(","))) and not args.no_measure:
            measured = timed(built, args.threads)
            result["measure_seconds"] = {"cpu_seconds": round(measured["cpu_seconds"] - ours["cpu_seconds"], 2)}
        log(f"  {result}")
        results.append(result)
        if not whole:
            records.unlink()
    stem = "_".join(part for part in ("build_cost", "" if args.name == "minilm" else args.name, args.machine) if part)
    path = RESULTS / f"{stem}.json"  # merged by size and factory: runs apart keep each other's figures
    earlier = json.loads(path.read_text())["results"] if path.exists() else []
    done = {(r["size"], r["factory"]) for r in results}
    results = sorted(
        [r for r in earlier if (r["size"], r["factory"]) not in done] + results, key=lambda r: (r["size"], r["factory"])
    )
    data = json.loads((REAL / f"{args.name}.npy.json").read_text())
    save(stem, {"data": f"runs/real/{args.name}.npy ({data['rows']:,} x {data['dim']}, {data['embedding_model']})",
                "results": results})  # fmt: skip


if __name__ == "__main__":
    main()
