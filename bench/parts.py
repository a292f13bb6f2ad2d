"""Parts past one machine: one index built by one process, and from 8 parts by a local loop, a simulated Slurm
array (examples/parts_slurm.sh, each task its own process) and a local Ray cluster; the same answers, and what
each engine costs.

    nice -n 10 python bench/parts.py                       # 50,000 corpus sentences, a static model distilled
    nice -n 10 python bench/parts.py --model all-MiniLM-L6-v2 --sentences 4000

For each engine: the wall and CPU seconds of embedding (all parts) and of building the flat index, the overhead
against the one-process run of the same sitting, and for 1,000 STS-B test sentences as queries whether each
index gives the one-process index's top-10 ids (scores within 1e-5; lists that differ only inside a tie of
scores are counted apart). Every process runs one thread (SEMBED_THREADS=1). Results go to
bench/results/parts.json, one entry per model, kept across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONVERT, DATA, RESULTS, ROOT, cpu_description, log, stsb_test_sentences

SEMBED = [sys.executable, "-m", "sembed_cli"]
SCRIPT = ROOT / "examples" / "parts_slurm.sh"
CORPORA = [corpus for corpus in CONVERT if corpus[0] != "brown"]  # the prose corpora, as convert reads them
PARTS = 8
QUERIES = 1000
TOLERANCE = 1e-5


def environment() -> dict:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # `sembed` of this venv for the script
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SEMBED_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PATH": path,
    }


def run(command: list[str], **kwargs) -> dict:
    """Wall and CPU seconds (its own and its reaped children's) of one process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=environment(), cwd=ROOT, **kwargs)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(command)}")
    return {"wall_s": time.perf_counter() - started, "cpu_s": usage.ru_utime + usage.ru_stime}


def run_concurrently(commands: list[list[str]], at_once: int) -> dict:
    """Processes `at_once` at a time (as `sbatch --array=1-8%2` runs them): wall of all, CPU summed."""
    started, cpu = time.perf_counter(), 0.0
    waiting, running = list(commands), {}
    while waiting or running:
        while waiting and len(running) < at_once:
            command = waiting.pop(0)
            running[subprocess.Popen(command, env=environment(), cwd=ROOT, stdout=subprocess.DEVNULL).pid] = command
        pid, status, usage = os.wait4(-1, 0)
        command = running.pop(pid)
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(command)}")
        cpu += usage.ru_utime + usage.ru_stime
    return {"wall_s": time.perf_counter() - started, "cpu_s": cpu}


def corpus(path: Path, sentences: int) -> int:
    """The first `sentences` sentences of the shared corpora (in CORPORA's order) as {"id", "text"} records."""
    written = 0
    with open(path, "wb") as out:
        for kind, folder, extra in CORPORA:
            converted = subprocess.run(
                [*SEMBED, "convert", "-q", "--from", kind, str(DATA / "corpora" / folder), *extra],
                env=environment(),
                capture_output=True,
                check=True,
            ).stdout
            for line in converted.splitlines():
                text = orjson.loads(line).get("text", "").strip()
                if text:  # an id of its own: without one a record's id hashes its vector, whose last bits vary
                    out.write(orjson.dumps({"id": written, "text": text}) + b"\n")
                    written += 1
                    if written == sentences:
                        return written
    raise SystemExit(f"the shared corpora hold {written} sentences, fewer than {sentences}")


def distilled_static(work: Path, teacher: str, sample: Path) -> Path:
    """A static model (model2vec-style) distilled from `teacher` once, kept in `work`."""
    model = work / f"static-{teacher}"
    if not (model / "modules.json").exists():
        log(f"distilling a static model from {teacher}")
        figures = run(
            [
                *SEMBED,
                "train",
                "--method",
                "static",
                "-m",
                teacher,
                "--device",
                "cpu",
                "-q",
                "-o",
                str(model),
                str(sample),
            ]
        )
        log(f"  {figures['wall_s']:.0f} s")
    return model


def top10(index: Path, queries: np.ndarray) -> tuple[list[list], np.ndarray]:
    from sembed_cli.indexes.directory import VectorIndex

    with VectorIndex.load(index) as loaded:
        scores, rows = loaded.search(queries, 10)
        found = loaded.records(np.unique(rows[rows >= 0]))
    return [[found[row][0] if row in found else None for row in line] for line in rows.tolist()], scores


def agreement(reference: tuple[list[list], np.ndarray], other: tuple[list[list], np.ndarray]) -> dict:
    """How far `other`'s top-10 lists are from `reference`'s: identical lists, lists that differ only where
    scores tie (within the tolerance), others; and the largest score difference."""
    (ids, scores), (other_ids, other_scores) = reference, other
    same = tied = 0
    overlap = np.mean([len(set(line) & set(other_line)) / len(line) for line, other_line in zip(ids, other_ids)])
    for line, other_line, score, other_score in zip(ids, other_ids, scores, other_scores):
        if line == other_line:
            same += 1
        elif np.allclose(score, other_score, atol=TOLERANCE):
            tied += 1
    return {
        "queries": len(ids),
        "same_top10_ids": same,
        "differ_only_in_ties": tied,
        "differ": len(ids) - same - tied,
        "mean_top10_overlap": round(float(overlap), 4),
        "max_score_difference": float(np.max(np.abs(scores - other_scores))),
    }


def build_index(source: Path, output: Path) -> dict:
    return run([*SEMBED, "index", str(source), "-o", str(output), "--type", "flat", "-q"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model",
        default=None,
        help="the model (default: a static model distilled from all-MiniLM-L6-v2 in --work, built once)",
    )
    parser.add_argument("--sentences", type=int, default=50_000)
    parser.add_argument(
        "--embed-options",
        default="",
        help="more options for every embed, e.g. '--backend onnx --quantize int8' (vectors that depend on their batch)",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/sembed-bench-parts"))
    parser.add_argument(
        "--at-once", type=int, default=2, help="array tasks and Ray workers running at once (the machine's cores)"
    )
    args = parser.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    source = work / f"corpus-{args.sentences}-ids.jsonl"
    if not source.exists():
        corpus(source, args.sentences)
    model = args.model or str(distilled_static(work, "all-MiniLM-L6-v2", source))
    name = args.model or "static distilled from all-MiniLM-L6-v2 (sembed train --method static, 256-d)"
    options = args.embed_options.split()
    name += f" {args.embed_options}" if options else ""
    runs = work / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    runs.mkdir()
    load_before = os.getloadavg()
    engines: dict[str, dict] = {}

    log("one process")
    embed = run(
        [
            *SEMBED,
            "embed",
            str(source),
            "-m",
            model,
            *options,
            "--npy",
            str(runs / "one.npy"),
            "-o",
            str(runs / "one.jsonl"),
            "-q",
        ]
    )
    index = run(
        [
            *SEMBED,
            "index",
            str(runs / "one.jsonl"),
            "--npy",
            str(runs / "one.npy"),
            "-o",
            str(runs / "one-index"),
            "--type",
            "flat",
            "-q",
        ]
    )
    engines["one process"] = {"embed": embed, "index": index, "index_dir": runs / "one-index"}

    log(f"{PARTS} parts, a local loop")
    loop = (
        f"for i in $(seq 1 {PARTS}); do {' '.join(SEMBED)} embed {source} --shard $i/{PARTS} "
        f"--parts {runs / 'local'} -m {model} {' '.join(options)} -q || exit 1; done"
    )
    embed = run(["bash", "-c", loop])
    engines["local loop"] = {
        "embed": embed,
        "index": build_index(runs / "local", runs / "local-index"),
        "index_dir": runs / "local-index",
    }

    log(f"{PARTS} parts, a simulated Slurm array ({args.at_once} tasks at once), then the index job")
    tasks = [
        [
            "env",
            f"SLURM_ARRAY_TASK_ID={task}",
            "SLURM_ARRAY_TASK_MIN=1",
            f"SLURM_ARRAY_TASK_COUNT={PARTS}",
            "SLURM_CPUS_PER_TASK=1",
            "bash",
            str(SCRIPT),
            "part",
            str(source),
            str(runs / "slurm"),
            "-m",
            model,
            *options,
            "-q",
        ]
        for task in range(1, PARTS + 1)
    ]
    embed = run_concurrently(tasks, args.at_once)
    index = run(
        ["bash", str(SCRIPT), "index", str(runs / "slurm"), str(runs / "slurm-index")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    engines["simulated Slurm array"] = {
        "embed": embed,
        "index": index,
        "index_dir": runs / "slurm-index",
        "note": "the index job also runs `sembed parts DIR` first",
    }

    log(f"{PARTS} parts, Ray (a local cluster, {args.at_once} workers)")
    embed = run(
        [
            *SEMBED,
            "parts",
            "run",
            str(runs / "ray"),
            "--shards",
            str(PARTS),
            "--engine",
            "ray",
            "--workers",
            str(args.at_once),
            "-q",
            "--",
            str(source),
            "-m",
            model,
            *options,
        ],
        stderr=subprocess.DEVNULL,
    )
    engines["Ray"] = {
        "embed": embed,
        "index": build_index(runs / "ray", runs / "ray-index"),
        "index_dir": runs / "ray-index",
        "note": "wall includes starting the local Ray cluster; CPU counts only reaped processes",
    }

    log("queries")
    queries_path = write_queries(runs / "queries.jsonl")
    run(
        [
            *SEMBED,
            "embed",
            str(queries_path),
            "-m",
            model,
            *options,
            "--npy",
            str(runs / "queries.npy"),
            "-o",
            str(runs / "queries.rows.jsonl"),
            "-q",
        ]
    )
    queries = np.load(runs / "queries.npy")
    reference = top10(engines["one process"]["index_dir"], queries)
    one_total = engines["one process"]["embed"]["wall_s"] + engines["one process"]["index"]["wall_s"]
    one_cpu = engines["one process"]["embed"]["cpu_s"]
    result = {}
    for engine, figures in engines.items():
        total = figures["embed"]["wall_s"] + figures["index"]["wall_s"]
        result[engine] = {
            "embed_wall_s": round(figures["embed"]["wall_s"], 2),
            "embed_cpu_s": round(figures["embed"]["cpu_s"], 2),
            "index_wall_s": round(figures["index"]["wall_s"], 2),
            "index_cpu_s": round(figures["index"]["cpu_s"], 2),
            "total_wall_s": round(total, 2),
            "sentences_per_s": round(args.sentences / figures["embed"]["wall_s"], 1),
            "wall_overhead_vs_one_process": round(total / one_total - 1, 3),
            "embed_cpu_overhead_vs_one_process": None
            if engine == "Ray"
            else round(figures["embed"]["cpu_s"] / one_cpu - 1, 3),
            "top10_vs_one_process": agreement(reference, top10(figures["index_dir"], queries)),
            **({"note": figures["note"]} if "note" in figures else {}),
        }
        log(f"  {engine}: {result[engine]}")
    save(
        name,
        {
            "model": name,
            "embed_options": args.embed_options,
            "sentences": args.sentences,
            "parts": PARTS,
            "at_once": args.at_once,
            "precision": "int8" if "int8" in options else "fp32",
            "queries": len(queries),
            "index_type": "flat",
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "engines": result,
        },
    )


def write_queries(path: Path) -> Path:
    with open(path, "wb") as out:
        for text in stsb_test_sentences()[:QUERIES]:
            out.write(orjson.dumps({"text": text}) + b"\n")
    return path


def save(name: str, entry: dict) -> None:
    """bench/results/parts.json: one entry per model, the others kept."""
    path = RESULTS / "parts.json"
    results = json.loads(path.read_text()) if path.exists() else {"benchmark": "parts", "runs": {}}
    results.update(
        {
            "date": time.strftime("%Y-%m-%d"),
            "python": sys.version.split()[0],
            **cpu_description(),
            "threads_per_process": 1,
        }
    )
    results["runs"][name] = {"date": time.strftime("%Y-%m-%d %H:%M"), **entry}
    path.write_text(json.dumps(results, indent=2) + "\n")
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
