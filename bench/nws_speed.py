"""Speed of `sembed train --method nws`: one epoch over all the shared corpora (issue 5: under 3 minutes).

The corpora are converted as examples/nws_reproduction.sh does (or read from --corpus, a JSONL of doc_id,
text records), then one NWS epoch is trained in-process on the CPU with the packaged GloVe 6B 50-d
(and, with --spacy, with en_core_web_md's 300-d vectors). Reported: the time to read and tokenise the
corpus, the epoch's seconds and sentences (and tokens) per second, with --threads torch threads.

    python bench/nws_speed.py [--corpus FILE] [--threads 1] [--spacy]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from common import convert_corpora, log, save

from sembed_cli.io import RecordSource
from sembed_cli.models import word_vectors
from sembed_cli.training.job import Job
from sembed_cli.training.methods import nws
from sembed_cli.training.nws import train_nws


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--spacy", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    result = {"threads": args.threads, "device": "cpu", "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = args.corpus
        if corpus is None:
            corpus = Path(tmp) / "corpora.jsonl"
            result["convert_seconds"] = round(convert_corpora(corpus), 1)
            log(f"converted the corpora in {result['convert_seconds']} s")
        for spec in ["glove-6b-50d"] + (["spacy:en_core_web_md"] if args.spacy else []):
            tick = time.perf_counter()
            vectors = word_vectors.load(spec)
            load_seconds = time.perf_counter() - tick
            job = Job(
                RecordSource(str(corpus)),
                Path(tmp) / f"table-{len(result['runs'])}",
                dataclasses.replace(nws.RECIPE, epochs=1),
                None,
                42,
                "cpu",
                resume=False,
                force=False,
            )
            table = train_nws(job, nws.Settings(), vectors)
            epoch = table.metadata["history"][0]
            run = {
                "vectors": spec,
                "dim": vectors.dim,
                "sentences": table.sentences,
                "tokens": table.tokens,
                "vectors_load_seconds": round(load_seconds, 1),
                "epoch_seconds": epoch["seconds"],
                "sentences_per_second": epoch["sentences_per_second"],
                "tokens_per_second": round(table.tokens / epoch["seconds"]),
                "total_seconds_with_reading": table.metadata["seconds"],
                "under_3_minutes": table.metadata["seconds"] < 180,
            }
            log(str(run))
            result["runs"].append(run)
    log(f"wrote {save('nws_speed', result)}")


if __name__ == "__main__":
    main()
