"""Speed of a `train --method mlm` step (adapting an encoder) in fp32 and bf16, against transformers' own step.

All three run the same batches (BERT's whole-word masking of corpus
sentences, `MaskedSentences`, batch 32) from the same weights, each a full
training step (forward, backward, gradient clipping, AdamW):

- reference: `BertForMaskedLM(input_ids, attention_mask, labels)`, transformers'
  masked-LM loss, vocabulary logits at every position, fp32;
- sembed fp32: `masked_positions_loss`, the logits at the masked pieces only;
- sembed bf16: the same under bf16 autocast (`--precision bf16`; weights and
  optimiser in fp32), what `--precision auto` runs on a CPU with AVX512-BF16.

Reported: seconds a step (median of the timed steps), speed-ups over the
reference, and each variant's mean loss over the timed steps (the three should
agree: same batches, same start; bf16 within rounding).

    python bench/mlm_train_speed.py [--model all-MiniLM-L6-v2] [--records FILE] [--steps 20] [--threads 2]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from pathlib import Path

from common import corpora_records, log, save

BATCH = 32
WARMUP = 3
SENTENCES = 20_000  # the first training sentences of the corpora, shuffled into batches


def training_batches(tokenizer, records: Path, steps: int, seed: int) -> list[dict]:
    """`steps` + WARMUP batches of BATCH training sentences (held-out ones left out), masked as train masks them."""
    import orjson

    from sembed_cli.training.methods.mlm import Settings
    from sembed_cli.training.mlm_adaptation import MaskedSentences, WordMasking, held_out

    texts = []
    with open(records, "rb") as f:
        for line in f:
            text = orjson.loads(line).get("text")
            if isinstance(text, str) and text.strip() and not held_out(text, Settings.holdout):
                texts.append(text)
            if len(texts) == SENTENCES:
                break
    pieces = [p for p in tokenizer(texts, truncation=True, max_length=128)["input_ids"] if len(p) > 2]
    batches = MaskedSentences(tokenizer, pieces, WordMasking(), BATCH, seed).epoch(0)
    return [next(batches) for _ in range(steps + WARMUP)]


def reference_loss(model, batch: dict):
    loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"]).loss
    return loss, {"mlm": loss.item()}


def time_steps(model, loss, batches: list[dict], precision: str) -> tuple[list[float], list[float]]:
    """Seconds and loss of each step after the warm-up ones: a step as run_loop takes it."""
    import torch

    from sembed_cli.models.precision import autocast

    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    model.train()
    seconds, losses = [], []
    for i, batch in enumerate(batches):
        started = time.perf_counter()
        with autocast(precision, "cpu"):
            value, _ = loss(model, batch)
        value.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if i >= WARMUP:
            seconds.append(time.perf_counter() - started)
            losses.append(value.item())
    return seconds, losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="the encoder (or masked-LM) to adapt")
    parser.add_argument("--records", type=Path, help="the corpora as records (default: converted here)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="mlm_train_speed", help="results file bench/results/NAME.json")
    args = parser.parse_args()

    import torch

    from sembed_cli.models.precision import native_bf16
    from sembed_cli.training.mlm_adaptation import masked_positions_loss, start_model

    torch.set_num_threads(args.threads)
    start, tokenizer, _, _ = start_model(args.model, args.seed, dropout=0.0)
    with corpora_records(args.records) as records:
        batches = training_batches(tokenizer, records, args.steps, args.seed)
    variants = {
        "reference (transformers, fp32)": (reference_loss, "fp32"),
        "sembed fp32": (masked_positions_loss, "fp32"),
        "sembed bf16": (masked_positions_loss, "bf16"),
    }
    figures = {}
    for name, (loss, precision) in variants.items():
        seconds, losses = time_steps(copy.deepcopy(start), loss, batches, precision)
        figures[name] = {
            "seconds_a_step": round(statistics.median(seconds), 3),
            "mean_loss": round(statistics.fmean(losses), 4),
        }
        log(f"{name:32s} {figures[name]['seconds_a_step']:.3f} s a step, mean loss {figures[name]['mean_loss']:.4f}")
    reference = figures["reference (transformers, fp32)"]["seconds_a_step"]
    for name in figures:
        figures[name]["speedup"] = round(reference / figures[name]["seconds_a_step"], 2)
    result = {
        "model": args.model,
        "batch_size": BATCH,
        "timed_steps": args.steps,
        "warmup_steps": WARMUP,
        "torch_threads": torch.get_num_threads(),
        "native_bf16": native_bf16(),
        "variants": figures,
        "bf16_over_fp32": round(figures["sembed fp32"]["seconds_a_step"] / figures["sembed bf16"]["seconds_a_step"], 2),
    }
    log(
        f"bf16 {result['bf16_over_fp32']}x sembed fp32; sembed fp32 {figures['sembed fp32']['speedup']}x, "
        f"bf16 {figures['sembed bf16']['speedup']}x transformers' step"
    )
    log(f"written {save(args.name, result)}")


if __name__ == "__main__":
    main()
