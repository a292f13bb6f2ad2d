"""Threads: sembed's default thread count against fixed settings, on a quiet machine and beside one busy process.

Issue 14: on a busy 2-core machine torch's default (one thread per core) made `train --method nws` 22-30 times
slower than one thread. This times two workloads with 1 thread, 2 threads and sembed's default
(sembed_cli.threads.default_threads, chosen at that moment, as the CLI chooses it):

- nws: one epoch of `train --method nws` (packaged GloVe 6B 50-d) on the abc and inaugural corpora, in sentences/s;
- embed: the packaged all-MiniLM-L6-v2 encoding the first --sentences STS-B test sentences, in sentences/s;

each in two conditions: "quiet" (nothing of ours besides; other users' load is recorded, not controlled) and
"busy" (one other process burning a core, started by the bench). The settings are interleaved in every round so
a change in the machine's load hits all of them alike. Written: the CPU model and flags, the load average at every
measurement, the median rate of each setting and the default's ratio to the best fixed setting (of the medians, and
the median of the same-round ratios, which a drifting load disturbs less), to bench/results/threads.json.

    python bench/threads.py [--rounds 5] [--sentences 500]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import tempfile
import time
from pathlib import Path

from common import DATA, ROOT, log, save, stsb_test_sentences

from sembed_cli import threads
from sembed_cli.io import RecordSource
from sembed_cli.models import word_vectors

FIXED = (1, 2)
CORPORA = [("prose", "abc", ["--doc-break", "blank"]), ("prose", "inaugural", [])]


def burn() -> None:
    """One core kept busy, as another user's job would."""
    while True:
        pass


def cpu() -> dict:
    info = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "flags") and key not in info:
            info[key] = value.strip()
    return {
        "model": info.get("model name"),
        "usable_cores": threads.usable_cores(),
        "cpu_count": os.cpu_count(),
        "flags": info.get("flags", "").split(),
    }


def load() -> dict:
    one, five, fifteen = os.getloadavg()
    running = Path("/proc/loadavg").read_text().split()[3]
    return {"loadavg": [round(one, 2), round(five, 2), round(fifteen, 2)], "running/total": running}


def convert(path: Path) -> None:
    import subprocess
    import sys

    with open(path, "wb") as out:
        for kind, folder, extra in CORPORA:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "sembed_cli",
                    "convert",
                    "-q",
                    "--threads",
                    "1",
                    "--from",
                    kind,
                    str(DATA / "corpora" / folder),
                    *extra,
                ],
                stdout=out,
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )


def nws_rate(corpus: Path, vectors, work: Path) -> float:
    import dataclasses

    from sembed_cli.training.job import Job
    from sembed_cli.training.methods import nws
    from sembed_cli.training.nws import train_nws

    one_epoch = dataclasses.replace(nws.RECIPE, epochs=1)
    job = Job(
        RecordSource(str(corpus)),
        work / f"nws-{time.monotonic_ns()}",
        one_epoch,
        None,
        42,
        "cpu",
        resume=False,
        force=False,
    )
    table = train_nws(job, nws.Settings(), vectors)
    return table.metadata["history"][0]["sentences_per_second"]


def embed_rate(encoder, sentences: list[str]) -> float:
    tick = time.perf_counter()
    encoder.encode(sentences, batch_size=32, convert_to_numpy=True)
    return len(sentences) / (time.perf_counter() - tick)


def measure(condition: str, rounds: int, workloads: dict) -> dict:
    rows = []
    for round_ in range(rounds):
        for setting in (*FIXED, "default"):
            count = threads.default_threads() if setting == "default" else setting
            before = load()
            threads.apply(count)
            row = {"round": round_ + 1, "setting": setting, "threads": count, **before}
            for name, run in workloads.items():
                row[f"{name}_sentences_per_second"] = round(run(), 1)
            log(f"{condition}: {row}")
            rows.append(row)
    summary = {}
    for name in workloads:
        key = f"{name}_sentences_per_second"
        medians = {str(s): statistics.median(r[key] for r in rows if r["setting"] == s) for s in (*FIXED, "default")}
        best = max(medians[str(s)] for s in FIXED)
        per_round = [
            by[("default", r)] / max(by[(s, r)] for s in FIXED)
            for by in [{(row["setting"], row["round"]): row[key] for row in rows}]
            for r in range(1, rounds + 1)
        ]
        summary[name] = {
            "median_sentences_per_second": medians,
            "default_over_best_fixed": round(medians["default"] / best, 3),
            "default_over_best_fixed_same_round_median": round(statistics.median(per_round), 3),
            "worst_over_best_fixed": round(min(medians.values()) / best, 3),
        }
    chosen = sorted({row["threads"] for row in rows if row["setting"] == "default"})
    return {"default_chose_threads": chosen, "rows": rows, "summary": summary}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sentences", type=int, default=500)
    args = parser.parse_args()
    from sembed_cli.models import sentence_models

    result = {
        "cpu": cpu(),
        "settings": {
            "fixed": list(FIXED),
            "rounds": args.rounds,
            "embed_sentences": args.sentences,
            "nws_corpora": [folder for _, folder, _ in CORPORA],
        },
        "load_at_start": load(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "corpora.jsonl"
        convert(corpus)
        vectors = word_vectors.load("glove-6b-50d")
        encoder = sentence_models.load(sentence_models.DEFAULT_MODEL, "cpu")
        sentences = stsb_test_sentences()[: args.sentences]
        workloads = {"nws": lambda: nws_rate(corpus, vectors, work), "embed": lambda: embed_rate(encoder, sentences)}
        embed_rate(encoder, sentences[:64])  # warm-up: first-call allocations
        result["quiet"] = measure("quiet", args.rounds, workloads)
        burner = multiprocessing.Process(target=burn, daemon=True)
        burner.start()
        try:
            time.sleep(5)
            result["busy"] = measure("busy (one other process burning a core)", args.rounds, workloads)
        finally:
            burner.terminate()
            burner.join()
    result["load_at_end"] = load()
    log(f"wrote {save('threads', result)}")


if __name__ == "__main__":
    main()
