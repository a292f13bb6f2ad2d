"""Issue 40, item 2 on CPU: the best label-free recipe with its rows' lengths raised to a power (--norm-power).

The best recipe of bench/static_quality.py (every corpus sentence, every word seen 5 times or more that MiniLM
splits, the teacher's 384 dimensions: `words-sentences-dim384`, and the same with word dropout's texts:
`wsd384-dropped`), each fitted once a seed (42, 7, 2027) with the bench's own functions, and each fit scored with
each row's length raised to every power in POWERS (`training/static.py`'s `raised_norms`, which `train
--norm-power` applies): Spearman x100 on STS-B dev (which picks the power), STS-B test and SICK-R test. No control
is fitted here: the control's fits of the same seeds come from another run (`--control`: a JSON of
`control/SEED` -> data set -> {spearman}). What static_quality.py's `wsd384-p*` variants measure too, without its
control pass (7-15 minutes on 2 CPU cores), so that it runs on CPU in about 70 minutes:
the teacher reads the 180,626 sentences in about 25 minutes (kept in --out as pass-sentences.npz, read back by a
later run) and their dropped copies in 11; a fit takes 4-5 minutes (9 with the dropped copies).

    python bench/static_norm_power.py --corpus runs/static/corpora.jsonl --pairs DIR --out OUT [--dropped]
        [--control FILE]
DIR: stsb-dev.jsonl, stsb-test.jsonl, sick-test.jsonl (bench/static_quality.sh prepare makes them). Results:
OUT/best.json as it goes (a run resumes from it), each fit's similarities as OUT/sims-NAME-SEED-P.npz, then
bench/results/static_norm_power.json (--results) with the means over seeds and the paired differences (t
interval over seeds) against the fit's own power 1 and against the control of the same seed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import save
from bench.static_quality import PAIRS, read_pairs, scores, similarities, with_dropped
from sembed_cli.evaluation.statistics import t_interval
from sembed_cli.io import RecordSource
from sembed_cli.models import model_identity, sentence_models
from sembed_cli.models.static_model import StaticModel
from sembed_cli.training import static
from sembed_cli.training.data import TrainingInput
from sembed_cli.training.job import Job
from sembed_cli.training.methods import nws
from sembed_cli.training.methods import static as method

POWERS = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7)
SEEDS = (42, 7, 2027)
ALL = 10**9


def interval(differences: list[float]) -> list[float]:
    """[mean, low, high]: the mean of the per-seed differences and its 95% t interval (`t_interval`; NaN bounds for
    one seed)."""
    bounds = t_interval(differences) or (float("nan"), float("nan"))
    return [round(float(np.mean(differences)), 3), *(round(bound, 3) for bound in bounds)]


def summary(results: dict, control: dict) -> dict:
    out: dict = {}
    for name in sorted({key.split("/")[0] for key in results}):
        seeds = [seed for seed in SEEDS if f"{name}/{seed}" in results]
        for power in map(str, POWERS):
            row: dict = {"seeds": seeds}
            for data in PAIRS:
                values = [results[f"{name}/{seed}"][power][data] for seed in seeds]
                own = [results[f"{name}/{seed}"]["1.0"][data] for seed in seeds]
                row[data] = {"mean": round(float(np.mean(values)), 3), "by_seed": values}
                row[data]["against_power_1"] = interval([v - o for v, o in zip(values, own)])
                if all(f"control/{seed}" in control for seed in seeds):
                    base = [control[f"control/{seed}"][data]["spearman"] for seed in seeds]
                    row[data]["against_control"] = interval([v - b for v, b in zip(values, base)])
            out[f"{name}@{power}"] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dropped", action="store_true", help="also the recipe with word dropout's texts")
    parser.add_argument("--control", type=Path, help="the control's scores of the same seeds")
    parser.add_argument("--results", default="static_norm_power")
    args = parser.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(2)
    args.out.mkdir(parents=True, exist_ok=True)
    pairs = read_pairs(args.pairs)
    model = sentence_models.resolve_path(sentence_models.DEFAULT_MODEL)
    teacher = SentenceTransformer(str(model), device="cpu").float()
    settings = method.Settings(
        model=str(model), fit="teacher", fit_vectors=True, teacher_sentences=ALL, words=ALL, dim=384,
        teacher_cache=str(args.out / "pass-sentences.npz"),
    )  # fmt: skip
    tick = time.perf_counter()
    identity = str(model_identity.of_sentence_model(sentence_models.DEFAULT_MODEL))
    reading = static.read_teacher(
        teacher, identity, TrainingInput(RecordSource(str(args.corpus))), settings, "text", "cpu"
    )
    print(
        f"{len(reading.texts)} texts, {len(reading.added.words)} words, {time.perf_counter() - tick:.0f} s", flush=True
    )
    readings = {"wsd384": reading}
    if args.dropped:
        tick = time.perf_counter()
        readings["wsd384-dropped"] = with_dropped(reading, teacher, 0.2, "cpu")
        print(f"the dropped copies read in {time.perf_counter() - tick:.0f} s", flush=True)
    job = Job(RecordSource(str(args.corpus)), args.out / "unused", method.RECIPE, None, 42, "cpu", False, True)
    path = args.out / "best.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    for seed in SEEDS:
        for name, read in readings.items():
            key = f"{name}/{seed}"
            if key in results:
                continue
            tick = time.perf_counter()
            fitted = static.distil(read, settings, dataclasses.replace(job, seed=seed), nws.RECIPE, nws.Settings())
            matrix = fitted.matrix.astype(np.float32)
            results[key] = {}
            for power in POWERS:
                sims = similarities(StaticModel(read.tokenizer, static.raised_norms(matrix, power)), pairs)
                results[key][str(power)] = {data: value["spearman"] for data, value in scores(sims, pairs).items()}
                np.savez(args.out / f"sims-{name}-{seed}-{power}.npz", **sims)
            print(key, f"{time.perf_counter() - tick:.0f} s", json.dumps(results[key]["0.85"]), flush=True)
            path.write_text(json.dumps(results, indent=1))
    control = json.loads(args.control.read_text()) if args.control else {}
    save(args.results, {
        "machine": f"{platform.machine()}, cpu", "teacher": identity, "powers": POWERS, "runs": results,
        "summary": summary(results, control),
    })  # fmt: skip


if __name__ == "__main__":
    main()
