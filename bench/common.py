"""Shared pieces of the benchmarks: where the data is, test sentences, results files."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("SEMBED_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "bench" / "results"


def stsb_test_sentences() -> list[str]:
    """The 2758 sentences of the STS-B test set (both sides of 1379 pairs), in file order."""
    sentences = []
    for line in (DATA / "stsb" / "sts-test.csv").read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        sentences += [cols[5], cols[6]]
    return sentences


# The shared corpora, each converted as `sembed convert --help` recommends (format, folder, options).
CONVERT = [
    ("prose", "abc", ["--doc-break", "blank"]),
    ("prose", "state_union", []),
    ("prose", "inaugural", []),
    ("lines", "webtext", []),
    ("lines", "movie_reviews", []),
    ("brown", "brown", []),
]


def convert_corpora(path: Path) -> float:
    """All the shared corpora as doc_id, sent_id, text records in `path`; returns the seconds it took."""
    started = time.perf_counter()
    with open(path, "wb") as out:
        for kind, folder, extra in CONVERT:
            subprocess.run(
                [
                    str(ROOT / ".venv" / "bin" / "sembed"),
                    "convert",
                    "-q",
                    "--from",
                    kind,
                    str(DATA / "corpora" / folder),
                    *extra,
                ],
                stdout=out,
                check=True,
            )
    return time.perf_counter() - started


@contextmanager
def corpora_records(records: Path | None) -> Iterator[Path]:
    """`records` when given (the corpora converted before), else the corpora converted into a temporary file."""
    if records is not None:
        yield records
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "corpora.jsonl"
        log(f"converted the corpora in {convert_corpora(path):.0f} s")
        yield path


def time_process(
    name: str, command: list[str], env: dict, sentences: int, window: int, stdin: Path | None = None, out=None
) -> dict:
    """Run `command` (which prints a line per window of `window` sentences; `stdin`: a file it reads): seconds
    from its start to its first output, sentences/s after it (steady state), wall and CPU seconds, peak RSS
    (wait4); `out`, a list, is given the lines it printed."""
    started = time.perf_counter()
    with open(stdin or os.devnull, "rb") as given:
        process = subprocess.Popen(command, stdin=given, stdout=subprocess.PIPE, cwd=ROOT, env=env)
    first = None
    for line in process.stdout:
        first = first or time.perf_counter()
        if out is not None:
            out.append(line)
    _, status, usage = os.wait4(process.pid, 0)
    ended = time.perf_counter()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode or first is None:
        raise SystemExit(f"{name} failed with exit status {process.returncode}")
    after_first = sentences - min(window, sentences)
    return {
        "startup_to_first_record_s": round(first - started, 2),
        "sentences_per_s": round(after_first / (ended - first), 1) if after_first else None,
        "wall_s": round(ended - started, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
    }


def write_jsonl(path: Path, sentences: list[str]) -> Path:
    with open(path, "wb") as f:
        for i, text in enumerate(sentences):
            f.write(orjson.dumps({"id": i, "text": text}) + b"\n")
    return path


# the flags that decide which int8 and bf16 kernels run
CPU_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512vnni", "avx_vnni", "avx512_bf16", "amx_int8")


def cpu_description() -> dict:
    """The CPU's model name and the flags that decide int8 and bf16 kernels (from /proc/cpuinfo)."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    return {
        "cpu_model": info.get("model name", "unknown"),
        "cpu_flags": [f for f in CPU_FLAGS if f in flags],
        "cores": os.cpu_count(),
    }


def save(name: str, result: dict) -> Path:
    """Write a benchmark's figures to bench/results/NAME.json with the machine they came from: its CPU model and
    flags, and the load average when the figures were saved (other jobs slow wall-clock figures down)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d"),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        **cpu_description(),
        "load_average_at_save": [round(x, 2) for x in os.getloadavg()],
        **result,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def paired(a, b, resamples: int | None = None, seed: int = 0) -> dict:
    """mean(a) - mean(b) over the same queries, with a paired bootstrap 95% percentile interval (Efron & Tibshirani
    1993): the same `default_rng(seed).integers(0, n, (resamples, n))` draws for both sides (resamples: None,
    sembed's BOOTSTRAP_RESAMPLES)."""
    import numpy as np

    from sembed_cli.evaluation.statistics import BOOTSTRAP_RESAMPLES

    resamples = resamples or BOOTSTRAP_RESAMPLES

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    draws = np.random.default_rng(seed).integers(0, len(a), (resamples, len(a)))
    spread = np.concatenate([(a[d] - b[d]).mean(axis=1) for d in np.array_split(draws, 10)])
    low, high = np.percentile(spread, [2.5, 97.5])
    return {"difference": round(float(a.mean() - b.mean()), 4), "ci95": [round(float(low), 4), round(float(high), 4)]}
