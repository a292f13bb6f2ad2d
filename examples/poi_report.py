"""Helpers of examples/poi_reproduction.sh: seeded samples of the gazetteer records, perturbed queries, the report.

    python examples/poi_report.py sample WORK --train-names N --stage2-records N --vote-records N|0 --dev N|0
        --test N|0 --seed S --index-names N|0 < gaz.jsonl        (0: the whole split)
    python examples/poi_report.py perturb N SEED < poi-names.jsonl > queries.jsonl
    python examples/poi_report.py recall < searched.jsonl
    python examples/poi_report.py table WORK [--markdown F] [--json F]

The paper's figures are copied from its text (Zhang et al., "BERT has a Mouth,
and it can Taste", section 5: F0.5 of the masked LM "lm" and with the triplet
loss "lm+tri", on the training and dev/test sets of its Chinese data).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from sembed_cli.readers.gazetteer import name_key

PAPER = {"lm": {"train": 0.84, "dev/test": 0.84}, "lm+tri": {"train": 0.90, "dev/test": 0.89}}
SUFFIXES = (
    " County",
    " Parish",
    " Province",
    " Region",
    " District",
    " Governorate",
    " Prefecture",
    " City",
    " Municipality",
    " Oblast",
    " Department",
    " State",
)


def records():
    return [json.loads(line) for line in sys.stdin if line.strip()]


def write(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def sample(args) -> None:
    rows = records()
    rng = random.Random(args.seed)
    train_poi = [r for r in rows if r["split"] == "train" and r["is_poi"]]
    train_other = [r for r in rows if r["split"] == "train" and not r["is_poi"]]
    stage1 = rng.sample(train_poi, min(args.train_names, len(train_poi)))
    half = args.stage2_records // 2
    stage2 = rng.sample(stage1, min(half, len(stage1))) + rng.sample(train_other, min(half, len(train_other)))
    rng.shuffle(stage2)
    dev, test = ([r for r in rows if r["split"] == split] for split in ("dev", "test"))
    dev = rng.sample(dev, args.dev) if args.dev else dev  # 0: the whole split
    test = rng.sample(test, args.test) if args.test else test
    train = [r for r in rows if r["split"] == "train"]
    labelled = random.Random(args.seed).sample(train, args.vote_records) if args.vote_records else train  # 0: all
    work = Path(args.work)
    write(work / "stage1.jsonl", stage1)
    write(work / "stage2.jsonl", stage2)
    write(work / "labelled.jsonl", labelled)
    write(work / "eval.jsonl", dev + test)
    pois = [{"id": i, **r} for i, r in enumerate(r for r in rows if r["is_poi"])]
    write(work / "poi-names.jsonl", pois[: args.index_names] if args.index_names else pois)
    counts = {"records": len(rows), "poi": sum(r["is_poi"] for r in rows)}
    for split in ("train", "dev", "test"):
        counts[split] = {
            "poi": sum(r["is_poi"] for r in rows if r["split"] == split),
            "non_poi": sum(not r["is_poi"] for r in rows if r["split"] == split),
        }
    counts["sources"] = {}
    for r in rows:
        counts["sources"][r["source"]] = counts["sources"].get(r["source"], 0) + 1
    counts["used"] = {
        "stage1_names": len(stage1),
        "stage2_records": len(stage2),
        "vote_records": len(labelled),
        "dev": len(dev),
        "test": len(test),
    }
    (work / "counts.json").write_text(json.dumps(counts, indent=2))


def dropped_suffix(text: str) -> str | None:
    """The name without its administrative suffix ("Ocean County" -> "Ocean"), if it has one."""
    for suffix in SUFFIXES:
        if text.endswith(suffix) and len(text) > len(suffix) + 2:
            return text[: -len(suffix)]
    return None


def missing_words(text: str) -> list[str]:
    """The name with each of its words left out in turn (none for a one-word name)."""
    words = text.split()
    return (
        [" ".join(w for i, w in enumerate(words) if i != drop) for drop in range(len(words))] if len(words) > 1 else []
    )


def typo(text: str, rng: random.Random) -> str | None:
    """Two neighbouring characters swapped, one deleted or one replaced (never the first)."""
    if len(text) < 5:
        return None
    i = rng.randrange(1, len(text) - 1)
    kind = rng.choice(("swap", "delete", "replace"))
    if kind == "swap":
        made = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    elif kind == "delete":
        made = text[:i] + text[i + 1 :]
    else:
        made = text[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + text[i + 1 :]
    return made if name_key(made) != name_key(text) else None  # not a change of case ("McAllen", "Mcallen")


def missing_word(text: str, rng: random.Random) -> str | None:
    """A word of a name of several words left out (a name with a suffix makes "dropped suffix" queries instead)."""
    left_out = missing_words(text) if dropped_suffix(text) is None else []
    return left_out[rng.randrange(len(left_out))] if left_out else None


def word_added(text: str, rng: random.Random, regions: list[str]) -> str | None:
    """The name with a word it lacks: a generic place word before or after it, a state or country, a postcode."""
    form = rng.randrange(4)
    if form == 0:
        word = rng.choice(("City", "Town", "County", "Village", "Municipality"))
        query = f"{text} {word}"
    elif form == 1:
        word = rng.choice(("City of", "Town of", "Village of", "The"))
        query = f"{word} {text}"
    elif form == 2:
        word = rng.choice(regions)
        query = f"{text}, {word}" if rng.random() < 0.5 else f"{text} {word}"
    else:
        word = str(rng.randrange(10000, 100000))
        query = f"{text} {word}"
    return None if set(name_key(word).split()) & set(name_key(text).split()) else query


def word_order(text: str, rng: random.Random) -> str | None:
    words = text.split()
    if len(words) < 2:
        return None
    shuffled = words[:]
    while shuffled == words:
        rng.shuffle(shuffled)
    return " ".join(shuffled)


def accents_dropped(text: str, rng: random.Random) -> str | None:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def case_and_punctuation(text: str, rng: random.Random) -> str | None:
    """Lower case without punctuation ("st louis county", "winston salem"), or all upper case."""
    if rng.random() < 0.2:
        return text.upper()
    return " ".join(re.sub(r"[^\w\s]", " ", re.sub(r"['\u2018\u2019]", "", text)).lower().split())


ABBREVIATED = {"Saint": "St.", "Sankt": "St.", "Sainte": "Ste.", "Mount": "Mt.", "Fort": "Ft."}


def abbreviation(text: str, rng: random.Random) -> str | None:
    """A word that people abbreviate written the other way: "Saint Paul" as "St. Paul" or "St Paul", "Mt. Edward"
    as "Mount Edward"."""
    words = text.split()
    full = {short: word for word, short in ABBREVIATED.items() if word != "Sankt"}
    places = [i for i, w in enumerate(words) if w in ABBREVIATED or w in full or w.rstrip(".") + "." in full]
    if not places:
        return None
    i = rng.choice(places)
    word = words[i]
    if word in ABBREVIATED:
        words[i] = ABBREVIATED[word] if rng.random() < 0.5 else ABBREVIATED[word].rstrip(".")
    else:
        words[i] = full[word if word in full else word + "."]
    return " ".join(words)


KINDS = {
    "typo": typo,
    "missing word": missing_word,
    "dropped suffix": lambda text, rng: dropped_suffix(text),
    "word added": word_added,
    "word order": word_order,
    "accents dropped": accents_dropped,
    "case and punctuation": case_and_punctuation,
    "abbreviation": abbreviation,
}


def perturb_one(kind: str, text: str, rng: random.Random, regions: list[str] = ("Ohio",)) -> str | None:
    """A query of `kind` made from the real name `text` (None when the name cannot make one, or it is the name)."""
    made = KINDS[kind](text, rng, list(regions)) if kind == "word added" else KINDS[kind](text, rng)
    return made if made and made != text else None


def perturb(args) -> None:
    """N queries, the kinds in turn; each query's name drawn at random from the names that can make its kind (a
    name that cannot is passed over), so every such name is equally likely (missing_word_bound counts on it)."""
    rng = random.Random(args.seed)
    names = records()
    regions = [r["text"] for r in names if r.get("source") in ("us_state", "country")] or ["Ohio"]
    order = {kind: iter(rng.sample(names, len(names))) for kind in KINDS}
    made = 0
    while made < args.n and order:
        for kind in list(order):
            if made >= args.n:
                break
            query = None
            for record in order[kind]:
                query = perturb_one(kind, record["text"], rng, regions)
                if query is not None:
                    break
            if query is None:  # no name left that makes this kind
                del order[kind]
                continue
            print(
                json.dumps(
                    {"text": query, "perturbation": kind, "target": record["text"], "target_id": record["id"]},
                    ensure_ascii=False,
                )
            )
            made += 1


def missing_word_bound(names: list[str], queries: list[dict]) -> float:
    """The best recall@10 any search can have on the "missing word" queries perturb makes from `names`: each
    query's names ranked by P(name | query), which with every name that makes the kind equally likely to be picked
    is the chance that missing_word makes that query from it (1/words for each word whose removal gives it); a
    query scores the share of its probability in its best 10 names (by name_key, as recall counts a hit). "Park"
    can come from 490 names ("Mosman Park", ...), each as likely: no search can know which one was meant."""
    made: dict[str, dict[str, float]] = {}
    for name in names:
        if dropped_suffix(name) is not None:
            continue
        key, left_out = name_key(name), missing_words(name)
        for query in left_out:
            if name_key(query) != key:
                chances = made.setdefault(query, {})
                chances[key] = chances.get(key, 0.0) + 1 / len(left_out)
    shares = []
    for query in (q["text"] for q in queries if q.get("perturbation") == "missing word"):
        chances = sorted(made.get(query, {}).values(), reverse=True)
        shares.append(sum(chances[:10]) / sum(chances) if chances else 0.0)
    return round(sum(shares) / len(shares), 4) if shares else float("nan")


def recall(args) -> None:
    """recall@10 of searched queries by their perturbation: "all" first, then the kinds in KINDS' order, then any
    other kind a QUERIES file names."""
    by_kind: dict[str, list[int]] = {"all": [], **{kind: [] for kind in KINDS}}
    for r in records():
        hit = any(name_key(n["text"]) == name_key(r["target"]) for n in r["neighbors"][:10])
        by_kind.setdefault(r.get("perturbation", "unlabelled"), []).append(hit)
        by_kind["all"].append(hit)
    print(
        json.dumps({kind: {"n": len(v), "recall_at_10": round(sum(v) / len(v), 4)} for kind, v in by_kind.items() if v})
    )


def speed(args) -> None:
    """Queries/s of `sembed search --spelling` from text: its own code (search_records) over the perturbed queries 5
    times, after the index and the model are loaded, with 1 and with 2 torch threads (each run builds its index of
    the names' words, as every search --spelling does: timed, and that build alone too), with the load average."""
    import torch

    from sembed_cli.indexes.directory import VectorIndex
    from sembed_cli.indexes.search import search_records
    from sembed_cli.models import sentence_models
    from sembed_cli.models.poi_lookup import SpellingReranker

    work = Path(args.work)
    index = VectorIndex.load(work / "poi-index")
    encoder = sentence_models.load(index.metadata["model_path"], "cpu")
    queries = [json.loads(line) for line in (work / "queries.jsonl").read_text().splitlines() if line]
    result = {"queries": 5 * len(queries)}
    started = time.perf_counter()
    texts = index.texts("text")  # as search --spelling reads them: by row, from the records store
    SpellingReranker(texts.__getitem__, len(texts)).names()
    result["word_index_build_s"] = round(time.perf_counter() - started, 2)
    for threads in (1, 2):
        torch.set_num_threads(threads)
        batch = [{"text": q["text"]} for q in queries] * 5
        index = VectorIndex.load(work / "poi-index")  # loaded again: a loaded index keeps its index of words
        started = time.perf_counter()
        for _ in search_records(iter(batch), index, encoder, 10, "text", "embedding", 1000, spelling=True):
            pass
        seconds = time.perf_counter() - started
        result[f"{threads}_thread"] = {
            "seconds": round(seconds, 2),
            "queries_per_s": round(len(batch) / seconds),
            "load_average_1min": round(os.getloadavg()[0], 2),
        }
    print(json.dumps(result))


AIM = 0.95  # issue 31: recall@10 on every kind but "missing word" (whose bound is printed), and all of them


def recall_rows(lines: list, title: str, ours: dict, plain: dict, base: dict, hybrid: dict | None = None) -> list[str]:
    """The table of recall@10 by kind (with `search --hybrid --any-word`'s column where it ran), and the kinds that
    miss the aims (AIM, and at least the baseline's), which it returns."""
    lines += [
        "",
        title,
        "",
        "| perturbation | queries | sembed (stage 2 + n-grams + --spelling) | without --spelling "
        + ("| --hybrid --any-word (BM25 + vectors) " if hybrid else "")
        + "| baseline (char n-gram TF-IDF) |",
        "| --- | ---: | ---: | ---: | ---: |" + (" ---: |" if hybrid else ""),
    ]
    for kind, m in ours.items():
        lines.append(
            f"| {kind} | {m['n']} | {m['recall_at_10']:.3f} | {plain[kind]['recall_at_10']:.3f} | "
            + (f"{hybrid[kind]['recall_at_10']:.3f} | " if hybrid else "")
            + f"{base[kind]['recall_at_10']:.3f} |"
        )
    below = [
        f"{kind} {m['recall_at_10']:.3f} (below {AIM})"
        for kind, m in ours.items()
        if kind != "missing word" and m["recall_at_10"] < AIM
    ]
    below += [
        f"{kind} {m['recall_at_10']:.3f} (below the baseline's {base[kind]['recall_at_10']:.3f})"
        for kind, m in ours.items()
        if m["recall_at_10"] < base[kind]["recall_at_10"]
    ]
    lines += [
        "",
        f"Aims (recall@10 >= {AIM} on every kind but missing word, and at or above the baseline on every "
        "kind): " + ("all met." if not below else "not met: " + "; ".join(below) + "."),
    ]
    return below


def typed_rows(lines: list, work: Path) -> None:
    """Each query typed by hand (examples/data/poi_typed_queries.jsonl): the rank of the name meant among sembed's
    and the baseline's 10 first names, and the first of each."""

    def ranked(path: Path) -> list[tuple[str, str, int | None, str]]:
        out = []
        for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()):
            keys = [name_key(n["text"]) for n in r["neighbors"][:10]]
            rank = keys.index(name_key(r["target"])) + 1 if name_key(r["target"]) in keys else None
            out.append((r["text"], r["target"], rank, r["neighbors"][0]["text"] if r["neighbors"] else ""))
        return out

    if not (work / "typed.jsonl").is_file():
        return
    lines += [
        "",
        "## Lookup: queries typed by hand (rank of the name meant in the first 10; -: not there)",
        "",
        "| query | name meant | sembed rank | sembed's first | baseline rank | baseline's first |",
        "| --- | --- | ---: | --- | ---: | --- |",
    ]
    for (text, target, rank, first), (_, _, base_rank, base_first) in zip(
        ranked(work / "typed.jsonl"), ranked(work / "typed-baseline.jsonl")
    ):
        lines.append(f"| {text} | {target} | {rank or '-'} | {first} | {base_rank or '-'} | {base_first} |")


def paired_with_baseline(work: Path) -> dict:
    """sembed's poi_score and poi_vote against the baseline's probability on the same test records, each
    thresholded where it is best on the dev records: the F0.5 difference with a paired bootstrap interval."""
    tasted, baseline = work / "stage2.tasted.jsonl", work / "baseline.scored.jsonl"
    if not (tasted.is_file() and baseline.is_file()):
        return {}
    import numpy as np

    from sembed_cli.evaluation.poi import best_threshold, paired_f_difference

    ours = [json.loads(line) for line in tasted.read_text(encoding="utf-8").splitlines() if line]
    theirs = {
        r["text"]: r["baseline_score"] for r in map(json.loads, baseline.read_text(encoding="utf-8").splitlines())
    }
    gold = np.array([r["is_poi_gold"] for r in ours])
    dev, test = (np.array([r["split"] == split for r in ours]) for split in ("dev", "test"))

    def predicted(scores: np.ndarray) -> np.ndarray:
        return scores[test] >= best_threshold(scores[dev], gold[dev])

    base = predicted(np.array([theirs[r["text"]] for r in ours]))
    return {
        name: paired_f_difference(predicted(np.array([r[key] for r in ours])), base, gold[test])
        for name, key in (("score", "poi_score"), ("vote", "poi_vote"))
    }


def table(args) -> None:
    work = Path(args.work)
    metrics = {
        p.name.removesuffix(".json"): json.loads(p.read_text()) for p in sorted((work / "metrics").glob("*.json"))
    }
    times = dict(line.split("\t") for line in (work / "times.tsv").read_text().splitlines() if line)
    counts = json.loads((work / "counts.json").read_text())
    searched = metrics.pop("speed")
    best = max(searched["1_thread"]["queries_per_s"], searched["2_thread"]["queries_per_s"])
    lines = [
        '# POI identification and lookup (Zhang et al., "BERT has a Mouth, and it can Taste"), beside a '
        "character n-gram baseline",
        "",
        f"Run {time.strftime('%Y-%m-%d')} on {platform.machine()} ({os.cpu_count()} cores, shared), CPU only; "
        f"settings: {os.environ.get('POI_SETTINGS', '')}",
        "",
        "## Data (`sembed convert --from gazetteer`)",
        "",
        f"{counts['records']} distinct names: {counts['poi']} POI, {counts['records'] - counts['poi']} non-POI.",
        "",
        "| split | POI | non-POI |",
        "| --- | ---: | ---: |",
    ]
    for split in ("train", "dev", "test"):
        lines.append(f"| {split} | {counts[split]['poi']} | {counts[split]['non_poi']} |")
    lines += [
        "",
        "Sources: " + ", ".join(f"{k} {v}" for k, v in counts["sources"].items()) + ".",
        f"Used here: {json.dumps(counts['used'])}.",
        "",
        "## Identification: F0.5 on the test records (POI = positive class), threshold tuned on dev",
        "",
        "| model | score | threshold | precision | recall | F0.5 | paper F0.5 (dev/test) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    from sembed_cli.indexes.neighbour_vote import default_vote_weight

    words = (work / "word-index").is_dir()  # the second vote (WORD_MODEL) was cast
    weight = default_vote_weight(2 if words else 1)
    voters = "the stage-2 and the WORD_MODEL index's votes averaged" if words else "the stage-2 index"
    rows = (
        ("lm (stage 1)", "taste: top-10 hits / characters", "stage1.poi", PAPER["lm"]["dev/test"]),
        ("lm (stage 1)", "taste_prob: geometric mean p(true character)", "stage1-prob.poi", PAPER["lm"]["dev/test"]),
        ("lm+tri (stage 2)", "taste: top-10 hits / characters", "stage2.poi", PAPER["lm+tri"]["dev/test"]),
        (
            "lm+tri (stage 2)",
            "taste_prob: geometric mean p(true character)",
            "stage2-prob.poi",
            PAPER["lm+tri"]["dev/test"],
        ),
        (
            "lm+tri (stage 2)",
            f"k-NN vote over labelled train names ({voters})",
            "stage2-vote.poi",
            PAPER["lm+tri"]["dev/test"],
        ),
        (
            "lm+tri (stage 2) + n-grams",
            f"poi_score: {weight:g} vote + {1 - weight:g} n-gram regression",
            "stage2-score.poi",
            PAPER["lm+tri"]["dev/test"],
        ),
        ("baseline", "char n-gram TF-IDF + logistic regression", "baseline.poi", None),
    )
    for model, score, key, paper in rows:
        m = metrics.get(key)
        if not m:
            continue
        for label, row in (("0.5", m), (f"{m['tuned_threshold']:.3g} (dev)", m["at_tuned_threshold"])):
            lines.append(
                f"| {model} | {score} | {label} | {row['precision']:.3f} | {row['recall']:.3f} | "
                f"{row['f0_5']:.3f} | {'' if paper is None else f'{paper:.2f}'} |"
            )
    paired = paired_with_baseline(work)
    if paired:
        lines += [
            "",
            "Against the baseline on the same test records, each at its dev-tuned threshold (F0.5, "
            f"{paired['score']['interval']}, {paired['score']['resamples']:,} resamples):",
            "",
        ]
        lines += [
            f"- {name} - baseline: {d['f0_5']:+.4f} [{d['f0_5_ci'][0]:+.4f}, {d['f0_5_ci'][1]:+.4f}]"
            for name, d in (("poi_score", paired["score"]), ("poi_vote", paired["vote"]))
        ]
    unmet = recall_rows(
        lines,
        "## Lookup: recall@10 of perturbed real names over all POI names",
        metrics["recall"],
        metrics["recall-no-spelling"],
        metrics["baseline-recall"],
        metrics.get("recall-hybrid"),
    )
    bound = missing_word_bound(
        [json.loads(line)["text"] for line in (work / "poi-names.jsonl").open(encoding="utf-8")],
        [json.loads(line) for line in (work / "queries.jsonl").open(encoding="utf-8")],
    )
    lines += [
        "",
        f"The best recall@10 any search can have on these missing-word queries is {bound:.3f} "
        "(missing_word_bound: each query's names ranked by the chance that the generator made it from "
        'them; "Park" can come from any of hundreds of names, each as likely as "Mosman Park").',
    ]
    if "recall-queries" in metrics:
        unmet_in_file = recall_rows(
            lines,
            "## Lookup: recall@10 of the QUERIES file",
            metrics["recall-queries"],
            metrics["recall-queries-no-spelling"],
            metrics["baseline-recall-queries"],
            metrics.get("recall-queries-hybrid"),
        )
    typed_rows(lines, work)
    lines += [
        "",
        f"sembed search --spelling from text ({searched['queries']} queries, index and model loaded): "
        f"{searched['1_thread']['queries_per_s']} queries/s with 1 thread, "
        f"{searched['2_thread']['queries_per_s']} with 2 (a shared CPU: load average "
        f"{searched['1_thread'].get('load_average_1min', '?')} and "
        f"{searched['2_thread'].get('load_average_1min', '?')} at the end of each; the index of the names' "
        f"words, built once a run, takes {searched.get('word_index_build_s', '?')} s of it).",
        "",
        "## Time (seconds)",
        "",
        "The identification stages (taste, index labelled records) run alongside the "
        "lookup stages, so the stages add up to more than the total.",
        "",
        "| stage | s |",
        "| --- | ---: |",
    ]
    lines += [f"| {k} | {v} |" for k, v in times.items()]
    text = "\n".join(lines) + "\n"
    sys.stderr.write(text)
    summary = {
        "test_f0_5": metrics["stage2-score.poi"]["at_tuned_threshold"]["f0_5"],
        "test_f0_5_by_score": {
            key.removesuffix(".poi"): metrics[key]["at_tuned_threshold"]["f0_5"]
            for _, _, key, _ in rows
            if key in metrics
        },
        "recall_at_10": {kind: m["recall_at_10"] for kind, m in metrics["recall"].items()},
        "hybrid_recall_at_10": {kind: m["recall_at_10"] for kind, m in metrics.get("recall-hybrid", {}).items()},
        "missing_word_bound": bound,
        "lookup_aims_unmet": unmet,
        "queries_per_s": best,
        "baseline": {
            "test_f0_5": metrics["baseline.poi"]["at_tuned_threshold"]["f0_5"],
            "recall_at_10": {kind: m["recall_at_10"] for kind, m in metrics["baseline-recall"].items()},
        },
    }
    if paired:
        summary["minus_baseline"] = {name: {"f0_5": d["f0_5"], "ci": d["f0_5_ci"]} for name, d in paired.items()}
    if "recall-queries" in metrics:
        summary["queries_file"] = {
            "recall_at_10": {k: m["recall_at_10"] for k, m in metrics["recall-queries"].items()},
            "baseline_recall_at_10": {k: m["recall_at_10"] for k, m in metrics["baseline-recall-queries"].items()},
            "lookup_aims_unmet": unmet_in_file,
        }
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "summary": summary,
                    "paper": PAPER,
                    "counts": counts,
                    "metrics": metrics,
                    "search_speed": searched,
                    "times_s": times,
                },
                indent=2,
            )
            + "\n"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("sample")
    p.add_argument("work")
    for name in ("--train-names", "--stage2-records", "--vote-records", "--dev", "--test", "--seed", "--index-names"):
        p.add_argument(name, type=int, required=True)
    p = sub.add_parser("perturb")
    p.add_argument("n", type=int)
    p.add_argument("seed", type=int)
    sub.add_parser("recall")
    p = sub.add_parser("speed")
    p.add_argument("work")
    p = sub.add_parser("table")
    p.add_argument("work")
    p.add_argument("--markdown")
    p.add_argument("--json")
    args = parser.parse_args()
    {"sample": sample, "perturb": perturb, "recall": recall, "speed": speed, "table": table}[args.command](args)


if __name__ == "__main__":
    main()
