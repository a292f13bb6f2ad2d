"""--norm-power on models already trained: each model directory's rows raised to each power (`raised_norms`, what
`train --method static --norm-power P` does), then scored through the command line (`sembed embed -m DIR | sembed
eval sts`) on STS-B dev, STS-B test and SICK-R test (issue 40, item 2; docs/static-mode.md's 100,000-sentence table).

    python bench/norm_power_scan.py --pairs DIR MODEL_DIR... [--powers 1,0.9,0.85,0.8,0.75,0.7]
DIR: stsb-dev.jsonl, stsb-test.jsonl, sick-test.jsonl (bench/static_quality.sh prepare makes them). Results:
bench/results/static_norm_power_scan.json (Spearman x100 by model and power).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import save
from sembed_cli.training.static import raised_norms

SEMBED = [sys.executable, "-m", "sembed_cli"]
PAIRS = ("stsb-dev", "stsb-test", "sick-test")


def spearman(model: Path, pairs: Path) -> float:
    embedded = subprocess.run([*SEMBED, "embed", "-q", "-m", str(model)], input=pairs.read_bytes(),
                              capture_output=True, check=True)  # fmt: skip
    scored = subprocess.run([*SEMBED, "eval", "sts", "-q"], input=embedded.stdout, capture_output=True, check=True)
    return round(float(json.loads(scored.stdout)["spearman"]), 4)


def main() -> None:
    from safetensors.numpy import load_file, save_file

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--powers", default="1,0.9,0.85,0.8,0.75,0.7")
    parser.add_argument("models", nargs="+", type=Path)
    args = parser.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models:
            rows = load_file(str(model / "model.safetensors"))["embedding.weight"]
            seed = json.loads((model / "sembed.json").read_text())["settings"]["seed"]
            for power in map(float, args.powers.split(",")):
                raised = Path(scratch) / f"{model.name}-{power}"
                shutil.copytree(model, raised)
                save_file({"embedding.weight": raised_norms(rows, power)}, str(raised / "model.safetensors"))
                results.setdefault(f"{model}", {"seed": seed})[str(power)] = {
                    name: spearman(raised, args.pairs / f"{name}.jsonl") for name in PAIRS
                }
                print(model, power, results[f"{model}"][str(power)], flush=True)
    powers = [str(float(p)) for p in args.powers.split(",")]
    means = {p: {n: round(float(np.mean([r[p][n] for r in results.values()])), 3) for n in PAIRS} for p in powers}
    save("static_norm_power_scan", {"models": results, "mean_over_models": means})


if __name__ == "__main__":
    main()
