"""sembed embed: sentence vectors, CF-BERT's eq. 1 combination, --npy, and bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import orjson
import pytest
from conftest import TINY_DIM, jsonl, sembed

from sembed_cli.io import TextFields
from sembed_cli.models import sentence_models
from sembed_cli.models.embed_stream import embed_records
from sembed_cli.models.embedder import Embedder
from sembed_cli.models.model_identity import Identity
from sembed_cli.models.sentence_embedding import NpyMatrix, encode


@pytest.fixture(scope="module")
def tiny(tiny_model):
    return sentence_models.load(tiny_model, "cpu")


def alone(model, text: str) -> np.ndarray:
    """A text's vector encoded on its own, the reference every batched result must match."""
    return encode(model, [text])[0]


def close(a, b, tol: float = 1e-5) -> bool:
    return np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).max() <= tol


SENTENCES = [
    "A man is playing a guitar.",
    "Dogs",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    "A woman is slicing an onion.",
    "Two dogs are running through a field.",
    "Hello",
]


# --- the pure function -------------------------------------------------------------------------------


class CountingModel:
    """Deterministic fake encoder: records every encode call; a text's vector depends on the text only."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def encode(self, texts, batch_size=32, **kwargs):
        self.calls.append(list(texts))
        return np.array([[len(t), sum(map(ord, t)) % 97, t.count(" ")] for t in texts], dtype=np.float32)


COUNTING = Identity("counting", "0" * 12)  # the fake model's identity


def test_one_encode_call_per_window_order_kept_and_repeats_encoded_once():
    model = CountingModel()
    records = [{"id": n, "text": SENTENCES[n % len(SENTENCES)]} for n in range(10)]
    out = list(embed_records(iter(records), Embedder(model, COUNTING), TextFields(), batch_size=4))
    assert [r["id"] for r in out] == list(range(10))
    # distinct texts of each window: 1, 2, 1 records (growing to the first 4, issue 41.5), then 4, 2
    assert [len(c) for c in model.calls] == [1, 2, 1, 4, 2]
    for record in out:
        assert record["embedding"].dtype == np.float32
        assert close(record["embedding"], CountingModel().encode([record["text"]])[0], 0)


def test_cf_parts_are_encoded_in_the_same_call_and_combined():
    model = CountingModel()
    records = [{"text_a": "A man attacks a woman", "s_cf_a": "man attacks woman", "text_b": "x y", "s_cf_b": "x"}]
    [out] = embed_records(records, Embedder(model, COUNTING, cf_weight=0.5), TextFields(), keep_parts=True)
    assert model.calls == [["A man attacks a woman", "x y", "man attacks woman", "x"]]
    for side in "ab":
        assert close(out[f"embedding_{side}"], out[f"embedding_basic_{side}"] + 0.5 * out[f"embedding_cf_{side}"], 0)


def test_vector_file_rows_in_output_order(tmp_path):
    model = CountingModel()
    records = [{"text": "a b", "s_cf": "b"}, {"text_a": "c", "text_b": "d e f", "s_cf_a": "c", "s_cf_b": "d f"}]
    with NpyMatrix(tmp_path / "v.npy") as vectors:
        embedder = Embedder(model, COUNTING, cf_weight=1.0)
        out = list(embed_records(records, embedder, TextFields(), keep_parts=True, vectors=vectors))
    assert [sorted(k for k in r if k.endswith("_row") or "_row_" in k) for r in out] == [
        ["embedding_basic_row", "embedding_cf_row", "embedding_row"],
        [
            "embedding_basic_row_a",
            "embedding_basic_row_b",
            "embedding_cf_row_a",
            "embedding_cf_row_b",
            "embedding_row_a",
            "embedding_row_b",
        ],
    ]
    assert (out[0]["embedding_row"], out[0]["embedding_basic_row"], out[0]["embedding_cf_row"]) == (0, 1, 2)
    assert (out[1]["embedding_row_a"], out[1]["embedding_row_b"], out[1]["embedding_cf_row_b"]) == (3, 6, 8)
    matrix = np.load(tmp_path / "v.npy")
    assert matrix.shape == (9, 3) and matrix.dtype == np.float32
    assert close(matrix[out[1]["embedding_basic_row_b"]], model.encode(["d e f"])[0], 0)
    assert not any(embed_key in r for r in out for embed_key in ("embedding", "embedding_a"))


@pytest.mark.parametrize("rows, dim", [(0, 0), (1, 384), (12345, 7)])
def test_vector_file_loads_with_numpy(tmp_path, rows, dim):
    data = np.arange(rows * dim, dtype=np.float32).reshape(rows, dim)
    with NpyMatrix(tmp_path / "m.npy") as vectors:
        for start in range(0, rows, 1000):
            assert vectors.append(data[start : start + 1000]) == start
    assert np.array_equal(np.load(tmp_path / "m.npy"), data)
    assert np.load(tmp_path / "m.npy", mmap_mode="r").shape == (rows, dim)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npy", "m.npy.json"]


def test_vector_file_left_out_after_an_internal_error(tmp_path):
    with pytest.raises(ZeroDivisionError), NpyMatrix(tmp_path / "m.npy") as vectors:
        vectors.append(np.ones((2, 3), dtype=np.float32))
        raise ZeroDivisionError("an internal error")
    assert list(tmp_path.iterdir()) == []


# --- the command on a tiny model ---------------------------------------------------------------------


def test_vectors_match_each_text_encoded_alone_in_input_order(tiny_model, tiny):
    records = [{"id": n, "text": text} for n, text in enumerate(SENTENCES * 2)]
    run = sembed("embed", "-m", tiny_model, "-b", "4", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    out = run.records
    assert [r["id"] for r in out] == list(range(len(records)))
    for record in out:
        assert list(record)[:2] == ["id", "text"] and len(record["embedding"]) == TINY_DIM
        assert close(record["embedding"], alone(tiny, record["text"]))


def test_cf_combination_is_exact(tiny_model, tiny):
    """CF-BERT eq. 1: embedding = basic + W * cf, and the parts are the texts' own vectors."""
    records = [
        {"text": "A man attacks a woman", "s_cf": "man attacks woman"},
        {"text_a": "An Asian woman in a crowd is not carrying a black bag", "text_b": "A man attacks a woman"},
    ]
    run = sembed("embed", "-m", tiny_model, "--cf-weight", "0.3", "--keep-parts", input=jsonl(*records))
    assert run.exit_code == 0, run.stderr
    one, pair = run.records
    assert pair["s_cf_a"] == "woman not carrying bag" and pair["s_cf_b"] == "man attacks woman"  # built by spo
    for record, suffix in ((one, ""), (pair, "_a"), (pair, "_b")):
        basic, cf = np.array(record["embedding_basic" + suffix]), np.array(record["embedding_cf" + suffix])
        assert close(record["embedding" + suffix], basic + 0.3 * cf, 1e-6)
        assert close(basic, alone(tiny, record["text" + suffix]))
        assert close(cf, alone(tiny, record["s_cf" + suffix]))
    plain = sembed("embed", "-m", tiny_model, input=jsonl(*records)).records
    assert close(plain[0]["embedding"], one["embedding_basic"]) and "s_cf_a" not in plain[1]


def test_keep_parts_alone_means_w_zero_and_zero_weight_skips_s_cf(tiny_model):
    records = [{"text": "A man attacks a woman", "s_cf": "man attacks woman"}]
    [kept] = sembed("embed", "-m", tiny_model, "--keep-parts", input=jsonl(*records)).records
    assert kept["embedding"] == kept["embedding_basic"] and kept["embedding_cf"] != kept["embedding_basic"]
    [zero] = sembed("embed", "-m", tiny_model, "--cf-weight", "0", input=jsonl({"text": records[0]["text"]})).records
    assert list(zero) == ["text", "embedding", "embedding_model"]


def test_a_cf_model_applies_its_saved_weight(tiny_model, tmp_path):
    cf_model = tmp_path / "cf-model"
    shutil.copytree(tiny_model, cf_model)
    (cf_model / "sembed.json").write_text(json.dumps({"method": "cf", "cf_weight": 0.5}))
    records = jsonl({"text": "A man attacks a woman", "s_cf": "man attacks woman"})
    run = sembed("embed", "-m", str(cf_model), "--keep-parts", input=records)
    assert run.exit_code == 0 and "using the W_cf = 0.5 saved with the model" in run.stderr
    [out] = run.records
    assert close(out["embedding"], np.array(out["embedding_basic"]) + 0.5 * np.array(out["embedding_cf"]), 1e-6)
    [override] = sembed("embed", "-m", str(cf_model), "--cf-weight", "0", input=records).records
    assert close(override["embedding"], out["embedding_basic"])
    (cf_model / "sembed.json").write_text(json.dumps({"method": "cf", "cf_weight": "heavy"}))
    run = sembed("embed", "-m", str(cf_model), input=records)
    assert run.exit_code == 1 and "cf_weight must be a number, got 'heavy'" in run.stderr


def test_pairs_and_text_key(tiny_model, tiny):
    pair = {"text_a": "A dog runs.", "text_b": "A cat sleeps.", "score": 1.0}
    run = sembed("embed", "-m", tiny_model, input=jsonl(pair))
    [pair] = run.records
    assert list(pair) == ["text_a", "text_b", "score", "embedding_a", "embedding_b", "embedding_model"]
    assert close(pair["embedding_b"], alone(tiny, "A cat sleeps."))
    run = sembed(
        "embed",
        "-m",
        tiny_model,
        "-k",
        "question",
        "-k",
        "answer",
        input=jsonl({"question": "Who ate the cake?", "answer": "The dog.", "text": "ignored"}),
    )
    [qa] = run.records
    assert list(qa) == ["question", "answer", "text", "embedding_question", "embedding_answer", "embedding_model"]
    assert close(qa["embedding_answer"], alone(tiny, "The dog."))


def test_npy_output_refuses_to_overwrite_without_force(tiny_model, tmp_path):
    records = jsonl(*({"id": n, "text": text} for n, text in enumerate(SENTENCES)))
    npy = tmp_path / "vectors.npy"
    inline = sembed("embed", "-m", tiny_model, input=records).records
    run = sembed("embed", "-m", tiny_model, "-b", "4", "--npy", str(npy), input=records)
    assert run.exit_code == 0, run.stderr
    assert [list(r) for r in run.records] == [["id", "text", "embedding_row", "embedding_model"]] * len(SENTENCES)
    matrix = np.load(npy)
    assert matrix.shape == (len(SENTENCES), TINY_DIM)
    for record, expected in zip(run.records, inline):
        assert close(matrix[record["embedding_row"]], expected["embedding"], 1e-6)
    assert f"wrote {len(SENTENCES)} vectors of {TINY_DIM} dimensions to {npy}" in run.stderr

    again = sembed("embed", "-m", tiny_model, "--npy", str(npy), input=jsonl({"text": "other"}))
    assert again.exit_code == 1 and again.stdout == ""
    assert again.stderr.strip() == (
        f"error: {npy} already exists (hint: pass --force to replace it, or choose another --npy)"
    )
    assert np.load(npy).shape == (len(SENTENCES), TINY_DIM)
    forced = sembed("embed", "-m", tiny_model, "--npy", str(npy), "--force", input=jsonl({"text": "other"}))
    assert forced.exit_code == 0 and np.load(npy).shape == (1, TINY_DIM)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors.npy", "vectors.npy.json"]


def test_npy_keeps_the_rows_of_records_written_before_a_bad_one(tiny_model, tmp_path):
    npy = tmp_path / "v.npy"
    run = sembed(
        "embed",
        "-m",
        tiny_model,
        "-b",
        "1",
        "--npy",
        str(npy),
        input=jsonl({"text": "one"}, {"text": "two"}, {"id": 3}),
    )
    assert run.exit_code == 1 and [r["embedding_row"] for r in run.records] == [0, 1]
    assert np.load(npy).shape == (2, TINY_DIM)


# --- bad input ---------------------------------------------------------------------------------------

MISSING = "missing key 'text' (or 'text_a'/'text_b'; --text-key names another)"


@pytest.mark.parametrize(
    "record, options, message",
    [
        ({"id": 2}, [], MISSING),
        ({"text": 7}, [], "'text' must be a string, got a number"),
        ({"text": "  "}, [], "empty text in 'text'"),
        ({"text_a": "A dog.", "text_b": None}, [], "'text_b' must be a string, got null"),
        ({"text_a": "A man attacks a woman"}, ["-k", "text"], "missing key 'text'"),
        ({"text": "A man attacks a woman", "s_cf": 3}, ["--cf-weight", "0.2"], "'s_cf' must be a string, got a number"),
        (
            {"text_a": "A dog.", "text_b": "x", "s_cf_b": ["x"]},
            ["--keep-parts"],
            "'s_cf_b' must be a string, got an array",
        ),
        ({"text": "A man attacks a woman", "s_cf": ""}, ["--cf-weight", "0.2"], "empty text in 's_cf'"),
        ({"text": "A dog.", "tokens": "x"}, ["--cf-weight", "0.2"], "'tokens' must be a list of tokens, got a string"),
    ],
)
def test_bad_record_stops_after_earlier_records(tiny_model, record, options, message):
    run = sembed("embed", "-m", tiny_model, "-b", "1", *options, input=jsonl({"text": "A good one.", "id": 1}, record))
    assert run.exit_code == 1
    assert [r.get("id") for r in run.records] == [1]
    assert run.stderr.strip() == f"error: <stdin>:2: {message}"


def test_s_cf_is_only_checked_when_used(tiny_model):
    run = sembed("embed", "-m", tiny_model, input=jsonl({"text": "A dog.", "s_cf": 3}))
    assert run.exit_code == 0 and run.records[0]["s_cf"] == 3


def test_skip_errors_and_invalid_json(tiny_model):
    lines = jsonl({"text": "one"}) + "{oops\n\n" + jsonl({"text": ""}, {"text": "two"})
    run = sembed("embed", "-m", tiny_model, "--skip-errors", input=lines)
    assert run.exit_code == 0 and [r["text"] for r in run.records] == ["one", "two"]
    assert "skipped 2 bad record(s) in <stdin>: line 2, 4" in run.stderr
    run = sembed("embed", "-m", tiny_model, input=lines)
    assert run.exit_code == 1 and run.stderr.startswith("error: <stdin>:2: invalid JSON")


def test_file_input_and_output(tiny_model, tmp_path):
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(jsonl({"text": "A dog."}))
    run = sembed("embed", "-m", tiny_model, str(src), "-o", str(dst))
    assert run.exit_code == 0 and run.stdout == ""
    assert len(orjson.loads(dst.read_bytes())["embedding"]) == TINY_DIM


@pytest.mark.parametrize(
    "options, code, message",
    [
        (
            ["--precision", "fp16", "--device", "cpu"],
            1,
            "error: --precision fp16 needs CUDA; on the CPU this command runs in fp32 "
            "(hint: use --precision auto or fp32)",
        ),
        (["--cf-weight", "nan"], 2, "Invalid value for '--cf-weight': must be a finite number"),
        (["--precision", "int3"], 2, "Invalid value for '--precision'"),
        (["-m", "/no/such/model"], 1, "error: no sentence-transformers model at '/no/such/model'"),
    ],
)
def test_usage_and_model_errors(tiny_model, options, code, message):
    run = sembed("embed", "-m", tiny_model, *options, input=jsonl({"text": "A dog."}))
    assert run.exit_code == code and run.stdout == ""
    assert message in " ".join(run.stderr.split())


@pytest.mark.parametrize(
    "options, message",
    [
        (
            ["--salience", "/nonexistent", "--sif-component", "batch"],  # wrote model embeddings and exit 0 before
            "Invalid value for '--salience': only for --method avg|isf|sif|nws",
        ),
        (["--sif-component", "batch"], "Invalid value for '--sif-component': only for --method avg|isf|sif|nws"),
        (["--vectors", "glove-6b-50d"], "Invalid value for '--vectors': only for --method avg|isf|sif|nws"),
        (["--method", "avg", "-m", "x"], "Invalid value for '--model': only for --method model or with --words"),
        (
            ["--method", "avg", "--device", "cpu"],
            "Invalid value for '--device': only for --method model or with --words",
        ),
        (
            ["--method", "avg", "--precision", "fp32"],
            "Invalid value for '--precision': only for --method model or with --words",
        ),
        (["--method", "avg", "--keep-parts"], "Invalid value for '--keep-parts': only for --method model"),
        (["--method", "nws", "--syntax-map", "x"], "Invalid value for '--syntax-map': only with --words"),
        (["--syntax-map", "x"], "Invalid value for '--syntax-map': only with --words"),
        (
            ["--words", "--salience", "x"],
            "Invalid value for '--salience': not with --words (word vectors come from the encoder, in fp32)",
        ),
        (
            ["--words", "--long-text", "window"],
            "Invalid value for '--long-text': not with --words (a long text is always encoded in windows there)",
        ),
        (
            ["--words", "--precision", "fp16"],
            "Invalid value for '--precision': not with --words (word vectors come from the encoder, in fp32)",
        ),
    ],
)
def test_an_option_of_another_mode_is_a_usage_error(options, message):
    run = sembed("embed", *options, input=jsonl({"text": "A dog."}))
    assert run.exit_code == 2 and run.stdout == ""
    assert message in " ".join(run.stderr.split())


def test_every_embed_option_belongs_to_the_common_ones_or_a_mode():
    import typer

    from sembed_cli.commands import embed_options as embed
    from sembed_cli.main import app

    command = typer.main.get_command(app).commands["embed"]
    names = {p.name for p in command.params} - {"help"}
    assert names == embed.COMMON | embed.MODEL.options | embed.WORD_VECTORS.options | embed.WORDS.options
    assert not embed.COMMON & (embed.MODEL.options | embed.WORD_VECTORS.options | embed.WORDS.options)


def test_an_option_of_another_mode_from_the_environment_is_left_be(tiny_model, monkeypatch):
    monkeypatch.setenv("SEMBED_VECTORS", "glove-6b-50d")  # set for the word-vector methods; the model mode ignores it
    [out] = sembed("embed", "-m", tiny_model, input=jsonl({"text": "A dog."})).records
    assert len(out["embedding"]) == TINY_DIM


def test_model_from_the_environment(tiny_model, monkeypatch):
    monkeypatch.setenv("SEMBED_MODEL", tiny_model)
    [out] = sembed("embed", input=jsonl({"text": "A dog."})).records
    assert len(out["embedding"]) == TINY_DIM


# --- the packaged model ------------------------------------------------------------------------------


@pytest.mark.e2e
def test_default_model_similar_sentences_are_closer():
    run = sembed(
        "embed",
        input=jsonl(
            {"text": "A man is playing a guitar."},
            {"text": "A person plays the guitar."},
            {"text": "The stock market fell sharply today."},
        ),
    )
    assert run.exit_code == 0, run.stderr
    guitar, plays, stocks = (np.array(r["embedding"]) for r in run.records)
    assert guitar.shape == (384,)
    cosine = lambda u, v: float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))  # noqa: E731
    assert cosine(guitar, plays) > 0.7 > 0.2 > cosine(guitar, stocks)
    assert abs(np.linalg.norm(guitar) - 1) < 1e-5  # the model's own Normalize module is kept


def test_embed_modes_run_as_library_functions_without_the_cli(tiny_model, tmp_path):
    """models.embed_stream: the functions `sembed embed` calls, one per mode, with their typed settings."""
    from sembed_cli.io import StreamOptions, TextFields
    from sembed_cli.models.embed_stream import (
        SentenceVectorSettings,
        WordVectorSettings,
        embed_sentences,
        embed_with_word_vectors,
    )
    from sembed_cli.models.embedder import encode_batch_for

    assert encode_batch_for("cpu", None) == 32 and encode_batch_for("cuda:0", None) == 128
    assert encode_batch_for("cpu", 7) == 7
    source = tmp_path / "in.jsonl"
    source.write_text(jsonl({"text": "A dog."}, {"text": "A cat."}))
    out = tmp_path / "model.jsonl"
    count = embed_sentences(
        StreamOptions(str(source), str(out)), TextFields(None), SentenceVectorSettings(tiny_model, device="cpu")
    )
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert count == 2 and all(len(r["embedding"]) == TINY_DIM for r in records)
    assert records == sembed("embed", "-m", tiny_model, "--device", "cpu", str(source)).records
    out = tmp_path / "avg.jsonl"
    assert (
        embed_with_word_vectors(StreamOptions(str(source), str(out)), TextFields(None), WordVectorSettings("avg")) == 2
    )
    assert all(len(json.loads(line)["embedding"]) == 50 for line in out.read_text().splitlines())
