"""What the checksums of an index cost at `sembed search` start-up (issue 37.4: at most 20% at 1M rows).

The index: the 953,433 real windows of runs/real (all-MiniLM-L6-v2 vectors, bench/real_vectors.py) built with
`sembed index --npy runs/real/minilm.npy --type flat` (a 1.47 GB FAISS file: the largest a million 384-d vectors
make, and one a flat search memory-maps, so start-up reads none of it and the checksum's read is all extra). Its
twin shares the FAISS file and sembed.json (hard links) and has a copy of records.sqlite without the checksums in
its state: an index written before them, loaded as before. Each round times, interleaved, one `sembed search
--query TEXT -k 5` process per index and backend (torch, and ONNX int8: the quicker start-up), from its start to
its exit (the query embedded, the answer written), wall and CPU seconds; and the checksum of the FAISS file alone,
in this process (io.checksums: XXH3-64).
The page cache holds the files (a warm start, as a searched index is); a cold start reads the FAISS file from disk
once more for the hash.

    python bench/checksum_startup.py --index runs/million/flat [--rounds 5]
Results: bench/results/checksum_startup.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, log, save

sys.path.insert(0, str(ROOT))
from sembed_cli.io.checksums import DEFAULT, file_checksum

QUERY = "the prime minister denied any knowledge of the kickbacks"
BACKENDS = {"torch": [], "onnx-int8": ["--backend", "onnx", "--quantize", "int8"]}


def twin_without_checksums(index: Path) -> Path:
    twin = index.with_name(index.name + "-nosums")
    if not twin.exists():
        twin.mkdir()
        for name in ("index.faiss", "sembed.json"):
            os.link(index / name, twin / name)
        shutil.copy(index / "records.sqlite", twin / "records.sqlite")
        with sqlite3.connect(twin / "records.sqlite") as db:
            db.execute("DELETE FROM state WHERE key LIKE 'sum:%' OR key = 'metadata'")
        db.close()
    return twin


def time_search(index: Path, backend: list[str], env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system, all threads) of one search process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sembed_cli",
            "search",
            "-q",
            "--index",
            str(index),
            "--query",
            QUERY,
            "-k",
            "5",
            "--device",
            "cpu",
            *backend,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0 or '"neighbors"' not in run.stdout:
        raise SystemExit(run.stderr)
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, default=ROOT / "runs" / "million" / "flat")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--backends", nargs="+", choices=list(BACKENDS), default=list(BACKENDS))
    args = parser.parse_args()
    backends = {name: BACKENDS[name] for name in args.backends}
    twin = twin_without_checksums(args.index)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": str(args.threads),
        "OMP_NUM_THREADS": str(args.threads),
    }
    times: dict[str, list[float]] = {f"{b}/{k}": [] for b in backends for k in ("checked", "unchecked")}
    cpu: dict[str, list[float]] = {key: [] for key in times}
    hashes: list[float] = []
    hash_cpu: list[float] = []
    for name in ("index.faiss", "records.sqlite"):  # the page cache holds them before the first round
        file_checksum(args.index / name)
    for round_ in range(args.rounds):
        for backend, flags in backends.items():
            for kind, index in (("checked", args.index), ("unchecked", twin))[:: 1 if round_ % 2 else -1]:
                wall, used = time_search(index, flags, env)
                times[f"{backend}/{kind}"].append(wall)
                cpu[f"{backend}/{kind}"].append(used)
        started, used = time.perf_counter(), time.process_time()
        file_checksum(args.index / "index.faiss")
        hashes.append(time.perf_counter() - started)
        hash_cpu.append(time.process_time() - used)
        log(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
    medians = {key: statistics.median(values) for key, values in times.items()}
    cpu_medians = {key: statistics.median(values) for key, values in cpu.items()}
    size = (args.index / "index.faiss").stat().st_size
    result = {
        "index": {"rows": 953_433, "type": "flat (IDMap2,Flat)", "faiss_bytes": size},
        "threads": args.threads,
        "rounds": args.rounds,
        "seconds": times,
        "cpu_seconds": cpu,
        "median_cpu_seconds": cpu_medians,
        "hash": DEFAULT,
        "hash_cpu_seconds": hash_cpu,
        "cpu_overhead": {
            backend: cpu_medians[f"{backend}/checked"] / cpu_medians[f"{backend}/unchecked"] - 1 for backend in backends
        },
        "median_seconds": medians,
        "hash_seconds": hashes,
        "hash_gb_per_s": size / 1e9 / statistics.median(hashes),
        "overhead": {
            backend: medians[f"{backend}/checked"] / medians[f"{backend}/unchecked"] - 1 for backend in backends
        },
        "hash_share_of_startup": {
            backend: statistics.median(hashes) / medians[f"{backend}/unchecked"] for backend in backends
        },
    }
    save("checksum_startup", result)
    log(
        f"overhead: wall {result['overhead']}, CPU {result['cpu_overhead']}; "
        f"hash alone {statistics.median(hashes):.2f} s"
    )


if __name__ == "__main__":
    main()
