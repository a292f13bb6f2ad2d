"""Throughput of `sembed parse` against spaCy's `nlp.pipe` in the same run.

Both parse the 2758 STS-B test sentences with the same pipeline and the same
disabled components. sembed's figure includes reading the JSONL input and
writing the JSONL output (tokens and triples); spaCy's is `nlp.pipe` alone.
Model loading is excluded from both and reported separately; the best of
--repeats interleaved runs counts. Target (issue 2): ratio >= 0.85.

    python bench/parse_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import ROOT, log, save, stsb_test_sentences, write_jsonl

from sembed_cli.io import RecordSink, RecordSource, TextFields
from sembed_cli.text import spacy_pipeline
from sembed_cli.text.dependency import parse_records


def time_spacy(nlp, texts: list[str]) -> float:
    start = time.perf_counter()
    for _ in nlp.pipe(texts, batch_size=spacy_pipeline.BATCH):
        pass
    return time.perf_counter() - start


def time_sembed(nlp, src: Path, dst: Path) -> float:
    start = time.perf_counter()
    fields = TextFields()
    source = RecordSource(str(src))
    with RecordSink(str(dst), flush_every=1000) as sink:
        sink.write_all(parse_records(source.checked(fields.of), nlp, fields))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    texts = stsb_test_sentences()
    words = sum(len(t.split()) for t in texts)
    start = time.perf_counter()
    nlp = spacy_pipeline.load(spacy_pipeline.DEFAULT_MODEL, spacy_pipeline.PARSE)
    load_s = time.perf_counter() - start
    log(f"{len(texts)} sentences, {words} words; pipes: {nlp.pipe_names}; load {load_s:.2f}s")

    with tempfile.TemporaryDirectory() as tmp:
        src = write_jsonl(Path(tmp) / "in.jsonl", texts)
        dst = Path(tmp) / "out.jsonl"
        time_spacy(nlp, texts[:200])  # warm-up
        spacy_s, sembed_s = [], []
        for _ in range(args.repeats):
            spacy_s.append(time_spacy(nlp, texts))
            sembed_s.append(time_sembed(nlp, src, dst))
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "sembed_cli", "parse", "-q", str(src), "-o", str(dst)], check=True, cwd=ROOT
        )
        cli_s = time.perf_counter() - start
        out_mb = dst.stat().st_size / 1e6

    spacy_rate, sembed_rate = len(texts) / min(spacy_s), len(texts) / min(sembed_s)
    result = {
        "sentences": len(texts),
        "words": words,
        "pipes": nlp.pipe_names,
        "spacy_nlp_pipe_sentences_per_s": round(spacy_rate, 1),
        "sembed_parse_sentences_per_s": round(sembed_rate, 1),
        "ratio": round(sembed_rate / spacy_rate, 3),
        "target_ratio": 0.85,
        "spacy_words_per_s": round(words / min(spacy_s), 0),
        "model_load_s": round(load_s, 2),
        "cli_wall_s_including_startup_and_load": round(cli_s, 2),
        "output_mb": round(out_mb, 2),
        "runs_s": {"spacy": [round(s, 3) for s in spacy_s], "sembed": [round(s, 3) for s in sembed_s]},
    }
    log(f"spaCy nlp.pipe     {spacy_rate:8.1f} sentences/s")
    log(f"sembed parse       {sembed_rate:8.1f} sentences/s (JSONL in and out)")
    log(f"ratio              {result['ratio']:8.3f} (target >= 0.85)")
    log(f"CLI end to end     {cli_s:8.2f} s including start-up and model load")
    log(f"written {save('parse_speed', result)}")


if __name__ == "__main__":
    main()
