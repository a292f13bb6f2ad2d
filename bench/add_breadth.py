"""What rows added to a built index cost, filed at the build's add breadth against the loaded search breadth.

An inverted-list index over a graph of its cells (`IVF{n}_HNSW32,...`) files a row in the cell its graph finds
for it. A build searches the graph at `kinds.QUANTIZER_ADD_EF_SEARCH` (32) while rows go in; a loaded index
carries its search breadth (efSearch 2 x nprobe: 512 at nprobe 256). Rows an update, a fold of fresh rows or a
merge adds are filed at the build's breadth since 2026-11-29 (`kinds.adding`), so that they land where a build
over the same rows puts them. For each index given, the first --rows rows of its vectors (made unit) are added to
an empty copy of it at either breadth, interleaved for --rounds rounds: CPU-seconds (this process, user + system),
wall seconds, and where the rows went (the share filed in another cell than the other breadth files them in, and
the share outside their nearest cell by exact inner product with every centroid).

    OMP_NUM_THREADS=2 python bench/add_breadth.py runs/keyword_fill/static1m runs/build_cost/sembed.11308664 \
        --npy runs/real/static1m.npy runs/real/static10m.npy
(static1m: the 953,433 static windows, built with `sembed index runs/ann_real/static1m.records.jsonl --npy
runs/real/static1m.npy --type IVF4096_HNSW32,PQ128x4fs`; the 11,308,664 of bench/build_cost.py --name static10m,
`IVF16384_HNSW32,PQ128x4fs`; the search breadth each was built with)

Results: bench/results/add_breadth.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import log, save
from sembed_cli.indexes import kinds
from sembed_cli.indexes.directory import VectorIndex


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cells(index) -> np.ndarray:
    """The inverted list each row (by id) is in."""
    import faiss

    ivf = kinds.ivf_of(index)
    where = np.empty(index.ntotal, dtype=np.int64)
    for cell in range(ivf.nlist):
        size = ivf.invlists.list_size(cell)
        if size:  # an empty list's ids are no array
            where[faiss.rev_swig_ptr(ivf.invlists.get_ids(cell), size).copy()] = cell
    return where


def added(loaded, rows: np.ndarray, build_breadth: bool) -> tuple[dict, np.ndarray]:
    import faiss

    index = faiss.clone_index(loaded.index)
    index.reset()
    ids = np.arange(len(rows), dtype=np.int64)
    wall, cpu = time.perf_counter(), cpu_seconds()
    if build_breadth:
        with kinds.adding(index):
            index.add_with_ids(rows, ids)
    else:
        index.add_with_ids(rows, ids)
    timed = {"cpu_seconds": round(cpu_seconds() - cpu, 2), "seconds": round(time.perf_counter() - wall, 2)}
    return timed, cells(index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--npy", type=Path, nargs="+", required=True, help="the vectors each index was built from")
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    results = []
    for path, npy in zip(args.indexes, args.npy, strict=True):
        rows = np.array(np.load(npy, mmap_mode="r")[: args.rows], dtype=np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        with VectorIndex.load(path) as loaded:
            ivf, quantizer = kinds.ivf_of(loaded.index), kinds.graph_quantizer(loaded.index)
            if quantizer is None:
                raise SystemExit(f"{path}: not an inverted-list index over a graph of its cells")
            result: dict = {
                "index": str(path),
                "count": loaded.count,
                "factory": loaded.settings["factory"],
                "rows": len(rows),
                "nprobe": ivf.nprobe,
                "loaded_ef_search": quantizer.hnsw.efSearch,
                "add_ef_search": kinds.QUANTIZER_ADD_EF_SEARCH,
                "loaded": [],
                "add": [],
            }
            filed = {}
            for _ in range(args.rounds):
                for name in ("loaded", "add"):
                    timed, filed[name] = added(loaded, rows, name == "add")
                    result[name].append(timed)
                    log(f"  {path.name} at the {name} breadth: {timed}")
            centroids = ivf.quantizer.reconstruct_n(0, ivf.nlist)
            nearest = np.concatenate(
                [np.argmax(rows[i : i + 10_000] @ centroids.T, axis=1) for i in range(0, len(rows), 10_000)]
            )
            result["filed_differently"] = round(float((filed["loaded"] != filed["add"]).mean()), 5)
            result["outside_nearest_cell"] = {
                name: round(float((where != nearest).mean()), 5) for name, where in filed.items()
            }
            log(f"  {result}")
            results.append(result)
    save("add_breadth", {"threads": os.environ.get("OMP_NUM_THREADS", "all"), "results": results})


if __name__ == "__main__":
    main()
