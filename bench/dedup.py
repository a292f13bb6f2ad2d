"""`sembed dedup` at corpus scale: the 953,433 overlapping 12-word windows of the shared corpora (runs/real, made by
bench/real_vectors.py: all-MiniLM-L6-v2 ONNX int8 vectors) plus planted near-duplicates, against brute force.

Planted: PLANTED windows drawn at random (seeded), a third each copied exactly, with one word replaced by a word of
another window, and with punctuation and case changed (lower-cased, punctuation stripped, a final '!' added); only
the planted texts are embedded, with the model and settings the windows were (`sembed embed --backend onnx
--quantize int8`), and appended. Overlapping windows (stride 3) are near-duplicates of their neighbours themselves,
so the truth is the same cosine threshold by exact search (float32, every row): for SAMPLE records drawn at random,
every other record at cosine >= the threshold.

Measured: `sembed dedup rows.jsonl --npy all.npy` as a user runs it (records naming their rows, the .npy beside),
its wall and CPU time and peak RSS (/usr/bin/time); from its output, the groups: recall of the truth pairs of the
sampled records (both ends in one group), and of the planted pairs by kind; pair precision and recall of the pairs the
search finds from the sampled records (the command's own search, rebuilt in this process with the same seed: the
pairs are not in the output); and the exact cosine of the planted pairs by kind (what a threshold keeps).

    .venv/bin/python bench/dedup.py [--planted 3000] [--sample 2000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, log, save

REAL = Path(os.environ.get("SEMBED_REAL", "/work/main/runs/real"))
WORK = ROOT / "runs" / "dedup"
KINDS = ("exact", "word", "punctuation_case")
PUNCTUATION = re.compile(r"[^\w\s]")


def plant(windows: list[bytes], count: int, seed: int) -> list[dict]:
    """`count` planted records, a third of each kind, each naming the window it copies (`original`: its row)."""
    rng = random.Random(seed)
    rows = rng.sample(range(len(windows)), count)
    planted = []
    for n, row in enumerate(rows):
        record = orjson.loads(windows[row])
        kind = KINDS[n % len(KINDS)]
        text = record["text"]
        if kind == "word":
            words = text.split()
            other = orjson.loads(windows[rng.randrange(len(windows))])["text"].split()
            at = rng.randrange(len(words))
            replacement = rng.choice(other)
            while replacement.lower() == words[at].lower() and len(other) > 1:
                replacement = rng.choice(other)
            words[at] = replacement
            text = " ".join(words)
        elif kind == "punctuation_case":
            text = " ".join(PUNCTUATION.sub("", text).lower().split()) + "!"
        planted.append({"id": f"planted:{n}", "doc_id": f"planted:{n}", "text": text, "kind": kind, "original": row})
    return planted


def embed_planted(planted: list[dict], threads: int) -> np.ndarray:
    path = WORK / "planted.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in planted))
    npy = WORK / "planted.npy"
    command = [str(ROOT / ".venv/bin/sembed"), "embed", str(path), "--npy", str(npy), "-o", "/dev/null", "--force"]
    command += ["--backend", "onnx", "--quantize", "int8", "-q"]
    subprocess.run(command, check=True, env={**os.environ, "SEMBED_THREADS": str(threads)})
    return np.load(npy)


def write_inputs(windows: list[bytes], planted: list[dict], planted_vectors: np.ndarray) -> tuple[Path, Path]:
    """rows.jsonl (every window, then every planted record, each with its embedding_row) and all.npy beside it."""
    corpus = np.load(REAL / "minilm.npy", mmap_mode="r")[: len(windows)]
    npy = WORK / "all.npy"
    total = len(corpus) + len(planted)
    matrix = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float32, shape=(total, corpus.shape[1]))
    for start in range(0, len(corpus), 100_000):
        block = corpus[start : start + 100_000]
        matrix[start : start + len(block)] = block
    matrix[len(corpus) :] = planted_vectors
    matrix.flush()
    del matrix
    shutil.copy(REAL / "minilm.npy.json", WORK / "all.npy.json")
    sidecar = json.loads((WORK / "all.npy.json").read_text())
    sidecar["rows"] = total
    (WORK / "all.npy.json").write_text(json.dumps(sidecar))
    rows = WORK / "rows.jsonl"
    with open(rows, "wb") as out:
        for n, line in enumerate(windows):
            out.write(line.rstrip(b"\n")[:-1] + b',"embedding_row":' + str(n).encode() + b"}\n")
        for n, record in enumerate(planted):
            out.write(orjson.dumps({**record, "embedding_row": len(windows) + n}) + b"\n")
    return rows, npy


def run_dedup(rows: Path, npy: Path, threshold: float, threads: int) -> dict:
    """Run the command as a user does, timed by /usr/bin/time: a child forked from this process would inherit its
    peak RSS (Linux keeps the high-water mark across exec), and this process holds the windows."""
    out = WORK / "dedup.jsonl"
    command = [str(ROOT / ".venv/bin/sembed"), "dedup", str(rows), "--npy", str(npy), "-o", str(out), "--force"]
    command += ["--threshold", str(threshold)]
    env = {**os.environ, "SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    timed = ["/usr/bin/time", "-f", "TIMED %M %e %U %S", *command]
    done = subprocess.run(timed, env=env, stderr=subprocess.PIPE, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 0 or not lines or not lines[-1].startswith("TIMED "):
        raise SystemExit(f"sembed dedup failed: {done.stderr[-2000:]}")
    peak_kb, wall, user, system = (float(x) for x in lines[-1].split()[1:])
    log("\n".join(lines[:-1]))
    return {
        "command": " ".join(["sembed", *command[1:]]).replace(str(ROOT) + "/", ""),
        "wall_s": round(wall, 1),
        "cpu_s": round(user + system, 1),
        "peak_rss_gb": round(peak_kb / 2**20, 3),
        "stderr": lines[:-1],
    }


def read_groups(path: Path, count: int) -> np.ndarray:
    group = np.full(count, -1, dtype=np.int64)
    with open(path, "rb") as f:
        for n, line in enumerate(f):
            value = orjson.loads(line)["group"]
            if value is not None:
                group[n] = value
    return group


def exact_neighbours(matrix: np.ndarray, rows: np.ndarray, threshold: float, block: int = 50_000) -> list[set[int]]:
    """For each row of `rows`, every other row at cosine >= threshold, by float32 inner product over all rows."""
    queries = np.array(matrix[rows], dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    found: list[set[int]] = [set() for _ in rows]
    for start in range(0, len(matrix), block):
        part = np.array(matrix[start : start + block], dtype=np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        scores = queries @ part.T
        for q, j in zip(*np.nonzero(scores >= threshold)):
            if start + j != rows[q]:
                found[q].add(int(start + j))
    return found


def searched_pairs(npy: Path, rows_path: Path, sample: np.ndarray, threshold: float, seed: int) -> list[set[int]]:
    """The pairs `sembed dedup` finds from the sampled records' own searches: the same collection read, the same
    seeded search built, the sampled rows searched."""
    import tempfile

    from sembed_cli.indexes.collection import CollectionSource, ReadSettings, opened
    from sembed_cli.indexes.near_duplicates import DedupSettings, vector_search

    settings = DedupSettings(threshold=threshold, seed=seed)
    source = CollectionSource(str(rows_path), read=ReadSettings(npy=npy))
    with tempfile.TemporaryDirectory(), opened(source) as collection:
        search, how = vector_search(collection, settings)
        log(f"search rebuilt for the sample: {how}")
        queries = collection.rows(sample)
        scores, positions = search(queries, settings.neighbours + 1)
    found = []
    for q, row in enumerate(sample):
        keep = (positions[q] >= 0) & (positions[q] != row) & (scores[q] >= threshold)
        found.append({int(p) for p in positions[q][keep]})
    return found


def overlapping_windows(path: Path, matrix: np.ndarray, count: int, seed: int, pairs: int = 20_000) -> dict:
    """The cosine of a window and the next one of its document (stride 3: 9 of 12 words shared), for a sample: how
    many of the corpus's own overlaps a threshold counts as near-duplicates."""
    documents = []
    with open(path, "rb") as f:
        for _, line in zip(range(count), f):
            documents.append(orjson.loads(line)["doc_id"])
    rng = np.random.default_rng(seed)
    first = rng.choice(count - 1, size=min(pairs, count - 1), replace=False)
    first = first[[documents[i] == documents[i + 1] for i in first]]
    a = np.asarray(matrix[np.sort(first)], dtype=np.float32)
    b = np.asarray(matrix[np.sort(first) + 1], dtype=np.float32)
    cosine = np.einsum("nd,nd->n", a, b) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    return {
        "pairs": len(cosine),
        "cosine_quantiles_5_25_50_75_95": [
            round(float(q), 4) for q in np.quantile(cosine, [0.05, 0.25, 0.5, 0.75, 0.95])
        ],
        "share_at_or_above": {str(t): round(float((cosine >= t).mean()), 4) for t in (0.8, 0.85, 0.9, 0.95)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--planted", type=int, default=3000)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="dedup")
    parser.add_argument("--limit", type=int, default=None, help="the first N windows only (a smoke run)")
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    windows = (REAL / "windows.jsonl").read_bytes().splitlines(keepends=True)[: args.limit]
    planted = plant(windows, args.planted, args.seed)
    started = time.perf_counter()
    planted_vectors = embed_planted(planted, args.threads)
    log(f"embedded {len(planted)} planted records in {time.perf_counter() - started:.0f} s")
    rows, npy = write_inputs(windows, planted, planted_vectors)
    total = len(windows) + len(planted)
    del windows
    log(f"sembed dedup over {total} records")
    timed = run_dedup(rows, npy, args.threshold, args.threads)
    log(f"{timed['wall_s']} s wall, {timed['cpu_s']} CPU-s, peak RSS {timed['peak_rss_gb']} GB")
    group = read_groups(WORK / "dedup.jsonl", total)

    matrix = np.load(npy, mmap_mode="r")
    originals = np.asarray([r["original"] for r in planted])
    copies = np.arange(total - len(planted), total)
    a = np.asarray(matrix[originals], dtype=np.float32)
    b = np.asarray(matrix[copies], dtype=np.float32)
    cosine = np.einsum("nd,nd->n", a, b) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    together = (group[originals] >= 0) & (group[originals] == group[copies])
    by_kind = {}
    for kind in KINDS:
        mine = np.asarray([r["kind"] == kind for r in planted])
        eligible = mine & (cosine >= args.threshold)
        quantiles = np.quantile(cosine[mine], [0.05, 0.25, 0.5, 0.75, 0.95])
        kept = round(float(together[eligible].mean()), 4) if eligible.any() else None
        by_kind[kind] = {
            "planted": int(mine.sum()),
            "cosine_quantiles_5_25_50_75_95": [round(float(q), 4) for q in quantiles],
            "share_at_or_above": {str(t): round(float((cosine[mine] >= t).mean()), 4) for t in (0.8, 0.85, 0.9, 0.95)},
            "grouped_with_original": round(float(together[mine].mean()), 4),
            "grouped_where_cosine_at_or_above_threshold": kept,
        }
    log(json.dumps(by_kind, indent=1))
    overlapping = overlapping_windows(REAL / "windows.jsonl", matrix, total - len(planted), args.seed)
    log(json.dumps(overlapping, indent=1))

    rng = np.random.default_rng(args.seed)
    sample = np.sort(rng.choice(total, size=args.sample, replace=False))
    started = time.perf_counter()
    truth = exact_neighbours(matrix, sample, args.threshold)
    brute_s = time.perf_counter() - started
    found = searched_pairs(npy, rows, sample, args.threshold, 42)
    true_pairs = sum(len(t) for t in truth)
    found_pairs = sum(len(f) for f in found)
    hits = sum(len(t & f) for t, f in zip(truth, found))
    grouped = sum(sum(1 for j in t if group[i] >= 0 and group[j] == group[i]) for i, t in zip(sample, truth))
    # group precision: the sampled record's group-mates that are truly at the threshold (chains join others too)
    mates = 0
    true_mates = 0
    members_of: dict[int, np.ndarray] = {}
    for i, t in zip(sample, truth):
        if group[i] < 0:
            continue
        g = int(group[i])
        if g not in members_of:
            members_of[g] = np.flatnonzero(group == g)
        others = members_of[g][members_of[g] != i]
        mates += len(others)
        true_mates += sum(1 for j in others if int(j) in t)
    result = {
        "data": f"{REAL}/windows.jsonl: {total - len(planted):,} 12-word windows (stride 3) + {len(planted)} planted",
        "model": "all-MiniLM-L6-v2, ONNX int8 (sembed embed --backend onnx --quantize int8)",
        "records": total,
        "threshold": args.threshold,
        "neighbours": 10,
        "threads": args.threads,
        "input_bytes": {"rows.jsonl": rows.stat().st_size, "all.npy": npy.stat().st_size},
        "sembed_dedup": timed,
        "groups": int(group.max()) + 1,
        "records_in_groups": int((group >= 0).sum()),
        "sample": {
            "records": args.sample,
            "brute_force_s": round(brute_s, 1),
            "true_pairs": true_pairs,
            "records_with_a_true_pair": int(sum(1 for t in truth if t)),
            "pairs_found_by_search": found_pairs,
            "pair_precision": round(hits / found_pairs, 4) if found_pairs else None,
            "pair_recall": round(hits / true_pairs, 4) if true_pairs else None,
            "true_pairs_grouped_together": round(grouped / true_pairs, 4) if true_pairs else None,
            "group_mates_at_threshold": round(true_mates / mates, 4) if mates else None,
            "group_mates": mates,
        },
        "planted": by_kind,
        "overlapping_windows": overlapping,
        "planted_grouped_with_original": round(float(together.mean()), 4),
    }
    log(json.dumps(result["sample"], indent=1))
    log(f"wrote {save(args.name, result)}")


if __name__ == "__main__":
    main()
