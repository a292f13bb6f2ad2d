"""Throughput of the static fast mode against its teacher and the peer, as processes, interleaved (issue 29).

Contenders, each a separate process printing a line per window of 1000
sentences, at 1 and 2 threads (OMP_NUM_THREADS, SEMBED_THREADS,
RAYON_NUM_THREADS and torch's threads all set):

  sentence_transformers_encode   all-MiniLM-L6-v2, `SentenceTransformer.encode` fp32, batch 32 (the reference)
  sembed_onnx_int8               `sembed embed --backend onnx --quantize int8` (MiniLM)
  sembed_static                  `sembed embed -m STATIC` (JSONL in, JSONL with the vectors out)
  sembed_static_npy              `sembed embed -m STATIC --npy FILE` (vectors to .npy, in /dev/shm where there is
                                 one; row numbers in the JSONL)
  sentence_transformers_static   `SentenceTransformer(STATIC).encode` (StaticEmbedding in torch), batch 1000
  model2vec                      model2vec's `StaticModel.encode` of its own distill (--model2vec DIR, run by
                                 --model2vec-python), batch 1000

and, with a static model, the commands around it (issue 40), at the same thread counts:

  sembed_static_index            `sembed index -m STATIC` over the static contenders' sentences (texts in, the
                                 index out): sentences/s from the difference to an index of 10 sentences,
                                 start-up the wall time of that small index
  sembed_static_search           `sembed search --index DIR` of the 7,559 STS-B and SICK test sentences (the
                                 shared runs/real/queries.jsonl, else STS-B test) as query texts, 10 neighbours
                                 each: queries/s from the difference to one `--query TEXT`, start-up the wall
                                 time of that one query

The transformers embed the 10,566 distinct STS-B train sentences; the static
contenders the same sentences ten times over (105,660 records; a repeat is
never within one window, so nothing is encoded once for two), so that their
steady state is timed over seconds, not a fraction of one. Sentences/s counts
from the first output on (steady state), stdout going to a file in memory
(`time_to_file`); start-up is process start to first output on 10
sentences; peak RSS from wait4. The CPU's model, flags, threads
and load average go with the figures. Aim: the static model >= 50x the
reference's sentences/s; issue 40: `--npy` at or above model2vec's encode
at 1 and 2 threads, JSONL >= 0.8x of it at 2 (vs_model2vec: each static
row's sentences/s over model2vec's in the same round, median of rounds).

--contenders runs some of them; the rows of the others are kept from the
results file as it was (their runs and figures, "kept" names them), and a
kept reference's best sentences/s is the ratio's denominator then.

    python bench/static_speed.py --static DIR [--model2vec DIR --model2vec-python PY] [--repeats 2] \
      [--contenders sembed_static sembed_static_npy model2vec sembed_static_index sembed_static_search]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, RESULTS, ROOT, cpu_description, log, save, stsb_test_sentences, write_jsonl
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
EMBEDDERS = ("sentence_transformers_encode", "sembed_onnx_int8", *STATIC)
AROUND = ("sembed_static_index", "sembed_static_search")  # the commands around a static model
QUERIES = ROOT / "runs" / "real" / "queries.jsonl"  # bench/real_vectors.py: STS-B + SICK test sentences


def command(name: str, src: Path, threads: int, args, tmp: Path) -> list[str]:
    teacher = str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL))
    embed = [sys.executable, "-m", "sembed_cli", "embed", "-q", "--force"]
    return {
        "sentence_transformers_encode": [sys.executable, "-c", ENCODE, str(src), str(threads), teacher, "32"],
        "sembed_onnx_int8": [*embed, "--backend", "onnx", "--quantize", "int8", str(src)],
        "sembed_static": [*embed, "-m", str(args.static), str(src)],
        "sembed_static_npy": [*embed, "-m", str(args.static), "--npy", str(matrix_dir(tmp) / "vectors.npy"), str(src)],
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


def matrix_dir(tmp: Path) -> Path:
    """Where `--npy` writes its 100 MB: /dev/shm where there is one (memory), so that other jobs' disk writes
    (a shared machine's) do not throttle it and its figure is the command's, as the peer writes nothing."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = shm / f"sembed-static-speed-{os.getpid()}"
        folder.mkdir(exist_ok=True)
        return folder
    return tmp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", type=Path, required=True, help="the static model (sembed train --method static)")
    parser.add_argument("--model2vec", type=Path, help="model2vec's distill of the same teacher")
    parser.add_argument("--model2vec-python", type=Path, help="a Python with model2vec installed")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--thread-counts", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences (a quick check)")
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=[*EMBEDDERS, *AROUND],
        help="run only these; the others' rows are kept from the results file",
    )
    parser.add_argument(
        "--summarise-only", action="store_true", help="recompute the figures of the results file's runs, run nothing"
    )
    args = parser.parse_args()
    if args.summarise_only:
        old = json.loads((RESULTS / "static_speed.json").read_text())
        args.contenders = []
        described = {key: old[key] for key in ("cpu_model", "cpu_flags", "cores", "load_average_before", "kept")}
        summarise({threads: {} for threads in old["runs"]}, args, [""] * old["sentences"], described, show=True)
        return
    names = [name for name in [*EMBEDDERS, *AROUND] if name != "model2vec" or args.model2vec]
    if args.contenders:
        names = [name for name in names if name in args.contenders]
    texts = stsb_train_sentences()[: args.limit]
    described = {**cpu_description(), "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    cpu = f"{described['cpu_model']} ({', '.join(described['cpu_flags'])})"
    log(
        f"{len(texts)} sentences ({len(texts) * STATIC_REPEATS} for the static contenders); {cpu}; "
        f"load average {described['load_average_before']}"
    )
    runs: dict[str, dict[str, list[dict]]] = {str(t): {name: [] for name in names} for t in args.thread_counts}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = {
            False: write_jsonl(tmp / "in.jsonl", texts),
            True: write_jsonl(tmp / "in-static.jsonl", texts * STATIC_REPEATS),
        }
        warm = write_jsonl(tmp / "warm.jsonl", texts[:10])

        queries = query_texts()
        query_file = write_jsonl(tmp / "queries.jsonl", queries)

        def environment(threads: int) -> dict:
            return {
                **os.environ,
                "SEMBED_DATA": str(DATA),
                "HF_HUB_OFFLINE": "1",
                **{key: str(threads) for key in ("OMP_NUM_THREADS", "SEMBED_THREADS", "RAYON_NUM_THREADS")},
            }

        def run(name: str, src: Path, threads: int, sentences: int) -> dict:
            if name in AROUND:
                return around(name, threads, environment(threads), args.static, tmp, sources[True], query_file)
            return time_to_file(name, command(name, src, threads, args, tmp), environment(threads), sentences, tmp)

        for name in names:  # the ONNX export, the file cache
            log(f"warm-up {name}: {run(name, warm, 1, 10)['wall_s']} s")
        for n in range(args.repeats):
            for threads in args.thread_counts:
                for name in names:
                    static = name in STATIC or name in AROUND
                    sentences = len(texts) * (STATIC_REPEATS if static else 1)
                    if name == "sembed_static_search":
                        sentences = len(queries)
                    small = run(name, warm, threads, 10) if name not in AROUND else {}
                    result = {
                        **run(name, sources[static], threads, sentences),
                        "sentences": sentences,
                        "load_average": round(os.getloadavg()[0], 2),
                    }
                    result.setdefault("startup_s", small.get("startup_to_first_record_s"))
                    runs[str(threads)][name].append(result)
                    log(
                        f"round {n + 1}, {threads} thread(s), {name:30s} {result['sentences_per_s']:9.1f} "
                        f"{'queries' if name == 'sembed_static_search' else 'sentences'}/s, start-up "
                        f"{result['startup_s']:5.2f} s, peak {result['peak_rss_mb']:6.1f} MB, "
                        f"load {result['load_average']:.2f}"
                    )
                    summarise(runs, args, texts, described)
    summarise(runs, args, texts, described, show=True)
    shm = matrix_dir(Path(tempfile.gettempdir()))
    if shm.name.startswith("sembed-static-speed-"):
        for leftover in shm.iterdir():
            leftover.unlink()
        shm.rmdir()


def time_to_file(name: str, command: list[str], env: dict, sentences: int, tmp: Path) -> dict:
    """`common.time_process`'s figures, with the command's stdout going to a file in memory (/dev/shm where
    there is one) whose size is polled for the first output: a pipe read line by line would time the reader
    too, since on a loaded machine a writer of a JSON line a record blocks whenever the reader waits for a core
    (the peer prints a line a window)."""
    out = matrix_dir(tmp) / "stdout"
    started = time.perf_counter()
    with open(out, "wb") as sink:
        process = subprocess.Popen(command, stdout=sink, cwd=ROOT, env=env)
        first = None
        while first is None and process.poll() is None:
            if out.stat().st_size:
                first = time.perf_counter()
            else:
                time.sleep(0.002)
        _, status, usage = os.wait4(process.pid, 0)
    ended = time.perf_counter()
    first = first or ended
    out.unlink()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{name} failed with exit status {os.waitstatus_to_exitcode(status)}")
    after_first = sentences - min(WINDOW, sentences)
    return {
        "startup_to_first_record_s": round(first - started, 2),
        "sentences_per_s": round(after_first / max(ended - first, 1e-9), 1) if after_first else None,
        "wall_s": round(ended - started, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def query_texts() -> list[str]:
    """The search contender's queries: the shared real queries (bench/real_vectors.py), else STS-B test's."""
    if QUERIES.exists():
        return [json.loads(line)["text"] for line in QUERIES.read_text(encoding="utf-8").splitlines() if line]
    return stsb_test_sentences()


def timed(command: list[str], env: dict, stdin: Path | None = None) -> dict:
    """Wall and CPU seconds and peak RSS of a command that writes nothing we read (its stdout is dropped)."""
    started = time.perf_counter()
    with open(stdin or os.devnull, "rb") as source:
        process = subprocess.Popen(command, stdin=source, stdout=subprocess.DEVNULL, cwd=ROOT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command[:6])} ... failed with exit status {os.waitstatus_to_exitcode(status)}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": usage.ru_maxrss / 1024}


def around(name: str, threads: int, env: dict, static: Path, tmp: Path, src: Path, queries: Path) -> dict:
    """One run of `sembed index` or `sembed search` with the static model: the big job and the small one (10
    sentences, one query), sentences or queries/s from the difference of their wall times."""
    sembed = [sys.executable, "-m", "sembed_cli"]
    small_src = tmp / "ten.jsonl"
    if not small_src.exists():
        small_src.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:10]))
    index = [*sembed, "index", "-q", "--force", "-m", str(static)]
    if name == "sembed_static_index":
        small = timed([*index, "-o", str(tmp / "index-small"), str(small_src)], env)
        big = timed([*index, "-o", str(tmp / "index"), str(src)], env)
        count = len(src.read_bytes().splitlines()) - 10
    else:
        if not (tmp / "index").exists():
            timed([*index, "-o", str(tmp / "index"), str(src)], env)
        search = [*sembed, "search", "-q", "--index", str(tmp / "index"), "-k", "10"]
        small = timed([*search, "--query", "A man is playing a guitar."], env)
        big = timed([*search, "-"], env, stdin=queries)
        count = len(queries.read_bytes().splitlines()) - 1
    return {
        "startup_s": round(small["wall_s"], 2),
        "sentences_per_s": round(count / max(big["wall_s"] - small["wall_s"], 1e-9), 1),
        "wall_s": round(big["wall_s"], 2),
        "cpu_s": round(big["cpu_s"], 2),
        "peak_rss_mb": round(big["peak_rss_mb"], 1),
    }


def kept_rows(runs: dict) -> dict[str, dict[str, list[dict]]]:
    """The runs of the contenders not run now, from the results file as it was (by thread count)."""
    path = RESULTS / "static_speed.json"
    if not path.exists():
        return {}
    old = json.loads(path.read_text()).get("runs", {})
    return {
        threads: {name: results for name, results in old.get(threads, {}).items() if name not in by_name}
        for threads, by_name in runs.items()
    }


def summarise(runs: dict, args, texts: list[str], described: dict, show: bool = False) -> None:
    """Best figures and per-round ratios to the reference; saved after every round, so a cut-short run keeps its
    rounds."""
    kept = kept_rows(runs) if args.contenders is not None else {}
    runs = {threads: {**kept.get(threads, {}), **by_name} for threads, by_name in runs.items()}
    table = {}
    for threads, by_name in runs.items():
        if not all(by_name.values()):
            continue
        reference = by_name.get("sentence_transformers_encode", [])
        peer = by_name.get("model2vec", [])
        table[threads] = {}
        for name, results in by_name.items():
            if name == "sembed_static_search":
                ratios = []  # queries, not sentences embedded: no ratio to an embedder
            elif "sentence_transformers_encode" in kept.get(threads, {}):  # not re-run: its best figure
                best = max(ref["sentences_per_s"] for ref in reference)
                ratios = sorted(r["sentences_per_s"] / best for r in results)
            else:
                ratios = sorted(r["sentences_per_s"] / ref["sentences_per_s"] for r, ref in zip(results, reference))
            table[threads][name] = {
                "sentences_per_s": max(r["sentences_per_s"] for r in results),
                "throughput_ratio": round(ratios[len(ratios) // 2], 1) if ratios else None,
                "startup_s": min(r["startup_s"] for r in results),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
                # the process's CPU time a sentence, start-up included: what a loaded machine changes least
                "cpu_us_per_sentence": round(min(r["cpu_s"] / r["sentences"] for r in results) * 1e6, 1),
            }
            if name in STATIC and peer and len(results) == len(peer):  # rounds of one run: paired
                same_round = sorted(r["sentences_per_s"] / m["sentences_per_s"] for r, m in zip(results, peer))
                if same_round:
                    table[threads][name]["vs_model2vec"] = round(same_round[len(same_round) // 2], 2)
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
        "note": "throughput ratios are per round (the same load), median of rounds; each run's load average is in "
        "runs; cpu_us_per_sentence: the process's CPU seconds (start-up included) over its sentences, least of "
        "rounds; vs_model2vec: sentences/s over model2vec's in the same round, median of rounds; "
        "sembed_static_search's sentences_per_s are queries/s",
        "kept": described.get("kept") or {threads: sorted(names) for threads, names in kept.items()},
        "aim": {"static_throughput_ratio": 50, "npy_vs_model2vec": 1.0, "jsonl_vs_model2vec_at_2_threads": 0.8},
        "best_by_threads": table,
        "runs": runs,
    }
    if args.limit is None:
        path = save("static_speed", result)
        if show:
            log(f"written {path}")


if __name__ == "__main__":
    main()
