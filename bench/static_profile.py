"""Where the time of `sembed embed -m STATIC` goes: each stage of the record path, timed alone (issue 40).

The stages a record passes, in the order the command runs them, each timed on
its own over the same real records (the first --records of the shared
12-word windows, runs/real/windows.jsonl, else STS-B train sentences), in
windows of 1000 as the command makes them, one thread (SEMBED_THREADS,
RAYON_NUM_THREADS and OMP_NUM_THREADS 1), CPU microseconds per record, best
of --repeats:

  read lines        the input's lines as text (io.lines.text_lines)
  parse JSON        json_codec.loads
  check record      embed's per-record check (text fields, vectors of another model, --long-text)
  window and jobs   the window's (record, text field) jobs, repeats found, long texts counted
  tokenize          the tokenizer's batch encoding (Rust), ids as Python lists; plain ASCII windows by the
                    lowercasing copy (static_model.ascii_tokenizer), and by the full normaliser as before
  sum pieces        the mean of each text's rows and unit length: a piece position at a time (now), a numpy
                    sum a text at a time (before)
  stamp             each record's embedding_model, its vector stored in it
  JSON line         the record as a JSON line, 256 float32 values (JSONL) or a row number (--npy, with the
                    matrix's rows copied out); with 4+ threads the JSONL line splits in two: the rows' JSON
                    text, which a worker process writes (io.vector_json.rows_json), and the line around it,
                    which the writer makes with the text as an orjson.Fragment

What runs without the GIL (the tokenizer; numpy's gathers and sums; the file writes)
can overlap the rest in a second thread; the rest is Python and holds it.

    python bench/static_profile.py --static DIR [--records 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson
from common import ROOT, log, save
from embed_speed import stsb_train_sentences

from sembed_cli.io import TextFields, text_jobs
from sembed_cli.io.json_codec import dumps, loads
from sembed_cli.io.lines import text_lines
from sembed_cli.io.rejects import Rejects
from sembed_cli.io.vector_json import rows_json
from sembed_cli.models import model_identity
from sembed_cli.models.embed_stream import check_record
from sembed_cli.models.embedder import Embedder
from sembed_cli.models.sentence_embedding import NpyMatrix
from sembed_cli.models.static_model import StaticModel

WINDOWS = ROOT / "runs" / "real" / "windows.jsonl"
WINDOW = 1000


def best(repeats: int, run) -> float:
    """The least CPU seconds of `repeats` calls of `run`."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def one_at_a_time(model: StaticModel, ids: list[list[int]]):
    """The sums as embed made them before (issue 40): numpy's sum of a text's rows, a text at a time."""
    import numpy as np

    vectors = np.zeros((len(ids), model.matrix.shape[1]), dtype=np.float32)
    for n, pieces in enumerate(ids):
        if pieces:
            vectors[n] = model.matrix[pieces].sum(axis=0)
    vectors /= np.maximum(np.fromiter(map(len, ids), dtype=np.float32, count=len(ids)), 1)[:, None]
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", type=Path, required=True, help="the static model (sembed train --method static)")
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name in ("SEMBED_THREADS", "RAYON_NUM_THREADS", "OMP_NUM_THREADS"):  # before the first tokenizer call
        os.environ[name] = "1"

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        source = tmp / "in.jsonl"
        if WINDOWS.exists():
            with open(WINDOWS, "rb") as f:
                source.write_bytes(b"".join(line for _, line in zip(range(args.records), f)))
            data = str(WINDOWS.relative_to(ROOT))
        else:
            from common import write_jsonl

            write_jsonl(source, stsb_train_sentences()[: args.records])
            data = "STS-B train sentences"
        embedder = Embedder.open(str(args.static))
        model = embedder.encoder
        assert isinstance(model, StaticModel)
        fields = TextFields()
        stamp = model_identity.Stamp(embedder.identity)
        check = check_record(fields, False, stamp, embedder)

        lines = [text for _, text in text_lines(str(source), Rejects(str(source), False))]
        n = len(lines)
        records = [loads(text) for text in lines]
        windows = [records[start : start + WINDOW] for start in range(0, n, WINDOW)]
        texts = [[record["text"] for record in window] for window in windows]
        ids = [model.token_ids(window) for window in texts]
        vectors = [model.embed_ids(window) for window in ids]
        stamped = [
            dict(record, embedding=row, embedding_model=stamp.text)
            for record, row in zip(records, vectors_rows(vectors))
        ]
        numbered = [dict(record, embedding_row=k, embedding_model=stamp.text) for k, record in enumerate(records)]

        def jobs() -> None:
            for window in windows:
                jobs = text_jobs(window, fields)
                texts = [record[key] for record, key in jobs]
                unique = list(dict.fromkeys(texts))
                embedder.long_texts.lengths(unique)

        def stamp_all() -> None:
            for window, rows in zip(windows, vectors):
                for k, record in enumerate(window):
                    record["embedding"] = rows[k]
                for _ in stamp.label(window):
                    pass

        rows_text = [text for rows in vectors for text in rows_json({"embedding": rows})["embedding"]]

        def fragment_lines() -> None:
            for record, text in zip(stamped, rows_text):
                dumps(dict(record, embedding=orjson.Fragment(text)))

        def npy_lines() -> None:
            with NpyMatrix(tmp / "v.npy", force=True) as matrix:
                for rows in vectors:
                    matrix.append(rows)
            for record in numbered:
                dumps(record)

        stages = {
            "read lines": lambda: sum(1 for _ in text_lines(str(source), Rejects(str(source), False))),
            "parse JSON": lambda: [loads(text) for text in lines],
            "check record": lambda: [check(record) for record in records],
            "window and jobs": jobs,
            "tokenize": lambda: [model.token_ids(window) for window in texts],
            "tokenize (BertNormalizer on ASCII too, before)": lambda: [full_ids(model, window) for window in texts],
            "sum pieces (a position at a time)": lambda: [model.embed_ids(window) for window in ids],
            "sum pieces (a text at a time, before)": lambda: [one_at_a_time(model, window) for window in ids],
            "stamp": stamp_all,
            "JSON line, 256 floats (JSONL)": lambda: [dumps(record) for record in stamped],
            "rows' JSON text (a worker's part, 4+ threads)": lambda: [rows_json({"embedding": v}) for v in vectors],
            "JSON line around a worker's text (the writer's part)": fragment_lines,
            "JSON line, row number (--npy)": npy_lines,
        }
        figures = {}
        for name, run in stages.items():
            figures[name] = round(best(args.repeats, run) / n * 1e6, 2)
            log(f"{name:53s} {figures[name]:6.2f} us a record")
    result = {
        "static_model": str(args.static),
        "records": n,
        "data": data,
        "threads": 1,
        "unit": "CPU microseconds a record, best of repeats",
        "repeats": args.repeats,
        "stages": figures,
    }
    log(f"written {save('static_profile', result)}")


def full_ids(model: StaticModel, texts: list[str]) -> list[list[int]]:
    """The ids as embed got them before the ASCII copy (static_model.ascii_tokenizer): the full normaliser."""
    return [encoding.ids for encoding in model.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def vectors_rows(vectors):
    for matrix in vectors:
        yield from matrix


if __name__ == "__main__":
    sys.exit(main())
