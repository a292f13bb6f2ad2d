"""Helpers of examples/cf_bert_reproduction.sh: a seeded subsample of a record stream, and the multi-seed report.

    python examples/cf_bert_report.py sample N|all SEED < records.jsonl > some.jsonl
    python examples/cf_bert_report.py collect WORK/START --start minilm|mlm --base-model M --seeds S... \
        --epochs E --train-pairs N|all --json RESULTS/cf_bert.json
    python examples/cf_bert_report.py table RESULTS/cf_bert.json [--markdown RESULTS/cf_bert.md]

collect adds one start's per-seed figures to the results file (examples/verdict.py: the layout, the 95% t
interval over seeds and the verdict rule); table renders the file, so it can be recomputed from the JSON alone.
The paper's figures below are copied from its text (Yin et al. 2020,
"Improving Sentence Representations via Component Focusing", Tables 5 and 6).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import verdict

# Table 5: SICK-R Pearson r, Spearman rho; STS-B r, rho (x100). Table 6: SICK-E accuracy.
PAPER = [
    ("USE", (82.65, 76.69, 75.53, 74.92), 83.5),
    ("USE + CF (W_cf = 0.2)", (83.51, 77.38, 76.22, 75.54), 84.3),
    ("SBERT-base", (87.81, 83.26, 87.04, 85.76), 85.8),
    ("CF-BERT-base (W_cf = 0.2)", (88.39, 83.77, 87.58, 86.29), 86.3),
    ("SBERT-large", (88.78, 83.93, 87.41, 86.35), 87.1),
    ("CF-BERT-large (W_cf = 0.2)", (89.29, 84.35, 87.83, 86.82), 87.5),
]
ROWS = [("sbert", "+ SBERT fine-tuning (W_cf = 0)"), ("cf", "+ CF fine-tuning (W_cf = 0.2)")]
# (metrics file: DATA.KIND, metric, column): the files examples/cf_bert_reproduction.sh writes per model
MEASURES = [
    ("sick.sts", "pearson", "SICK-R r"),
    ("sick.sts", "spearman", "SICK-R ρ"),
    ("stsb.sts", "pearson", "STS-B r"),
    ("stsb.sts", "spearman", "STS-B ρ"),
    ("sick.sick-e", "accuracy", "SICK-E acc"),
]
LABELS = [label for _, _, label in MEASURES]
# The claim: CF-BERT-base (W_cf = 0.2) above SBERT-base, by these differences (Tables 5 and 6)
PAPER_DIFFERENCE = {
    "cf": dict(zip(LABELS, (cf - sbert for cf, sbert in zip((*PAPER[3][1], PAPER[3][2]), (*PAPER[2][1], PAPER[2][2])))))
}
STARTS = {"minilm": "all-MiniLM-L6-v2", "mlm": "masked-LM MiniLM"}


def sample(n: str, seed: int) -> None:
    """Pass stdin through, or a seeded random `n` of its lines in their original order."""
    lines = sys.stdin.readlines()
    if n != "all" and int(n) < len(lines):
        keep = sorted(random.Random(seed).sample(range(len(lines)), int(n)))
        lines = [lines[i] for i in keep]
    sys.stdout.writelines(lines)


def collect(args: argparse.Namespace) -> dict:
    """This start's per-seed figures, training settings and time into the results file."""
    entry = {
        "base_model": args.base_model,
        **verdict.collect(args.work, [key for key, _ in ROWS], MEASURES, args.seeds),
        "time": verdict.stage_seconds(args.work),
        "training": {
            "epochs": args.epochs,
            "train_pairs": args.train_pairs,
            "batch": 16,
            "lr": 2e-5,
            "warmup": 0.1,
            "cf_weight": 0.2,
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
    """The markdown of the results file: Tables 5 and 6, ours per start, CF - SBERT with verdicts."""
    return verdict.render(
        results,
        title="CF-BERT reproduction: Tables 5 and 6 (x100), over seeds",
        labels=LABELS,
        paper_rows=[(name, dict(zip(LABELS, (*sts, acc)))) for name, sts, acc in PAPER],
        rows=ROWS,
        baseline="sbert",
        claims=[("cf", "CF − SBERT")],
        paper_differences=PAPER_DIFFERENCE,
        start_labels=STARTS,
        notes=[
            "Paper's claim: CF-BERT-base − SBERT-base, Tables 5 and 6; the paper fine-tunes BERT-base/large NLI "
            "models for 4 epochs on a GPU, ours 1 epoch over the same STS-B / SICK training pairs (batch 16, AdamW "
            "lr 2e-5, 10% warm-up), SICK scores mapped by (s − 1) / 4, S_cf by `sembed spo`.",
            "Test: STS-B test, SICK test (SICK-R; SICK-E by 10-fold logistic regression on |u − v|).",
        ],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("sample")
    s.add_argument("n")
    s.add_argument("seed", type=int)
    c = commands.add_parser("collect")
    c.add_argument("work", type=Path)
    c.add_argument("--start", required=True, choices=tuple(STARTS))
    c.add_argument("--base-model", required=True)
    c.add_argument("--seeds", nargs="+", required=True)
    c.add_argument("--epochs", required=True, type=int)
    c.add_argument("--train-pairs", required=True)
    c.add_argument("--json", type=Path, required=True)
    t = commands.add_parser("table")
    t.add_argument("json", type=Path)
    t.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args.n, args.seed)
    elif args.command == "collect":
        collect(args)
    else:
        text = table(json.loads(args.json.read_text()))
        print(text)
        if args.markdown:
            args.markdown.parent.mkdir(parents=True, exist_ok=True)
            args.markdown.write_text(text)


if __name__ == "__main__":
    main()
