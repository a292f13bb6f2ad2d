"""Reports of examples/ta_sbert_ablation.sh (Tables 3-4) and ta_sbert_stability.sh (Fig. 9), over seeds.

    python examples/ta_sbert_report.py collect WORK/START --start minilm|mlm --base-model M --seeds S... \
        --steps N|all --json RESULTS/ta_sbert.json
    python examples/ta_sbert_report.py table RESULTS/ta_sbert.json [--markdown RESULTS/ta_sbert.md]
    python examples/ta_sbert_report.py stability WORK --seconds S --steps N|all [--markdown F] [--json F] [--png F]

collect adds one start's per-seed figures of the ablation to the results file (examples/verdict.py: the layout,
the 95% t interval over seeds and the verdict rule); table renders the file, so it can be recomputed from the
JSON alone.

The paper's figures are copied from Seo et al. 2022, "TA-SBERT", Table 3
(STS-B and SICK-R, Pearson / Spearman x100) and Table 4 (SentEval accuracy),
rows of SBERT-NLI-base.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import verdict

ROWS = [
    ("mean", "SBERT-NLI (mean pooling)", "SBERT-NLI-base"),
    ("form", "+ form", "+ form"),
    ("att", "+ att", "+ att"),
    ("form_att", "+ form + att", "+ form + att"),
    ("att_recon", "+ att + recon", "+ att + recon"),
    ("form_att_recon", "+ form + att + recon", "+ form + att + recon"),
]
# Table 3 (STSb r/rho, SICK-R r/rho) and Table 4 (MR, CR, SUBJ) of SBERT-NLI-base.
PAPER = {
    "SBERT-NLI-base": ((74.71, 75.15, 83.9, 79.44), (82.46, 89.26, 93.13)),
    "+ form": ((74.72, 75.34, 83.76, 79.22), (82.49, 89.16, 93.27)),
    "+ att": ((75.07, 75.55, 84.2, 79.79), (82.47, 89.18, 93.38)),
    "+ form + att": ((74.97, 75.46, 84.58, 79.96), (82.73, 89.2, 93.23)),
    "+ att + recon": ((76.8, 77.06, 85.48, 80.48), (82.55, 89.16, 93.59)),
    "+ form + att + recon": ((76.81, 77.18, 85.46, 80.52), (82.57, 89.18, 93.88)),
}
COLUMNS = [
    ("stsb", "pearson", "STS-B r"),
    ("stsb", "spearman", "STS-B ρ"),
    ("sick", "pearson", "SICK-R r"),
    ("sick", "spearman", "SICK-R ρ"),
    ("mr", "accuracy", "MR"),
    ("cr", "accuracy", "CR"),
    ("subj", "accuracy", "SUBJ"),
]


LABELS = [label for _, _, label in COLUMNS]  # COLUMNS: (metrics file set, metric, column) of each model's files
PAPER_BY_ROW = {row: dict(zip(LABELS, (*PAPER[paper_row][0], *PAPER[paper_row][1]))) for row, _, paper_row in ROWS}
# The claims: each TA row above (or level with) mean pooling, by the paper's differences (Tables 3 and 4)
PAPER_DIFFERENCE = {
    row: {label: PAPER_BY_ROW[row][label] - PAPER_BY_ROW["mean"][label] for label in LABELS} for row, _, _ in ROWS[1:]
}
STARTS = {"minilm": "all-MiniLM-L6-v2", "mlm": "masked-LM MiniLM"}


def cell(xs: list[float]) -> str:
    """mean ± standard deviation over seeds (the stability table)."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.2f}"
    return f"{statistics.mean(xs):.2f} ± {statistics.stdev(xs):.2f}"


def collect(args: argparse.Namespace) -> dict:
    """This start's per-seed figures, training settings and time into the results file."""
    entry = {
        "base_model": args.base_model,
        **verdict.collect(args.work, [row for row, _, _ in ROWS], COLUMNS, args.seeds),
        "time": verdict.stage_seconds(args.work),
        "training": {
            "data": "SICK train + the SNLI part, NLI labels",
            "epochs": 1,
            "max_steps": args.steps,
            "batch": 16,
            "encoder_lr": 2e-5,
            "head_lr": 3e-5,
            "reconstruction_weight": 0.017,
        },
        "machine": verdict.machine(),
    }
    return verdict.merge(
        args.json,
        args.start,
        entry,
        {"interval": verdict.INTERVAL, "rule": verdict.RULE, "measures": LABELS, "paper": PAPER},
    )


def table(results: dict) -> str:
    """The markdown of the results file: Table 3 (and 4), ours per start, each TA row - mean pooling with verdicts."""
    return verdict.render(
        results,
        title="TA-SBERT ablation: Tables 3 and 4 (x100), over seeds",
        labels=LABELS,
        paper_rows=[
            (f"SBERT-NLI-base {paper_row}" if paper_row != "SBERT-NLI-base" else paper_row, PAPER_BY_ROW[row])
            for row, _, paper_row in ROWS
        ],
        rows=[(row, label) for row, label, _ in ROWS],
        baseline="mean",
        claims=[(row, f"{label} − mean pooling") for row, label, _ in ROWS[1:]],
        paper_differences=PAPER_DIFFERENCE,
        start_labels=STARTS,
        notes=[
            "Paper: SBERT-NLI-base rows of Tables 3 and 4 (BERT-base, all of SNLI + MultiNLI, GPU). Ours: one "
            "epoch over the same 7,027 NLI pairs (SICK train + the SNLI part) for every row, batch 16, encoder "
            "lr 2e-5, Token Attention and heads 3e-5, reconstruction weight 0.017; a form row sees base-form "
            "text in training and at test time."
        ],
    )


def stability(work: Path, args: argparse.Namespace) -> tuple[str, dict]:
    """Held-out NLI accuracy and loss, and the training loss, by learning rate, with and without reconstruction."""
    runs: dict[tuple[str, float], list[dict]] = {}
    for meta_file in sorted((work / "models").glob("*/sembed.json")):
        recon, lr, _seed = meta_file.parent.name.rsplit(".", 2)
        meta = json.loads(meta_file.read_text())
        runs.setdefault((recon, float(lr)), []).append(
            {
                "accuracy": meta["validation"]["accuracy"],
                "test_loss": meta["validation"]["loss"],
                "train_loss": meta["training"]["train_loss"],
            }
        )
    rates = sorted({lr for _, lr in runs})
    out = [
        "## TA-SBERT Fig. 9: stability of fine-tuning with and without the reconstruction loss",
        "",
        "| learning rate | reconstruction | held-out NLI accuracy | held-out loss | training loss | seeds |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    summary = {}
    for lr in rates:
        for recon in ("no_recon", "recon"):
            found = runs.get((recon, lr), [])
            if not found:
                continue
            cells = {key: [r[key] for r in found] for key in ("accuracy", "test_loss", "train_loss")}
            summary[f"{recon} {lr:g}"] = cells
            out.append(
                f"| {lr:g} | {'yes' if recon == 'recon' else 'no'} | {cell(cells['accuracy'])} | "
                f"{cell(cells['test_loss'])} | {cell(cells['train_loss'])} | {len(found)} |"
            )
    out += [
        "",
        "Mean ± standard deviation over seeds; SBERT (mean pooling) from the packaged all-MiniLM-L6-v2 on "
        f"SICK train + the SNLI dev part (max steps: {args.steps}), held-out: the SNLI test part. The paper "
        "(Fig. 9, BERT-base on full NLI): without reconstruction the accuracy spreads and drops as the learning "
        "rate grows; with it, it stays stable.",
        "",
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d}, {args.seconds / 60:.0f} minutes.",
    ]
    if args.png:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for recon, style in (("no_recon", "o--"), ("recon", "s-")):
            xs = [lr for lr in rates if (recon, lr) in runs]
            for ax, key, label in (
                (axes[0], "accuracy", "held-out accuracy (%)"),
                (axes[1], "test_loss", "held-out loss"),
            ):
                means = [statistics.mean(r[key] for r in runs[(recon, lr)]) for lr in xs]
                spread = [
                    statistics.stdev([r[key] for r in runs[(recon, lr)]]) if len(runs[(recon, lr)]) > 1 else 0
                    for lr in xs
                ]
                ax.errorbar(
                    xs,
                    means,
                    yerr=spread,
                    fmt=style,
                    capsize=3,
                    label="with reconstruction" if recon == "recon" else "without",
                )
                ax.set_xscale("log")
                ax.set_xlabel("learning rate")
                ax.set_ylabel(label)
        axes[0].legend()
        fig.suptitle("TA-SBERT Fig. 9 on all-MiniLM-L6-v2 (mean ± sd over seeds)")
        fig.tight_layout()
        fig.savefig(args.png, dpi=120)
    return "\n".join(out) + "\n", {"steps": args.steps, "seconds": args.seconds, "runs": summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    c = commands.add_parser("collect")
    c.add_argument("work", type=Path)
    c.add_argument("--start", required=True, choices=tuple(STARTS))
    c.add_argument("--base-model", required=True)
    c.add_argument("--seeds", nargs="+", required=True)
    c.add_argument("--steps", default="all")
    c.add_argument("--json", type=Path, required=True)
    t = commands.add_parser("table")
    t.add_argument("json", type=Path)
    t.add_argument("--markdown", type=Path)
    s = commands.add_parser("stability")
    s.add_argument("work", type=Path)
    s.add_argument("--png", type=Path)
    s.add_argument("--seconds", type=int, default=0)
    s.add_argument("--steps", default="all")
    s.add_argument("--markdown", type=Path)
    s.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.command == "collect":
        collect(args)
        return
    if args.command == "table":
        text = table(json.loads(args.json.read_text()))
        print(text)
        if args.markdown:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(text)
        return
    text, data = stability(args.work, args)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
