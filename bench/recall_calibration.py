"""Does the breadth `sembed index --recall R` chooses give recall@10 >= R on real queries? Proxy against real, for a
graph (hnsw) and inverted lists (ivfpq), at R = 0.95 and 0.99 (issue 36, sembed_cli/indexes/recall.py).

The indexes are bench/ann_real.py's sembed builds over 953,433 MiniLM window vectors (--work, its sembed-NAME-hnsw
and sembed-NAME-ivfpq); for each, recall.py's own measurement is run again as a build runs it (its seeded blended
queries, exact truth over all rows, the ladder aimed at recall.aimed(R)), and the index is then searched at the
breadth it chose with 1,000 STS-B/SICK sentences (queries from outside the corpus) against their exact top 10.

    python bench/recall_calibration.py [--name minilm] [--work runs/ann_real] [--threads 2]
Result: bench/results/recall_calibration.json.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from ann_real import REAL, Truth, arguments, load_corpus, load_queries
from common import log, save

from sembed_cli.indexes import recall
from sembed_cli.indexes.vector_file import VectorFile

TARGETS = (0.95, 0.99)


def raw_vectors(name: str, work: Path) -> VectorFile:
    """NAME.npy's unit vectors as the float32 file a build measures from (made once under --work)."""
    path = work / f"{name}.unit.f32"
    if not path.exists():
        corpus = load_corpus(name)
        corpus.tofile(path.with_suffix(".tmp"))
        path.with_suffix(".tmp").rename(path)
    return VectorFile(path, int(np.load(REAL / f"{name}.npy", mmap_mode="r").shape[1]), "float32")


def calibrate(directory: Path, raw: VectorFile, count: int, sample: recall.Sample, real, truth: Truth) -> list:
    import faiss

    index = faiss.read_index(str(directory / "index.faiss"))
    kept_file = directory / "vectors.f16"
    kept = VectorFile(kept_file, raw.dim, "float16") if kept_file.exists() else None
    view = recall.view_of(index, raw, kept, count)

    def vectors(rows: np.ndarray) -> np.ndarray:
        return raw.read(np.asarray(rows, dtype=np.int64), count)

    rows = []
    for target in TARGETS:
        measured = recall.measure_index(view, sample, vectors, target, None)["recall"]
        found = view.search(real, recall.K)[1]
        rows.append(
            {
                "target": target,
                "aimed": measured["aimed"],
                recall.NAMES[measured["parameter"]]: measured["breadth"],
                "proxy_recall": measured["measured"],
                "real_recall": round(truth.recall(found), 4),
                "met_on_proxy": measured["met"],
                "proxy_curve": measured["curve"],
            }
        )
        log(f"  {directory.name}: { ({k: v for k, v in rows[-1].items() if k != 'proxy_curve'}) }")
    return rows


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    import faiss

    faiss.omp_set_num_threads(args.threads)
    raw = raw_vectors(args.name, args.work)
    count = raw.rows_on_disk()
    corpus = raw.matrix(count)
    real, truth_rows = load_queries(args.name, args.queries, args.work)
    truth = Truth(corpus, real, truth_rows)

    def chunks():
        for first, block in raw.chunks(count, size=recall.BLOCK):
            yield np.arange(first, first + len(block), dtype=np.int64), block

    log(f"exact truth of {recall.SAMPLE} blended queries over {count:,} rows ...")
    sample = recall.draw(np.arange(count, dtype=np.int64), args.seed, lambda rows: raw.read(rows, count), chunks)
    assert sample is not None
    results = {}
    for kind in ("hnsw", "ivfpq"):
        results[kind] = calibrate(args.work / f"sembed-{args.name}-{kind}", raw, count, sample, real, truth)
    save(
        "recall_calibration",
        {
            "how": __doc__.split("\n\n")[1],
            "data": {"corpus": f"{REAL}/{args.name}.npy", "rows": count, "real_queries": len(real)},
            "threads": args.threads,
            "ivf_miss_share": recall.IVF_MISS_SHARE,
            "method": f"proxy: {recall.SAMPLE} queries unit(x + {recall.BLEND} y) of drawn rows, seed {args.seed}",
            "indexes": results,
        },
    )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    sys.exit(main())
