"""Quality and speed of `sembed gensets` (syntax-distillation paper, section 3.1) on sentences no model has seen.

Sentences: 500 (--n) drawn by --seed from the masked-LM's held-out share of
the prose corpora (abc, state_union, inaugural as `sembed convert --from
prose` gives them), by the rule the model's sembed.json records (`held_out`),
6 to 30 words each; a masked-LM without such a record gets Penn Treebank
sentences (`convert --from conll`), which no training here uses. Each set is
made as the CLI makes it (spaCy tagger, the masked-LM on the CPU, --threads
torch threads), and measured:

- tag agreement: of the words a variant changed, the share whose spaCy tag
  in the finished variant (the whole sentence tagged again, after the words
  to its right changed too) equals the original word's tag (target > 0.9);
  and the share of variants whose whole tag sequence equals the original's;
- the share of variants differing from the original in at least one word;
- words substituted per variant, and the share of replaceable words substituted;
- sets per second (model loading excluded, reported apart).

    python bench/gensets_quality.py [--mlm DIR] [--n 500] [--threads 2] [--precision auto|fp32|bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, ROOT, log, save

from sembed_cli.models.masked_lm import MaskedLM
from sembed_cli.models.precision import PRECISIONS, resolve
from sembed_cli.text import spacy_pipeline
from sembed_cli.text.structural_sets import SetGenerator, Tagger, default_mlm, replaceable

PROSE = [("--doc-break", "blank", "abc"), ("state_union",), ("inaugural",)]
MIN_WORDS, MAX_WORDS = 6, 30


def converted(*args: str) -> list[dict]:
    run = subprocess.run(
        [sys.executable, "-m", "sembed_cli", "convert", "-q", *args], capture_output=True, check=True, cwd=ROOT
    )
    return [json.loads(line) for line in run.stdout.splitlines()]


def held_out_sentences(share: float) -> list[str]:
    """The prose sentences the masked-LM's training left out, by its own rule."""
    from sembed_cli.training.mlm_adaptation import held_out

    texts = []
    for *options, folder in PROSE:
        texts += [r["text"] for r in converted("--from", "prose", *options, str(DATA / "corpora" / folder))]
    return [t for t in dict.fromkeys(texts) if held_out(t, share)]


def treebank_sentences() -> list[str]:
    return [r["text"] for r in converted("--from", "conll", str(DATA / "treebank" / "dependency_treebank"))]


def pick_sentences(mlm: Path, n: int, seed: int) -> tuple[list[str], str]:
    try:
        held = json.loads((mlm / "sembed.json").read_text())["held_out"]
        share = float(held["share"])
    except (OSError, ValueError, KeyError, TypeError):
        share = 0.0
    if share > 0:
        texts, source = held_out_sentences(share), f"corpora abc, state_union, inaugural: held-out share {share}"
    else:
        texts, source = treebank_sentences(), "Penn Treebank sample (dependency_treebank)"
    fitting = [t for t in texts if MIN_WORDS <= len(t.split()) <= MAX_WORDS]
    log(f"{len(texts)} candidate sentences ({source}), {len(fitting)} of {MIN_WORDS}-{MAX_WORDS} words")
    return random.Random(seed).sample(fitting, min(n, len(fitting))), source


def measure(records: list[dict], tagger: Tagger) -> dict:
    """Tag agreement, change and substitution figures over the finished sets."""
    changed = agreeing = variants = differing = same_sequence = replaceable_words = 0
    finished = [(words, sentence_spaces(r)) for r in records for words in r["words"][1:]]
    tags = iter(tagger.tag(finished))
    for record in records:
        original, pos = record["words"][0], record["pos"]
        slots = sum(replaceable(w) for w in original)
        for words in record["words"][1:]:
            final = next(tags)
            swapped = [i for i, (a, b) in enumerate(zip(original, words)) if a != b]
            variants += 1
            differing += bool(swapped)
            changed += len(swapped)
            agreeing += sum(final[i] == pos[i] for i in swapped)
            same_sequence += final == pos
            replaceable_words += slots
    return {
        "variants": variants,
        "substituted_words": changed,
        "tag_agreement": round(agreeing / max(changed, 1), 4),
        "variants_with_the_original_tag_sequence": round(same_sequence / max(variants, 1), 4),
        "share_of_variants_differing": round(differing / max(variants, 1), 4),
        "words_substituted_per_variant": round(changed / max(variants, 1), 3),
        "share_of_replaceable_words_substituted": round(changed / max(replaceable_words, 1), 4),
    }


def sentence_spaces(record: dict) -> list[bool]:
    """The spaces after each word, read off the original sentence (the variants share them)."""
    text, spaces, at = record["sentences"][0], [], 0
    for word in record["words"][0]:
        at = text.find(word, at) + len(word)
        spaces.append(at < len(text) and text[at] == " ")
    return spaces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlm", type=Path, default=Path(os.environ.get("SEMBED_MLM") or default_mlm()))
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--k", type=int, default=6)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--precision", default="auto", choices=PRECISIONS)
    parser.add_argument("--name", default="gensets_quality", help="Results file name (bench/results/NAME.json).")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    texts, source = pick_sentences(args.mlm, args.n, args.seed)
    start = time.perf_counter()
    nlp = spacy_pipeline.load(spacy_pipeline.DEFAULT_MODEL, ("tagger",))
    precision = resolve(args.precision, "cpu", cpu_bf16=True)
    mlm = MaskedLM.load(args.mlm, "cpu", precision)
    load_s = time.perf_counter() - start
    tagger = Tagger(nlp)
    load_before = os.getloadavg()[0]  # other jobs on the machine slow the wall-clock figures down
    log(
        f"{len(texts)} sentences; masked-LM {args.mlm} in {precision}; {torch.get_num_threads()} torch threads; "
        f"load {load_s:.1f}s; load average {load_before:.2f}"
    )

    generator = SetGenerator(
        mlm, tagger, nlp.tokenizer, k=args.k, top=args.top, seed=args.seed, batch_size=args.batch_size
    )
    records = [{"id": n, "text": t} for n, t in enumerate(texts)]
    for record in records:
        generator.check(record)
    wall, cpu = time.perf_counter(), time.process_time()
    out = []
    for record in generator.generate(records):
        out.append(record)
        if len(out) % (args.batch_size * 4) == 0:
            log(f"{len(out)} sets, {len(out) / (time.perf_counter() - wall):.2f} sets/s")
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    figures = measure(out, tagger)
    try:
        model_info = json.loads((args.mlm / "sembed.json").read_text())
        model_info = {k: model_info.get(k) for k in ("method", "stage", "base_model", "seed") if k in model_info}
    except (OSError, ValueError):
        model_info = {}
    result = {
        "mlm": str(args.mlm),
        "mlm_metadata": model_info,
        "sentences_from": source,
        "sets": len(out),
        "words_per_sentence": round(sum(len(r["words"][0]) for r in out) / max(len(out), 1), 1),
        "k": args.k,
        "top": args.top,
        "seed": args.seed,
        "batch_size": args.batch_size,
        "device": "cpu",
        "precision": precision,
        "torch_threads": torch.get_num_threads(),
        "tagger_context_tokens": tagger.context,
        **figures,
        "target_tag_agreement": 0.9,
        "sets_per_s": round(len(out) / wall, 3),
        "cpu_s_per_set": round(cpu / max(len(out), 1), 3),
        "wall_s": round(wall, 1),
        "model_load_s": round(load_s, 2),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "examples": [r["sentences"] for r in out[:3]],
    }
    for key in (
        "tag_agreement",
        "variants_with_the_original_tag_sequence",
        "share_of_variants_differing",
        "words_substituted_per_variant",
        "share_of_replaceable_words_substituted",
        "sets_per_s",
    ):
        log(f"{key:42s} {result[key]}")
    log(f"wrote {save(args.name, result)}")


if __name__ == "__main__":
    main()
