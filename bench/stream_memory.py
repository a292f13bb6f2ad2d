"""Peak memory of the streaming text tools as input grows tenfold.

Runs `sembed parse`, `sembed spo` and `sembed normalize`, and `sembed embed`
with each backend (torch; onnx; onnx int8, issue 16), as separate processes
on the STS-B test sentences (2758 records) and on ten copies of them (27580),
and records each process's peak resident memory. Streaming means the larger
run stays within 20% of the smaller one (issue 2). Rows of earlier runs in
the results file are kept, so `--commands` can measure a few again.

    python bench/stream_memory.py [--factor 10] [--commands parse "embed --backend onnx" ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, log, save, stsb_test_sentences, write_jsonl

# Runs one command and prints its peak RSS in KiB (ru_maxrss of the only child).
MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)
COMMANDS = (
    "parse",
    "spo",
    "normalize",
    "embed --backend torch",
    "embed --backend onnx",
    "embed --backend onnx --quantize int8",
)


def peak_rss_mb(command: str, src: Path) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, sys.executable, "-m", "sembed_cli", *command.split(), "-q", str(src)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return int(out.stdout.strip()) / 1024, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=int, default=10)
    parser.add_argument("--commands", nargs="+", default=list(COMMANDS))
    args = parser.parse_args()
    texts = stsb_test_sentences()
    earlier = RESULTS / "stream_memory.json"
    rows = json.loads(earlier.read_text()).get("commands", {}) if earlier.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        small = write_jsonl(Path(tmp) / "small.jsonl", texts)
        large = write_jsonl(Path(tmp) / "large.jsonl", texts * args.factor)
        for command in args.commands:
            small_mb, small_s = peak_rss_mb(command, small)
            large_mb, large_s = peak_rss_mb(command, large)
            growth = large_mb / small_mb - 1
            rows[command] = {
                "records_small": len(texts),
                "records_large": len(texts) * args.factor,
                "peak_mb_small": round(small_mb, 1),
                "peak_mb_large": round(large_mb, 1),
                "growth": round(growth, 3),
                "within_20_percent": growth <= 0.20,
                "seconds_small": round(small_s, 1),
                "seconds_large": round(large_s, 1),
            }
            log(
                f"{command:40s} {small_mb:7.1f} MB for {len(texts):6d} records, {large_mb:7.1f} MB for "
                f"{len(texts) * args.factor:6d} ({growth:+.1%}; {large_s:.0f}s)"
            )
    log(f"written {save('stream_memory', {'target_growth': 0.20, 'commands': rows})}")


if __name__ == "__main__":
    main()
