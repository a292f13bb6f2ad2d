"""The report of examples/nws_reproduction.sh: Table 1 columns on STS-B and SICK-R, and the Fig. 2 curve.

    python examples/nws_report.py WORK --epochs E --seed S [--markdown F] [--json F] [--plot F.png]

The paper's figures are copied from its text (Samardzhiev, Gargett and Bollegala, "Learning Neural
Word Saliency Scores", Table 1: Pearson x100, overall average over 18 SemEval STS sets, 300-d GloVe
trained on the Toronto books corpus). It reports neither STS-B nor SICK-R, so only the ordering
NWS > ISF > AVG can be compared, not the values.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from pathlib import Path

PAPER_AVERAGE = {"avg": 38.0, "isf": 53.4, "nws": 57.6, "sif": 55.1}  # Table 1, "Overall Average" (SIF = SMOOTH)
METHODS = [("avg", "AVG"), ("isf", "ISF"), ("sif", "SIF (Arora et al.)"), ("nws", "NWS")]
VECTORS = [("glove-6b-50d", "GloVe 6B 50-d (packaged)"), ("en_core_web_md", "spaCy en_core_web_md 300-d")]
DATASETS = [("stsb", "STS-B test"), ("sick", "SICK-R test")]


def load(work: Path) -> dict:
    return {path.name[: -len(".json")]: json.loads(path.read_text()) for path in (work / "metrics").glob("*.json")}


def f(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def build(work: Path, args: argparse.Namespace) -> tuple[str, dict]:
    metrics = load(work)
    times = dict(line.split("\t") for line in (work / "times.tsv").read_text().splitlines() if line)
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "epochs": args.epochs,
        "seed": args.seed,
        "times_s": {k: int(v) for k, v in times.items()},
        "table": {},
        "epochs_curve": {},
        "training": {},
    }
    lines = [
        f"# NWS reproduction ({result['date']}, {result['machine']}, CPU)",
        "",
        f"Corpus: the shared sentence-ordered corpora (abc, state_union, inaugural, webtext, movie_reviews, "
        f"brown) through `sembed convert`; NWS: {args.epochs} epochs, batch 128, AdaGrad lr 0.01, K = 2, "
        f"ISF initialisation, seed {args.seed}. Pearson r / Spearman rho x100 (Fisher 95% CI in nws.json).",
        "",
        "| vectors | method | STS-B r | STS-B rho | SICK-R r | SICK-R rho | paper (avg of 18 STS sets, r) |",
        "|---|---|---|---|---|---|---|",
    ]
    for tag, label in VECTORS:
        for method, name in METHODS:
            row = {data: metrics.get(f"{tag}.{method}.{data}") for data, _ in DATASETS}
            result["table"][f"{tag}.{method}"] = row
            cells = []
            for data, _ in DATASETS:
                m = row[data]
                cells += [f(m and m["pearson"]), f(m and m["spearman"])]
            lines.append(f"| {label} | {name} | " + " | ".join(cells) + f" | {PAPER_AVERAGE[method]:.1f} |")
        meta = work / f"nws-{tag}" / "sembed.json"
        if meta.exists():
            data = json.loads(meta.read_text())
            result["training"][tag] = {
                "history": data["history"],
                "seconds": data["seconds"],
                "corpus": data["corpus"],
                "never_trained": data["never_trained"],
            }
    lines += [
        "",
        "Correlation (Pearson r x100) of NWS after each epoch (epoch 0: the ISF initialisation), the paper's Fig. 2:",
        "",
        "| vectors | data | " + " | ".join(str(e) for e in range(args.epochs + 1)) + " |",
        "|---|---|" + "---|" * (args.epochs + 1),
    ]
    for tag, label in VECTORS:
        for data, data_label in DATASETS:
            curve = [metrics.get(f"{tag}.epoch{e}.{data}") for e in range(args.epochs + 1)]
            result["epochs_curve"][f"{tag}.{data}"] = [m and m["pearson"] for m in curve]
            lines.append(f"| {label} | {data_label} | " + " | ".join(f(m and m["pearson"]) for m in curve) + " |")
    lines += ["", "Training (one epoch over all corpora, this machine):", ""]
    for tag, label in VECTORS:
        t = result["training"].get(tag)
        if t:
            speeds = [h["sentences_per_second"] for h in t["history"]]
            lines.append(
                f"- {label}: {t['corpus']['sentences']} sentences, {t['corpus']['tokens']} tokens; "
                f"{min(h['seconds'] for h in t['history']):.1f}-{max(h['seconds'] for h in t['history']):.1f} s "
                f"an epoch ({min(speeds):,.0f}-{max(speeds):,.0f} sentences/s); whole run {t['seconds']:.0f} s"
            )
    lines += ["", "Stage times (s): " + ", ".join(f"{k} {v}" for k, v in times.items())]
    return "\n".join(lines) + "\n", result


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for key, curve in result["epochs_curve"].items():
        ax.plot(range(len(curve)), curve, marker="o", label=key.replace(".", " / "))
    ax.set_xlabel("epoch (0: ISF initialisation)")
    ax.set_ylabel("Pearson r x100")
    ax.set_title("NWS: correlation against training epochs (cf. paper Fig. 2)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work", type=Path)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot", type=Path)
    args = parser.parse_args()
    text, result = build(args.work, args)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    if args.plot:
        plot(result, args.plot)


if __name__ == "__main__":
    main()
