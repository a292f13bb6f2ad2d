"""Helpers of examples/syntax_reproduction.sh: drawing sentences, and the report next to the paper's table.

    python examples/syntax_report.py sample --n N --seed S [--min-words 6] [--max-words 25] < records > sample
    python examples/syntax_report.py report WORK --sets N --eval N --queries N [--markdown F] [--json F] [--png F]

The paper's figures are copied from its text ("Unsupervised Distillation of Syntactic Information from
Contextualized Word Representations", appendix C, Table 4: BERT-large, closest-word queries on Wikipedia
sentences parsed by spaCy; k-means purity from section 4.1, for ELMo: it gives none for BERT).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import sys
from collections import Counter
from pathlib import Path

PAPER_BERT = {  # appendix C, Table 4
    "raw": {"dep": 0.549, "head_dep": 0.432, "depth": 0.436, "lexical": 0.829},
    "transformed": {"dep": 0.681, "head_dep": 0.565, "depth": 0.597, "lexical": 0.319},
    "raw, difficult": {"dep": 0.478, "head_dep": 0.429, "depth": 0.428, "lexical": 0.820},
    "transformed, difficult": {"dep": 0.652, "head_dep": 0.565, "depth": 0.601, "lexical": 0.300},
}
PAPER_PURITY_ELMO = {"raw": [0.226, 0.268, 0.326, 0.364], "transformed": [0.243, 0.334, 0.421, 0.480]}


def sample(args: argparse.Namespace) -> None:
    """`--n` records whose text has --min-words to --max-words words, mostly letters, drawn by --seed; id fields
    and text only (a parse the input carries is dropped: `sembed parse` makes the one the evaluation uses)."""
    kept = []
    for line in sys.stdin:
        record = json.loads(line)
        words = record["text"].split()
        letters = sum(any(c.isalpha() for c in w) for w in words)
        if args.min_words <= len(words) <= args.max_words and letters >= 0.7 * len(words):
            kept.append({k: v for k, v in record.items() if k in ("doc_id", "sent_id", "text")})
    random.Random(args.seed).shuffle(kept)
    for record in kept[: args.n]:
        sys.stdout.write(json.dumps(record) + "\n")
    print(
        f"sampled {min(args.n, len(kept))} of {len(kept)} sentences of {args.min_words}-{args.max_words} words",
        file=sys.stderr,
    )


ROWS = [
    ("raw", "all", "raw"),
    ("transformed", "all", "transformed"),
    ("control", "all", None),
    ("raw", "difficult", "raw, difficult"),
    ("transformed", "difficult", "transformed, difficult"),
    ("control", "difficult", None),
]
LABELS = {
    "raw": "MiniLM, raw vectors",
    "transformed": "MiniLM, transformed (f)",
    "control": "random MiniLM, its own f (control)",
}
METRICS = [
    ("dep_edge", "dep", "dep. edge"),
    ("head_dep_edge", "head_dep", "head's dep. edge"),
    ("depth_r", "depth", "depth (r)"),
    ("lexical_match", "lexical", "lexical match"),
]


def cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(args: argparse.Namespace) -> tuple[str, dict]:
    work = Path(args.work)
    metrics = {
        name: json.loads((work / "metrics" / f"{name}.json").read_text())
        for name in LABELS
        if (work / "metrics" / f"{name}.json").exists()
    }
    times = dict(line.split("\t") for line in (work / "times.tsv").read_text().splitlines() if line)
    training = {
        name: json.loads((work / name / "sembed.json").read_text())
        for name in ("map", "control")
        if (work / name / "sembed.json").exists()
    }
    sets = [json.loads(line) for line in (work / "sets.jsonl").read_text().splitlines()]
    changed = [sum(a != b for a, b in zip(words, s["words"][0])) for s in sets for words in s["words"][1:]]
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "sets": len(sets),
        "eval_sentences": args.eval,
        "queries": args.queries,
        "metrics": metrics,
        "times_s": {k: int(v) for k, v in times.items()},
        "paper_bert": PAPER_BERT,
        "variants_differing": round(sum(c > 0 for c in changed) / max(len(changed), 1), 4),
        "words_changed_per_variant": round(sum(changed) / max(len(changed), 1), 2),
        "training": {name: {"history": t.get("history"), "seconds": t.get("seconds")} for name, t in training.items()},
    }
    raw = metrics.get("raw", {})
    lines = [
        f"## Syntax distillation ({result['date']}, {result['machine']}, CPU)",
        "",
        f"{len(sets)} structurally equivalent sets (`sembed gensets`, k = 6, top-30) from corpus sentences of "
        f"6-25 words; f: 768 -> 75, 5 epochs, batch 500, Adam 1e-3 (`sembed train --method syntax`). "
        f"Evaluation: {args.eval} Penn Treebank sample sentences parsed by spaCy "
        f"({raw.get('words', '?')} words, {raw.get('content_words', '?')} content words), {args.queries} random "
        f"content-word queries, nearest neighbour by cosine among the content words of the other sentences "
        f"(`sembed eval structure`).",
        "",
        "| vectors | words | " + " | ".join(m[2] for m in METRICS) + " |",
        "|---|---|" + "---:|" * len(METRICS),
    ]
    for name, part, paper in ROWS:
        if name in metrics:
            row = metrics[name][part]
            lines.append(
                f"| **ours: {LABELS[name]}** | {part} (n = {row['n']}) | "
                + " | ".join(cell(row[m[0]]) for m in METRICS)
                + " |"
            )
        if paper:
            lines.append(
                f"| paper: BERT-large, {paper.split(',')[0]} | {part} | "
                + " | ".join(cell(PAPER_BERT[paper][m[1]]) for m in METRICS)
                + " |"
            )
    lines += [
        "",
        "K-means purity of the dependency labels (mean over clusters; the paper's figures are ELMo's):",
        "",
        "| vectors | K = 10 | K = 20 | K = 40 | K = 80 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in LABELS:
        if name in metrics:
            purity = metrics[name]["purity"]
            lines.append(
                f"| ours: {LABELS[name]} | "
                + " | ".join(cell(purity[str(k)]["mean"] if purity.get(str(k)) else None) for k in (10, 20, 40, 80))
                + " |"
            )
    for name in ("raw", "transformed"):
        lines.append(f"| paper: ELMo, {name} | " + " | ".join(cell(v) for v in PAPER_PURITY_ELMO[name]) + " |")
    difficult = metrics.get("raw", {}).get("difficult", {}).get("tags", [])
    lines += [
        "",
        "Difficult tags (highest entropy of dependency labels): " + ", ".join(t["tag"] for t in difficult) + ".",
        f"Sets: {result['variants_differing']:.1%} of the variants differ from their original, "
        f"{result['words_changed_per_variant']} words changed per variant on average.",
    ]
    for name, t in result["training"].items():
        last = (t["history"] or [{}])[-1]
        first = (t["history"] or [{}])[0]
        if "held_out" in last:
            lines.append(
                f"Held-out triplet accuracy of {'f' if name == 'map' else 'the control'}: "
                f"{first['held_out']['accuracy']:.3f} before training, {last['held_out']['accuracy']:.3f} "
                f"after ({t['seconds']} s)."
            )
    lines += ["", "Times (s): " + ", ".join(f"{k} {v}" for k, v in result["times_s"].items()) + "."]
    return "\n".join(lines) + "\n", result


def picture(work: Path, path: Path, seed: int, points: int = 3000, labels: int = 10) -> None:
    """The paper's Fig. 3: t-SNE of content words coloured by dependency label, raw and transformed."""
    import matplotlib
    import numpy as np
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def read(name: str):
        rows = [json.loads(line) for line in (work / f"words.{name}.jsonl").read_text().splitlines()]
        return rows

    raw, transformed = read("raw"), read("transformed")
    content = [i for i, r in enumerate(raw) if r["pos"] in ("NOUN", "PROPN", "VERB", "ADJ", "ADV")]
    common = [d for d, _ in Counter(raw[i]["dep"] for i in content).most_common(labels)]
    content = [i for i in content if raw[i]["dep"] in common]
    chosen = sorted(random.Random(seed).sample(content, min(points, len(content))))
    deps = [raw[i]["dep"] for i in chosen]
    figure, axes = plt.subplots(1, 2, figsize=(14, 6.5))
    colours = plt.get_cmap("tab10")
    for axis, rows, title in (
        (axes[0], raw, "MiniLM word vectors (768-d)"),
        (axes[1], transformed, "after the syntactic transformation f (75-d)"),
    ):
        x = np.array([rows[i]["embedding"] for i in chosen], dtype=np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        if x.shape[1] > 50:
            x = PCA(50, random_state=seed).fit_transform(x)
        xy = TSNE(2, init="pca", random_state=seed, perplexity=30).fit_transform(x)
        for n, dep in enumerate(common):
            mask = np.array([d == dep for d in deps])
            axis.scatter(xy[mask, 0], xy[mask, 1], s=4, color=colours(n), label=dep)
        axis.set_title(title)
        axis.set_xticks([])
        axis.set_yticks([])
    axes[1].legend(markerscale=4, fontsize=8, loc="upper right")
    figure.suptitle(f"t-SNE of {len(chosen)} content words of held-out sentences, coloured by spaCy dependency label")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    draw = commands.add_parser("sample")
    draw.add_argument("--n", type=int, required=True)
    draw.add_argument("--seed", type=int, default=42)
    draw.add_argument("--min-words", type=int, default=6)
    draw.add_argument("--max-words", type=int, default=25)
    tables = commands.add_parser("report")
    tables.add_argument("work")
    tables.add_argument("--sets", type=int)
    tables.add_argument("--eval", type=int)
    tables.add_argument("--queries", type=int)
    tables.add_argument("--seed", type=int, default=42)
    tables.add_argument("--markdown")
    tables.add_argument("--json")
    tables.add_argument("--png")
    args = parser.parse_args()
    if args.command == "sample":
        sample(args)
        return
    text, result = report(args)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    if args.png:
        picture(Path(args.work), Path(args.png), args.seed)


if __name__ == "__main__":
    main()
