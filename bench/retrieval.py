"""Dense, keyword (BM25) and hybrid retrieval on one sembed index of ~961,000 real texts; --where speed; a re-rank.

The retrieval set: every STS-B test pair scored >= 4 (of 0-5) and every SICK test pair of relatedness >= 4 (of
1-5) gives each of its sentences as a query whose relevant answer is the other (a sentence in several such pairs
has them all as relevant answers). The index holds the 7,559 distinct STS-B and SICK test sentences and the
953,433 overlapping 12-word windows of the shared corpora (runs/real/windows.jsonl) as distractors: built by
`sembed index --npy` from all-MiniLM-L6-v2 ONNX int8 vectors made once by bench/real_vectors.py (runs/real/), so
only `sembed index` runs here, `--type ivf` (4,096 cells, 256 probed). The query's own sentence is left out of
its answers. Scored: recall@10 (the share of a query's relevant sentences among its 10 answers) and MRR@10 (1 / the
rank of the first relevant one, 0 past 10) of `search` (dense, the vectors), `search --keyword --any-word` (BM25
over the query's words) and `search --hybrid --any-word` (reciprocal-rank fusion, k = 60, weight 0.5), with
paired bootstrap 95% intervals of each difference over the queries (the same draws for both sides, as
sembed_cli.evaluation.statistics.paired_difference does for correlations); queries/s of each mode from the text
(the query vectors read from runs/real/minilm.queries.npy for dense and hybrid, so the model's time is not in it).
The static model (issue 40, item 3) answers the same queries from its own index of the same texts (its vectors in
runs/real/static.npy and static.queries.npy, the same --type ivf): `static` (its vectors alone) and `static hybrid`
(fused with BM25 as above), so the static model, MiniLM and BM25 stand side by side.

--where at this size: `bucket < 5000`, `bucket < 100`, `bucket = 0` over a field bucket = row % 10,000 (50%, 1%,
0.01% of the records): the time to select the rows (SQLite over the payloads), queries/s of the filtered search,
and whether every query got 10 answers, all meeting the filter.

Second stage: recall of MiniLM's exact top-10 among the windows (runs/real/minilm.truth.npy) for a first stage
alone, for it with `--rerank-model` MiniLM (ONNX int8) over 100 candidates, and for MiniLM's own index, with
queries/s: the first stage is the static model's index of the windows where runs/real/static.npy (its vectors of
the windows) exists (results: retrieval_rerank.json), else BM25 over the index above (retrieval_rerank_bm25.json).

    python bench/retrieval.py [--queries 2000] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import time
from pathlib import Path

import numpy as np
import orjson
from common import DATA, ROOT, log, paired, save

from sembed_cli.indexes.directory import VectorIndex
from sembed_cli.indexes.search import SearchSettings, plan_of, search_records

WORK = ROOT / "runs" / "retrieval"
RELEVANT_FROM = 4.0
K = 10
WHERE = {"50%": "bucket < 5000", "1%": "bucket < 100", "0.01%": "bucket = 0"}


def real_dir() -> Path:
    for candidate in (ROOT / "runs" / "real", Path("/work/main/runs/real")):
        if (candidate / "windows.jsonl").exists():
            return candidate
    raise SystemExit("no runs/real/windows.jsonl: run bench/real_vectors.py first")


def pairs() -> list[tuple[str, str]]:
    """(sentence, sentence) of the STS-B and SICK test pairs scored >= RELEVANT_FROM."""
    found = []
    for line in (DATA / "stsb" / "sts-test.csv").read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if float(cols[4]) >= RELEVANT_FROM:
            found.append((cols[5].strip(), cols[6].strip()))
    for line in (DATA / "sick" / "SICK_test_annotated.txt").read_text(encoding="utf-8").splitlines()[1:]:
        cols = line.split("\t")
        if float(cols[3]) >= RELEVANT_FROM:
            found.append((cols[1].strip(), cols[2].strip()))
    return [(a, b) for a, b in found if a and b and a != b]


MODELS = {"minilm": "index", "static": "static-full-index"}  # vectors in runs/real/NAME.npy -> the index's folder


def build(real: Path, work: Path, model: str = "minilm") -> tuple[Path, dict]:
    """The index over the windows and the STS-B/SICK sentences (rows: windows by line, then the sentences), from
    `model`'s vectors (runs/real/MODEL.npy and MODEL.queries.npy)."""
    index = work / MODELS[model]
    built_json = work / ("build.json" if model == "minilm" else f"build.{model}.json")
    if (index / "sembed.json").exists():
        return index, json.loads(built_json.read_text())
    work.mkdir(parents=True, exist_ok=True)
    windows = np.load(real / f"{model}.npy", mmap_mode="r")
    sentences = np.load(real / f"{model}.queries.npy", mmap_mode="r")
    matrix = np.lib.format.open_memmap(
        work / "vectors.npy", mode="w+", dtype=np.float16, shape=(len(windows) + len(sentences), windows.shape[1])
    )
    for start in range(0, len(windows), 100_000):
        end = min(start + 100_000, len(windows))
        matrix[start:end] = windows[start:end]
    matrix[len(windows) :] = sentences
    matrix.flush()
    del matrix
    sidecar = json.loads((real / f"{model}.queries.npy.json").read_text())
    sidecar.update(rows=len(windows) + len(sentences), dtype="float16")
    (work / "vectors.npy.json").write_text(json.dumps(sidecar))
    stamp = {} if model == "minilm" else {"embedding_model": sidecar["embedding_model"]}  # as embed -o would stamp
    row = 0
    with (
        open(work / "records.jsonl", "wb") as out,
        open(real / "windows.jsonl", "rb") as window_lines,
        open(real / "queries.jsonl", "rb") as sentence_lines,
    ):
        for line in window_lines:
            record = orjson.loads(line)
            record.update(source="window", bucket=row % 10_000, embedding_row=row, **stamp)
            out.write(orjson.dumps(record) + b"\n")
            row += 1
        for line in sentence_lines:
            record = orjson.loads(line)
            record.update(id=f"s:{record['id']}", doc_id="sts-sick", source="sentence", bucket=row % 10_000)
            record.update(embedding_row=row, **stamp)
            out.write(orjson.dumps(record) + b"\n")
            row += 1
    command = [str(ROOT / ".venv/bin/sembed"), "index", str(work / "records.jsonl"), "--npy", str(work / "vectors.npy")]
    command += ["--type", "ivf", "-o", str(index), "--force", "-q"]
    log(f"building: {' '.join(command)}")
    started, cpu = time.time(), os.times()
    subprocess.run(command, check=True)
    done = os.times()
    built = {
        "records": row,
        "vectors": model,
        "type": "ivf",
        "wall_s": round(time.time() - started, 1),
        "cpu_s": round(done.children_user + done.children_system - cpu.children_user - cpu.children_system, 1),
        "records_sqlite_bytes": (index / "records.sqlite").stat().st_size,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }
    built_json.write_text(json.dumps(built))
    (work / "vectors.npy").unlink()
    (work / "records.jsonl").unlink()
    return index, built


def retrieval_set(real: Path, count: int, seed: int) -> list[dict]:
    """Query records: text, each model's vector of it (`vectors`, by MODELS' names), the query's own id and the ids
    of its relevant sentences."""
    by_text: dict[str, str] = {}
    rows: dict[str, int] = {}
    with open(real / "queries.jsonl", "rb") as lines:
        for row, line in enumerate(lines):
            record = orjson.loads(line)
            by_text[record["text"].strip()] = f"s:{record['id']}"
            rows[f"s:{record['id']}"] = row
    relevant: dict[str, set[str]] = {}
    for a, b in pairs():
        if a in by_text and b in by_text and by_text[a] != by_text[b]:
            relevant.setdefault(a, set()).add(by_text[b])
            relevant.setdefault(b, set()).add(by_text[a])
    texts = sorted(relevant)
    random.Random(seed).shuffle(texts)
    vectors = {model: np.load(real / f"{model}.queries.npy", mmap_mode="r") for model in MODELS}
    return [
        {
            "text": text,
            "own": by_text[text],
            "relevant": sorted(relevant[text]),
            "vectors": {model: np.asarray(v[rows[by_text[text]]], dtype=np.float32) for model, v in vectors.items()},
        }
        for text in texts[:count]
    ]


def run_mode(
    index: VectorIndex, queries: list[dict], settings: SearchSettings, model: str | None, asked: int
) -> tuple[list, list, float]:
    """Each query's answer ids (its own sentence left out), its whole ranking of `asked` (own included, as the
    fusion sees it), and the queries/s of the search; the query vectors are `model`'s (None: text alone)."""
    plan = plan_of(index, settings)
    records = [{"text": q["text"], **({"embedding": q["vectors"][model]} if model else {})} for q in queries]
    started = time.perf_counter()
    found = list(
        search_records(iter(records), index, None, asked, "text", "embedding", 500, plan=plan)  # type: ignore[arg-type]
    )
    seconds = time.perf_counter() - started
    rankings = [[n["id"] for n in record["neighbors"]] for record in found]
    answers = [[i for i in ranking if i != q["own"]][:K] for ranking, q in zip(rankings, queries)]
    return answers, rankings, len(queries) / seconds


def fused(dense: list[list[str]], words: list[list[str]], weight: float, queries: list[dict]) -> list[list[str]]:
    """search --hybrid's answers from the two rankings, by the command's own fusion (keyword.fuse)."""
    from sembed_cli.indexes.keyword import HYBRID_DEPTH, fuse

    answers = []
    for a, b, q in zip(dense, words, queries):
        names = list(dict.fromkeys(a[:HYBRID_DEPTH] + b[:HYBRID_DEPTH]))
        number = {name: i for i, name in enumerate(names)}

        def ranking(ids: list[str], number: dict[str, int] = number) -> tuple[np.ndarray, np.ndarray]:
            rows = np.full((1, HYBRID_DEPTH), -1, dtype=np.int64)
            rows[0, : len(ids[:HYBRID_DEPTH])] = [number[i] for i in ids[:HYBRID_DEPTH]]
            return np.zeros(rows.shape, np.float32), rows

        _, rows = fuse(ranking(a), ranking(b), K + 1, weight)
        answers.append([names[r] for r in rows[0].tolist() if r >= 0 and names[r] != q["own"]][:K])
    return answers


def scores(answers: list[list[str]], queries: list[dict]) -> dict[str, np.ndarray]:
    recall, reciprocal = [], []
    for found, q in zip(answers, queries):
        relevant = set(q["relevant"])
        recall.append(len(relevant & set(found[:K])) / len(relevant))
        rank = next((i for i, f in enumerate(found[:K], 1) if f in relevant), None)
        reciprocal.append(1.0 / rank if rank else 0.0)
    return {"recall@10": np.asarray(recall), "mrr@10": np.asarray(reciprocal)}


def where_speed(index: VectorIndex, queries: list[dict]) -> dict:
    from sembed_cli.indexes.filters import Selection

    out: dict = {}
    vectors = np.stack([q["vectors"]["minilm"] for q in queries])
    started = time.perf_counter()
    index.search(vectors, K)
    out["none"] = {"queries_per_s": round(len(queries) / (time.perf_counter() - started), 1)}
    for share, expression in WHERE.items():
        started = time.perf_counter()
        selection = Selection.of(index, expression)
        selected = time.perf_counter() - started
        started = time.perf_counter()
        _, rows = selection.search(vectors, K)
        seconds = time.perf_counter() - started
        allowed = set(selection.rows.tolist())
        full = all((r >= 0).sum() == min(K, len(allowed)) for r in rows)
        meets = all(int(x) in allowed for x in rows.ravel() if x >= 0)
        out[share] = {
            "where": expression,
            "selected": len(selection),
            "path": "exact over the selection" if selection.exact else "FAISS IDSelectorBitmap",
            "select_s": round(selected, 3),
            "queries_per_s": round(len(queries) / seconds, 1),
            "every_query_got_min(k, selected)": bool(full),
            "all_answers_meet_the_filter": bool(meets),
        }
        log(f"--where {expression}: {out[share]}")
    return out


def build_static(real: Path, work: Path) -> Path:
    """The static model's index over the windows alone (row i = line i of windows.jsonl), from static.npy."""
    index = work / "static-index"
    if (index / "sembed.json").exists():
        return index
    identity = orjson.loads((real / "static.npy.json").read_bytes())["embedding_model"]  # as embed -o would stamp
    with open(work / "static.records.jsonl", "wb") as out, open(real / "windows.jsonl", "rb") as lines:
        for row, line in enumerate(lines):
            record = orjson.loads(line)
            record["embedding_row"] = row
            record["embedding_model"] = identity
            out.write(orjson.dumps(record) + b"\n")
    command = [str(ROOT / ".venv/bin/sembed"), "index", str(work / "static.records.jsonl"), "--npy"]
    command += [str(real / "static.npy"), "--type", "ivf", "-o", str(index), "--force", "-q"]
    log(f"building: {' '.join(command)}")
    subprocess.run(command, check=True)
    (work / "static.records.jsonl").unlink()
    return index


def second_stage(real: Path, minilm_index: Path, count: int, seed: int, depth: int, static_model: str) -> dict:
    """Recall of MiniLM's exact top-10 among the windows (minilm.truth.npy) and queries/s: the static index alone,
    the static index with --rerank-model MiniLM (ONNX int8) over `depth` candidates, MiniLM's own index."""
    from sembed_cli.indexes.query_encoder import QueryEmbedder
    from sembed_cli.models.embedder import Embedder

    truth = np.load(real / "minilm.truth.npy", mmap_mode="r")
    with open(real / "queries.jsonl", "rb") as lines:
        texts = [orjson.loads(line)["text"] for line in lines]
    with open(real / "windows.jsonl", "rb") as lines:
        window_rows = {orjson.loads(line)["id"]: row for row, line in enumerate(lines)}
    chosen = sorted(random.Random(seed).sample(range(len(texts)), count))
    expected = [set(truth[i, :K].tolist()) for i in chosen]

    def recall(found: list[list[str]]) -> np.ndarray:
        rows = [[window_rows[i] for i in ids if i in window_rows][:K] for ids in found]
        return np.asarray([len(set(r) & e) / K for r, e in zip(rows, expected)])

    out: dict = {"queries": count, "depth": depth, "truth": "MiniLM's exact top-10 windows (minilm.truth.npy)"}
    static = (real / "static.npy").exists()
    first_index = build_static(real, WORK) if static else minilm_index
    label = "static" if static else "BM25 (--keyword --any-word)"
    windows = {} if static else {"where": "source = 'window'"}  # the combined index holds the sentences too
    rerank = {"rerank_model": "all-MiniLM-L6-v2", "rerank_depth": depth, "backend": "onnx", "quantize": "int8"}
    words = {} if static else {"keyword": True, "any_word": True, **windows}
    with VectorIndex.load(first_index) as index:
        encoder = QueryEmbedder(index, static_model if static else None)  # the static model's recorded path is relative
        if static:
            encoder.open()
        records = [{"text": texts[i]} for i in chosen]
        for name, settings in (
            (label, SearchSettings(k=K, **words)),  # type: ignore[arg-type]
            (f"{label} + MiniLM re-rank of {depth}", SearchSettings(k=K, **words, **rerank)),  # type: ignore[arg-type]
        ):
            plan = plan_of(index, settings)
            if plan is not None and plan.reranker is not None:
                plan.reranker.open()
            started = time.perf_counter()
            found = list(
                search_records(iter([dict(r) for r in records]), index, encoder, K, "text", "embedding", 100, plan=plan)
            )
            seconds = time.perf_counter() - started
            scored = recall([[n["id"] for n in r["neighbors"]] for r in found])
            out[name] = {"recall@10": round(float(scored.mean()), 4), "queries_per_s": round(count / seconds, 1)}
            out[name]["_per_query"] = scored
            log(f"{name}: {out[name]['recall@10']}, {out[name]['queries_per_s']} q/s")
    minilm = Embedder.open("all-MiniLM-L6-v2", backend="onnx", quantize="int8")
    started = time.perf_counter()
    minilm.encode([texts[i] for i in chosen])  # timed only: int8 vectors shift with the batch they are made in
    embedding = time.perf_counter() - started
    vectors = np.asarray(np.load(real / "minilm.queries.npy", mmap_mode="r")[chosen], dtype=np.float32)
    with VectorIndex.load(minilm_index) as index:
        from sembed_cli.indexes.filters import Selection

        only_windows = Selection.of(index, "source = 'window'")  # as search --where does
        started = time.perf_counter()
        _, rows = only_windows.search(vectors, K)
        searching = time.perf_counter() - started
        found_records = index.records(rows.ravel())
        found = [[found_records[r][0] for r in row_list if r in found_records] for row_list in rows.tolist()]
    scored = recall(found)
    out["MiniLM's own index"] = {
        "recall@10": round(float(scored.mean()), 4),
        "queries_per_s": round(count / (embedding + searching), 1),
        "_per_query": scored,
    }
    log(f"MiniLM: {out['MiniLM' + chr(39) + 's own index']}")
    names = [name for name in out if isinstance(out[name], dict) and "_per_query" in out[name]]
    out["paired"] = {
        f"{a} - {b}": paired(out[a]["_per_query"], out[b]["_per_query"])
        for a, b in ((names[1], names[0]), (names[2], names[1]))
    }
    for name in names:
        del out[name]["_per_query"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--where-queries", type=int, default=500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="retrieval")
    parser.add_argument("--rerank-queries", type=int, default=500)
    parser.add_argument("--rerank-depth", type=int, default=100)
    parser.add_argument("--static-model", default=str(real_dir().parent / "static" / "minilm-static"))
    parser.add_argument("--part", choices=("all", "retrieval", "rerank"), default="all")
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(args.threads)
    real = real_dir()
    index_dir, built = build(real, WORK)
    log(f"index: {built}")
    if args.part in ("all", "rerank"):
        rerank = second_stage(real, index_dir, args.rerank_queries, args.seed, args.rerank_depth, args.static_model)
        rerank.update(threads=args.threads, load_average_end=[round(x, 2) for x in os.getloadavg()])
        name = args.name + ("_rerank" if (real / "static.npy").exists() else "_rerank_bm25")
        log(f"wrote {save(name, {'how': __doc__.split(chr(10) * 2)[3], **rerank})}")
    if args.part == "rerank":
        return
    static_dir, static_built = build(real, WORK, "static")
    log(f"static index: {static_built}")
    queries = retrieval_set(real, args.queries, args.seed)
    log(f"{len(queries)} queries, {sum(len(q['relevant']) for q in queries)} relevant sentences")
    result: dict = {
        "how": __doc__.split("\n\n")[1],
        "threads": args.threads,
        "build": built,
        "build_static": static_built,
        "queries": len(queries),
        "relevant_per_query": round(float(np.mean([len(q["relevant"]) for q in queries])), 3),
    }
    from sembed_cli.indexes.keyword import HYBRID_DEPTH

    modes = {  # dense and keyword rank HYBRID_DEPTH + 1 (their top 10 as at -k 11), for the fusion sweep
        "dense": (index_dir, SearchSettings(k=K), "minilm", HYBRID_DEPTH + 1),
        "keyword": (index_dir, SearchSettings(k=K, keyword=True, any_word=True), None, HYBRID_DEPTH + 1),
        "hybrid": (index_dir, SearchSettings(k=K, hybrid=True, any_word=True), "minilm", K + 1),
        "static": (static_dir, SearchSettings(k=K), "static", K + 1),  # issue 40 item 3: the static model's
        "static hybrid": (static_dir, SearchSettings(k=K, hybrid=True, any_word=True), "static", K + 1),
    }
    metrics, speed, rankings, answers = {}, {}, {}, {}
    for name, (folder, settings, model, asked) in modes.items():
        with VectorIndex.load(folder) as index:
            answers[name], rankings[name], per_second = run_mode(index, queries, settings, model, asked)
        metrics[name], speed[name] = scores(answers[name], queries), round(per_second, 1)
        log(
            f"{name}: " + ", ".join(f"{m} {v.mean():.4f}" for m, v in metrics[name].items()) + f"; {per_second:.1f} q/s"
        )
    with VectorIndex.load(index_dir) as index:
        result["records"] = index.count
        result["modes"] = {
            name: {**{m: round(float(v.mean()), 4) for m, v in metrics[name].items()}, "queries_per_s": speed[name]}
            for name in modes
        }
        result["modes"]["dense"]["note"] = result["modes"]["keyword"]["note"] = (
            f"queries/s while ranking {HYBRID_DEPTH + 1} (for the fusion sweep), not 11"
        )
        same = fused(rankings["dense"], rankings["keyword"], 0.5, queries)
        result["hybrid_by_the_sweeps_fusion_equals_the_command"] = float(
            np.mean([a == b for a, b in zip(same, answers["hybrid"])])
        )
        sweep = {}
        for weight in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
            name = f"hybrid w={weight}"
            metrics[name] = scores(fused(rankings["dense"], rankings["keyword"], weight, queries), queries)
            sweep[str(weight)] = {m: round(float(v.mean()), 4) for m, v in metrics[name].items()}
            log(f"{name}: {sweep[str(weight)]}")
        result["hybrid_weight_sweep"] = sweep
        best = max((0.1, 0.2, 0.3, 0.4), key=lambda w: metrics[f"hybrid w={w}"]["recall@10"].mean())
        result["paired"] = {
            f"{a} - {b}": {m: paired(metrics[a][m], metrics[b][m]) for m in ("recall@10", "mrr@10")}
            for a, b in (
                ("dense", "static"),
                ("static", "keyword"),
                ("static hybrid", "static"),
                ("static hybrid", "dense"),
                ("hybrid", "dense"),
                ("hybrid", "keyword"),
                ("dense", "keyword"),
                (f"hybrid w={best}", "dense"),
                (f"hybrid w={best}", "keyword"),
            )
        }
        result["where"] = where_speed(index, queries[: args.where_queries])
    result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    path = save(args.name, result)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
