"""POI lookup at scale (issue 36, item 6): `search --spelling` over the gazetteer's POI names alone and beside 10x
as many distractor names, recall@10 by kind of perturbed query and batched queries/s.

    python bench/poi_scale.py --model runs/poi/models/stage2 [--scale 10] [--queries 2000] [--threads 2]
        [--build-threads N] [--device cpu|cuda] [--type auto|hnsw|...] [--work runs/poi_scale] [--seed 42] [--repeat 5]
        [--name poi_scale] [--search-recall R ...] [--torch-too]
    python bench/poi_scale.py --model ... --words-only      (the part of --spelling that needs no model)

--model: the POI reproduction's stage-2 model (examples/poi_reproduction.sh with KEEP=1 leaves it in
runs/poi/models/stage2; MODELS= reuses it there), trained with its defaults. The queries are the reproduction's
(examples/poi_report.py perturb over the POI names, the same seed): each kind of perturbation in turn, the name
meant a real one. The distractors are bench/poi_distractors.py's (real names' parts recombined, seeded), never a
real name, so recall counts the real name alone as a hit.

For each size (1x: the 202,179 POI names; Nx: those and N x as many distractors, (1 + N) x 202,179 names in all):
`sembed index` of the names with the model (--build-threads, --device; wall and CPU seconds, peak RSS by wait4; 2.2M
names are 15-30 CPU-minutes of embedding on the CPU), then in this process, as `sembed search --spelling` runs
(search_records over the loaded index and model, --threads of torch and FAISS, pinned to as many cores): recall@10 by
kind, and the queries searched --repeat times, timed (wall and CPU seconds: queries/s and queries per CPU-second, for a
shared machine), with the load average; the names read and their words indexed at --spelling's first query (a start-up a
loaded index pays once, 15 s at 2.2M names) is timed apart (word_index_build_s): until 2026-11-28 every pass built them
again, inside the timed one; from 2026-11-29 a process after the first maps them from sembed's cache
(indexes/spelling_words.py: bench/spelling_startup.py times that), so word_index_build_s is a build only with an empty
or unwritable SEMBED_CACHE. Each index is searched at the breadth `search --spelling` sets (from 2026-11-29 the
cheapest whose held-out queries found their nearest row for the index's target, recorded at build: indexes/recall.py;
before, the index's own breadth); --search-recall R also searches each as `search --spelling --recall R` does
(lookup_SIZE_recall_R). --type T builds with `sembed index --type T` (default auto; other types in --work/index-SIZE-T).
The queries are embedded as search embeds them (ONNX Runtime where the index's vectors are torch's fp32; until
2026-11-28 torch); --torch-too also on torch, the two timed in turn, a pass over the queries each, --repeat rounds
(speed_torch). Writes bench/results/NAME.json. Large files stay under --work (names, indexes and their build figures:
reused when there, --rebuild to redo); --build-only stops after the builds, so two sizes can be built at once and
searched after, one after the other.

--words-only, with no index and no model: for each size the word index of the names and, for each query, whether
the name meant is among the names holding its words that join FAISS's candidates, by kind, the time a query's
look-up takes, with COMMON_WORD_NAMES as it is and as 1% of the names, and missing_word_bound over all the names
(the best recall@10 any search can have on missing-word queries when every indexed name may be the one meant).
Writes bench/results/NAME_words.json.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import poi_report
from common import ROOT, log, save
from poi_distractors import Distractors

from sembed_cli.readers.gazetteer import name_key

SEMBED = [sys.executable, "-m", "sembed_cli"]


def write_jsonl(path: Path, rows) -> None:
    with (gzip.open if path.suffix == ".gz" else open)(path, "wt", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def prepare(work: Path, scale: int, queries: int, seed: int) -> dict:
    """The gazetteer's records, the POI names (ids as the reproduction numbers them), its queries, and the names
    with scale x as many distractors; returns their counts and the distractors' forms (kept in data.json: made
    once a work directory)."""
    data = work / f"data-{scale}x.json"
    if data.is_file():
        return json.loads(data.read_text())
    gazetteer = work / "gazetteer.jsonl"
    if not gazetteer.is_file():
        with open(gazetteer, "wb") as out:
            subprocess.run([*SEMBED, "convert", "-q", "--from", "gazetteer"], stdout=out, check=True)
    records = read_jsonl(gazetteer)
    pois = [{"id": i, **r} for i, r in enumerate(r for r in records if r["is_poi"])]
    write_jsonl(work / "poi-names.jsonl", pois)  # as the reproduction writes them, for its queries
    write_jsonl(work / "names-1x.jsonl.gz", ({"id": r["id"], "text": r["text"]} for r in pois))
    if not (work / "queries.jsonl").is_file():
        with open(work / "poi-names.jsonl") as names, open(work / "queries.jsonl", "w") as out:
            subprocess.run(
                [sys.executable, str(ROOT / "examples" / "poi_report.py"), "perturb", str(queries), str(seed)],
                stdin=names,
                stdout=out,
                check=True,
            )
    words = [r["text"] for r in records if r["source"] == "word"]
    made = itertools.islice(Distractors([r["text"] for r in pois], words, seed), scale * len(pois))
    forms: dict[str, int] = {}

    def distractors():
        for i, (form, text) in enumerate(made, len(pois)):
            forms[form] = forms.get(form, 0) + 1
            yield {"id": i, "text": text}

    write_jsonl(
        work / f"names-{scale}x.jsonl.gz", itertools.chain(read_jsonl(work / "names-1x.jsonl.gz"), distractors())
    )
    made_data = {"poi_names": len(pois), "distractors": sum(forms.values()), "distractor_forms": forms}
    data.write_text(json.dumps(made_data))
    return made_data


def build(names: Path, index: Path, model: str, threads: int, device: str, kind: str = "auto") -> dict:
    """`sembed index --type kind` of `names` with `model`: wall and CPU seconds, peak RSS (wait4), the type."""
    command = [*SEMBED, "index", "-q", str(names), "-m", model, "--device", device, "--type", kind]
    command += ["-o", str(index), "--force"]
    env = {**os.environ, "SEMBED_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"sembed index {names} failed")
    metadata = json.loads((index / "sembed.json").read_text())
    return {
        "command": "sembed " + " ".join(command[3:]),
        "threads": threads,
        "wall_s": round(time.perf_counter() - started, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "type": metadata.get("type"),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def by_kind() -> dict[str, list[bool]]:
    """An empty list for "all" and for each of poi_report.KINDS, in their order: a query's outcome goes into its
    kind's and into "all"."""
    return {"all": [], **{kind: [] for kind in poi_report.KINDS}}


def shares(outcomes: dict[str, list[bool]]) -> dict[str, float]:
    """The share of True in each kind's outcomes (a kind no query has left out)."""
    return {kind: round(sum(v) / len(v), 4) for kind, v in outcomes.items() if v}


def hits_by_kind(found: list[dict], queries: list[dict]) -> dict[str, list[bool]]:
    """Whether each query's name meant is among its first 10 neighbours (by name_key), by kind (`by_kind`; a kind
    no query has left empty)."""
    hits = by_kind()
    for query, result in zip(queries, found):
        hit = any(name_key(n["text"]) == name_key(query["target"]) for n in result["neighbors"][:10])
        hits[query["perturbation"]].append(hit)
        hits["all"].append(hit)
    return hits


def breadth(index) -> dict:
    """The search breadth FAISS is set to: efSearch of a graph, nprobe of inverted lists."""
    from sembed_cli.indexes import kinds

    graph, lists = kinds.hnsw_of(index), kinds.ivf_of(index)
    return {"ef_search": graph.hnsw.efSearch} if graph is not None else {"nprobe": lists.nprobe} if lists else {}


def lookup(
    index_dir: Path, queries: list[dict], threads: int, repeat: int, recall: float | None = None, torch_too=False
) -> dict:
    """recall@10 by kind of `sembed search --spelling` from text over the index, and its speed (module doc);
    `recall`: searched as `search --spelling --recall R` searches (the breadth of the index's `nearest` curve for
    R; without, for the index's target; an index built before that curve: its own breadth). The queries are
    embedded as search embeds them (ONNX Runtime where torch made the index's vectors in fp32); `torch_too`: and
    on torch (search --backend torch), the two timed in turn, a pass over the queries each, `repeat` rounds."""
    from sembed_cli import threads as thread_pools
    from sembed_cli.indexes import recall as measured_recall
    from sembed_cli.indexes.directory import VectorIndex
    from sembed_cli.indexes.query_encoder import QueryEmbedder, index_backend
    from sembed_cli.indexes.search import search_records

    allowed = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, allowed[:threads])  # on a larger machine, as many cores as threads
    thread_pools.apply(threads)
    index = VectorIndex.load(index_dir)
    spelling_breadth = measured_recall.apply_target(index, recall, spelling=True)  # as search --spelling sets it
    encoders = {"search's own": QueryEmbedder(index, device="cpu", backend=index_backend(index)[0])}
    if torch_too:
        encoders["torch"] = QueryEmbedder(index, device="cpu", backend="torch")
    for encoder in encoders.values():
        encoder.open()
    thread_pools.apply(threads)  # torch is loaded now

    def search(records: list[dict], encoder) -> list[dict]:
        return list(search_records(iter(records), index, encoder, 10, "text", "embedding", 1000, spelling=True))

    texts = [{"text": q["text"]} for q in queries]
    started = time.perf_counter()
    search(texts[:1], encoders["search's own"])  # the first query reads the names and indexes their words (once)
    word_index_s = time.perf_counter() - started
    hits = {}
    for name, encoder in encoders.items():
        search([dict(t) for t in texts], encoder)  # a first pass warms the caches
        hits[name] = hits_by_kind(search([dict(t) for t in texts], encoder), queries)
    timed = {name: [0.0, 0.0] for name in encoders}  # wall, CPU seconds
    for _ in range(repeat):
        for name, encoder in encoders.items():
            wall, cpu = time.perf_counter(), cpu_seconds()
            search([dict(t) for t in texts], encoder)
            timed[name][0] += time.perf_counter() - wall
            timed[name][1] += cpu_seconds() - cpu

    def speed(name: str) -> dict:
        wall, cpu = timed[name]
        count = len(texts) * repeat
        return {
            "queries": count,
            "threads": threads,
            "batch_size": 1000,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "queries_per_s": round(count / wall),
            "queries_per_cpu_s": round(count / cpu),
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "cores": len(os.sched_getaffinity(0)),
            "word_index_build_s": round(word_index_s, 2),
            "query_backend": encoders[name].open().backend,
        }

    return {
        "recall_at_10": shares(hits["search's own"]),
        "queries_by_kind": {kind: len(v) for kind, v in hits["search's own"].items() if v},
        "speed": speed("search's own"),
        **(
            {"speed_torch": speed("torch"), "same_hits_on_torch": hits["torch"] == hits["search's own"]}
            if torch_too
            else {}
        ),
        "names": index.count,
        "cores_pinned_from": len(allowed),
        "type": index.metadata.get("type"),
        "factory": index.metadata["settings"].get("factory"),
        "measured_at_build": index.metadata["settings"].get("recall"),  # the breadth --recall chose
        "search_recall": recall,
        "searched_at": breadth(index.index),
        "spelling_breadth": spelling_breadth,  # search -v's line: the breadth of the build's `nearest` curve
    }


def top_ten(bonus, holders, target: int) -> bool:
    return bool((holders[np.argsort(-bonus, kind="stable")[:10]] == target).any())


def word_path(names: list[str], queries: list[dict], targets: list[int], common: int | None = None) -> dict:
    """The part of `search --spelling` that needs no model, over `names`: the index of their words (its build),
    and for each query the names holding its words that join FAISS's candidates (the SPELLING_CANDIDATES x 10
    with the largest bonus, SpellingReranker.score): how often the name meant is among them, by kind, and the
    time each query's look-up takes. `common`: COMMON_WORD_NAMES for this run (None: the module's).
    Also how often the name meant is among the ten with the largest word bonus alone (no cosine: what the words
    decide), without DESIGNATOR_BONUS and with it (target_in_top_10_by_words, ..._with_designators)."""
    from sembed_cli.models import poi_lookup
    from sembed_cli.text.place_words import place_words

    saved = poi_lookup.COMMON_WORD_NAMES
    poi_lookup.COMMON_WORD_NAMES = common or saved
    try:
        started = time.perf_counter()
        keys = [name_key(n) for n in names]
        words = poi_lookup.NameWords(keys)
        build_s = time.perf_counter() - started
        joining = poi_lookup.SPELLING_CANDIDATES * 10
        joined, by_words, designated = by_kind(), by_kind(), by_kind()
        brought: list[int] = []
        spent = 0.0
        for query, target in zip(queries, targets):
            started = time.perf_counter()
            query_words = place_words(name_key(query["text"]))
            holders, bonus = words.bonuses(query_words)
            best = holders[np.argsort(-bonus, kind="stable")[:joining]]
            spent += time.perf_counter() - started
            brought.append(len(holders))
            without = words.bonuses(query_words, designator=0.0)[1]
            for kind in (query["perturbation"], "all"):
                joined[kind].append(bool((best == target).any()))
                by_words[kind].append(top_ten(without, holders, target))
                designated[kind].append(top_ten(bonus, holders, target))
        per_query_ms = spent / len(queries) * 1000
    finally:
        poi_lookup.COMMON_WORD_NAMES = saved
    return {
        "names": len(names),
        "common_word_names": common or saved,
        "word_index_build_s": round(build_s, 2),
        "ms_per_query": round(per_query_ms, 3),
        "names_holding_query_words": {"mean": round(float(np.mean(brought)), 1), "max": int(np.max(brought))},
        "target_among_joining": shares(joined),
        "target_in_top_10_by_words": shares(by_words),
        "target_in_top_10_with_designators": shares(designated),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="the POI reproduction's stage-2 model directory")
    parser.add_argument("--scale", type=int, default=10, help="distractors per POI name (default 10)")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2, help="threads of the searches and the builds")
    parser.add_argument("--build-threads", type=int, help="threads of the builds (default: --threads)")
    parser.add_argument("--device", default="cpu", help="where the builds embed the names (searches: the CPU)")
    parser.add_argument("--build-only", action="store_true", help="build the indexes --sizes asks for, then stop")
    parser.add_argument("--sizes", default="1,SCALE", help="which indexes: multiples of the POI names' count")
    parser.add_argument("--repeat", type=int, default=5, help="passes over the queries timed")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "poi_scale")
    parser.add_argument("--rebuild", action="store_true", help="build the indexes again when they are there")
    parser.add_argument(
        "--type", default="auto", help="sembed index --type of the builds; other than auto in --work/index-SIZE-TYPE"
    )
    parser.add_argument("--name", default="poi_scale", help="bench/results/NAME.json")
    parser.add_argument(
        "--search-recall",
        type=float,
        nargs="*",
        default=[],
        help="also search each index as search --recall R does, for each R (lookup_SIZE_recall_R)",
    )
    parser.add_argument(
        "--torch-too",
        action="store_true",
        help="also embed the queries on torch (search --backend torch), timed in turn with search's own choice",
    )
    parser.add_argument(
        "--words-only", action="store_true", help="only the part of --spelling that needs no model, at each size"
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    result: dict = {"settings": {k: str(v) for k, v in vars(args).items()}}
    result["data"] = prepare(args.work, args.scale, args.queries, args.seed)
    log(f"names: {result['data']}")
    queries = read_jsonl(args.work / "queries.jsonl")
    names = [n["text"] for n in read_jsonl(args.work / "names-1x.jsonl.gz")]
    result["missing_word_bound_1x"] = poi_report.missing_word_bound(names, queries)
    if args.words_only:
        every = [n["text"] for n in read_jsonl(args.work / f"names-{args.scale}x.jsonl.gz")]
        targets = [q["target_id"] for q in queries]
        for size, count in (("1x", len(names)), (f"{args.scale}x", len(every))):
            for common in (None, round(0.01 * count)):  # today's 2,000 names, and 1% of the names
                run = word_path(every[:count], queries, targets, common)
                result.setdefault("word_path", []).append(run)
                log(json.dumps(run))
            # the best any search can do on the missing-word queries when any of the names may be the one meant
            result[f"missing_word_bound_{size}"] = poi_report.missing_word_bound(every[:count], queries)
            log(f"missing_word_bound_{size} {result[f'missing_word_bound_{size}']}")
        log(f"written {save(args.name + '_words', result)}")
        return
    sizes = [f"{n}x" for n in args.sizes.replace("SCALE", str(args.scale)).split(",")]
    for size in sizes:
        index = args.work / (f"index-{size}" if args.type == "auto" else f"index-{size}-{args.type}")
        built = index.with_name(index.name + ".build.json")  # its build's figures, kept with it
        if args.rebuild or not built.is_file():
            log(f"building {index}")
            figures = build(
                args.work / f"names-{size}.jsonl.gz",
                index,
                args.model,
                args.build_threads or args.threads,
                args.device,
                args.type,
            )
            built.write_text(json.dumps(figures))
        result[f"build_{size}"] = json.loads(built.read_text())
        log(json.dumps(result[f"build_{size}"]))
        if args.build_only:
            continue
        log(f"searching {index}")
        result[f"lookup_{size}"] = lookup(index, queries, args.threads, args.repeat, torch_too=args.torch_too)
        log(json.dumps(result[f"lookup_{size}"]))
        for target in args.search_recall:
            result[f"lookup_{size}_recall_{target}"] = lookup(
                index, queries, args.threads, args.repeat, target, args.torch_too
            )
            log(json.dumps(result[f"lookup_{size}_recall_{target}"]))
        save(args.name, result)
    if args.build_only or f"lookup_{args.scale}x" not in result or "lookup_1x" not in result:
        return
    before, after = result["lookup_1x"]["recall_at_10"], result[f"lookup_{args.scale}x"]["recall_at_10"]
    result["recall_change"] = {kind: round(after[kind] - before[kind], 4) for kind in before}
    log(f"written {save(args.name, result)}")


if __name__ == "__main__":
    main()
