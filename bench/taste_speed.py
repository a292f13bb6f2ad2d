"""Throughput of `sembed taste` (all masked copies of a batch of names in one pass) against one masked copy at a time.

Both taste the same names (test-split names of `sembed convert --from
gazetteer`, POI and non-POI) with the same character BERT on the CPU: a model
`sembed train --method poi|mlm` wrote (--model), or else an untrained one of
the default shape (4 layers x 128; speed does not depend on training). The
batched figure is `taste_records` over JSONL records (reading and writing
included); the reference calls the model once per masked copy (the paper's
"each time we masked one character then put into the BERT"). Both must give
the same hits in fp32. `sembed taste` runs at --precision auto, bf16 on a CPU
that does bf16 natively: that run is timed too, with the share of names whose
hits equal fp32's. Target (issue 7): batched >= 5x faster.

    python bench/taste_speed.py [--model DIR] [--names 1000] [--threads 1] [--name taste_speed]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from common import log, save

from sembed_cli.indexes.taste_vote import taste_records
from sembed_cli.io import RecordSink, RecordSource, TextFields
from sembed_cli.models.taste import Taster
from sembed_cli.readers import FORMATS, ReadSettings


def test_names(n: int) -> list[str]:
    names = [r["text"] for r in FORMATS["gazetteer"].read([], ReadSettings()) if r["split"] == "test"]
    step = max(1, len(names) // n)
    return names[::step][:n]


def untrained_model(names: list[str]):
    import torch
    from transformers import BertForMaskedLM

    from sembed_cli.text import char_tokenizer
    from sembed_cli.training.methods import mlm
    from sembed_cli.training.mlm_from_scratch import CharBertShape

    torch.manual_seed(0)
    tokenizer = char_tokenizer.build(names)
    return BertForMaskedLM(CharBertShape.of(mlm.Settings()).config(tokenizer)).eval(), tokenizer


def batched_run(taster: Taster, names: list[str], batch_size: int) -> tuple[float, list[tuple[int, int]]]:
    """Seconds for `sembed taste` over the names as JSONL records (reading and writing included), and its hits."""
    import orjson

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.jsonl", Path(tmp) / "out.jsonl"
        src.write_bytes(b"".join(orjson.dumps({"text": n}) + b"\n" for n in names))
        taster.taste(names[:50])  # warm-up
        start = time.perf_counter()
        with RecordSink(str(dst), flush_every=batch_size) as sink:
            fields = TextFields()
            sink.write_all(taste_records(RecordSource(str(src)).checked(fields.of), taster, fields, batch_size, 0.5))
        seconds = time.perf_counter() - start
        return seconds, [(r["taste_hits"], r["taste_length"]) for r in map(orjson.loads, dst.read_bytes().splitlines())]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--names", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256, help="records per taste batch (the command's default)")
    parser.add_argument("--name", default="taste_speed", help="results file bench/results/NAME.json")
    args = parser.parse_args()

    import torch

    from sembed_cli.models.precision import cast, resolve

    torch.set_num_threads(args.threads)
    names = test_names(args.names)
    auto = resolve("auto", "cpu", cpu_bf16=True)

    def model_in(precision: str):
        if args.model:
            from sembed_cli.models.masked_lm import load_masked_lm

            return load_masked_lm(args.model, "cpu", precision)
        model, tokenizer = untrained_model(names)
        return cast(model, precision), tokenizer

    exact = Taster(*model_in("fp32"))
    copies = sum(len(exact.tokenizer(n)["input_ids"]) - 2 for n in names)
    log(
        f"{len(names)} names, {copies} masked copies, {torch.get_num_threads()} threads, auto precision {auto}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    start = time.perf_counter()
    single = [(t.hits, t.length) for t in (exact.taste_one_copy_at_a_time(n) for n in names)]
    single_s = time.perf_counter() - start
    batched = {}
    for precision in dict.fromkeys(["fp32", auto]):
        seconds, hits = batched_run(
            exact if precision == "fp32" else Taster(*model_in(precision)), names, args.batch_size
        )
        same = sum(a == b for a, b in zip(hits, single)) / len(names)
        if precision == "fp32":
            assert same == 1.0, "batched and one-at-a-time tastes differ"
        batched[precision] = {
            "names_per_s": round(len(names) / seconds, 1),
            "seconds": round(seconds, 2),
            "speedup": round(single_s / seconds, 2),
            "same_hits_as_fp32": round(same, 4),
        }
        log(
            f"sembed taste (batched, {precision})  {batched[precision]['names_per_s']:8.1f} names/s ({seconds:.2f}s), "
            f"{batched[precision]['speedup']:.2f}x; same hits as fp32 for {100 * same:.1f}% of names"
        )
    log(f"one masked copy a time (fp32)  {len(names) / single_s:8.1f} names/s ({single_s:.2f}s)")
    result = {
        "names": len(names),
        "masked_copies": copies,
        "model": args.model or "untrained character BERT (4 x 128)",
        "device": "cpu",
        "torch_threads": torch.get_num_threads(),
        "batch_size_records": args.batch_size,
        "auto_precision": auto,
        "one_copy_at_a_time_names_per_s": round(len(names) / single_s, 1),
        "one_copy_at_a_time_s": round(single_s, 2),
        "batched": batched,
        "speedup": batched[auto]["speedup"],
        "target_speedup": 5.0,
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    log(f"speed-up at the default precision ({auto}): {result['speedup']:.2f}x (target >= 5)")
    log(f"written {save(args.name, result)}")


if __name__ == "__main__":
    main()
