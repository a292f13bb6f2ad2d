"""Text queries on ONNX Runtime or on torch: what `sembed search` pays to embed its query texts, by the backend.

An index whose texts torch embedded in fp32 is queried on ONNX Runtime in fp32 where it can run the model
(sembed_cli/indexes/query_encoder.py); --backend torch asks for torch as before. For each index, each contender
its own process, interleaved --repeats times (best of them kept, every run listed), --threads pinned:

- one query (`search --query TEXT -k 10`): process start to its answer, CPU seconds, peak RSS;
- the queries as JSONL on stdin (`search -k 10`, with --spelling for the POI names): queries/s after the first
  batch, wall and CPU seconds, peak RSS;
- agreement: each query's 10 neighbours (ids, in order) the same under both, and the largest score difference.

Indexes: all-MiniLM-L6-v2 over the abc corpus's sentences (built here, under --work), 2,000 STS-B test sentences
as queries; the POI paper's names (bench/poi_scale.py's 1x index, 202,179 names, its character BERT) with its
2,000 perturbed names and --spelling, when --poi-index is there.

    python bench/query_backend.py [--repeats 3] [--threads 2] [--work runs/query_backend]
        [--poi-index runs/poi_scale/index-1x] [--poi-queries runs/poi_scale/queries.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from common import DATA, ROOT, cpu_description, log, save, stsb_test_sentences, time_process, write_jsonl

SEMBED = [sys.executable, "-m", "sembed_cli"]
CONTENDERS = {"default (onnx where it runs, else torch)": [], "--backend torch": ["--backend", "torch"]}
BATCH = 1000  # search's --batch-size: a line per query, the first batch's lines timed apart


def minilm_index(work: Path) -> Path:
    """all-MiniLM-L6-v2 over the abc corpus's sentences, built once under `work`."""
    index = work / "minilm-abc"
    if not (index / "sembed.json").is_file():
        records = work / "abc.jsonl"
        with open(records, "wb") as out:
            subprocess.run([*SEMBED, "convert", "-q", "--from", "prose", str(DATA / "corpora" / "abc")], stdout=out)
        subprocess.run([*SEMBED, "index", "-q", str(records), "-o", str(index), "--force"], check=True)
    return index


def agreement(a: list[bytes], b: list[bytes]) -> dict:
    """The share of queries with the same 10 neighbours in the same order, and the largest score difference."""
    same, largest = 0, 0.0
    for line_a, line_b in zip(a, b, strict=True):
        found_a, found_b = json.loads(line_a)["neighbors"], json.loads(line_b)["neighbors"]
        same += [n["id"] for n in found_a] == [n["id"] for n in found_b]
        scores = {n["id"]: n["score"] for n in found_b}
        largest = max([largest, *(abs(n["score"] - scores[n["id"]]) for n in found_a if n["id"] in scores)])
    return {"same_neighbours": round(same / len(a), 4), "largest_score_difference": largest}


def measure(index: Path, queries: Path, count: int, one: str, extra: list[str], env: dict, repeats: int) -> dict:
    """Each contender's one-query and batched runs over `index`, interleaved, and how their answers agree."""
    runs: dict[str, dict[str, list]] = {name: {"one_query": [], "batched": []} for name in CONTENDERS}
    answers: dict[str, list[bytes]] = {}
    for _ in range(repeats):
        for name, backend in CONTENDERS.items():
            command = [*SEMBED, "search", "--index", str(index), "-k", "10", *extra, *backend]
            runs[name]["one_query"].append(time_process(name, [*command, "--query", one], env, 1, 1))
            lines: list[bytes] = []
            batched = time_process(name, [*command, "--batch-size", str(BATCH)], env, count, BATCH, queries, lines)
            runs[name]["batched"].append(batched)
            answers[name] = lines
            log(f"{index.name} {name}: {runs[name]['one_query'][-1]} {batched}")
    result = {}
    for name, timed in runs.items():
        result[name] = {
            "one_query_best": min(timed["one_query"], key=lambda r: r["wall_s"]),
            "batched_best": max(timed["batched"], key=lambda r: r["sentences_per_s"] or 0),
            "runs": timed,
        }
    first, second = answers.values()
    result["agreement"] = agreement(first, second)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "query_backend")
    parser.add_argument("--poi-index", type=Path, default=ROOT / "runs" / "poi_scale" / "index-1x")
    parser.add_argument("--poi-queries", type=Path, default=ROOT / "runs" / "poi_scale" / "queries.jsonl")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SEMBED_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads)}
    env.pop("SEMBED_BACKEND", None)
    sentences = stsb_test_sentences()[:2000]
    result: dict = {"threads": args.threads, "repeats": args.repeats, "batch_size": BATCH, **cpu_description()}
    index = minilm_index(args.work)
    queries = write_jsonl(args.work / "stsb-queries.jsonl", sentences)
    result["minilm_abc"] = {
        "index": str(index.relative_to(ROOT)),
        "vectors": json.loads((index / "sembed.json").read_text())["count"],
        "queries": len(sentences),
        **measure(index, queries, len(sentences), sentences[0], [], env, args.repeats),
    }
    if (args.poi_index / "sembed.json").is_file():
        names = [json.loads(line)["text"] for line in args.poi_queries.read_text().splitlines()]
        poi_queries = write_jsonl(args.work / "poi-queries.jsonl", names)
        result["poi_names_1x"] = {
            "index": str(args.poi_index),
            "vectors": json.loads((args.poi_index / "sembed.json").read_text())["count"],
            "queries": len(names),
            **measure(args.poi_index, poi_queries, len(names), names[0], ["--spelling"], env, args.repeats),
        }
    log(f"written {save('query_backend', result)}")


if __name__ == "__main__":
    main()
