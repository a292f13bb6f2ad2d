"""`--type auto` by measurement: past AUTO_EXACT_LIMIT rows, each candidate type is built over a seeded sample of the
rows, tuned to the user's --recall as a full build is (recall.py), and timed; the cheapest that meets the recall is
built over all rows (issue 36: "auto chooses between the candidates by measurement, not by count alone").

The candidates are the types that lead the big-ann results and FAISS's guidelines at 10^5-10^7 vectors:
    hnsw       HNSW32 over float32 vectors                                        4 d + 256 bytes in RAM
    hnsw-sq8   HNSW32 over 8-bit scalar-quantised vectors, re-ranked from disk     d + 256
    ivfpq-fs   inverted lists with a graph quantiser, 4-bit fast-scan PQ codes, one for each 2 dimensions
               (PQ{d/2}x4fs, André et al., "Quicker ADC", 2019), re-ranked from disk   d/4 + 8
8-bit PQ codes in the same lists (`ivfpq`, as many bytes) were a fourth candidate until 2026-11-28: on every real
set measured (1M MiniLM and 10M static windows at 0.95 and 0.99, 2.2M POI names, 105,660 sentences) they never
won: 0.3-0.6x the fast-scan codes' queries per CPU-second where both met the recall (0.9x on the POI names, where
a graph won), short of 0.99 where the fast-scan codes met it, and 40-54% of the trial's time
(bench/results/auto_choice_*.json); `--type ivfpq` still builds them.
Each is built over SAMPLE_ROWS rows drawn with the build's seed, its breadth climbs recall.py's ladder on the
sample's own proxy queries until it meets --recall, and its batched search at that breadth is timed in CPU seconds
(all threads' time: queries per CPU-second). The cheapest is the fastest that met the recall, unless one that holds
less in RAM is within SPEED_SLACK of it (a quarter of the memory is worth a little speed, and the slack keeps
timing noise from deciding between near equals); where none met it, the one that reached the most. Recalls and
breadths are deterministic for a seed (single-threaded builds); the timings are the machine's, so the choice is
too where two candidates are near equals. What was measured goes into sembed.json (`settings.auto`), and
`search -v` prints it.

The sample's cost is the build's: three builds of SAMPLE_ROWS rows and their recall ladders, about a minute or two
on 2 cores at 384-d (`settings.auto.seconds`), against tens of minutes for a build of a million rows.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from . import kinds, recall
from .vector_file import VectorFile

log = logging.getLogger(__name__)

SAMPLE_ROWS = 50_000
SPEED_SLACK = 0.8  # a candidate holding less in RAM wins at this share of the fastest's queries per CPU-second
CANDIDATES = ("hnsw", "hnsw-sq8", "ivfpq-fs")


def candidate(name: str, count: int, dim: int) -> kinds.Kind:
    """The Kind of candidate `name` for `count` rows of `dim` dimensions."""
    if name == "hnsw-sq8":
        return kinds.Kind(name, f"HNSW{kinds.HNSW_M},SQ8")
    if name == "ivfpq-fs":
        cells = kinds.cells(count)
        return kinds.Kind(name, f"{kinds.lists(cells)},PQ{kinds.fast_scan_quantizers(dim)}x4fs", kinds.nprobe(cells))
    return kinds.choose(name, count, dim)


def ram_bytes(kind: kinds.Kind, dim: int) -> int:
    """What a vector costs in RAM (the FAISS index; the re-ranking file stays on disk)."""
    return kinds.bytes_per_vector(kind, dim, 0)


def measure(kind: kinds.Kind, sample: np.ndarray, settings, work: Path) -> dict:
    """Build `kind` over the unit vectors `sample`, tune its breadth to settings.recall, time it: what was measured."""
    started = time.perf_counter()
    dim = sample.shape[1]
    index = kinds.create(kind, dim)
    if kinds.needs_training(index):
        kinds.train(index, sample[: kinds.training_size(index, len(sample))], settings.seed)
    index.add(sample)
    vectors = VectorFile(work / f"{kind.name}.f32", dim, "float32")
    vectors.append(sample, at_row=0)
    vectors.sync()
    kept = vectors if kind.lossy else None
    view = recall.view_of(index, vectors, kept, len(sample))
    tuned = recall.measure_build(index, vectors, kept, len(sample), settings, warn=False)["recall"]
    queries = recall.held_out(np.arange(len(sample)), settings.seed, lambda rows: sample[rows])
    cpu = time.process_time()
    view.search(queries, recall.K)
    cpu = max(time.process_time() - cpu, 1e-6)
    vectors.remove()
    return {
        "factory": kind.factory,
        "recall": tuned["measured"],
        "met": tuned["met"],
        "parameter": tuned["parameter"],
        "breadth": tuned["breadth"],
        "queries_per_cpu_second": round(len(queries) / cpu, 1),
        "ram_bytes_per_vector": ram_bytes(kind, dim),
        "seconds": round(time.perf_counter() - started, 1),
    }


def cheapest(measured: dict[str, dict]) -> str:
    """The candidate to build: the fastest that met the recall, or one holding less in RAM within SPEED_SLACK of
    it; where none met it, the one that reached the most (the first listed among equals)."""
    meeting = {name: m for name, m in measured.items() if m["met"]}
    if not meeting:
        return max(measured, key=lambda name: measured[name]["recall"])
    fastest = max(meeting[name]["queries_per_cpu_second"] for name in meeting)
    near = [name for name in meeting if meeting[name]["queries_per_cpu_second"] >= SPEED_SLACK * fastest]
    return min(near, key=lambda name: (meeting[name]["ram_bytes_per_vector"], -meeting[name]["queries_per_cpu_second"]))


def choose(raw: VectorFile, count: int, settings) -> kinds.Kind:
    """The Kind for `count` rows whose float32 unit vectors are in `raw`: flat up to AUTO_EXACT_LIMIT, else the
    cheapest candidate measured on a seeded sample (the measurements ride along in Kind.auto)."""
    dim = raw.dim
    if count <= kinds.AUTO_EXACT_LIMIT or settings.recall is None:
        return kinds.choose("auto", count, dim, settings.nprobe)
    started = time.perf_counter()
    size = min(count, SAMPLE_ROWS)
    rows = np.sort(np.random.default_rng(settings.seed).choice(count, size=size, replace=False))
    sample = np.ascontiguousarray(raw.rows(rows), dtype=np.float32)
    log.info(f"--type auto: measuring {', '.join(CANDIDATES)} on {size:,} sampled rows for recall {settings.recall}")
    measured = {}
    with tempfile.TemporaryDirectory(dir=raw.path.parent) as work:
        for name in CANDIDATES:
            measured[name] = measure(candidate(name, size, dim), sample, settings, Path(work))
            log.info(f"  {name}: {measured[name]}")
    chosen = cheapest(measured)
    kind = candidate(chosen, count, dim)
    if settings.nprobe and kind.nprobe:
        kind = kinds.Kind(kind.name, kind.factory, settings.nprobe)
    trial = {
        "chosen": chosen,
        "sample_rows": size,
        "target": settings.recall,
        "candidates": measured,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return kinds.Kind(kind.name, kind.factory, kind.nprobe, auto=trial)


def describe(settings: dict) -> str | None:
    """A line for `search -v`: which type auto chose and what each candidate measured; None where auto did not
    measure (a type asked for, a small index, an index built before)."""
    trial = settings.get("auto")
    if not isinstance(trial, dict):
        return None
    parts = [
        f"{name} {m['recall']:.3f} at {recall.NAMES.get(m['parameter'], m['parameter'])} {m['breadth']}, "
        f"{m['queries_per_cpu_second']:,.0f} q/CPU-s, {m['ram_bytes_per_vector']} B"
        for name, m in trial["candidates"].items()
    ]
    return f"type {trial['chosen']} chosen by auto on {trial['sample_rows']:,} sampled rows: " + "; ".join(parts)
