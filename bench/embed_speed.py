"""Throughput of `sembed embed` against sentence-transformers' `encode` in the same run.

Both embed the same sentences, the distinct sentences of the STS-B train set
(columns 6 and 7), with the packaged all-MiniLM-L6-v2 on the CPU, the same
encode batch size (32) and the same torch threads. sembed's figure includes
reading the JSONL input and writing the JSONL output with the vectors as
float lists; `encode` gets all sentences in one call and its figure is the
call alone. Also timed: sembed with --npy (vectors to a .npy, row numbers in
the JSONL), and the CLI end to end (start-up and model load included). Model
loading is excluded from the in-process figures; the best of --repeats
interleaved runs counts.

Each run is timed twice: wall-clock and CPU time of this process. On a
machine shared with other jobs the wall-clock figures swing with their load;
with --threads 1 the CPU time is the work itself and gives a steady ratio.
Target (issue 3): ratio >= 0.9.

    python bench/embed_speed.py [--repeats 3] [--threads N] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, ROOT, log, save, write_jsonl

from sembed_cli import sentence_models
from sembed_cli.commands.embed import CPU_ENCODE_BATCH
from sembed_cli.io import RecordSink, RecordSource, TextFields
from sembed_cli.sentence_embedding import VectorFile, embed_records

WINDOW = 1000  # records per sembed batch: the command's default


def stsb_train_sentences() -> list[str]:
    """The distinct sentences of the STS-B train set, in file order (a repeat would only be encoded once by sembed)."""
    sentences = []
    for line in (DATA / "stsb" / "sts-train.csv").read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        sentences += [cols[5], cols[6]]
    return list(dict.fromkeys(sentences))


class Clock:
    """Wall-clock and process CPU seconds of a `with` block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def time_library(model, texts: list[str]) -> Clock:
    with Clock() as clock:
        model.encode(texts, batch_size=CPU_ENCODE_BATCH, show_progress_bar=False)
    return clock


def time_sembed(model, src: Path, dst: Path, npy: Path | None = None) -> Clock:
    fields = TextFields()
    with Clock() as clock:
        source = RecordSource(str(src))
        with RecordSink(str(dst), flush_every=WINDOW) as sink:
            if npy is None:
                sink.write_all(embed_records(source.checked(fields.of), model, fields, WINDOW,
                                             encode_batch_size=CPU_ENCODE_BATCH))
            else:
                with VectorFile(npy, force=True) as vectors:
                    sink.write_all(embed_records(source.checked(fields.of), model, fields, WINDOW,
                                                 encode_batch_size=CPU_ENCODE_BATCH, vectors=vectors))
    return clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads for both (default: torch's own).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N sentences (a quick check).")
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    texts = stsb_train_sentences()[:args.limit]
    start = time.perf_counter()
    model = sentence_models.load(sentence_models.DEFAULT_MODEL, "cpu")
    load_s = time.perf_counter() - start
    threads = torch.get_num_threads()
    load_before = os.getloadavg()[0]  # other jobs on the machine slow the wall-clock figures down
    log(f"{len(texts)} sentences; {threads} torch threads; load {load_s:.2f}s; load average {load_before:.2f}")

    with tempfile.TemporaryDirectory() as tmp:
        src = write_jsonl(Path(tmp) / "in.jsonl", texts)
        dst, npy = Path(tmp) / "out.jsonl", Path(tmp) / "out.npy"
        time_library(model, texts[:200])  # warm-up
        runs: dict[str, list[Clock]] = {"encode": [], "sembed": [], "sembed_npy": []}
        for n in range(args.repeats):
            runs["encode"].append(time_library(model, texts))
            runs["sembed"].append(time_sembed(model, src, dst))
            runs["sembed_npy"].append(time_sembed(model, src, Path(tmp) / "rows.jsonl", npy))
            log(f"run {n + 1}: " + ", ".join(f"{k} {v[-1].wall:.2f}s (cpu {v[-1].cpu:.2f}s)" for k, v in runs.items()))
        jsonl_mb, npy_mb = dst.stat().st_size / 1e6, npy.stat().st_size / 1e6
        env = {**os.environ, **({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {})}
        with Clock() as cli:
            subprocess.run([sys.executable, "-m", "sembed_cli", "embed", "-q", "--device", "cpu", str(src),
                            "-o", str(dst)], check=True, cwd=ROOT, env=env)

    wall = {name: len(texts) / min(c.wall for c in clocks) for name, clocks in runs.items()}
    cpu = {name: len(texts) / min(c.cpu for c in clocks) for name, clocks in runs.items()}
    result = {
        "sentences": len(texts), "model": sentence_models.DEFAULT_MODEL, "device": "cpu", "torch_threads": threads,
        "encode_batch_size": CPU_ENCODE_BATCH, "sembed_window_records": WINDOW,
        "sentence_transformers_encode_sentences_per_s": round(wall["encode"], 1),
        "sembed_embed_jsonl_sentences_per_s": round(wall["sembed"], 1),
        "sembed_embed_npy_sentences_per_s": round(wall["sembed_npy"], 1),
        "ratio": round(wall["sembed"] / wall["encode"], 3),
        "ratio_npy": round(wall["sembed_npy"] / wall["encode"], 3),
        "cpu_time_sentences_per_s": {name: round(rate, 1) for name, rate in cpu.items()},
        "ratio_cpu_time": round(cpu["sembed"] / cpu["encode"], 3),
        "ratio_npy_cpu_time": round(cpu["sembed_npy"] / cpu["encode"], 3),
        "target_ratio": 0.9,
        "model_load_s": round(load_s, 2),
        "cli_wall_s_including_startup_and_load": round(cli.wall, 2),
        "cli_sentences_per_s_including_startup_and_load": round(len(texts) / cli.wall, 1),
        "output_jsonl_mb": round(jsonl_mb, 2), "output_npy_mb": round(npy_mb, 2),
        "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2),
        "runs_wall_s": {name: [round(c.wall, 3) for c in clocks] for name, clocks in runs.items()},
        "runs_cpu_s": {name: [round(c.cpu, 3) for c in clocks] for name, clocks in runs.items()},
    }
    log(f"SentenceTransformer.encode {wall['encode']:8.1f} sentences/s (cpu time: {cpu['encode']:.1f})")
    log(f"sembed embed (JSONL)       {wall['sembed']:8.1f} sentences/s (cpu time: {cpu['sembed']:.1f}), "
        "JSONL in and out")
    log(f"sembed embed --npy         {wall['sembed_npy']:8.1f} sentences/s (cpu time: {cpu['sembed_npy']:.1f})")
    log(f"ratio                      {result['ratio']:8.3f} (cpu time {result['ratio_cpu_time']:.3f}; target >= 0.9); "
        f"--npy {result['ratio_npy']:.3f} (cpu time {result['ratio_npy_cpu_time']:.3f})")
    log(f"CLI end to end             {cli.wall:8.2f} s including start-up and model load")
    if args.limit is None:
        log(f"written {save('embed_speed', result)}")


if __name__ == "__main__":
    main()
