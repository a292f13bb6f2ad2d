"""The Python API against the command line on the same job (issue 41): sentences/s, interleaved.

Contenders, each a process of its own embedding the same 10,566 distinct STS-B train sentences (JSONL records)
with the packaged all-MiniLM-L6-v2 on the CPU, writing JSONL with the vectors to stdout as `sembed embed` does:

  command            `sembed embed -q FILE`
  api_embed_records  `sembed_cli.api.embed_records(RecordSource(FILE), load_model())`, each record written
  api_embed          `sembed_cli.api.embed(texts, load_model())` a window of 1,000 texts at a time, each row written

Run in turns (command, API, API, command, ...) so that a load that comes and goes on the machine falls on each
alike; threads pinned (SEMBED_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS). Sentences/s counts from the first output
on (steady state); start-up is process start to first output; peak RSS from wait4. Aim: the API at >= 0.95x the
command's sentences/s.

    python bench/api_speed.py [--threads 1] [--repeats 2] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common import cpu_description, log, save, time_process, write_jsonl
from embed_speed import WINDOW, stsb_train_sentences

API_RECORDS = """
import sys
import orjson
import sembed_cli as sembed
from sembed_cli.io import RecordSource

model = sembed.load_model(device="cpu")
out = sys.stdout.buffer
for record in sembed.embed_records(RecordSource(sys.argv[1]), model):
    out.write(orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY) + b"\\n")
"""

API_TEXTS = """
import sys
import orjson
import sembed_cli as sembed
from sembed_cli.io import RecordSource

model = sembed.load_model(device="cpu")
texts = [record["text"] for record in RecordSource(sys.argv[1])]
out = sys.stdout.buffer
for start in range(0, len(texts), 1000):
    for row in sembed.embed(texts[start : start + 1000], model):
        out.write(orjson.dumps(row, option=orjson.OPT_SERIALIZE_NUMPY) + b"\\n")
"""


def contenders(src: Path) -> dict[str, list[str]]:
    sembed = str(Path(sys.executable).with_name("sembed"))
    return {
        "command": [sembed, "embed", "-q", "--device", "cpu", str(src)],
        "api_embed_records": [sys.executable, "-c", API_RECORDS, str(src)],
        "api_embed": [sys.executable, "-c", API_TEXTS, str(src)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None, help="fewer sentences (a smoke test; say so)")
    args = parser.parse_args()
    texts = stsb_train_sentences()[: args.limit]
    threads = str(args.threads)
    env = {**os.environ, "SEMBED_THREADS": threads, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        src = write_jsonl(Path(tmp) / "stsb.jsonl", texts)
        commands = contenders(src)
        for repeat in range(args.repeats):
            order = list(commands) if repeat % 2 == 0 else list(reversed(commands))
            for name in order:
                result = time_process(name, commands[name], env, len(texts), WINDOW)
                runs.setdefault(name, []).append(result)
                rate, start = result["sentences_per_s"], result["startup_to_first_record_s"]
                log(f"{name}: {rate} sentences/s, start-up {start} s")
    best = {name: max(run["sentences_per_s"] for run in found) for name, found in runs.items()}
    result = {
        "what": "sembed embed against the Python API on the same records and model (all-MiniLM-L6-v2, torch, CPU)",
        "sentences": len(texts),
        "smoke_test": args.limit is not None,
        "threads": args.threads,
        "repeats": args.repeats,
        "load_average_at_start": [round(x, 2) for x in load_before],
        "runs": runs,
        "best_sentences_per_s": best,
        "api_vs_command": {name: round(best[name] / best["command"], 3) for name in best if name != "command"},
        **cpu_description(),
    }
    log(f"API / command: {result['api_vs_command']}")
    save("api_speed" if args.limit is None else "api_speed_smoke", result)


if __name__ == "__main__":
    main()
