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

With --backends (issue 16) every contender is a separate process, run
interleaved on the same sentences at 1 and 2 threads: the reference, a
script that imports sentence-transformers and calls `encode` fp32 a window
of 1000 sentences at a time, and `sembed embed` (JSONL in, JSONL out) with
--backend torch, --backend onnx and --backend onnx --quantize int8. Each
reports sentences/s after its first output (steady state, start-up
excluded), the time from process start to its first record out (imports,
model load and the first window of 1000), its peak RSS (wait4) and its CPU
seconds, with the CPU's model, flags and the load average. Start-up proper
is timed in a run on 10 sentences just before (process start to first
record out: imports, model load, one small batch), as a cron job on a
small input sees it. Aims: int8 >=
1.5x the reference's throughput (2x with VNNI), start-up >= 5x faster, peak
RSS at most half. The ONNX exports are made (or found) by a warm-up first.

    python bench/embed_speed.py --backends [--repeats 2] [--limit N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, ROOT, cpu_description, log, save, time_process, write_jsonl

from sembed_cli.io import RecordSink, RecordSource, TextFields
from sembed_cli.models import sentence_models
from sembed_cli.models.embed_stream import embed_records
from sembed_cli.models.embedder import CPU_ENCODE_BATCH, Embedder
from sembed_cli.models.sentence_embedding import NpyMatrix

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


def time_sembed(model: Embedder, src: Path, dst: Path, npy: Path | None = None) -> Clock:
    """`sembed embed`'s record path: the Embedder the command opens, over the model `time_library` runs."""
    fields = TextFields()
    with Clock() as clock:
        source = RecordSource(str(src))
        with RecordSink(str(dst), flush_every=WINDOW, force=True) as sink:  # each repeat writes it again
            if npy is None:
                sink.write_all(embed_records(source.checked(fields.of), model, fields, WINDOW))
            else:
                with NpyMatrix(npy, force=True) as vectors:
                    sink.write_all(
                        embed_records(
                            source.checked(fields.of),
                            model,
                            fields,
                            WINDOW,
                            vectors=vectors,
                        )
                    )
    return clock


# The reference: sentence-transformers as a user's script would call it, a window of sentences at a time,
# printing a line per window so its first output can be timed as sembed's is.
REFERENCE = """
import sys, orjson, torch
torch.set_num_threads(int(sys.argv[2]))
from sentence_transformers import SentenceTransformer
from transformers.utils import logging
logging.disable_progress_bar()
from sembed_cli.models import sentence_models
texts = [orjson.loads(line)["text"] for line in open(sys.argv[1], "rb")]
model = SentenceTransformer(str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL)), device="cpu")
for start in range(0, len(texts), 1000):
    vectors = model.encode(texts[start:start + 1000], batch_size=32, show_progress_bar=False)
    sys.stdout.write(f"{len(vectors)}\\n")
    sys.stdout.flush()
"""
CONTENDERS = {
    "sentence_transformers_encode": None,
    "sembed_torch": ["--backend", "torch"],
    "sembed_onnx": ["--backend", "onnx"],
    "sembed_onnx_int8": ["--backend", "onnx", "--quantize", "int8"],
}


def run_contender(name: str, src: Path, threads: int, sentences: int) -> dict:
    """One process: start-up to its first output, steady sentences/s after it, peak RSS and CPU seconds."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "SEMBED_THREADS": str(threads), "SEMBED_DATA": str(DATA)}
    if CONTENDERS[name] is None:
        command = [sys.executable, "-c", REFERENCE, str(src), str(threads)]
    else:
        command = [sys.executable, "-m", "sembed_cli", "embed", "-q", "--device", "cpu", *CONTENDERS[name], str(src)]
    return time_process(name, command, env, sentences, WINDOW)


def int8_description() -> dict:
    """Which int8 export `--quantize int8` runs on this CPU: its file and quantisation settings."""
    from dataclasses import asdict

    from sembed_cli.models import onnx_encoder

    isa = onnx_encoder.cpu_instruction_set()
    return {
        "instruction_set": isa,
        "file": onnx_encoder.file_name("int8", isa),
        **asdict(onnx_encoder.int8_config(isa)),
    }


def compare_backends(args) -> None:
    """--backends: the reference and sembed with each backend, as processes, interleaved, at 1 and 2 threads."""
    texts = stsb_train_sentences()[: args.limit]
    described = {
        **cpu_description(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "int8": int8_description(),
    }
    log(f"int8 config: {described['int8']}")
    log(
        f"{len(texts)} sentences; {described['cpu_model']} ({', '.join(described['cpu_flags'])}); "
        f"load average {described['load_average_before']}"
    )
    runs: dict[str, dict[str, list[dict]]] = {str(t): {name: [] for name in CONTENDERS} for t in args.thread_counts}
    with tempfile.TemporaryDirectory() as tmp:
        src = write_jsonl(Path(tmp) / "in.jsonl", texts)
        warm = write_jsonl(Path(tmp) / "warm.jsonl", texts[:10])
        for name in CONTENDERS:  # exports the ONNX models where missing, and warms the file cache
            log(f"warm-up {name}: {run_contender(name, warm, 1, 10)['wall_s']} s")
        for n in range(args.repeats):
            for threads in args.thread_counts:
                for name in CONTENDERS:
                    small = run_contender(name, warm, threads, 10)
                    result = run_contender(name, src, threads, len(texts))
                    result = {
                        **result,
                        "startup_s": small["startup_to_first_record_s"],
                        "peak_rss_mb_10_sentences": small["peak_rss_mb"],
                        "load_average": round(os.getloadavg()[0], 2),
                    }
                    runs[str(threads)][name].append(result)
                    log(
                        f"round {n + 1}, {threads} thread(s), {name:30s} {result['sentences_per_s']:7.1f} sentences/s,"
                        f" start-up {result['startup_s']:5.2f} s (first of {WINDOW}: "
                        f"{result['startup_to_first_record_s']:5.2f} s), peak {result['peak_rss_mb']:6.1f} MB, "
                        f"load {os.getloadavg()[0]:.2f}"
                    )
                    if all(results for results in runs[str(threads)].values()):
                        summarise(runs, described, len(texts), save_it=args.limit is None)
    summarise(runs, described, len(texts), save_it=args.limit is None, show=True)


def summarise(runs: dict, described: dict, sentences: int, save_it: bool, show: bool = False) -> dict:
    """Best figures and per-round ratios to the reference; saved after every round, so a cut-short run keeps its
    rounds."""
    runs = {threads: by_name for threads, by_name in runs.items() if all(by_name.values())}
    table = {}
    for threads, by_name in runs.items():
        reference = by_name["sentence_transformers_encode"]
        table[threads] = {}
        for name, results in by_name.items():
            best = {
                "sentences_per_s": max(r["sentences_per_s"] for r in results),
                "startup_s": min(r["startup_s"] for r in results),
                "startup_to_first_record_s": min(r["startup_to_first_record_s"] for r in results),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
            }
            # ratios round by round (the same load), their median: steadier than ratios of bests on a busy machine
            speed = sorted(r["sentences_per_s"] / ref["sentences_per_s"] for r, ref in zip(results, reference))
            start = sorted(ref["startup_s"] / r["startup_s"] for r, ref in zip(results, reference))
            # CPU seconds of the whole process (start-up included): at 1 thread the work itself, whatever the load
            cpu = sorted(ref["cpu_s"] / r["cpu_s"] for r, ref in zip(results, reference))
            table[threads][name] = {
                **best,
                "throughput_ratio": round(speed[len(speed) // 2], 2),
                "startup_speedup": round(start[len(start) // 2], 2),
                "cpu_time_ratio": round(cpu[len(cpu) // 2], 2),
                "rss_ratio": round(best["peak_rss_mb"] / max(r["peak_rss_mb"] for r in reference), 2),
            }
    result = {
        "sentences": sentences,
        "model": sentence_models.DEFAULT_MODEL,
        "window_records": WINDOW,
        "encode_batch_size": CPU_ENCODE_BATCH,
        **described,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "note": "machine shared with other jobs: throughput ratios are per round (same load), median of rounds",
        "aims": {"int8_throughput_ratio": 1.5, "startup_speedup": 5, "rss_ratio": 0.5},
        "best_by_threads": table,
        "runs": runs,
    }
    for threads, rows in table.items() if show else ():
        for name, row in rows.items():
            log(
                f"{threads} thread(s) {name:30s} {row['sentences_per_s']:7.1f} sentences/s "
                f"(x{row['throughput_ratio']}),"
                f" start-up {row['startup_s']:5.2f} s (x{row['startup_speedup']} faster), "
                f"peak {row['peak_rss_mb']:6.1f} MB (x{row['rss_ratio']})"
            )
    if save_it:
        path = save("embed_speed_backends", result)
        if show:
            log(f"written {path}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads for both (default: torch's own).")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N sentences (a quick check).")
    parser.add_argument("--backends", action="store_true", help="Compare the backends as processes (issue 16).")
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2], help="--backends: thread counts.")
    args = parser.parse_args()
    if args.backends:
        return compare_backends(args)

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    texts = stsb_train_sentences()[: args.limit]
    start = time.perf_counter()
    model = sentence_models.load(sentence_models.DEFAULT_MODEL, "cpu")
    load_s = time.perf_counter() - start
    embedder = Embedder.open(sentence_models.DEFAULT_MODEL, device="cpu")  # the same model, loaded once (cached)
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
            runs["sembed"].append(time_sembed(embedder, src, dst))
            runs["sembed_npy"].append(time_sembed(embedder, src, Path(tmp) / "rows.jsonl", npy))
            log(f"run {n + 1}: " + ", ".join(f"{k} {v[-1].wall:.2f}s (cpu {v[-1].cpu:.2f}s)" for k, v in runs.items()))
        jsonl_mb, npy_mb = dst.stat().st_size / 1e6, npy.stat().st_size / 1e6
        env = {**os.environ, **({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {})}
        with Clock() as cli:
            subprocess.run(
                [sys.executable, "-m", "sembed_cli", "embed", "-q", "--device", "cpu", str(src), "-o", str(dst)]
                + ["--force"],  # the library's run wrote dst first
                check=True,
                cwd=ROOT,
                env=env,
            )

    wall = {name: len(texts) / min(c.wall for c in clocks) for name, clocks in runs.items()}
    cpu = {name: len(texts) / min(c.cpu for c in clocks) for name, clocks in runs.items()}
    result = {
        "sentences": len(texts),
        "model": sentence_models.DEFAULT_MODEL,
        "device": "cpu",
        "torch_threads": threads,
        "encode_batch_size": CPU_ENCODE_BATCH,
        "sembed_window_records": WINDOW,
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
        "output_jsonl_mb": round(jsonl_mb, 2),
        "output_npy_mb": round(npy_mb, 2),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "runs_wall_s": {name: [round(c.wall, 3) for c in clocks] for name, clocks in runs.items()},
        "runs_cpu_s": {name: [round(c.cpu, 3) for c in clocks] for name, clocks in runs.items()},
    }
    log(f"SentenceTransformer.encode {wall['encode']:8.1f} sentences/s (cpu time: {cpu['encode']:.1f})")
    log(
        f"sembed embed (JSONL)       {wall['sembed']:8.1f} sentences/s (cpu time: {cpu['sembed']:.1f}), "
        "JSONL in and out"
    )
    log(f"sembed embed --npy         {wall['sembed_npy']:8.1f} sentences/s (cpu time: {cpu['sembed_npy']:.1f})")
    log(
        f"ratio                      {result['ratio']:8.3f} (cpu time {result['ratio_cpu_time']:.3f}; target >= 0.9); "
        f"--npy {result['ratio_npy']:.3f} (cpu time {result['ratio_npy_cpu_time']:.3f})"
    )
    log(f"CLI end to end             {cli.wall:8.2f} s including start-up and model load")
    if args.limit is None:
        log(f"written {save('embed_speed', result)}")


if __name__ == "__main__":
    main()
