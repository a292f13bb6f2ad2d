"""Does the breadth `sembed index --recall R` chooses give recall@10 >= R on real queries? Proxy against real, on
sembed indexes built over real vectors, at R = 0.9, 0.95 and 0.99 (issue 36, sembed_cli/indexes/recall.py).

The indexes are sembed directories: by default bench/ann_real.py's builds over 953,433 MiniLM window vectors
(--work, its sembed-NAME-hnsw and sembed-NAME-ivfpq); --index names others (the 10M static windows' build,
--name static10m). For each, recall.py's own measurement is run again as an update runs it (its seeded held-out
queries, exact truth over every row from the index's own vectors, the kept vectors read row by row, the ladder
aimed at recall.aimed(R), and on re-ranked inverted lists the re-rank depths of recall.cheapest_depth), and the
index as loaded is then searched at the breadth and depth it chose with 1,000 STS-B/SICK sentences (queries from
outside the corpus) against their exact top 10, timed (best of three batched searches: queries/s). Every breadth the
ladder measured is searched with the real queries too (`real_curve`, at the depth chosen), so proxy and real can be
compared breadth by breadth: the share of real's misses the proxy misses is what recall.MISS_SHARE is set from.

    python bench/recall_calibration.py [--name minilm] [--work runs/ann_real] [--threads 2] [--index DIR ...]
Result: bench/results/recall_calibration[_NAME].json (minilm: no suffix); the entries of indexes not measured this
time are kept from it ("kept"; "dates" says when each was measured).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from ann_real import Truth, arguments, load_corpus, load_queries
from common import RESULTS, log, save

from sembed_cli.indexes import recall
from sembed_cli.indexes.directory import VectorIndex

TARGETS = (0.9, 0.95, 0.99)


def best_of_three(search) -> float:
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        search()
        timings.append(time.perf_counter() - started)
    return min(timings)


def calibrate(directory: Path, real: np.ndarray, truth: Truth, seed: int) -> list[dict]:
    """recall.py's measurement of the index at `directory` for each of TARGETS, against the real queries."""
    loaded = VectorIndex.load(directory)
    log(f"{directory.name}: exact truth of {recall.SAMPLE} held-out queries over {loaded.count:,} rows ...")
    view, vectors, sample = recall.drawn_from(loaded, seed)  # as an update measures it
    assert sample is not None
    setting = recall.parameter(loaded.index)[0]
    rows = []
    for target in TARGETS:
        settings = recall.measure_index(view, sample, vectors, target, None)
        measured = settings["recall"]
        recall.rerank_at(loaded, view.rerank_factor)

        def real_at(breadth: int) -> float:
            recall.set_breadth(loaded.index, setting, breadth)
            return round(truth.recall(loaded.search(real, recall.K)[1]), 4)

        real_curve = [[b, real_at(b)] for b, _ in measured["curve"]]
        recall.set_breadth(loaded.index, setting, measured["breadth"])
        seconds = best_of_three(lambda: loaded.search(real, recall.K))
        rows.append(
            {
                "target": target,
                "aimed": measured["aimed"],
                recall.NAMES[setting]: measured["breadth"],
                **({"rerank_depth": view.rerank_factor * recall.K} if "rerank_factor" in measured else {}),
                "proxy_recall": measured["measured"],
                "real_recall": dict(real_curve)[measured["breadth"]],
                "real_queries_per_second": round(len(real) / seconds),
                "met_on_proxy": measured["met"],
                "proxy_curve": measured["curve"],
                "real_curve": real_curve,
                **({"depths_tried": measured["depths"]} if "depths" in measured else {}),
                "measure_seconds": measured["seconds"],
            }
        )
        log(f"  {directory.name}: { ({k: v for k, v in rows[-1].items() if not k.endswith('curve')}) }")
    loaded.close()
    return rows


def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, nargs="*", help="sembed index directories (default: ann_real's builds)")
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(args.threads)
    directories = args.index or [args.work / f"sembed-{args.name}-{kind}" for kind in ("hnsw", "ivfpq")]
    real, truth_rows = load_queries(args.name, args.queries, args.work)
    truth = Truth(load_corpus(args.name), real, truth_rows)
    results = {directory.name: calibrate(directory, real, truth, args.seed) for directory in directories}
    name = "recall_calibration" + ("" if args.name == "minilm" else f"_{args.name}")
    earlier = json.loads((RESULTS / f"{name}.json").read_text()) if (RESULTS / f"{name}.json").exists() else {}
    kept = {key: rows for key, rows in earlier.get("indexes", {}).items() if key not in results}
    dates = {key: earlier.get("dates", {}).get(key, earlier.get("date")) for key in kept}
    save(
        name,
        {
            "how": __doc__.split("\n\n")[1],
            "data": {"corpus": f"runs/real/{args.name}.npy", "real_queries": len(real)},
            "threads": args.threads,
            "miss_share": recall.MISS_SHARE,
            "method": f"proxy: {recall.SAMPLE} queries unit(x + {recall.NOISE} r), a drawn row and a random unit "
            f"direction, seed {args.seed}",
            "indexes": {**kept, **results},
            "dates": {**dates, **{key: time.strftime("%Y-%m-%d %H:%M") for key in results}},
            "kept": sorted(kept),
        },
    )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    sys.exit(main())
