"""Static fast mode: `train --method static` (training/static.py) and `embed -m DIR` on its output
(models/static_model.py): numpy and tokenizers only, the vectors sentence-transformers' StaticEmbedding gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, ROOT, api_gives_what_embed_writes, jsonl, sembed
from test_onnx import IMPORTS_PROBE

from sembed_cli.models import sentence_models, static_model
from sembed_cli.training import static as static_trainer
from sembed_cli.training import static_teacher

TEXTS = [
    "A man is playing a guitar.",
    "A woman slices an onion.",
    "x",
    "Zebras!! qwzxv 12345",
    "!!",
    "a long text of many words " * 40,
]
CORPUS = [
    f"The {animal} {verb} the {thing} near the river."
    for animal in ("cat", "dog", "horse", "bird")
    for verb in ("sees", "follows", "ignores")
    for thing in ("ball", "boat", "tree", "fence")
]


@pytest.fixture(scope="module")
def static_dir(tiny_model, tmp_path_factory) -> Path:
    """The tiny model distilled (16 dimensions, SIF weights from a small corpus)."""
    out = tmp_path_factory.mktemp("static") / "model"
    run = sembed(
        "train",
        "--method",
        "static",
        "-m",
        tiny_model,
        "--dim",
        "16",
        "--device",
        "cpu",
        "-o",
        str(out),
        "-q",
        input=jsonl(*({"text": text} for text in CORPUS)),
    )
    assert run.exit_code == 0, run.stderr
    return out


def embedded(*args: str, texts=TEXTS) -> np.ndarray:
    run = sembed("embed", "-q", *args, input=jsonl(*({"text": text, "id": n} for n, text in enumerate(texts))))
    assert run.exit_code == 0, run.stderr
    return np.array([record["embedding"] for record in run.records], dtype=np.float32)


# --- the runtime ------------------------------------------------------------------------------------------------


def test_a_sentence_is_the_mean_of_its_pieces_rows_made_unit_length(static_dir):
    model = static_model.load(static_dir)
    ids = model.token_ids(TEXTS)
    assert ids[4] == [999, 999] and len(ids[5]) == 240  # no special tokens, no truncation
    expected = np.stack([model.matrix[i].mean(axis=0) for i in ids])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(model.encode(TEXTS), expected, atol=1e-6)
    assert not model.encode(["", " "]).any()  # no piece: the zero vector, as StaticEmbedding gives


def test_sentence_transformers_loads_the_directory_and_gives_the_same_vectors(static_dir):
    from sentence_transformers import SentenceTransformer

    theirs = SentenceTransformer(str(static_dir), device="cpu")
    assert type(theirs[0]).__name__ == "StaticEmbedding"
    np.testing.assert_allclose(embedded("-m", str(static_dir)), theirs.encode(TEXTS), atol=1e-6)


@pytest.mark.subprocess
def test_embed_with_a_static_model_imports_no_torch(static_dir):
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_PROBE, "embed", "-q", "-m", str(static_dir)],
        input=jsonl({"text": "Dogs bark."}),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "IMPORTED []" in done.stderr
    assert len(json.loads(done.stdout)["embedding"]) == 16


def test_static_vectors_name_their_model_and_are_not_mixed_with_the_teachers(static_dir, tiny_model):
    pair = jsonl(
        {"text_a": "A dog runs.", "text_b": "A cat sleeps.", "score": 1.0},
        {"text_a": "A man sings.", "text_b": "A man is singing.", "score": 4.5},
    )
    static = sembed("embed", "-q", "-m", str(static_dir), input=pair)
    teacher = sembed("embed", "-q", "-m", tiny_model, input=pair)
    identity = static.records[0]["embedding_model"]
    assert identity.startswith(f"{static_dir}@") and identity != teacher.records[0]["embedding_model"]
    mixed = sembed("eval", "sts", "-q", input=static.stdout + teacher.stdout)
    assert mixed.exit_code == 1
    assert "<stdin>:3:" in mixed.stderr and "vectors of two models cannot be compared" in mixed.stderr


def test_npy_and_shards_give_the_jsonl_vectors(static_dir, tmp_path):
    vectors = embedded("-m", str(static_dir))
    run = sembed(
        "embed",
        "-q",
        "-m",
        str(static_dir),
        "--npy",
        str(tmp_path / "v.npy"),
        input=jsonl(*({"text": text} for text in TEXTS)),
    )
    assert run.exit_code == 0, run.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "v.npy"), vectors)
    second = sembed(
        "embed", "-q", "-m", str(static_dir), "--shard", "2/2", input=jsonl(*({"text": text} for text in TEXTS))
    )
    np.testing.assert_array_equal(np.array([r["embedding"] for r in second.records], np.float32), vectors[1::2])


def test_an_index_of_static_vectors_answers_text_queries_with_the_static_model(static_dir, tmp_path):
    records = jsonl(*({"text": text, "id": n} for n, text in enumerate(CORPUS)))
    built = sembed("index", "-q", "-m", str(static_dir), "-o", str(tmp_path / "index"), input=records)
    assert built.exit_code == 0, built.stderr
    found = sembed("search", "-q", "--index", str(tmp_path / "index"), "--query", CORPUS[5], "--k", "1")
    assert found.exit_code == 0, found.stderr
    assert found.records[0]["neighbors"][0]["id"] == 5
    assert found.records[0]["neighbors"][0]["score"] == pytest.approx(1.0, abs=1e-5)


def test_onnx_is_refused_for_a_static_model(static_dir):
    run = sembed("embed", "-m", str(static_dir), "--backend", "onnx", input=jsonl({"text": "a"}))
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr == (
        f"error: '{static_dir}' is a static model: it runs in numpy, without torch or ONNX "
        "Runtime (hint: leave out --backend and --quantize)\n"
    )


# --- distillation --------------------------------------------------------------------------------------------


def test_the_distilled_directory_says_how_it_was_made(static_dir, tiny_model):
    metadata = json.loads((static_dir / "sembed.json").read_text())
    assert metadata["method"] == "static" and metadata["teacher"].startswith(f"{tiny_model}@")
    assert metadata["pca"]["dim"] == 16 and metadata["pca"]["teacher_dim"] == 32
    assert 0.5 < metadata["pca"]["variance_kept"] < 1
    assert metadata["weighting"] == {"a": 1e-3, "p": "corpus piece counts", "name": "sif"}
    assert metadata["data"]["texts"] == len(CORPUS)


def test_norm_power_raises_each_rows_length_and_keeps_its_direction(static_dir, tiny_model, tmp_path):
    from safetensors.numpy import load_file

    out = tmp_path / "evened"
    run = sembed(
        "train", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu", "--norm-power", "0.5",
        "-o", str(out), "-q", input=jsonl(*({"text": text} for text in CORPUS)),
    )  # fmt: skip
    assert run.exit_code == 0, run.stderr
    rows, evened = (load_file(d / "model.safetensors")["embedding.weight"] for d in (static_dir, out))
    lengths = np.linalg.norm(rows, axis=1)
    assert lengths.std() > 0.02 * lengths.mean()  # pieces weigh differently as distilled
    np.testing.assert_allclose(np.linalg.norm(evened, axis=1), np.sqrt(lengths), rtol=1e-5)
    directions = rows / lengths[:, None]
    np.testing.assert_allclose(evened / np.linalg.norm(evened, axis=1, keepdims=True), directions, atol=1e-6)
    assert json.loads((out / "sembed.json").read_text())["settings"]["norm_power"] == 0.5
    assert json.loads((static_dir / "sembed.json").read_text())["settings"]["norm_power"] == 1.0
    same = np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    assert static_trainer.raised_norms(same, 1.0) is same  # 1: the rows as distilled, byte for byte
    np.testing.assert_allclose(static_trainer.raised_norms(same, 0.0), [[0.6, 0.8], [0.0, 0.0]])  # a zero row stays
    bad = sembed("train", "--method", "static", "--norm-power", "-1", "-o", str(tmp_path / "x"), input="")
    assert bad.exit_code == 2 and "--norm-power" in bad.stderr


def test_piece_weights():
    counts = np.array([0, 1, 3, 996])
    np.testing.assert_allclose(
        static_trainer.piece_weights("sif", counts),
        [1, 1e-3 / (1e-3 + 0.001), 1e-3 / (1e-3 + 0.003), 1e-3 / (1e-3 + 0.996)],
        rtol=1e-6,
    )
    zipf = 1 / np.arange(2, 6)
    np.testing.assert_allclose(
        static_trainer.piece_weights("zipf", counts), 1e-4 / (1e-4 + zipf / zipf.sum()), rtol=1e-6
    )
    assert static_trainer.piece_weights("none", counts).tolist() == [1, 1, 1, 1]


def test_pca_keeps_the_leading_components():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(200, 8)) * np.array([10, 5, 1, 1, 1, 1, 1, 1])
    reduced, described, projection = static_trainer.pca(vectors, 2)
    assert reduced.shape == (200, 2) and described["dim"] == 2 and described["teacher_dim"] == 8
    assert described["variance_kept"] > 0.9 and described["centred"]
    np.testing.assert_allclose(projection(vectors), reduced, rtol=1e-5)
    assert static_trainer.pca(vectors, 20)[1]["dim"] == 8


def test_uncentred_pca_keeps_the_origin_and_the_cosines_within_its_span():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(100, 3)) @ rng.normal(size=(3, 6)) + 4  # rank 3 once centred, 4 with the origin
    reduced, described, projection = static_trainer.pca(vectors, 4, centre=False)
    assert not described["centred"] and projection(np.zeros((1, 6))).tolist() == [[0, 0, 0, 0]]
    a, b = vectors[:50].mean(axis=0), vectors[50:].mean(axis=0)  # means of rows keep their cosine after projection
    cosine = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    ra, rb = reduced[:50].mean(axis=0), reduced[50:].mean(axis=0)
    assert ra @ rb / np.linalg.norm(ra) / np.linalg.norm(rb) == pytest.approx(cosine, abs=1e-5)


def test_the_teacher_reads_an_even_sample_whatever_the_seed():
    texts = [str(n) for n in range(10)]
    assert static_trainer.sample(texts, 20) == texts
    assert static_trainer.sample(texts, 4) == ["0", "3", "6", "9"]


def test_piece_vectors_are_the_teachers_outputs_for_each_piece_alone(tiny_model):
    from sentence_transformers import SentenceTransformer

    teacher = SentenceTransformer(tiny_model, device="cpu")
    tokenizer = static_teacher.fast_tokenizer(teacher)
    alone = static_teacher.pieces_alone(teacher, tokenizer, "cpu", batch=4096)
    assert alone.sentence.shape == alone.output.shape == (tokenizer.get_vocab_size(), 32)
    for word in ("guitar", "onion", "the"):  # each one piece: encode gives [CLS] piece [SEP] too
        piece = tokenizer.token_to_id(word)
        np.testing.assert_allclose(alone.sentence[piece], teacher.encode(word), atol=1e-5)
        outputs = teacher.encode(word, output_value="token_embeddings")
        np.testing.assert_allclose(alone.output[piece], outputs[1], atol=1e-5)


def test_a_pieces_corpus_vector_is_the_mean_of_its_outputs_in_the_sentences(tiny_model):
    from sentence_transformers import SentenceTransformer

    teacher = SentenceTransformer(tiny_model, device="cpu")
    tokenizer = static_teacher.fast_tokenizer(teacher)
    texts = ["the cat sees the boat", "a dog sees a tree near the river bank", "the boat"]
    passed = static_teacher.corpus_pass(teacher, texts, "cpu", batch=2)
    np.testing.assert_allclose(passed.sentences, teacher.encode(texts), atol=1e-5)
    the, boat = tokenizer.token_to_id("the"), tokenizer.token_to_id("boat")
    outputs = [teacher.encode(text, output_value="token_embeddings").numpy() for text in texts]
    ids = [teacher.preprocess([text])["input_ids"][0].tolist() for text in texts]
    wanted = np.mean([out[i] for out, row in zip(outputs, ids, strict=True) for i, t in enumerate(row) if t == the], 0)
    assert passed.counts[the] == 4 and passed.counts[boat] == 2 and passed.counts[tokenizer.token_to_id("[CLS]")] == 0
    alone = np.full((len(passed.counts), 32), 7.0, dtype=np.float32)
    contextual, seen = passed.contextual(alone)
    np.testing.assert_allclose(contextual[the], wanted, atol=1e-5)
    assert seen == int((passed.counts > 0).sum()) and contextual[tokenizer.token_to_id("onion")].tolist() == [7.0] * 32


def test_the_teachers_pass_is_kept_and_read_back_for_the_same_sentences_only(tiny_model, tmp_path):
    cache = tmp_path / "teacher.npz"

    def distil(name: str, *args: str, corpus=CORPUS):
        return sembed(
            "train", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu",
            "--teacher-cache", str(cache), "-o", str(tmp_path / name), *args,
            input=jsonl(*({"text": text} for text in corpus)),
        )  # fmt: skip

    first = distil("first")
    assert first.exit_code == 0, first.stderr
    assert "kept the teacher's pass over the corpus in" in first.stderr and cache.exists()
    again = distil("again", "--seed", "7")
    assert again.exit_code == 0 and "the teacher's pass over the corpus read from" in again.stderr
    for name in ("first", "again"):
        assert (tmp_path / name / "model.safetensors").read_bytes() == (
            tmp_path / "first" / "model.safetensors"
        ).read_bytes()
    other = distil("other", corpus=CORPUS[:-1])
    assert other.exit_code == 0 and "holds another teacher's or other sentences' pass" in other.stderr
    cache.write_bytes(b"not numpy")
    broken = distil("broken")
    assert broken.exit_code == 1 and "error: cannot read the teacher cache" in broken.stderr


def test_the_teachers_pass_says_how_far_it_is_on_stderr_whatever_stderr_is(tiny_model, caplog):
    from sentence_transformers import SentenceTransformer

    teacher = SentenceTransformer(tiny_model, device="cpu")
    with caplog.at_level("INFO", logger="sembed_cli.training.static_teacher"):
        static_teacher.corpus_pass(teacher, CORPUS, "cpu", batch=4)  # 12 batches, not a terminal
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("the teacher reads the corpus: ")]
    shares = [int(line.split(": ")[1].split("%")[0]) for line in lines]
    assert 5 <= len(lines) <= 10 and shares == sorted(shares) and shares[-1] < 100
    assert all(f"of {len(CORPUS)} sentences) in 0:" in line and "left" in line for line in lines)
    assert static_teacher.clock(3725) == "1:02:05" and static_teacher.clock(59.6) == "1:00"


def test_a_quiet_run_shows_no_progress_line(tiny_model, tmp_path):
    def distil(*args: str):
        return sembed(
            "train", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu",
            "-o", str(tmp_path / str(len(args))), *args,
            input=jsonl(*({"text": text} for text in CORPUS * 8)),
        )  # fmt: skip

    shown, quiet = distil(), distil("-q")
    assert shown.exit_code == 0 and quiet.exit_code == 0
    assert "the teacher reads the corpus: " in shown.stderr and quiet.stderr == ""


def test_fitting_to_the_teacher_lowers_its_loss_and_keeps_the_format(tiny_model, tmp_path):
    out = tmp_path / "fitted"
    run = sembed(
        "train",
        "--method",
        "static",
        "-m",
        tiny_model,
        "--dim",
        "16",
        "--fit",
        "teacher",
        "--epochs",
        "3",
        "--batch-size",
        "16",
        "--device",
        "cpu",
        "-o",
        str(out),
        "-q",
        input=jsonl(*({"text": text} for text in CORPUS)),
    )
    assert run.exit_code == 0, run.stderr
    fit = json.loads((out / "sembed.json").read_text())["fit"]
    history = fit["history"]
    assert [epoch["epoch"] for epoch in history] == [0, 1, 2, 3] and history[-1]["loss"] < history[1]["loss"]
    assert fit["held_out"] == 2 and fit["sentences"] == len(CORPUS) - 2 and 0 <= fit["kept_epoch"] <= 3
    assert static_model.is_static(out) and embedded("-m", str(out)).shape == (len(TEXTS), 16)


def test_nws_scores_the_pieces_on_neighbouring_sentences(tiny_model, tmp_path):
    out = tmp_path / "nws"
    documents = jsonl(*({"doc_id": n // 4, "text": text} for n, text in enumerate(CORPUS)))
    run = sembed(
        "train",
        "--method",
        "static",
        "-m",
        tiny_model,
        "--dim",
        "16",
        "--fit",
        "nws",
        "--device",
        "cpu",
        "-o",
        str(out),
        "-q",
        input=documents,
    )
    assert run.exit_code == 0, run.stderr
    fit = json.loads((out / "sembed.json").read_text())["fit"]
    assert fit["objective"].startswith("NWS") and len(fit["history"]) == 5 and fit["settings"]["optimizer"] == "AdaGrad"
    assert static_model.is_static(out)
    missing = sembed(
        "train",
        "--method",
        "static",
        "-m",
        tiny_model,
        "--fit",
        "nws",
        "--device",
        "cpu",
        "-o",
        str(tmp_path / "m"),
        input=jsonl({"text": "A dog."}),
    )
    assert missing.exit_code == 1 and missing.stderr.endswith(
        "error: <stdin>:1: missing key 'doc_id' (the document of the text: --fit nws learns from neighbouring "
        "sentences, --teacher-windows reads windows through each document)\n"
    )


def test_infonce_fits_each_text_to_its_own_teacher_vector_among_the_batchs(tiny_model):
    from sembed_cli.training.job import Recipe
    from sembed_cli.training.static_fit import Texts, fit_to_teacher

    texts = Texts([[3, 1], [], [2, 2, 5]], "cpu")
    pieces, offsets, lengths = texts.batch(__import__("torch").tensor([2, 0]))
    assert pieces.tolist() == [2, 2, 5, 3, 1] and offsets.tolist() == [0, 3] and lengths.tolist() == [3, 2]
    generator = np.random.default_rng(0)
    ids = [generator.integers(0, 50, generator.integers(1, 6)).tolist() for _ in range(400)]
    vectors = generator.standard_normal((50, 8)).astype(np.float32)
    targets = generator.standard_normal((400, 8)).astype(np.float32)
    recipe = Recipe(4, 32, 1e-2, None)
    fitted = fit_to_teacher(vectors, np.ones(50, np.float32), ids, targets, recipe, 1, True, "cpu", "infonce")
    losses = [epoch["held_out_loss"] for epoch in fitted.history]
    assert fitted.held_out == 20 and losses[-1] < losses[0] and fitted.best_epoch > 0
    again = fit_to_teacher(vectors, np.ones(50, np.float32), ids, targets, recipe, 1, True, "cpu", "infonce")
    np.testing.assert_array_equal(again.vectors, fitted.vectors)


def test_windows_run_through_each_document():
    words = " ".join(f"w{n}" for n in range(20))
    documents = [("a", words[:29]), ("a", words[29:]), ("b", "too short")]
    found = static_trainer.windows(documents)
    assert found[0] == " ".join(f"w{n}" for n in range(12)) and found[1].startswith("w3 w4")
    assert len(found) == 3 + 1 and found[2].endswith("w17") and found[-1] == "too short"


def test_more_text_after_the_kept_sentences_reads_only_the_rest(tiny_model, tmp_path):
    documents = jsonl(*({"doc_id": n // 8, "text": text} for n, text in enumerate(CORPUS)))

    def distil(name: str, *args: str):
        run = sembed(
            "train", "--method", "static", "-m", tiny_model, "--dim", "16", "--device", "cpu", "--fit", "teacher",
            "--fit-loss", "infonce", "-o", str(tmp_path / name), *args, input=documents,
        )  # fmt: skip
        assert run.exit_code == 0, run.stderr
        return run

    cache = str(tmp_path / "teacher.npz")
    distil("sentences", "--teacher-cache", cache)
    more = distil("more", "--teacher-cache", cache, "--teacher-windows", "5")
    assert "the teacher's pass over the first 48 texts read from" in more.stderr
    assert "the teacher read 5 corpus texts" in more.stderr
    distil("whole", "--teacher-windows", "5")
    metadata = json.loads((tmp_path / "more" / "sembed.json").read_text())
    assert metadata["data"]["teacher_read"] == 53 and metadata["settings"]["fit_loss"] == "infonce"
    np.testing.assert_allclose(
        static_model.load(tmp_path / "more").matrix, static_model.load(tmp_path / "whole").matrix, atol=1e-5
    )


WORDY = (
    [  # flumberton 6 times, grizzlewick 5, snorklebap 4: made-up words MiniLM's vocabulary splits into pieces
        f"The {word} {verb} the river."
        for word, times in (("flumberton", 6), ("grizzlewick", 5), ("snorklebap", 4))
        for verb in ("sees", "follows", "ignores", "crosses", "loves", "fears")[:times]
    ]
    + CORPUS
)


def test_words_seen_five_times_get_a_token_of_their_own_after_the_teachers_ids(tiny_model, tmp_path):
    def distil(name: str, *args: str) -> Path:
        run = sembed(
            "train", "--method", "static", "-m", tiny_model, "--dim", "32", "--weighting", "none", "--device", "cpu",
            "-o", str(tmp_path / name), "-q", *args, input=jsonl(*({"text": text} for text in WORDY)),
        )  # fmt: skip
        assert run.exit_code == 0, run.stderr
        return tmp_path / name

    pieces, words = distil("pieces"), distil("words", "--words", "10")
    assert json.loads((words / "sembed.json").read_text())["words"] == {
        "added": 2,
        "min_count": 5,
        "first": ["flumberton", "grizzlewick"],
        "vocabulary": 30524,
    }
    model, before = static_model.load(words), static_model.load(pieces)
    assert model.matrix.shape == (30524, 32) and before.matrix.shape == (30522, 32)
    assert model.token_ids(["Flumberton grizzlewick snorklebap the"]) == [
        [30522, 30523, *before.token_ids(["snorklebap the"])[0]]
    ]
    # a word's row starts as the mean of its pieces' (weights none, all 32 dimensions: PCA only rotates the
    # space), so the word alone, and any text without an added word, has the same cosines as before
    texts = ["flumberton", "grizzlewick", "snorklebap sees the river", "The dog follows the boat."]
    now, then = model.encode(texts), before.encode(texts)
    np.testing.assert_allclose(now @ now.T, then @ then.T, atol=1e-5)
    from sentence_transformers import SentenceTransformer

    loaded = SentenceTransformer(str(words), device="cpu").encode(["the flumberton sees"])
    np.testing.assert_allclose(loaded, model.encode(["the flumberton sees"]), atol=1e-6)


def test_the_piece_counts_with_added_words_are_those_of_the_extended_tokenizer():
    from tokenizers import Tokenizer

    from sembed_cli.training import static_words

    tokenizer = Tokenizer.from_file(str(sentence_models.resolve_path(sentence_models.DEFAULT_MODEL) / "tokenizer.json"))
    counted = static_words.WordCounter(tokenizer)
    counted.add(WORDY)
    added = static_words.add_words(tokenizer, counted, 1)
    assert added.words == ["flumberton"] and len(added.pieces[0]) > 1
    ids = [i for e in added.tokenizer.encode_batch(WORDY, add_special_tokens=False) for i in e.ids]
    np.testing.assert_array_equal(added.counts, np.bincount(ids, minlength=30523))
    assert added.tokenizer.encode("flumbertons", add_special_tokens=False).tokens[0] == "flumberton"  # longest first


def test_words_need_a_word_piece_vocabulary():
    from tokenizers import Tokenizer, models, pre_tokenizers

    from sembed_cli.errors import SembedError
    from sembed_cli.training import static_words

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(SembedError, match="--words adds whole words to a word-piece vocabulary, and this model's "):
        static_words.add_words(tokenizer, static_words.WordCounter(tokenizer), 5)


@pytest.mark.parametrize(
    "args, rule",
    [
        (["--fit-vectors"], "only with --fit teacher"),
        (["--fit-loss", "infonce"], "only with --fit teacher"),
        (["--piece-vectors", "alone", "--teacher-windows", "9"], "only with --piece-vectors corpus or --fit teacher"),
        (["--fit", "nws", "--epochs", "2"], "only with --fit teacher"),
        (["--piece-vectors", "alone", "--teacher-sentences", "9"], "only with --piece-vectors corpus or --fit teacher"),
        (["--piece-vectors", "alone", "--teacher-cache", "t.npz"], "only with --piece-vectors corpus or --fit teacher"),
    ],
)
def test_fitting_options_need_what_they_serve(args, rule, tmp_path):
    run = sembed("train", "--method", "static", *args, "-o", str(tmp_path / "m"), input=jsonl({"text": "a"}))
    assert run.exit_code == 2 and rule in " ".join(run.stderr.split())


@pytest.mark.parametrize(
    "records, message",
    [
        (
            "",
            "error: no texts in <stdin> (hint: train --method static reads a corpus of text records (sembed convert "
            "--from lines|prose|brown))\n",
        ),
        (jsonl({"text": "fine"}, {"txt": "no text"}), "error: <stdin>:2: missing key 'text'\n"),
    ],
)
def test_bad_corpora(tiny_model, tmp_path, records, message):
    run = sembed(
        "train", "--method", "static", "-m", tiny_model, "--device", "cpu", "-o", str(tmp_path / "m"), input=records
    )
    assert run.exit_code == 1 and run.stderr.endswith(message)
    assert not (tmp_path / "m").exists()


def test_a_static_model_is_not_distilled_again(static_dir, tmp_path):
    run = sembed(
        "train",
        "--method",
        "static",
        "-m",
        str(static_dir),
        "--device",
        "cpu",
        "-o",
        str(tmp_path / "m"),
        input=jsonl({"text": "a"}),
    )
    assert run.exit_code == 1
    assert run.stderr.endswith(f"error: '{static_dir}' is a static model already (hint: distil a transformer model)\n")


def test_options_of_static_are_refused_for_other_methods(tmp_path):
    run = sembed("train", "--method", "nws", "--dim", "8", "-o", str(tmp_path / "m"), input=jsonl({"text": "a"}))
    assert run.exit_code == 2 and "only for --method static" in " ".join(run.stderr.split())


def test_sentence_models_knows_a_static_directory(static_dir, tiny_model):
    assert static_model.is_static(static_dir) and not static_model.is_static(Path(tiny_model))
    encoder, device = sentence_models.load_encoder(str(static_dir))
    assert device == "cpu" and encoder.identity == {"backend": "static"}


# --- the real teacher (e2e) ----------------------------------------------------------------------------------

CORPORA = [
    ("prose", "abc", ["--doc-break", "blank"]),
    ("prose", "state_union", []),
    ("prose", "inaugural", []),
    ("lines", "webtext", []),
    ("lines", "movie_reviews", []),
    ("brown", "brown", []),
]
# Spearman x100 of `train --method static` (MiniLM, 256 dimensions, SIF from the shared corpora's counts) through
# `sembed embed | sembed eval sts`: the pieces alone as examples/static_reproduction.sh measures them
# (examples/results/static.md), and corpus vectors from 2,000 corpus sentences (the default reads 100,000: 17
# minutes on 2 cores). Measured on Intel AVX-512 (alone) and AMD Zen 3 AVX2 (both) alike.
STATIC_SPEARMAN = {
    ("alone", "stsb"): 69.86,
    ("alone", "sick"): 61.31,
    ("corpus", "stsb"): 71.29,
    ("corpus", "sick"): 60.04,
}


@pytest.fixture(scope="module")
def corpora() -> str:
    """The shared corpora as text records, converted as examples/stages.sh's corpus_records does (once for the
    module)."""
    if not DATA.is_dir():
        pytest.skip(f"shared data not found at {DATA} (set SEMBED_DATA)")
    return "".join(
        sembed("convert", "-q", "--from", kind, str(DATA / "corpora" / folder), *extra).stdout
        for kind, folder, extra in CORPORA
    )


@pytest.mark.slow
@pytest.mark.e2e
@pytest.mark.parametrize("vectors, options", [("alone", []), ("corpus", ["--teacher-sentences", "2000"])])
def test_minilm_distilled_with_the_corpora_scores_as_measured(corpora, tmp_path, data_dir, vectors, options):
    out = str(tmp_path / "static")
    trained = sembed(
        "train", "--method", "static", "--piece-vectors", vectors, *options, "--device", "cpu", "-o", out, "-q",
        input=corpora,
    )  # fmt: skip
    assert trained.exit_code == 0, trained.stderr
    for kind, path in (("stsb", "stsb/sts-test.csv"), ("sick", "sick/SICK_test_annotated.txt")):
        pairs = sembed("convert", "-q", "--from", kind, str(data_dir / path))
        vectors_out = sembed("embed", "-q", "-m", out, input=pairs.stdout)
        result = json.loads(sembed("eval", "sts", "-q", input=vectors_out.stdout).stdout)
        assert result["spearman"] == pytest.approx(STATIC_SPEARMAN[vectors, kind], abs=0.02)


def test_a_missing_runtime_library_is_one_line_naming_the_extra(static_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    sentence_models.load_static.cache_clear()
    run = sembed("embed", "-m", str(static_dir), input=jsonl({"text": "a"}))
    sentence_models.load_static.cache_clear()
    assert run.exit_code == 1 and run.stderr == (
        "error: a static model needs tokenizers, which is not installed (hint: pip install 'sembed[static]' "
        "(tokenizers and safetensors))\n"
    )


def test_the_python_api_opens_a_static_model_as_the_command_does(static_dir):
    from sembed_cli import api

    records = [{"id": n, "text": text} for n, text in enumerate(TEXTS)]
    api_gives_what_embed_writes(records, api.load_model(str(static_dir)), "-m", str(static_dir))
