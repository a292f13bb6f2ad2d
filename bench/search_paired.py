"""sembed's search against FAISS's own on the same codes, paired: one process, the same 1,000 real queries, the
engines timed in turn round after round, so that a shared machine's drift falls on each alike (issue 36, item 3:
sembed's payloads, checks and re-rank may cost at most 10% of FAISS's time at the same recall).

The data are bench/ann_real.py's (runs/real: 953,433 MiniLM windows, STS-B/SICK queries, exact truth); the sembed
index is one ann_real built (`--index`, e.g. runs/ann_real/sembed-minilm-auto, the fast-scan lists auto chose).
FAISS's peer is `--peer` (default IVF4096,PQ192x4fs: the same codes under a flat quantiser) with its own RFlat
(IndexRefineFlat: exact cosine of the top 10 k from float32 rows in RAM), trained as ann_real trains it. At each
nprobe, queries/s of one batch of all queries, median and best of --rounds:
- faiss-rflat: FAISS's search, re-ranked by RFlat;
- sembed-numpy-rerank: VectorIndex.search re-ranking in numpy (gathered float16 rows decoded to float32, as every
  search did until 2026-11-28) and the store read 500 rows a statement, plus the neighbours' payloads;
- sembed: VectorIndex.search (FAISS's refine over the mapped float16 rows) plus the neighbours' payloads;
- sembed-search: VectorIndex.search alone;
- sembed-compare: with --compare DIR, `sembed` on another index of the same data (a store of another layout:
  each row's check in a table of its own, as stores written before 2026-11-28 keep it).

    python bench/search_paired.py --index runs/ann_real/sembed-minilm-auto [--compare DIR] [--name minilm] \
        [--rounds 7] [--nprobes 256,512,1024] [--threads 2] [--out search_paired_minilm]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from ann_real import REAL, K, Truth
from common import log, save


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--name", default="minilm")
    parser.add_argument("--peer", default="IVF4096,PQ192x4fs")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--nprobes", default="256,512,1024")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import faiss

    from sembed_cli.indexes import kinds
    from sembed_cli.indexes import recall as measured
    from sembed_cli.indexes.directory import VectorIndex

    faiss.omp_set_num_threads(args.threads)
    corpus = np.load(REAL / f"{args.name}.npy", mmap_mode="r")
    queries = np.load(REAL / f"{args.name}.queries.npy")[: args.queries]
    truth = Truth(corpus, queries, np.load(REAL / f"{args.name}.truth.npy")[: args.queries])

    peer = faiss.index_factory(corpus.shape[1], f"{args.peer},RFlat", faiss.METRIC_INNER_PRODUCT)
    lists = faiss.downcast_index(peer.base_index)
    size = kinds.training_size(lists, len(corpus))
    chosen = np.sort(np.random.default_rng(args.seed).choice(len(corpus), size, replace=False))
    started = time.process_time()
    kinds.train(lists, np.asarray(corpus[chosen]), args.seed)
    peer.is_trained = True
    for start in range(0, len(corpus), 100_000):
        peer.add(np.asarray(corpus[start : start + 100_000]))
    log(f"FAISS {args.peer},RFlat built in {time.process_time() - started:.1f} CPU-s")

    sembed = VectorIndex.load(args.index)
    assert sembed.vectors is not None, "the sembed index re-ranks from kept vectors"
    store = sembed.store
    exact_index, chunk = sembed.vectors.exact_index, store.chunk
    depth = sembed.rerank_factor

    def faiss_rflat(batch):
        within = faiss.SearchParametersIVF(nprobe=lists.nprobe)  # type: ignore[call-arg]
        return peer.search(batch, K, params=faiss.IndexRefineSearchParameters(k_factor=depth, base_index_params=within))

    def with_payloads(batch):
        rows = sembed.search(batch, K)[1]
        sembed.records(rows.ravel())
        return None, rows

    def numpy_rerank(batch):
        sembed.vectors.exact_index, store.chunk = lambda rows: None, 500
        try:
            return with_payloads(batch)
        finally:
            sembed.vectors.exact_index, store.chunk = exact_index, chunk

    engines = {
        "faiss-rflat": faiss_rflat,
        "sembed-numpy-rerank": numpy_rerank,
        "sembed": with_payloads,
        "sembed-search": lambda batch: sembed.search(batch, K),
    }
    other = VectorIndex.load(args.compare) if args.compare is not None else None
    if other is not None:

        def compared(batch):
            rows = other.search(batch, K)[1]
            other.records(rows.ravel())
            return None, rows

        engines["sembed-compare"] = compared
    points = []
    for nprobe in (int(n) for n in args.nprobes.split(",")):
        lists.nprobe = nprobe
        for searched in (sembed, other):
            if searched is not None:
                measured.set_breadth(searched.index, "nprobe", nprobe)
        recall = {name: truth.recall(engine(queries)[1]) for name, engine in engines.items()}
        seconds: dict[str, list[float]] = {name: [] for name in engines}
        for _ in range(args.rounds):
            for name, engine in engines.items():
                started = time.perf_counter()
                engine(queries)
                seconds[name].append(time.perf_counter() - started)
        point = {
            "nprobe": nprobe,
            **{
                name: {
                    "recall": round(recall[name], 4),
                    "queries_per_second": round(len(queries) / float(np.median(taken))),
                    "best_queries_per_second": round(len(queries) / min(taken)),
                }
                for name, taken in seconds.items()
            },
        }
        rflat = point["faiss-rflat"]["queries_per_second"]
        for name in engines:
            point[name]["of_faiss"] = round(point[name]["queries_per_second"] / rflat, 3)
        log(f"nprobe {nprobe}: " + ", ".join(f"{n} {point[n]['queries_per_second']}" for n in engines))
        points.append(point)
    out = args.out or f"search_paired_{args.name}"
    path = save(
        out,
        {
            "how": __doc__,
            "index": str(args.index),
            "store_layouts": {"index": store.checks, "compare": other.store.checks if other is not None else None},
            "factory": sembed.settings.get("factory"),
            "peer": f"{args.peer},RFlat",
            "rerank_depth": depth * K,
            "queries": len(queries),
            "threads": args.threads,
            "rounds": args.rounds,
            "points": points,
        },
    )
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
