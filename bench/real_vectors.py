"""Real vectors for the search benchmarks, made once and kept under runs/real/ (ignored).

Issue 36 found that the synthetic near-duplicates of bench/index_scale.py flatter every index: real text is
harder. This script makes the real data the ANN, hybrid, re-rank and dedup benchmarks share:

- windows.jsonl: overlapping 12-word windows (stride 3) of the shared corpora abc, state_union, inaugural,
  webtext and movie_reviews (about 950,000), as records {id, doc_id, text};
- queries.jsonl: STS-B and SICK test sentences (distinct, seeded order), which are not in the corpus;
- MODEL.npy / MODEL.queries.npy: their vectors through `sembed embed --npy` (default: the packaged MiniLM,
  ONNX int8, 384-d);
- MODEL.truth.npy: the exact top-100 neighbours of every query over all windows (inner product of the normalised
  vectors), computed once.

The 10M set of issue 36 (windows of several lengths at stride 1, through the static model) is the same recipe with
`--windows 10m`: windows10m.jsonl holds every window of 8, 12, 16 and 24 words at stride 1 (about 11.4 million),
and its truth is over the first 2,000 queries:

    python bench/real_vectors.py --model runs/static/minilm-static --name static10m --windows 10m --truth-queries 2000

Usage: python bench/real_vectors.py [--model M] [--backend onnx --quantize int8] [--name minilm] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import time
from pathlib import Path

import numpy as np
import orjson
from common import CONVERT, DATA, ROOT, log, stsb_test_sentences

OUT = ROOT / "runs" / "real"
WINDOW_CORPORA = ("abc", "state_union", "inaugural", "webtext", "movie_reviews")
WINDOWS = {"1m": ((12,), 3), "10m": ((8, 12, 16, 24), 1)}  # --windows: (window lengths in words, stride)
TRUTH_K = 100


def sick_test_sentences() -> list[str]:
    lines = (DATA / "sick" / "SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()[1:]
    return [s for line in lines for s in line.split("\t")[1:3]]


def make_windows(path: Path, lengths: tuple[int, ...] = (12,), stride: int = 3) -> int:
    """Windows of each of `lengths` words at `stride` over each document's sentences, joined (ids doc:start, and
    doc:start+length for lengths past the first)."""
    count = 0
    with open(path, "wb") as out:
        for kind, folder, extra in CONVERT:
            if folder not in WINDOW_CORPORA:
                continue
            command = [str(ROOT / ".venv/bin/sembed"), "convert", "-q", "--from", kind, str(DATA / "corpora" / folder)]
            converted = subprocess.run(
                [*command, *extra],
                capture_output=True,
                check=True,
            ).stdout
            documents: dict[str, list[str]] = {}
            for line in converted.splitlines():
                record = orjson.loads(line)
                documents.setdefault(f"{folder}/{record['doc_id']}", []).extend(record["text"].split())
            for doc_id, words in documents.items():
                for length in lengths:
                    suffix = "" if length == lengths[0] else f"+{length}"  # the 1M set's ids as they were
                    for start in range(0, max(len(words) - length, 0) + 1, stride):
                        text = " ".join(words[start : start + length])
                        record = {"id": f"{doc_id}:{start}{suffix}", "doc_id": doc_id, "text": text}
                        out.write(orjson.dumps(record) + b"\n")
                        count += 1
    return count


def make_queries(path: Path, seed: int = 0) -> int:
    seen = dict.fromkeys(s.strip() for s in stsb_test_sentences() + sick_test_sentences())
    queries = [q for q in seen if q]
    random.Random(seed).shuffle(queries)
    with open(path, "wb") as out:
        for i, text in enumerate(queries):
            out.write(orjson.dumps({"id": f"q{i}", "text": text}) + b"\n")
    return len(queries)


def embed(source: Path, npy: Path, args) -> None:
    if npy.exists():
        return
    command = [str(ROOT / ".venv/bin/sembed"), "embed", str(source), "--npy", str(npy), "-o", "/dev/null", "--force"]
    model = str(Path(args.model).resolve()) if args.model and Path(args.model).is_dir() else args.model
    command += ["-m", model] if model else []  # a directory by its absolute path: FILE.json names it so
    # the packaged MiniLM on ONNX int8 unless told otherwise; a static model takes neither option
    backend, quantize = args.backend, args.quantize
    if not args.model:
        backend, quantize = backend or "onnx", quantize or "int8"
    command += (["--backend", backend] if backend else []) + (["--quantize", quantize] if quantize else [])
    env = {**os.environ, "SEMBED_THREADS": str(args.threads)}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env)
    log(f"embedded {source.name} into {npy.name} in {time.perf_counter() - started:.0f} s")


def exact_truth(corpus: np.ndarray, queries: np.ndarray, k: int = TRUTH_K, block: int = 100_000) -> np.ndarray:
    """The k nearest rows of `corpus` for each query by inner product, exactly: FAISS's flat search over blocks
    of the corpus, merged (memory stays at one block, whatever the corpus)."""
    import faiss

    merged = faiss.ResultHeap(len(queries), k)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    for start in range(0, len(corpus), block):
        flat = faiss.IndexFlatIP(corpus.shape[1])
        flat.add(np.ascontiguousarray(corpus[start : start + block], dtype=np.float32))
        scores, ids = flat.search(queries, k)
        merged.add_result(-scores, np.where(ids >= 0, ids + start, -1))  # ResultHeap keeps the smallest
    merged.finalize()
    return merged.I


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="the model to embed with (default: the packaged MiniLM)")
    parser.add_argument("--backend", default=None, help="embed's --backend (default for the packaged MiniLM: onnx)")
    parser.add_argument("--quantize", default=None, help="embed's --quantize (default for the packaged MiniLM: int8)")
    parser.add_argument("--name", default="minilm", help="the file name stem of this model's vectors")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--windows", choices=sorted(WINDOWS), default="1m", help="the corpus: 1m or 10m windows")
    parser.add_argument("--truth-queries", type=int, default=None, help="truth for the first N queries (default all)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    windows = OUT / ("windows.jsonl" if args.windows == "1m" else f"windows{args.windows}.jsonl")
    queries = OUT / "queries.jsonl"
    if not windows.exists():
        partial = windows.with_suffix(".partial")  # renamed when whole: a cut-short run starts again
        log(f"{make_windows(partial, *WINDOWS[args.windows])} windows in {windows}")
        partial.rename(windows)
    if not queries.exists():
        log(f"{make_queries(queries)} queries in {queries}")
    embed(queries, OUT / f"{args.name}.queries.npy", args)
    embed(windows, OUT / f"{args.name}.npy", args)
    truth = OUT / f"{args.name}.truth.npy"
    if not truth.exists():
        corpus = np.load(OUT / f"{args.name}.npy", mmap_mode="r")
        found = exact_truth(corpus, np.load(OUT / f"{args.name}.queries.npy")[: args.truth_queries])
        np.save(truth, found)
        log(f"exact top-{TRUTH_K} of {len(found)} queries over {len(corpus)} vectors in {truth}")


if __name__ == "__main__":
    main()
