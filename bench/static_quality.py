"""Issue 40, item 2: a label-free static model from MiniLM past STS-B test 77? The fit's loss and the text it reads.

The teacher reads the corpus once per text set (in-process, the same functions
as `sembed train --method static`: `training/static.py`'s `read_teacher` and
`distil`), then each variant is fitted and scored:

    control        today's recipe: --fit teacher --fit-vectors, cosine loss, 100,000 corpus sentences
    infonce-100k   the same sentences, --fit-loss infonce
    cosine-all     every corpus sentence and every 12-word window (--teacher-windows), cosine loss
    infonce-all    the same text, --fit-loss infonce
    cosine-sentences  every corpus sentence, no windows (--variants picks these three and any of the above)
    dim384         today's recipe with --dim 384, the teacher's own: no PCA reduction
    epochs15       today's recipe, 15 epochs
    words-sentences   every corpus sentence, and --words: every corpus word seen 5 times or more that MiniLM
                   splits into pieces gets a token of its own (about 11,000)
    words4k-sentences  the same with --words 4000
    words-100k     today's 100,000 sentences with every such word
    words-sentences-e10  words-sentences fitted for 10 epochs
    words-sentences-dim384  words-sentences at the teacher's 384 dimensions (no PCA reduction)
    wsd384-lr3e-3, wsd384-lr3e-4, wsd384-b64, wsd384-b1024  the same at another --lr or --batch-size
    wsd384-dropped  words-sentences-dim384 with one more text a sentence: the sentence with a fifth of its words
                   dropped at random (at least one), read by the teacher too (word-dropout as more unlabelled text)
    wsd384-e10     words-sentences-dim384 fitted 10 epochs: as many steps as wsd384-dropped takes
    control-p0.9, control-p0.85, control-p0.8, wsd384-p0.9, wsd384-p0.85, wsd384-p0.8, wsd384-dropped-p0.85
                   the control, words-sentences-dim384 or wsd384-dropped with each row's length raised to the power
                   (--norm-power): the same fit of the same seed, evened out (a fit is made once for all its powers)

Each is scored on STS-B dev (which picks the candidate that gets three seeds, so that the test sets choose
nothing), STS-B test and SICK-R test: the cosine of each pair's static vectors (`StaticModel.encode`, as `sembed
embed` computes them), Spearman and Pearson x100. The run writes each fit's scores and pair similarities to OUT
as it goes (static_quality.json, static_quality.sims.npz), so a run stopped by a time limit keeps what it did, and
the chosen candidate's rows as fp16 .npy with its tokenizer. `--report OUT` then adds, on any machine, the paired
bootstrap (`paired_difference`, 2,000 resamples) of each run against the control of the same seed and against
today's model (its similarities of the same pairs, `--today`, made by `--save-today`), and each variant's mean
over seeds with the t interval of its mean difference.

Usage (bench/static_quality.sh packs and runs it on a GPU machine):
    python bench/static_quality.py --save-today runs/static/minilm-static --pairs DIR     # here, once: today.npz
    python bench/static_quality.py --model TEACHER --corpus corpus.jsonl[.xz] --pairs DIR --out OUT \
        [--device cuda] [--budget SECONDS] [--limit N] [--variants NAME ...]
    python bench/static_quality.py --report OUT --pairs DIR --today DIR/today.npz --results FILE
DIR of --pairs holds stsb-dev.jsonl, stsb-test.jsonl, sick-test.jsonl (`sembed convert --from stsb|sick`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import lzma
import platform
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from sembed_cli.evaluation.statistics import correlation, over_seeds, paired_difference
from sembed_cli.io import RecordSource
from sembed_cli.models.static_model import StaticModel
from sembed_cli.training import static
from sembed_cli.training.data import TrainingInput
from sembed_cli.training.job import Job
from sembed_cli.training.methods import nws
from sembed_cli.training.methods import static as method

TODAY_STSB = (
    75.73  # today's --fit teacher --fit-vectors, STS-B test, mean of three seeds (examples/results/static.json)
)
PAIRS = ("stsb-dev", "stsb-test", "sick-test")
SEEDS = (42, 7, 2027)
RESAMPLES = 2000
ALL = 10**9  # --teacher-sentences / --teacher-windows: every one
TEXTS = {  # what the teacher reads
    "100k": {"teacher_sentences": 100_000},
    "sentences": {"teacher_sentences": ALL},
    "all": {"teacher_sentences": ALL, "teacher_windows": ALL},
}


@dataclasses.dataclass(frozen=True)
class Variant:
    texts: str  # a key of TEXTS
    fit_loss: str = "cosine"
    dim: int = 256
    epochs: int = method.RECIPE.epochs
    words: int = 0  # --words
    lr: float = method.RECIPE.lr
    batch_size: int = method.RECIPE.batch_size
    dropped: float = 0.0  # > 0: each sentence again with this share of its words dropped (`with_dropped`)
    norm_power: float = 1.0  # --norm-power: each row's length raised to it after the fit (the fit itself shared)


VARIANTS = {
    "control": Variant("100k"),  # today's recipe
    "infonce-100k": Variant("100k", "infonce"),
    "cosine-all": Variant("all"),
    "infonce-all": Variant("all", "infonce"),
    "cosine-sentences": Variant("sentences"),  # every corpus sentence, no windows
    "dim384": Variant("100k", dim=384),  # the teacher's own dimensions: no PCA reduction
    "epochs15": Variant("100k", epochs=15),
    "words-sentences": Variant("sentences", words=ALL),
    "words4k-sentences": Variant("sentences", words=4000),
    "words-100k": Variant("100k", words=ALL),
    "words-sentences-e10": Variant("sentences", epochs=10, words=ALL),  # the words' new rows fitted longer
    "words-sentences-dim384": Variant("sentences", dim=384, words=ALL),  # the two that each helped, together
    "wsd384-lr3e-3": Variant("sentences", dim=384, words=ALL, lr=3e-3),
    "wsd384-lr3e-4": Variant("sentences", dim=384, words=ALL, lr=3e-4),
    "wsd384-b64": Variant("sentences", dim=384, words=ALL, batch_size=64),
    "wsd384-b1024": Variant("sentences", dim=384, words=ALL, batch_size=1024, lr=3e-3),
    "wsd384-dropped": Variant("sentences", dim=384, words=ALL, dropped=0.2),
    "wsd384-e10": Variant("sentences", dim=384, words=ALL, epochs=10),
    # the rows' lengths evened out after the fit (--norm-power; one fit a seed serves every power)
    "control-p0.9": Variant("100k", norm_power=0.9),
    "control-p0.85": Variant("100k", norm_power=0.85),
    "control-p0.8": Variant("100k", norm_power=0.8),
    "wsd384-p0.9": Variant("sentences", dim=384, words=ALL, norm_power=0.9),
    "wsd384-p0.85": Variant("sentences", dim=384, words=ALL, norm_power=0.85),
    "wsd384-p0.8": Variant("sentences", dim=384, words=ALL, norm_power=0.8),
    "wsd384-dropped-p0.85": Variant("sentences", dim=384, words=ALL, dropped=0.2, norm_power=0.85),
}
FIRST = ("control", "infonce-100k", "cosine-all", "infonce-all")  # the run's default variants


def read_pairs(folder: Path) -> dict[str, dict]:
    pairs = {}
    for name in PAIRS:
        records = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        pairs[name] = {
            "a": [r["text_a"] for r in records],
            "b": [r["text_b"] for r in records],
            "gold": np.array([r["score"] for r in records], dtype=np.float64),
        }
    return pairs


def similarities(model: StaticModel, pairs: dict[str, dict]) -> dict[str, np.ndarray]:
    """Each pair's cosine (the vectors are unit length) under `model`."""
    return {
        name: np.einsum("ij,ij->i", model.encode(p["a"]), model.encode(p["b"])).astype(np.float64)
        for name, p in pairs.items()
    }


def scores(sims: dict[str, np.ndarray], pairs: dict[str, dict]) -> dict:
    result = {}
    for name, sim in sims.items():
        c = correlation(sim, pairs[name]["gold"])
        result[name] = {"spearman": round(100 * c.spearman, 4), "pearson": round(100 * c.pearson, 4)}
    return result


def save_today(model_dir: str, pairs: dict[str, dict], path: Path) -> None:
    from sembed_cli.models import static_model

    sims = similarities(static_model.load(model_dir), pairs)
    np.savez(path, **sims)
    print(json.dumps(scores(sims, pairs)))


def report(out: Path, pairs: dict[str, dict], today: dict[str, np.ndarray], results_file: Path) -> None:
    """The run in `out` with each run's paired bootstrap against today's model and the control of its seed, and
    each variant's mean over seeds with the t interval of its mean difference, written to `results_file`."""
    results = json.loads((out / "static_quality.json").read_text(encoding="utf-8"))
    sims = dict(np.load(out / "static_quality.sims.npz"))
    tested = ("stsb-test", "sick-test")
    for key, run in results["runs"].items():
        name, seed = key.split("/")
        others = {"today": today}
        if name != "control" and f"control/{seed}/stsb-test" in sims:
            others["control"] = {data: sims[f"control/{seed}/{data}"] for data in tested}
        for other, other_sims in others.items():
            run[f"versus_{other}"] = {
                data: paired_difference(sims[f"{key}/{data}"], other_sims[data], pairs[data]["gold"], RESAMPLES)
                for data in tested
            }
    summary = {}
    for name in VARIANTS:
        keys = [key for key in results["runs"] if key.startswith(f"{name}/")]
        if not keys:
            continue
        runs = [results["runs"][key] for key in keys]
        row: dict = {"seeds": [int(key.split("/")[1]) for key in keys]}
        row.update({data: round(float(np.mean([run[data]["spearman"] for run in runs])), 4) for data in PAIRS})
        row.update({f"{data}_by_seed": [run[data]["spearman"] for run in runs] for data in PAIRS})
        for other in ("today", "control"):
            found = [run[f"versus_{other}"] for run in runs if f"versus_{other}" in run]
            if found:
                row[f"versus_{other}"] = {data: over_seeds([f[data] for f in found]) for data in tested}
        summary[name] = row
    results["summary"] = summary
    results_file.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({name: {k: v for k, v in row.items() if k in PAIRS} for name, row in summary.items()}))


def dropped_words(texts: list[str], share: float, seed: int = 0) -> list[str]:
    """Each text with `share` of its words dropped at random (at least one), the rest in order."""
    generator = np.random.default_rng(seed)
    out = []
    for text in texts:
        words = text.split()
        keep = generator.random(len(words)) >= share
        if keep.all():
            keep[generator.integers(len(words))] = False
        out.append(" ".join(word for word, kept in zip(words, keep) if kept))
    return out


def with_dropped(reading: static.Reading, teacher, share: float, device: str) -> static.Reading:
    """`reading` with each of its texts again, `share` of its words dropped, and the teacher's pass over those."""
    from sembed_cli.training import static_teacher

    assert reading.passed is not None
    more = dropped_words(reading.texts, share)
    passed = reading.passed.then(static_teacher.corpus_pass(teacher, more, device))
    return dataclasses.replace(reading, texts=reading.texts + more, passed=passed)


def corpus_file(path: Path, scratch: Path) -> Path:
    if path.suffix != ".xz":
        return path
    plain = scratch / path.stem
    with lzma.open(path) as packed, open(plain, "wb") as out:
        shutil.copyfileobj(packed, out)
    return plain


def limited(path: Path, limit: int | None, scratch: Path) -> Path:
    """The first `limit` records of `path` (a dry run), or `path`."""
    if not limit:
        return path
    short = scratch / "short.jsonl"
    with open(path, "rb") as f, open(short, "wb") as out:
        for n, line in enumerate(f):
            if n >= limit:
                break
            out.write(line)
    return short


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, required=True)
    parser.add_argument("--save-today", metavar="MODEL_DIR")
    parser.add_argument("--today", type=Path)
    parser.add_argument("--report", type=Path, metavar="OUT", help="the paired comparisons of a run's results")
    parser.add_argument("--results", type=Path, help="with --report: where the full results go")
    parser.add_argument("--model")
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--budget", type=float, default=1e9, help="seconds: start no fit that would end after it")
    parser.add_argument("--limit", type=int, help="a dry run: the corpus's first N records, 100k read as N/10")
    parser.add_argument(
        "--variants", nargs="+", choices=VARIANTS, default=FIRST, help="which to fit (control always, first)"
    )
    args = parser.parse_args()
    args.variants = ["control", *(name for name in args.variants if name != "control")]
    pairs = read_pairs(args.pairs)
    if args.save_today:
        save_today(args.save_today, pairs, args.pairs / "today.npz")
        return
    if args.report:
        report(args.report, pairs, dict(np.load(args.today)), args.results)
        return
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {args.device}",
        "today_stsb": TODAY_STSB,
        "variants": {name: dataclasses.asdict(VARIANTS[name]) for name in args.variants},
        "readings": {},
        "runs": {},
    }

    runs: dict = {}  # name/seed: its run
    sims: dict[str, np.ndarray] = {}  # name/seed/data set: each pair's similarity

    def publish() -> None:
        results["runs"], results["seconds"] = runs, round(time.perf_counter() - started, 1)
        (args.out / "static_quality.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        np.savez(args.out / "static_quality.sims.npz", **sims)

    from sentence_transformers import SentenceTransformer

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        corpus = limited(corpus_file(args.corpus, scratch), args.limit, scratch)
        teacher = SentenceTransformer(args.model, device=args.device)
        # fp16 on a GPU (1.5x the sentences/s of fp32 there, vectors within 1e-3 of it); every variant, the control
        # too, reads the same teacher, so the paired differences compare the text and the loss alone
        teacher = teacher.half() if args.device.startswith("cuda") else teacher.float()
        results["teacher_dtype"] = str(next(teacher.parameters()).dtype)
        if args.device.startswith("cuda"):
            import torch

            results["machine"] += f" ({torch.cuda.get_device_name()})"
        readings = {}  # (texts, words, dropped): the teacher's reading, its pass over the texts kept for the others
        needed = dict.fromkeys(
            (VARIANTS[name].texts, VARIANTS[name].words, VARIANTS[name].dropped) for name in args.variants
        )
        for texts, words, dropped in sorted(needed, key=lambda key: key[2] > 0):  # a reading before its dropped words'
            options = TEXTS[texts]
            if args.limit and texts == "100k":
                options = {"teacher_sentences": args.limit // 10}
            settings = method.Settings(
                model=args.model,
                fit="teacher",
                fit_vectors=True,
                words=words,
                teacher_cache=str(scratch / f"pass-{texts}.npz"),
                **options,
            )
            tick = time.perf_counter()
            reading = readings.get((texts, words, 0.0)) or static.read_teacher(
                teacher, "teacher", TrainingInput(RecordSource(str(corpus))), settings, "text", args.device
            )
            if dropped:
                reading = with_dropped(reading, teacher, dropped, args.device)
            readings[texts, words, dropped] = reading
            read = time.perf_counter()
            reading.ids  # noqa: B018 (tokenised once, for every fit)
            results["readings"][f"{texts}/{words}" + (f"/dropped{dropped}" if dropped else "")] = {
                "texts": len(reading.texts),
                "words_added": len(reading.added.words) if reading.added else 0,
                "teacher_seconds": round(read - tick, 1),
                "tokenise_seconds": round(time.perf_counter() - read, 1),
            }
            publish()
        job = Job(RecordSource(str(corpus)), scratch / "unused", method.RECIPE, None, 42, args.device, False, True)
        last: dict[str, float] = {}
        distilled_by_fit: dict = {}  # (variant at power 1, seed): its distillation

        def fit(name: str, seed: int) -> dict | None:
            variant = VARIANTS[name]
            texts = variant.texts
            reading = readings[texts, variant.words, variant.dropped]
            if time.perf_counter() - started + 1.2 * last.get(name, 0) > args.budget:
                results.setdefault("skipped", []).append(f"{name}/{seed}")
                return None
            tick = time.perf_counter()
            settings = method.Settings(
                model=args.model,
                fit="teacher",
                fit_vectors=True,
                fit_loss=variant.fit_loss,
                dim=variant.dim,
                words=variant.words,
                **TEXTS[texts],
            )
            recipe = dataclasses.replace(
                method.RECIPE, epochs=variant.epochs, lr=variant.lr, batch_size=variant.batch_size
            )
            fitted = dataclasses.replace(variant, norm_power=1.0), seed  # the fit a --norm-power variant evens out
            if fitted not in distilled_by_fit:
                distilled_by_fit[fitted] = static.distil(
                    reading,
                    settings,
                    dataclasses.replace(job, seed=seed, recipe=recipe),
                    nws.RECIPE,
                    nws.Settings(),
                )
            distilled = distilled_by_fit[fitted]
            matrix = static.raised_norms(distilled.matrix.astype(np.float32), variant.norm_power)
            model = StaticModel(reading.tokenizer, matrix)
            pair_sims = similarities(model, pairs)
            run = {"seconds": round(time.perf_counter() - tick, 1), **scores(pair_sims, pairs)}
            run["kept_epoch"] = distilled.parts["fit"]["kept_epoch"]
            run["history"] = distilled.parts["fit"]["history"]
            last[name] = run["seconds"]
            runs[f"{name}/{seed}"] = run
            sims.update({f"{name}/{seed}/{data}": sim for data, sim in pair_sims.items()})
            print(f"{name}/{seed}: {json.dumps({k: run[k] for k in PAIRS})} in {run['seconds']} s", flush=True)
            publish()
            return {"matrix": matrix, "dev": run["stsb-dev"]["spearman"]}

        fit("control", SEEDS[0])
        candidates = {name: fit(name, SEEDS[0]) for name in args.variants if name != "control"}
        chosen = max((n for n in candidates if candidates[n]), key=lambda n: candidates[n]["dev"], default=None)
        results["chosen_by_stsb_dev"] = chosen
        if chosen:
            np.save(args.out / f"{chosen}.42.fp16.npy", candidates[chosen]["matrix"].astype(np.float16))
            best = VARIANTS[chosen]
            readings[best.texts, best.words, best.dropped].tokenizer.save(str(args.out / "tokenizer.json"))
            for seed in SEEDS[1:]:
                fit(chosen, seed)
        for seed in SEEDS[1:]:
            fit("control", seed)
        for name in candidates:
            if name != chosen:
                for seed in SEEDS[1:]:
                    fit(name, seed)
        publish()


if __name__ == "__main__":
    main()
