"""train --method syntax: the syntax-distillation map (triplet loss eq. 4, hard negatives eq. 5), on a tiny encoder."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
import torch
from conftest import interrupt_at_call, jsonl, sembed

from sembed_cli.io import RecordSource
from sembed_cli.models.syntax_map import SyntaxMap
from sembed_cli.training import syntax as trainer
from sembed_cli.training.job import Job
from sembed_cli.training.methods import syntax

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NOUNS = "dog cat bird farmer teacher child river city garden house".split()
VERBS = "saw liked found carried painted watched heard moved".split()
ADJECTIVES = "old small green quiet famous dark".split()


def gensets_records(count: int = 40, seed: int = 0) -> list[dict]:
    """Sets of 3 aligned sentences of two templates, as `sembed gensets` writes them."""
    rng = random.Random(seed)
    records = []

    def sentence(odd: bool) -> list[str]:
        if odd:
            return ["the", rng.choice(ADJECTIVES), rng.choice(NOUNS), rng.choice(VERBS), "a", rng.choice(NOUNS)]
        return [rng.choice(NOUNS), rng.choice(VERBS), "the", rng.choice(NOUNS), "in", "the", rng.choice(NOUNS)]

    for set_id in range(count):
        words = [sentence(bool(set_id % 2)) for _ in range(3)]
        records.append({"set_id": set_id, "sentences": [" ".join(w) for w in words], "words": words})
    return records


def train(tmp_path, tiny_model, *args, records=None, name="map"):
    path = tmp_path / "sets.jsonl"
    path.write_text(jsonl(*(records if records is not None else gensets_records())))
    out = tmp_path / name
    run = sembed(
        "train",
        str(path),
        "--method",
        "syntax",
        "-o",
        str(out),
        "--model",
        tiny_model,
        "--batch-size",
        "64",
        "--device",
        "cpu",
        "-q",
        *args,
    )
    return run, out


def test_triplet_loss_takes_the_closest_pair_of_another_set_as_negative():
    anchor = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    positive = torch.tensor([[1.0, 0.1], [0.1, 1.0], [0.8, 0.6]])
    sets = torch.tensor([0, 1, 0])
    loss, accuracy = trainer.triplet_loss(anchor, positive, sets)

    def unit(v):
        return v / v.norm()

    rows_a = [unit(v) for v in torch.cat([anchor, positive])]
    rows_p = [unit(v) for v in torch.cat([positive, anchor])]
    row_sets = [0, 1, 0, 0, 1, 0]
    expected = []
    for i, (a, p) in enumerate(zip(rows_a, rows_p)):
        d_ap = 1 - float(a @ p)
        d_an = min(1 - float(a @ rows_a[j]) for j in range(6) if row_sets[j] != row_sets[i])  # eq. 5
        expected.append(torch.exp(torch.tensor(d_ap)) / (torch.exp(torch.tensor(d_ap)) + torch.exp(torch.tensor(d_an))))
    assert float(loss) == pytest.approx(float(torch.stack(expected).mean()), abs=1e-6)
    # the first anchor's nearest other-set pair is [0.1, 1.0] (the swapped positive of set 1), far from [1, 0.1]
    assert 0 < float(accuracy) <= 1


def test_samples_pair_two_sentences_and_two_words_of_one_set():
    sets = [[["a", "b", "c"], ["d", "e", "f"]], [["g", "h"], ["i", "j"], ["k", "l"]]]

    class Encoder:
        dimension = 2

        def encode(self, sentences, batch_size=32):
            return [torch.zeros(len(s), 2) for s in sentences]

    encoded = trainer.encode_sets(sets, Encoder())
    assert encoded.vectors.shape == (6 + 6, 2) and encoded.start.tolist() == [0, 6]
    a1, a2, p1, p2, chosen = trainer.sample_pairs(encoded, torch.tensor([0, 1]), 200, torch.Generator().manual_seed(0))
    n = encoded.words[chosen]
    start = encoded.start[chosen]
    sentence_a, word_1 = (a1 - start) // n, (a1 - start) % n
    sentence_p, word_2 = (p2 - start) // n, (p2 - start) % n
    assert ((a2 - start) // n == sentence_a).all() and ((p1 - start) // n == sentence_p).all()
    assert (sentence_a != sentence_p).all() and (word_1 != word_2).all()
    assert ((p1 - start) % n == word_1).all() and ((a2 - start) % n == word_2).all()
    assert (sentence_a < encoded.sentences[chosen]).all() and (word_1 < n).all()
    assert set(sentence_a[chosen == 1].tolist()) == {0, 1, 2}


def test_train_writes_a_map_that_learns_and_reloads(tmp_path, tiny_model):
    run, out = train(tmp_path, tiny_model, "--dimension", "8")
    assert run.exit_code == 0, run.stderr
    syntax_map = SyntaxMap.load(out)
    assert syntax_map.weight.shape == (8, 64) and syntax_map.encoder["random_init"] is False
    metadata = json.loads((out / "sembed.json").read_text())
    assert metadata["method"] == "syntax" and metadata["data"]["sets"] == 40
    history = metadata["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2, 3, 4, 5]
    assert history[-1]["loss"] < history[1]["loss"]
    assert history[-1]["held_out"]["loss"] < history[0]["held_out"]["loss"]
    assert not (tmp_path / "map.checkpoints").exists()
    assert syntax_map.apply(torch.ones(3, 64)).shape == (3, 8)
    _again, out_again = train(tmp_path, tiny_model, "--dimension", "8", name="again")
    assert torch.equal(SyntaxMap.load(out_again).weight, syntax_map.weight)


def test_random_init_control_is_recorded(tmp_path, tiny_model):
    run, out = train(tmp_path, tiny_model, "--random-init", "--epochs", "1", "--dimension", "4")
    assert run.exit_code == 0, run.stderr
    assert SyntaxMap.load(out).encoder["random_init"] is True


def test_resume_ends_where_an_uninterrupted_run_does(tmp_path, tiny_model, monkeypatch):
    path = tmp_path / "sets.jsonl"
    path.write_text(jsonl(*gensets_records()))
    settings = syntax.Settings(model=tiny_model, dimension=4)
    recipe = dataclasses.replace(syntax.RECIPE, epochs=3, batch_size=64)

    def job(name: str) -> Job:  # as `train --method syntax --epochs 3 --batch-size 64 --device cpu -o NAME` builds it
        return Job(RecordSource(str(path)), tmp_path / name, recipe, None, 42, "cpu", resume=False, force=False)

    whole = trainer.train_syntax(job("whole"), settings)
    # in epoch 2 (7 held-out batches at most before, 7 steps an epoch)
    original = interrupt_at_call(monkeypatch, trainer, "batch_loss", 8)
    with pytest.raises(KeyboardInterrupt):
        trainer.train_syntax(job("resumed"), settings)
    monkeypatch.setattr(trainer, "batch_loss", original)
    assert (tmp_path / "resumed.checkpoints" / trainer.VECTORS_FILE).exists()
    run, out = train(tmp_path, tiny_model, "--epochs", "3", "--dimension", "4", "--resume", name="resumed")
    assert run.exit_code == 0, run.stderr
    assert torch.equal(SyntaxMap.load(out).weight, whole.weight)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"sentences": ["a b"]}, "sets.jsonl:2: missing key 'words'"),
        ({"words": [["a", "b"], ["c"]]}, "sets.jsonl:2: the sentences of 'words' differ in length ([1, 2] words)"),
        ({"words": [["a", "b"]]}, "sets.jsonl:2: 'words' holds 1 sentence(s): a set needs at least 2"),
        ({"words": "a b"}, "sets.jsonl:2: 'words' must be a list of word lists, got a string"),
    ],
)
def test_bad_sets_are_errors_with_their_line(tmp_path, tiny_model, record, message):
    records = gensets_records(8)
    records.insert(1, record)
    run, out = train(tmp_path, tiny_model, records=records)
    assert run.exit_code == 1
    assert message in run.stderr
    assert not out.exists()


def test_too_few_sets_and_foreign_options(tmp_path, tiny_model):
    run, _ = train(tmp_path, tiny_model, records=gensets_records(2))
    assert run.exit_code == 1 and "2 usable set(s)" in run.stderr
    run, _ = train(tmp_path, tiny_model, "--text-key", "text")
    assert run.exit_code == 2 and "syntax reads the aligned `words`" in run.stderr
    run = sembed("train", "-", "--method", "nws", "-o", str(tmp_path / "x"), "--dimension", "8", input="")
    assert run.exit_code == 2 and "only for --method syntax" in run.stderr
