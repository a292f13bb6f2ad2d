"""Masked-word recovery of a masked-LM `sembed train --method mlm` adapted, on held-out sentences of the corpora.

The held-out sentences are the records of the shared corpora (converted as
examples/build_mlm.sh does, or read from --records) that the model's own
sembed.json says it never trained on (its `held_out` share and rule). From
--sentences of them (a seeded sample) one content word each is masked and the
model ranks the vocabulary at that position; a hit at k when the true word is
among the k best word pieces. Reported: top-1 and top-10 recovery, overall,
by corpus and by part of speech, with the model's training time and steps.
The same ranks are also taken among the entries `gensets` draws its
candidates from (whole Latin words of two letters or more, no function words:
`models/masked_lm.MaskedLM`), which leaves out the punctuation, pronouns and
word pieces a small model still puts among its ten best for a content word:
`candidates_top1` and `candidates_top10`, the recovery `gensets` sees.

A content word: spaCy's tag (the packaged English pipeline, in context) is
NOUN, PROPN, VERB, ADJ or ADV, the word is alphabetic, not on spaCy's English
stop list, stands alone (no letter or digit touches it, so it is one word for
BERT's tokenizer too) and is a single word piece of the model's vocabulary
(its lower-cased form for an uncased one): one [MASK] replaces it. Words of
several pieces are left out: `gensets` asks for whole-word predictions at one
[MASK], which such words can never be, and one [MASK] per piece would tell
the model the word's length. Sentences over 128 word pieces are left out.

    python bench/mlm_recovery.py --model DIR [--records FILE] [--sentences 2000] [--seed 42] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from common import corpora_records, log, save

CONTENT_POS = ("NOUN", "PROPN", "VERB", "ADJ", "ADV")
MAX_PIECES = 128


@dataclass(frozen=True)
class MaskedWord:
    text: str  # the sentence with [MASK] in the word's place
    word: str
    target: int  # the word's one word piece
    pos: str
    corpus: str


def held_out_sentences(records: Path, share: float, text_key: str) -> list[tuple[str, str]]:
    """(corpus, text) of the held-out records, in file order; the corpus is the first part of doc_id."""
    import orjson

    from sembed_cli.training.mlm_adaptation import held_out

    found = []
    with open(records, "rb") as f:
        for line in f:
            record = orjson.loads(line)
            text = record.get(text_key)
            if isinstance(text, str) and text.strip() and held_out(text, share):
                found.append((str(record.get("doc_id", "?")).split("/")[0], text))
    return found


def masked_words(sentences: list[tuple[str, str]], tokenizer, count: int, seed: int) -> list[MaskedWord]:
    """One content word masked in each of `count` sentences drawn at random (fewer where a sentence has none)."""
    from sembed_cli.text import spacy_pipeline

    nlp = spacy_pipeline.load(keep=spacy_pipeline.TAG)
    rng = random.Random(seed)
    order = rng.sample(range(len(sentences)), len(sentences))
    lower = tokenizer.tokenize("A") == tokenizer.tokenize("a")  # an uncased vocabulary
    items: list[MaskedWord] = []
    for start in range(0, len(order), 500):
        chosen = [sentences[i] for i in order[start : start + 500]]
        for (corpus, text), doc in zip(chosen, nlp.pipe([t for _, t in chosen], batch_size=256)):
            if len(tokenizer.tokenize(text)) > MAX_PIECES - 2:
                continue
            candidates = []
            for token in doc:
                if token.pos_ not in CONTENT_POS or not token.is_alpha or token.is_stop:
                    continue
                begin, end = token.idx, token.idx + len(token.text)
                if re.match(r"\w", text[begin - 1 : begin]) or re.match(r"\w", text[end : end + 1]):
                    continue  # part of a longer word for BERT's tokenizer
                pieces = tokenizer.tokenize(token.text.lower() if lower else token.text)
                if len(pieces) == 1 and pieces[0] != tokenizer.unk_token:
                    candidates.append((token, tokenizer.convert_tokens_to_ids(pieces[0])))
            if candidates:
                token, target = rng.choice(candidates)
                masked = text[: token.idx] + tokenizer.mask_token + text[token.idx + len(token.text) :]
                items.append(MaskedWord(masked, token.text, target, token.pos_, corpus))
            if len(items) == count:
                return items
    return items


def top_ranks(
    model, tokenizer, items: list[MaskedWord], k: int = 10, batch_size: int = 64
) -> tuple[list[list[int]], list[list[int]]]:
    """The k best word pieces at each item's [MASK], best first (the logits computed at the [MASK] only): over the
    whole vocabulary, and among the entries gensets may substitute."""
    import torch

    from sembed_cli.models.masked_lm import MaskedLM

    blocked = MaskedLM(model, tokenizer).blocked
    tops, candidates = [], []
    with torch.inference_mode():
        for start in range(0, len(items), batch_size):
            batch = tokenizer(
                [item.text for item in items[start : start + batch_size]], padding=True, return_tensors="pt"
            )
            hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
            where = batch["input_ids"] == tokenizer.mask_token_id
            assert int(where.sum()) == len(batch["input_ids"]), "one [MASK] a sentence"
            logits = model.cls(hidden[where])
            tops += logits.topk(k, dim=-1).indices.tolist()
            candidates += logits.masked_fill(blocked, float("-inf")).topk(k, dim=-1).indices.tolist()
    return tops, candidates


def recovery(items: list[MaskedWord], tops: list[list[int]], by=None) -> dict:
    """top-1 and top-10 recovery (%), n; per value of by(item) when given."""
    groups = defaultdict(list)
    for item, top in zip(items, tops):
        groups[by(item) if by else "all"].append((item.target == top[0], item.target in top[:10]))
    report = {
        name: {
            "n": len(hits),
            "top1": round(100 * sum(h[0] for h in hits) / len(hits), 1),
            "top10": round(100 * sum(h[1] for h in hits) / len(hits), 1),
        }
        for name, hits in groups.items()
    }
    return report if by else report["all"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a masked-LM directory `sembed train --method mlm` wrote")
    parser.add_argument("--records", type=Path, help="the corpora as records (default: converted here)")
    parser.add_argument("--sentences", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="mlm_recovery", help="results file bench/results/NAME.json")
    args = parser.parse_args()

    import torch

    from sembed_cli.models.masked_lm import load_masked_lm

    torch.set_num_threads(args.threads)
    meta = json.loads((Path(args.model) / "sembed.json").read_text())
    held = meta.get("held_out")
    if not held:
        raise SystemExit(f"{args.model}: its sembed.json names no held-out share (not an adapted masked-LM?)")
    model, tokenizer = load_masked_lm(args.model)
    with corpora_records(args.records) as records:
        sentences = held_out_sentences(records, held["share"], held["text_key"])
    log(f"{len(sentences)} held-out sentences (share {held['share']})")
    items = masked_words(sentences, tokenizer, args.sentences, args.seed)
    started = time.perf_counter()
    tops, candidate_tops = top_ranks(model, tokenizer, items)
    seconds = time.perf_counter() - started
    overall = recovery(items, tops)
    among = recovery(items, candidate_tops)
    training = meta.get("training", {})
    settings = meta.get("settings", {})
    result = {
        "model": args.model,
        "base_model": meta.get("base_model"),
        "held_out_sentences": len(sentences),
        "masked_words": overall["n"],
        "top1": overall["top1"],
        "top10": overall["top10"],
        "target_top10": 40.0,
        "candidates_top1": among["top1"],
        "candidates_top10": among["top10"],
        "by_corpus": recovery(items, tops, lambda i: i.corpus),
        "by_pos": recovery(items, tops, lambda i: i.pos),
        "training_seconds": training.get("seconds"),
        "training_steps": training.get("steps"),
        "training_sentences_seen": training.get("sentences_seen"),
        "training_records": meta.get("data", {}).get("training_records"),
        "settings": {
            k: settings.get(k)
            for k in (
                "batch_size",
                "learning_rate",
                "head_lr_scale",
                "warmup_ratio",
                "max_steps",
                "epochs",
                "masked_share",
                "max_length",
            )
        },
        "seed": args.seed,
        "eval_seconds": round(seconds, 1),
        "torch_threads": torch.get_num_threads(),
        "examples": [
            {"text": i.text, "word": i.word, "top10": tokenizer.convert_ids_to_tokens(t)}
            for i, t in list(zip(items, tops))[:5]
        ],
    }
    log(
        f"{overall['n']} masked content words: top-1 {overall['top1']}%, top-10 {overall['top10']}% "
        f"(target top-10 > 40%); among gensets' candidates top-1 {among['top1']}%, top-10 {among['top10']}%; "
        f"trained {training.get('steps')} steps in {training.get('seconds')} s"
    )
    for corpus, figures in sorted(result["by_corpus"].items()):
        log(f"  {corpus:14s} n {figures['n']:5d}  top-1 {figures['top1']:5.1f}  top-10 {figures['top10']:5.1f}")
    log(f"written {save(args.name, result)}")


if __name__ == "__main__":
    main()
