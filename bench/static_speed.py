"""Throughput of the static fast mode against its teacher and the peer, as processes, interleaved (issue 29).

Contenders, each a separate process printing a line per window of 1000
sentences, at 1 and 2 threads (OMP_NUM_THREADS, SEMBED_THREADS,
RAYON_NUM_THREADS and torch's threads all set):

  sentence_transformers_encode   all-MiniLM-L6-v2, `SentenceTransformer.encode` fp32, batch 32 (the reference)
  sembed_onnx_int8               `sembed embed --backend onnx --quantize int8` (MiniLM)
  sembed_static                  `sembed embed -m STATIC` (JSONL in, JSONL with the vectors out)
  sembed_static_npy              `sembed embed -m STATIC --npy FILE` (vectors to .npy, row numbers in the JSONL)
  sentence_transformers_static   `SentenceTransformer(STATIC).encode` (StaticEmbedding in torch), batch 1000
  model2vec                      model2vec's `StaticModel.encode` of its own distill (--model2vec DIR, run by
                                 --model2vec-python), batch 1000

The transformers embed the 10,566 distinct STS-B train sentences; the static
contenders the same sentences ten times over (105,660 records; a repeat is
never within one window, so nothing is encoded once for two), so that their
steady state is timed over seconds, not a fraction of one. Sentences/s counts
from the first output on (steady state); start-up is process start to first
output on 10 sentences; peak RSS from wait4. The CPU's model, flags, threads
and load average go with the figures. Aim: the static model >= 50x the
reference's sentences/s.

    python bench/static_speed.py --static DIR [--model2vec DIR --model2vec-python PY] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from common import DATA, cpu_description, log, save, time_process, write_jsonl
from embed_speed import WINDOW, stsb_train_sentences

from sembed_cli.models import sentence_models

STATIC_REPEATS = 10
# sentence-transformers as a user's script calls it: a window of sentences at a time, a line out per window.
ENCODE = """
import sys, orjson, torch
torch.set_num_threads(int(sys.argv[2]))
from sentence_transformers import SentenceTransformer
from transformers.utils import logging
logging.disable_progress_bar()
texts = [orjson.loads(line)["text"] for line in open(sys.argv[1], "rb")]
model = SentenceTransformer(sys.argv[3], device="cpu")
for start in range(0, len(texts), 1000):
    vectors = model.encode(texts[start:start + 1000], batch_size=int(sys.argv[4]), show_progress_bar=False)
    sys.stdout.write(f"{len(vectors)}\\n")
    sys.stdout.flush()
"""
MODEL2VEC = """
import sys, json
from model2vec import StaticModel
texts = [json.loads(line)["text"] for line in open(sys.argv[1], "rb")]
model = StaticModel.from_pretrained(sys.argv[3])
for start in range(0, len(texts), 1000):
    vectors = model.encode(texts[start:start + 1000], batch_size=1000, use_multiprocessing=False)
    sys.stdout.write(f"{len(vectors)}\\n")
    sys.stdout.flush()
"""
STATIC = ("sembed_static", "sembed_static_npy", "sentence_transformers_static", "model2vec")


def command(name: str, src: Path, threads: int, args, tmp: Path) -> list[str]:
    teacher = str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL))
    embed = [sys.executable, "-m", "sembed_cli", "embed", "-q", "--force"]
    return {
        "sentence_transformers_encode": [sys.executable, "-c", ENCODE, str(src), str(threads), teacher, "32"],
        "sembed_onnx_int8": [*embed, "--backend", "onnx", "--quantize", "int8", str(src)],
        "sembed_static": [*embed, "-m", str(args.static), str(src)],
        "sembed_static_npy": [*embed, "-m", str(args.static), "--npy", str(tmp / "vectors.npy"), str(src)],
        "sentence_transformers_static": [
            sys.executable,
            "-c",
            ENCODE,
            str(src),
            str(threads),
            str(args.static),
            "1000",
        ],
        "model2vec": [str(args.model2vec_python), "-c", MODEL2VEC, str(src), str(threads), str(args.model2vec)],
    }[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", type=Path, required=True, help="the static model (sembed train --method static)")
    parser.add_argument("--model2vec", type=Path, help="model2vec's distill of the same teacher")
    parser.add_argument("--model2vec-python", type=Path, help="a Python with model2vec installed")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (a quick check)")
    args = parser.parse_args()
    names = [
        "sentence_transformers_encode",
        "sembed_onnx_int8",
        "sembed_static",
        "sembed_static_npy",
        "sentence_transformers_static",
    ] + (["model2vec"] if args.model2vec else [])
    texts = stsb_train_sentences()[: args.limit]
    described = {**cpu_description(), "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    log(
        f"{len(texts)} sentences ({len(texts) * STATIC_REPEATS} for the static contenders); "
        f"{described['cpu_model']} ({', '.join(described['cpu_flags'])}); load average {described['load_average_before']}"
    )
    runs: dict[str, dict[str, list[dict]]] = {str(t): {name: [] for name in names} for t in args.thread_counts}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = {
            False: write_jsonl(tmp / "in.jsonl", texts),
            True: write_jsonl(tmp / "in-static.jsonl", texts * STATIC_REPEATS),
        }
        warm = write_jsonl(tmp / "warm.jsonl", texts[:10])

        def run(name: str, src: Path, threads: int, sentences: int) -> dict:
            env = {
                **os.environ,
                "SEMBED_DATA": str(DATA),
                "HF_HUB_OFFLINE": "1",
                **{key: str(threads) for key in ("OMP_NUM_THREADS", "SEMBED_THREADS", "RAYON_NUM_THREADS")},
            }
            return time_process(name, command(name, src, threads, args, tmp), env, sentences, WINDOW)

        for name in names:  # the ONNX export, the file cache
            log(f"warm-up {name}: {run(name, warm, 1, 10)['wall_s']} s")
        for n in range(args.repeats):
            for threads in args.thread_counts:
                for name in names:
                    static = name in STATIC
                    sentences = len(texts) * (STATIC_REPEATS if static else 1)
                    small = run(name, warm, threads, 10)
                    result = {
                        **run(name, sources[static], threads, sentences),
                        "sentences": sentences,
                        "startup_s": small["startup_to_first_record_s"],
                        "load_average": round(os.getloadavg()[0], 2),
                    }
                    runs[str(threads)][name].append(result)
                    log(
                        f"round {n + 1}, {threads} thread(s), {name:30s} {result['sentences_per_s']:9.1f} "
                        f"sentences/s, start-up {result['startup_s']:5.2f} s, peak {result['peak_rss_mb']:6.1f} MB, "
                        f"load {result['load_average']:.2f}"
                    )
                    summarise(runs, args, texts, described)
    summarise(runs, args, texts, described, show=True)


def summarise(runs: dict, args, texts: list[str], described: dict, show: bool = False) -> None:
    """Best figures and per-round ratios to the reference; saved after every round, so a cut-short run keeps its
    rounds."""
    table = {}
    for threads, by_name in runs.items():
        if not all(by_name.values()):
            continue
        reference = by_name["sentence_transformers_encode"]
        table[threads] = {}
        for name, results in by_name.items():
            ratios = sorted(r["sentences_per_s"] / ref["sentences_per_s"] for r, ref in zip(results, reference))
            table[threads][name] = {
                "sentences_per_s": max(r["sentences_per_s"] for r in results),
                "throughput_ratio": round(ratios[len(ratios) // 2], 1),
                "startup_s": min(r["startup_s"] for r in results),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
            }
            row = table[threads][name]
            if show:
                log(
                    f"{threads} thread(s) {name:30s} {row['sentences_per_s']:9.1f} sentences/s "
                    f"(x{row['throughput_ratio']}), start-up {row['startup_s']:5.2f} s, "
                    f"peak {row['peak_rss_mb']:6.1f} MB"
                )
    result = {
        "sentences": len(texts),
        "static_sentences": len(texts) * STATIC_REPEATS,
        "window": WINDOW,
        "static_model": str(args.static),
        "model2vec": str(args.model2vec) if args.model2vec else None,
        **described,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "note": "throughput ratios are per round (the same load), median of rounds; each run's load average is in runs",
        "aim": {"static_throughput_ratio": 50},
        "best_by_threads": table,
        "runs": runs,
    }
    if args.limit is None:
        path = save("static_speed", result)
        if show:
            log(f"written {path}")


if __name__ == "__main__":
    main()
