"""Queries per second of `sembed search` against raw FAISS on the same vectors, and recall@10 of perturbed names.

The index is one `sembed index` built over all POI names (examples/
poi_reproduction.sh leaves it in runs/poi/poi-index with KEEP=1; --index).
Queries are real POI names of the index, perturbed (a dropped suffix such as
"County", a typo, a missing word: examples/poi_report.py), embedded once with
the index's model. Timed on the CPU in one run, best of --repeats:

- raw FAISS: `index.search` on the query matrix, --batch-size queries a call;
- sembed search on the same vectors: JSONL query records with the embedding
  in, records with their 10 neighbours out (parsing, checks and writing
  included), the same batch size;
- sembed search on the texts: embedding the queries with the model included.

Recall@10: the perturbed name's original among the 10 neighbours (compared
as names: accents, case and blanks ignored). Targets (issue 7): over 1,000
queries/s batched, at least 0.9 of raw FAISS.

    python bench/search_speed.py [--index runs/poi/poi-index] [--queries 5000] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, log, save

sys.path.insert(0, str(ROOT / "examples"))
from poi_report import perturb_one

from sembed_cli.indexes.directory import VectorIndex
from sembed_cli.indexes.entries import unit_rows
from sembed_cli.indexes.search import search_records
from sembed_cli.io import RecordSink, RecordSource
from sembed_cli.models import sentence_models
from sembed_cli.readers.gazetteer import name_key


def queries(index: VectorIndex, n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    texts = index.texts("text")
    for row in rng.sample(range(len(texts)), len(texts)):
        if len(out) >= n:
            break
        text = texts[row]
        made = perturb_one(text, rng) if text else None
        if made and name_key(made[1]) != name_key(text):
            out.append({"text": made[1], "perturbation": made[0], "target": text})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default=str(ROOT / "runs" / "poi" / "poi-index"))
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=1000, help="queries per FAISS call (search's default)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    import faiss
    import orjson
    import torch

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    index = VectorIndex.load(args.index)
    model = sentence_models.load(index.metadata.get("model_path") or index.metadata["model"], "cpu")
    rows = queries(index, args.queries, args.seed)
    start = time.perf_counter()
    vectors = model.encode([r["text"] for r in rows], batch_size=256, convert_to_numpy=True, show_progress_bar=False)
    embed_s = time.perf_counter() - start
    log(
        f"{index.index.ntotal} vectors ({index.metadata['type']}, {index.dimension} d), {len(rows)} queries, "
        f"{args.threads} thread(s), load average {os.getloadavg()[0]:.2f}"
    )

    def raw() -> float:
        start = time.perf_counter()
        for i in range(0, len(vectors), args.batch_size):
            index.index.search(unit_rows(vectors[i : i + args.batch_size]), 10)
        return time.perf_counter() - start

    def sembed_run(src: Path, dst: Path) -> float:
        start = time.perf_counter()
        with RecordSink(str(dst), flush_every=args.batch_size) as sink:
            sink.write_all(
                search_records(RecordSource(str(src)), index, model, 10, "text", "embedding", args.batch_size)
            )
        return time.perf_counter() - start

    with tempfile.TemporaryDirectory() as tmp:
        with_vectors, with_texts = Path(tmp) / "vectors.jsonl", Path(tmp) / "texts.jsonl"
        with_vectors.write_bytes(
            b"".join(
                orjson.dumps({**r, "embedding": v}, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
                for r, v in zip(rows, vectors)
            )
        )
        with_texts.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        out = Path(tmp) / "out.jsonl"
        times = {"raw_faiss": [], "sembed_search_vectors": [], "sembed_search_texts": []}
        for n in range(args.repeats):
            times["raw_faiss"].append(raw())
            times["sembed_search_vectors"].append(sembed_run(with_vectors, out))
            times["sembed_search_texts"].append(sembed_run(with_texts, out))
            log(f"run {n + 1}: " + ", ".join(f"{k} {v[-1]:.3f}s" for k, v in times.items()))
        found = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    recall: dict[str, list[bool]] = {}
    for r in found:
        hit = any(name_key(n["text"]) == name_key(r["target"]) for n in r["neighbors"][:10])
        recall.setdefault(r["perturbation"], []).append(hit)
        recall.setdefault("all", []).append(hit)
    qps = {k: round(len(rows) / min(v), 1) for k, v in times.items()}
    result = {
        "index": str(args.index),
        "index_type": index.metadata["type"],
        "vectors": index.index.ntotal,
        "dimension": index.dimension,
        "model": index.metadata["model"],
        "queries": len(rows),
        "k": 10,
        "batch_size": args.batch_size,
        "threads": args.threads,
        "queries_per_s": qps,
        "ratio_sembed_to_raw_faiss": round(qps["sembed_search_vectors"] / qps["raw_faiss"], 3),
        "target_queries_per_s": 1000,
        "target_ratio": 0.9,
        "query_embedding_queries_per_s": round(len(rows) / embed_s, 1),
        "recall_at_10": {k: {"n": len(v), "recall": round(sum(v) / len(v), 4)} for k, v in recall.items()},
        "paper_seconds_per_query": 3.6,
        "runs_s": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    for name, value in qps.items():
        log(f"{name:24s} {value:10.1f} queries/s")
    log(f"ratio sembed/raw FAISS  {result['ratio_sembed_to_raw_faiss']:10.3f} (target >= 0.9)")
    log("recall@10: " + ", ".join(f"{k} {v['recall']:.3f} (n {v['n']})" for k, v in result["recall_at_10"].items()))
    log(f"written {save('search_speed', result)}")


if __name__ == "__main__":
    main()
