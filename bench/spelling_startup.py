"""What `sembed search --spelling` costs to start, with its index of the names' words kept in sembed's cache
(indexes/spelling_words.py) and without (issue 36, item 6: POI lookup among many names).

The indexes: bench/poi_scale.py's, the gazetteer's 202,179 POI names (1x) and with 10x as many distractor names
(2,223,969; its HNSW index, `--type hnsw`), the POI reproduction's stage-2 character model. Each round runs, per
index and interleaved (the order turned each round), one `sembed search -q --spelling --index DIR` process over the
first QUERIES of the benchmark's queries, three ways: "in memory" (the cache unwritable: every process reads
every name and indexes their words, as before the cache), "first" (an empty cache: the same, and the entry kept)
and "kept" (the entry the "first" process kept, mapped). Wall and CPU seconds from start to exit, peak RSS
(wait4: the memory-mapped index counts in it as its pages are read), the answers compared. The page cache holds
the index files (a warm start, as a searched index is).

    python bench/spelling_startup.py --index runs/poi_scale/index-1x runs/poi_scale/index-10x-hnsw [--rounds 3]
Results: bench/results/spelling_startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, log, save

sys.path.insert(0, str(ROOT))
from sembed_cli.io.checksums import file_checksum

QUERIES = 200
WAYS = ("in memory", "first", "kept")


def run_search(index: Path, queries: Path, env: dict) -> tuple[dict, bytes]:
    """One search process: its figures and its output."""
    command = [sys.executable, "-m", "sembed_cli", "search", "-q", "--spelling", "--index", str(index)]
    started = time.perf_counter()
    with open(queries, "rb") as given:
        process = subprocess.Popen(
            [*command, "--device", "cpu"],
            stdin=given,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"search --spelling over {index} failed")
    figures = {"wall_s": took, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}
    return figures, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, nargs="+", required=True)
    parser.add_argument("--queries", type=Path, default=ROOT / "runs" / "poi_scale" / "queries.jsonl")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="spelling-startup-"))
    queries = scratch / "queries.jsonl"
    with open(args.queries) as given:
        lines = [json.dumps({"text": json.loads(line)["text"]}) for line, _ in zip(given, range(QUERIES))]
    queries.write_text("\n".join(lines) + "\n")
    (scratch / "a-file").write_text("")
    base = {**os.environ, "PYTHONPATH": str(ROOT), "SEMBED_THREADS": str(args.threads)}
    figures: dict[str, dict[str, list[dict]]] = {str(i): {way: [] for way in WAYS} for i in args.index}
    same = True
    for index in args.index:  # the page cache holds the index before the first round
        for file in index.iterdir():
            if file.suffix in (".faiss", ".sqlite", ".f16", ".f32"):
                file_checksum(file)
    for round_ in range(args.rounds):
        for index in args.index[:: 1 if round_ % 2 else -1]:
            cache = scratch / f"cache-{round_}-{index.name}"
            shutil.rmtree(cache, ignore_errors=True)
            outputs = {}
            for way in WAYS:
                where = scratch / "a-file" / "cache" if way == "in memory" else cache  # unwritable: under a file
                measured, outputs[way] = run_search(index, queries, {**base, "SEMBED_CACHE": str(where)})
                figures[str(index)][way].append(measured)
            same &= outputs["in memory"] == outputs["first"] == outputs["kept"]
            log(
                f"round {round_ + 1} {index.name}: "
                + ", ".join(f"{way} {figures[str(index)][way][-1]['wall_s']:.2f} s" for way in WAYS)
            )
    result = {
        "queries": QUERIES,
        "threads": args.threads,
        "rounds": args.rounds,
        "same_answers": same,
        "indexes": {},
    }
    for index in args.index:
        with open(index / "sembed.json") as f:
            metadata = json.load(f)
        (entry,) = (scratch / f"cache-{args.rounds - 1}-{index.name}" / "spelling").iterdir()
        result["indexes"][index.name] = {
            "names": metadata["count"],
            "type": metadata["settings"].get("factory"),
            "kept_entry_mb": round(sum(f.stat().st_size for f in entry.iterdir()) / 1e6, 1),
            "median": {
                way: {
                    key: round(statistics.median(run[key] for run in runs), 2)
                    for key in ("wall_s", "cpu_s", "peak_rss_mb")
                }
                for way, runs in figures[str(index)].items()
            },
            "runs": {
                way: [{key: round(value, 2) for key, value in run.items()} for run in runs]
                for way, runs in figures[str(index)].items()
            },
        }
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    shutil.rmtree(scratch, ignore_errors=True)
    log(json.dumps({name: figures["median"] for name, figures in result["indexes"].items()}, indent=1))
    save("spelling_startup", result)


if __name__ == "__main__":
    main()
