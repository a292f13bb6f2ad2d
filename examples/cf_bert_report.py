"""Helpers of examples/cf_bert_reproduction.sh: a seeded subsample of a record stream, and the final report.

    python examples/cf_bert_report.py sample N|all SEED < records.jsonl > some.jsonl
    python examples/cf_bert_report.py table WORK --epochs E --train-pairs N|all --seed S [--markdown F] [--json F]

The paper's figures below are copied from its text (Yin et al. 2020,
"Improving Sentence Representations via Component Focusing", Tables 5-7).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import sys
from pathlib import Path

# Table 5: SICK-R Pearson r, Spearman rho; STS-B r, rho (x100). Table 6: SICK-E accuracy.
PAPER = [
    ("USE", (82.65, 76.69, 75.53, 74.92), 83.5),
    ("USE + CF (W_cf = 0.2)", (83.51, 77.38, 76.22, 75.54), 84.3),
    ("SBERT-base", (87.81, 83.26, 87.04, 85.76), 85.8),
    ("CF-BERT-base (W_cf = 0.2)", (88.39, 83.77, 87.58, 86.29), 86.3),
    ("SBERT-large", (88.78, 83.93, 87.41, 86.35), 87.1),
    ("CF-BERT-large (W_cf = 0.2)", (89.29, 84.35, 87.83, 86.82), 87.5),
]
# Table 7: Pearson r x100 of CF-BERT-large for each W_cf (SICK-R, STS-B).
PAPER_TABLE7 = {
    0: (88.78, 87.41), 0.1: (89.05, 87.69), 0.2: (89.29, 87.83), 0.3: (89.17, 87.66), 0.4: (89.05, 87.54),
    0.5: (88.83, 87.51), 0.6: (88.68, 87.19), 0.7: (88.33, 86.72), 0.8: (88.01, 86.33), 0.9: (87.63, 86.11),
    1.0: (87.31, 85.81), 2.0: (86.22, 85.18), 3.0: (85.23, 84.26), 4.0: (84.34, 83.38), 5.0: (83.12, 82.17),
    6.0: (82.01, 81.10),
}
OURS = [("zeroshot", "all-MiniLM-L6-v2, zero-shot"), ("sbert", "MiniLM + SBERT fine-tuning (W_cf = 0)"),
        ("cf", "MiniLM + CF fine-tuning (W_cf = 0.2)")]


def sample(n: str, seed: int) -> None:
    """Pass stdin through, or a seeded random `n` of its lines in their original order."""
    lines = sys.stdin.readlines()
    if n != "all" and int(n) < len(lines):
        keep = sorted(random.Random(seed).sample(range(len(lines)), int(n)))
        lines = [lines[i] for i in keep]
    sys.stdout.writelines(lines)


def load(work: Path) -> dict:
    metrics = {}
    for path in sorted((work / "metrics").glob("*.json")):
        metrics[path.name.removesuffix(".json")] = json.loads(path.read_text())
    return metrics


def f(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def grid_at(grid: dict, weight: float) -> dict:
    return next(entry for entry in grid["cf_grid"] if abs(entry["cf_weight"] - weight) < 1e-9)


def table(work: Path, args: argparse.Namespace) -> tuple[str, dict]:
    m = load(work)
    times = [line.split("\t") for line in (work / "times.tsv").read_text().splitlines() if line]
    ours = {}
    for key, _ in OURS:
        ours[key] = {data: m.get(f"{key}.{data}.sts") for data in ("sick", "stsb")}
        ours[key]["sick-e"] = m.get(f"{key}.sick.entailment")
    # CF applied at inference only to the zero-shot model, from its kept parts: the paper's "USE + CF" row
    inference_cf = {data: grid_at(m[f"zeroshot.{data}.grid"], 0.2) if f"zeroshot.{data}.grid" in m else None
                    for data in ("sick", "stsb")}

    out = ["## CF-BERT reproduction: Tables 5 and 6 (x100)", "",
           "| model | SICK-R r | SICK-R ρ | STS-B r | STS-B ρ | SICK-E acc |", "|---|---:|---:|---:|---:|---:|"]
    for name, (r1, p1, r2, p2), acc in PAPER:
        out.append(f"| paper: {name} | {r1:.2f} | {p1:.2f} | {r2:.2f} | {p2:.2f} | {acc:.1f} |")

    def row(label: str, sick: dict | None, stsb: dict | None, entail: dict | None) -> str:
        cells = [f(sick and sick["pearson"]), f(sick and sick["spearman"]), f(stsb and stsb["pearson"]),
                 f(stsb and stsb["spearman"]), f(entail and entail["accuracy"])]
        return f"| **ours: {label}** | " + " | ".join(cells) + " |"

    out.append(row(OURS[0][1], ours["zeroshot"]["sick"], ours["zeroshot"]["stsb"], ours["zeroshot"]["sick-e"]))
    out.append(row("all-MiniLM-L6-v2, zero-shot + CF at inference (W_cf = 0.2)", inference_cf["sick"],
                   inference_cf["stsb"], None))
    for key, label in OURS[1:]:
        out.append(row(label, ours[key]["sick"], ours[key]["stsb"], ours[key]["sick-e"]))

    def delta(a: dict | None, b: dict | None, metric: str) -> str:
        return "-" if not (a and b) else f"{a[metric] - b[metric]:+.2f}"

    out.append("| paper: CF − SBERT (base / large) | +0.58 / +0.51 | +0.51 / +0.42 | +0.54 / +0.42 "
               "| +0.53 / +0.47 | +0.5 / +0.4 |")
    cf, sb = ours["cf"], ours["sbert"]
    out.append(f"| **ours: CF − SBERT** | {delta(cf['sick'], sb['sick'], 'pearson')} | "
               f"{delta(cf['sick'], sb['sick'], 'spearman')} | {delta(cf['stsb'], sb['stsb'], 'pearson')} | "
               f"{delta(cf['stsb'], sb['stsb'], 'spearman')} | {delta(cf['sick-e'], sb['sick-e'], 'accuracy')} |")
    out.append("")
    verdicts = [f"{name} {'yes' if d > 0 else 'no'} ({d:+.2f})" for name, d in (
        ("SICK-R", cf["sick"]["pearson"] - sb["sick"]["pearson"] if cf["sick"] and sb["sick"] else None),
        ("STS-B", cf["stsb"]["pearson"] - sb["stsb"]["pearson"] if cf["stsb"] and sb["stsb"] else None),
        ("SICK-E", cf["sick-e"]["accuracy"] - sb["sick-e"]["accuracy"] if cf["sick-e"] and sb["sick-e"] else None),
    ) if d is not None]
    out += ["The paper's effect, CF fine-tuning (W_cf = 0.2) above SBERT fine-tuning (W_cf = 0), here: "
            + ", ".join(verdicts) + ".", ""]
    ci = []
    for key, label in OURS[1:]:
        for data, name in (("sick", "SICK-R"), ("stsb", "STS-B")):
            s = ours[key][data]
            if s:
                ci.append(f"{label} on {name}: r 95% CI [{s['pearson_ci'][0]:.2f}, {s['pearson_ci'][1]:.2f}]")
        e = ours[key]["sick-e"]
        if e:
            ci.append(f"{label} on SICK-E: accuracy std over folds {e['accuracy_std']:.2f}")
    out += ["Uncertainty (Fisher 95% confidence intervals of r, n = pairs; SICK-E: fold spread):", ""]
    out += [f"- {line}" for line in ci]

    out += ["", "## Table 7: Pearson r (x100) for each W_cf at inference", "",
            "| W_cf | paper SICK-R | paper STS-B | ours CF model SICK-R | ours CF model STS-B "
            "| ours SBERT model SICK-R | ours SBERT model STS-B | ours zero-shot SICK-R | ours zero-shot STS-B |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for weight, (paper_sick, paper_stsb) in PAPER_TABLE7.items():
        cells = [f"{paper_sick:.2f}", f"{paper_stsb:.2f}"]
        for key in ("cf", "sbert", "zeroshot"):
            for data in ("sick", "stsb"):
                grid = m.get(f"{key}.{data}.grid")
                cells.append(f(grid_at(grid, weight)["pearson"]) if grid else "-")
        out.append(f"| {weight:g} | " + " | ".join(cells) + " |")
    best = {f"{key}.{data}": m[f"{key}.{data}.grid"]["best_cf_weight"]
            for key in ("cf", "sbert", "zeroshot") for data in ("sick", "stsb") if f"{key}.{data}.grid" in m}
    out += ["", "Best W_cf by Pearson: " + ", ".join(f"{k} {v:g}" for k, v in best.items()) + " (paper: 0.2)."]

    total = next((int(s) for name, s in times if name == "total"), None)
    trained = {path.name: json.loads((path / "sembed.json").read_text())
               for path in sorted((work / "models").glob("*")) if (path / "sembed.json").exists()}
    counts = {name.split("-")[0]: meta["data"]["records"] for name, meta in trained.items()}
    subsample = "all pairs" if args.train_pairs == "all" else f"a seeded random subsample of {args.train_pairs} pairs"
    n = {data: (ours["zeroshot"][data] or {}).get("n") for data in ("stsb", "sick")}
    out += ["", "## Run", "",
            "- Model: the packaged all-MiniLM-L6-v2 (6 layers, 384-d); the paper: BERT-base/large NLI models.",
            f"- Training: {subsample} of STS-B train ({counts.get('stsb')}) and of SICK train ({counts.get('sick')}), "
            f"{args.epochs} epoch(s) (the paper: 4), batch 16, AdamW lr 2e-5, 10% warm-up, seed {args.seed}; "
            "SICK scores mapped by (s - 1) / 4, STS-B by s / 5. S_cf by `sembed spo` (the packaged spaCy parser).",
            f"- Test: STS-B test ({n['stsb']} pairs), SICK test ({n['sick']} pairs: SICK-R, and SICK-E by 10-fold "
            "logistic regression on |u - v|).",
            f"- Machine: {os.cpu_count()} CPU cores ({platform.processor() or platform.machine()}), no GPU, "
            f"torch threads: {os.environ.get('OMP_NUM_THREADS', 'default')}; {datetime.date.today().isoformat()}.",
            f"- Time: {total // 60} min {total % 60} s in all." if total is not None else "- Time: unknown.", "",
            "| stage | seconds |", "|---|---:|"]
    out += [f"| {name} | {s} |" for name, s in times]
    out += ["", "| model | pairs | steps | loss per epoch | training seconds |", "|---|---:|---:|---|---:|"]
    for name, meta in trained.items():
        t = meta["training"]
        out.append(f"| {name} | {meta['data']['records']} | {t['steps']} | "
                   f"{', '.join(f'{x:.4f}' for x in t['epoch_losses'])} | {t['seconds']:.0f} |")
    return "\n".join(out) + "\n", {"ours": ours, "inference_cf": inference_cf, "metrics": m, "times": dict(times),
                                   "models": trained}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("sample")
    s.add_argument("n")
    s.add_argument("seed", type=int)
    t = commands.add_parser("table")
    t.add_argument("work", type=Path)
    t.add_argument("--epochs", required=True)
    t.add_argument("--train-pairs", required=True)
    t.add_argument("--seed", required=True)
    t.add_argument("--markdown", type=Path)
    t.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.n, args.seed)
        return
    text, data = table(args.work, args)
    print(text)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
