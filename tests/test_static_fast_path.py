"""The static model's fast path (issue 40): a window's sums a piece position at a time, windows read and encoded in a
thread ahead of the writing. Neither may change a byte of what `embed` writes: the vectors are the sums a text at a
time gave, the records come out in input order, and an error comes after the records before it."""

from __future__ import annotations

import csv
import threading
import time

import numpy as np
import orjson
import pytest
from conftest import DATA, jsonl, sembed
from test_static import CORPUS, TEXTS

from sembed_cli.errors import SembedError
from sembed_cli.io.json_codec import dumps
from sembed_cli.io.vector_json import PROCESS_ROWS, VectorJson, rows_json
from sembed_cli.models import embed_stream, static_model
from sembed_cli.models.embed_stream import read_ahead

MORE = [
    "Ünïcödé café naïve — 東京 and emoji 🙂",
    "the the the the the",  # a piece repeated: added again where it stands
    "A man is playing a guitar.",  # a repeat of TEXTS[0]: encoded once, written twice
    "x " * 300,
]


@pytest.fixture(scope="module")
def static_dir(tiny_model, tmp_path_factory):
    """The tiny model distilled (16 dimensions; MiniLM's word-piece vocabulary, so real tokenisation)."""
    out = tmp_path_factory.mktemp("static-fast") / "model"
    run = sembed(
        "train", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu", "-o", str(out), "-q",
        input=jsonl(*({"text": text} for text in CORPUS)),
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    return out


def sample_texts(count: int = 1200) -> list[str]:
    """Real sentences (STS-B test, where the shared data is) and the edge cases, `count` in all."""
    texts = [*TEXTS, *MORE, *CORPUS]
    stsb = DATA / "stsb" / "sts-test.csv"
    if stsb.exists():
        with open(stsb, encoding="utf-8") as f:
            for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                texts += row[5:7]
    return (texts * (count // len(texts) + 1))[:count]


def one_at_a_time(model: static_model.StaticModel, ids: list[list[int]]) -> np.ndarray:
    """The sums as embed made them before the fast path: numpy's sum of each text's rows, in float32."""
    vectors = np.zeros((len(ids), model.matrix.shape[1]), dtype=np.float32)
    for n, pieces in enumerate(ids):
        if pieces:
            vectors[n] = model.matrix[pieces].sum(axis=0)
    vectors /= np.maximum(np.asarray([len(p) for p in ids], dtype=np.float32), 1)[:, None]
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


def test_a_windows_sums_are_the_bits_a_text_at_a_time_gives(static_dir):
    model = static_model.load(static_dir)
    texts = sample_texts()
    ids = model.token_ids(texts)
    assert len(ids) >= static_model.BY_POSITION and max(map(len, ids)) > static_model.POSITIONS
    assert model.embed_ids(ids).tobytes() == one_at_a_time(model, ids).tobytes()  # a position at a time
    small = ids[: static_model.BY_POSITION - 1]
    assert model.embed_ids(small).tobytes() == one_at_a_time(model, small).tobytes()  # a text at a time
    assert not model.embed_ids([[]]).any()  # no piece: the zero vector, as StaticEmbedding gives it
    (x,) = model.token_ids(["x"])
    model.matrix[x[0], :4] = -0.0  # numpy's sum starts at 0.0: -0.0 alone sums to 0.0, and JSON writes "0.0"
    ids = [x] * static_model.BY_POSITION
    vectors = model.embed_ids(ids)
    assert not np.signbit(vectors[:, :4]).any() and vectors.tobytes() == one_at_a_time(model, ids).tobytes()


ODD_IDS = [7, 10**30, -2.5e-7, None, [1, "a", {"b": True}], "s", 0.1]  # past 64 bits, floats, null, nested


def records_of(texts: list[str]) -> str:
    """Records as a real input has them: ids of several types, other fields, a pair record now and then."""
    records: list[dict] = []
    for n, text in enumerate(texts):
        if n % 7 == 3:
            records.append({"id": n, "text_a": text, "text_b": texts[n - 1], "score": 1.5})
        else:
            records.append({"id": ODD_IDS[n % len(ODD_IDS)], "text": text, "meta": {"n": n, "big": -(10**25)}})
    return b"".join(map(dumps, records)).decode()  # sembed's own writer: integers past 64 bits digit for digit


@pytest.mark.subprocess  # with four threads, the vectors' JSON is written by a worker process
@pytest.mark.parametrize("npy", [False, True])
def test_threads_write_the_same_bytes_as_one(static_dir, tmp_path, monkeypatch, npy):
    data = records_of(sample_texts())
    threaded, by_workers, workers = [], [], []

    def counted(items, *args):
        threaded.append(1)
        return read_ahead(items, *args)

    real_written = VectorJson.written

    def written(self, window):
        rows = real_written(self, window)
        by_workers.extend(isinstance(values, list) for values in rows.values())
        return rows

    real_init = VectorJson.__init__

    def started(self, processes):
        workers.append(processes)
        real_init(self, processes)

    monkeypatch.setattr(embed_stream, "read_ahead", counted)
    monkeypatch.setattr(VectorJson, "written", written)
    monkeypatch.setattr(VectorJson, "__init__", started)
    written = {}
    for threads in ("1", "2", "4"):
        extra = ["--npy", str(tmp_path / f"v{threads}.npy")] if npy else []
        run = sembed(
            "embed", "-q", "-m", str(static_dir), "--threads", threads, "--batch-size", "300", *extra, input=data
        )
        assert run.exit_code == 0, run.stderr
        written[threads] = run.stdout
        if npy:
            written[threads + ".npy"] = (tmp_path / f"v{threads}.npy").read_bytes()
    assert written["1"] == written["2"] == written["4"]
    assert threaded == [1, 1]  # only with two threads or more
    assert workers == ([] if npy else [1])  # a worker from four threads, for JSON text
    assert '"id":1' + "0" * 30 in written["1"] and '"big":-10000000000000000000000000' in written["1"]
    if npy:
        assert written["1.npy"] == written["2.npy"] == written["4.npy"]
        assert written["1"].count("embedding_row") > 1000
        assert not by_workers  # rows in a matrix: no JSON text to write
    else:  # the first windows (1, 2, 4 ... records) are written in place, the larger ones by a worker
        assert by_workers[0] is False and by_workers[-1] is True


def test_a_workers_row_is_the_text_written_in_place():
    rows = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    rows[0, :3] = [-0.0, 1e-45, 3.4e38]  # signed zero, the least subnormal, near float32's largest
    (texts,) = rows_json({"embedding": rows}).values()
    for row, text in zip(rows, texts):
        record = {"id": 1, "embedding": row, "embedding_model": "m"}
        assert dumps(dict(record, embedding=orjson.Fragment(text))) == dumps(record)


@pytest.mark.subprocess  # a worker process
def test_a_worker_that_dies_is_a_one_line_error():
    import os
    import signal

    rows = np.zeros((PROCESS_ROWS, 4), dtype=np.float32)
    with VectorJson(1) as workers:
        ((_, _, first),) = workers.ahead([([], [], {"embedding": rows})])
        assert len(workers.written(first)["embedding"]) == PROCESS_ROWS
        for pid in list(workers.pool._processes):
            os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        with pytest.raises(SembedError, match="ended unexpectedly"):
            for _, _, window in workers.ahead([([], [], {"embedding": rows})]):
                workers.written(window)


def test_one_thread_starts_no_worker(static_dir, monkeypatch):
    def refused(*_):
        raise AssertionError("a worker process with one thread")

    monkeypatch.setattr(VectorJson, "__init__", refused)
    run = sembed("embed", "-q", "-m", str(static_dir), "--threads", "1", input=records_of(sample_texts(600)))
    assert run.exit_code == 0, run.stderr
    assert len(run.records) == 600


@pytest.mark.subprocess  # with four threads, a worker process
@pytest.mark.parametrize("skip", [False, True])
def test_a_bad_record_comes_out_after_the_records_before_it_whatever_the_threads(static_dir, skip):
    texts = sample_texts(900)
    lines = records_of(texts).splitlines(keepends=True)
    lines[700] = '{"id": "bad", "text": 5}\n'
    data = "".join(lines)
    runs = [
        sembed("embed", "-m", str(static_dir), "--threads", t, "--batch-size", "300", *(["--skip-errors"] * skip),
               input=data)
        for t in ("1", "2", "4")
    ]  # fmt: skip
    assert [run.exit_code for run in runs] == ([0, 0, 0] if skip else [1, 1, 1])
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout
    assert runs[0].stderr == runs[1].stderr == runs[2].stderr
    assert "line 701" in runs[0].stderr or ":701:" in runs[0].stderr
    assert len(runs[0].records) == (899 if skip else 700)


def test_read_ahead_keeps_the_order_and_raises_after_the_items_before(monkeypatch):
    def items():
        yield from range(5)
        raise ValueError("the sixth")

    seen = []
    with pytest.raises(ValueError, match="the sixth"):
        for item in read_ahead(items()):
            seen.append(item)
    assert seen == [0, 1, 2, 3, 4]


def test_read_ahead_stops_soon_after_the_caller_does():
    made = []

    def items():
        for n in range(1000):
            made.append(n)
            yield n

    ahead = read_ahead(items(), depth=2)
    assert next(ahead) == 0
    ahead.close()  # a closed pipe, an error, an interrupt
    time.sleep(0.5)
    assert len(made) <= 5
    assert not any(t.name == "sembed-read-ahead" and t.is_alive() for t in threading.enumerate())


def test_plain_ascii_texts_get_the_same_ids_from_the_lowercasing_copy(static_dir):
    import random

    model = static_model.load(static_dir)
    assert model.ascii_tokenizer is not None  # MiniLM's BertNormalizer lowercases
    rng = random.Random(1)
    alphabet = [chr(c) for c in range(128) if not static_model.DROPPED_BY_CLEAN_TEXT.match(chr(c))]
    texts = [t for t in sample_texts() if t.isascii()]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(3000)]
    texts += ["Tab\tand\nnew\r\nlines", "U.S.A. e-mail don't $3.50 [CLS] #x @y ~/a|b ^_^ `q`", " ", ""]
    assert static_model.plain_ascii(texts)

    def ids(tokenizer, batch):
        return [encoding.ids for encoding in tokenizer.encode_batch_fast(batch, add_special_tokens=False)]

    assert ids(model.ascii_tokenizer, texts) == ids(model.tokenizer, texts) == model.token_ids(texts)
    for control in ("ab\x01cd", "ab\x0bcd", "ab\x7fcd"):  # clean_text drops these: not plain, the full tokenizer
        assert not static_model.plain_ascii([*texts, control])
        assert ids(model.ascii_tokenizer, [control]) != ids(model.tokenizer, [control]) == model.token_ids([control])
    assert not static_model.plain_ascii(["café"])
