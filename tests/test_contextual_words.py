"""WordEncoder: the syntax-distillation paper's word representation (section 3.2) on a tiny BERT."""

from __future__ import annotations

import pytest
import torch
from conftest import TINY_DIM

from sembed_cli.errors import SembedError
from sembed_cli.models.contextual_words import WordEncoder, syntax_layer, transformer_path

SENTENCES = [["The", "unbelievably", "tall", "giraffe", "ate", "."], ["Cats", "sleep"]]


@pytest.fixture
def encoder(tiny_model, one_torch_thread) -> WordEncoder:
    return WordEncoder.open(tiny_model, device="cpu")


def test_syntax_layer_is_two_thirds_of_the_depth():
    assert syntax_layer(24) == 16  # the paper's BERT-large layer 16
    assert syntax_layer(6) == 4  # MiniLM
    assert syntax_layer(2) == 1
    assert syntax_layer(1) == 1


def test_shapes(encoder):
    vectors = encoder.encode(SENTENCES + [[]], batch_size=2)
    assert encoder.dimension == 2 * TINY_DIM
    assert [tuple(v.shape) for v in vectors] == [(6, 2 * TINY_DIM), (2, 2 * TINY_DIM), (0, 2 * TINY_DIM)]
    assert all(v.dtype == torch.float32 and v.device.type == "cpu" for v in vectors)
    assert all(torch.isfinite(v).all() for v in vectors)


def test_word_is_the_mean_of_its_pieces_layer_mix(encoder):
    from transformers import AutoModel, AutoTokenizer

    path = transformer_path(encoder.name)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path)).eval()
    words = SENTENCES[0]
    encoding = tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**encoding, output_hidden_states=True).hidden_states
    assert len(hidden) == 3  # embeddings + 2 layers
    mix = torch.cat([(hidden[1] + hidden[2]) / 2, hidden[1]], dim=-1)[0]  # mean of layers 1..2, layer round(4/3)=1
    word_ids = encoding.word_ids()
    pieces = [i for i, w in enumerate(word_ids) if w == 1]
    assert len(pieces) > 1  # "unbelievably" is several word-pieces
    expected = mix[pieces].mean(0)
    got = encoder.encode([words])[0]
    torch.testing.assert_close(got[1], expected, atol=1e-5, rtol=1e-5)
    first = [i for i, w in enumerate(word_ids) if w == 0]
    torch.testing.assert_close(got[0], mix[first].mean(0), atol=1e-5, rtol=1e-5)


def test_batching_and_order_do_not_change_vectors(encoder):
    together = encoder.encode(SENTENCES, batch_size=8)
    alone = [encoder.encode([s])[0] for s in SENTENCES]
    for a, b in zip(together, alone):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_random_init_is_deterministic_per_seed_and_differs_from_trained(tiny_model, encoder, one_torch_thread):
    a = WordEncoder.open(tiny_model, random_init=True, seed=3, device="cpu").encode(SENTENCES)
    b = WordEncoder.open(tiny_model, random_init=True, seed=3, device="cpu").encode(SENTENCES)
    c = WordEncoder.open(tiny_model, random_init=True, seed=4, device="cpu").encode(SENTENCES)
    trained = encoder.encode(SENTENCES)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.allclose(a[0], c[0])
    assert not torch.allclose(a[0], trained[0])


def test_random_init_leaves_the_global_generator_alone(tiny_model, one_torch_thread):
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    WordEncoder.open(tiny_model, random_init=True, seed=3, device="cpu")
    assert torch.equal(torch.rand(3), expected)


def test_describe_round_trip(tiny_model, encoder, one_torch_thread):
    description = encoder.describe()
    assert description["model_name"] == tiny_model
    assert description["layer"] == 1 and description["num_layers"] == 2
    assert description["dimension"] == 2 * TINY_DIM
    assert description["random_init"] is False
    import json

    again = WordEncoder.from_description(json.loads(json.dumps(description)), device="cpu")
    assert again.describe() == description
    for x, y in zip(encoder.encode(SENTENCES), again.encode(SENTENCES)):
        torch.testing.assert_close(x, y)
    control = WordEncoder.open(tiny_model, random_init=True, seed=5, device="cpu")
    reopened = WordEncoder.from_description(control.describe(), device="cpu")
    assert reopened.random_init and reopened.seed == 5
    assert torch.equal(control.encode(SENTENCES)[0], reopened.encode(SENTENCES)[0])


def test_long_sentences_are_windowed(encoder):
    words = ["word"] * 200  # 202 positions, over the tiny model's 128
    vectors = encoder.encode([words])[0]
    assert vectors.shape == (200, 2 * TINY_DIM)
    assert torch.isfinite(vectors).all() and (vectors.norm(dim=1) > 0).all()


def test_words_without_pieces_still_get_a_vector(encoder):
    vectors = encoder.encode([["a", " ", "cat"]])[0]
    assert vectors.shape[0] == 3 and (vectors.norm(dim=1) > 0).all()


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(SembedError, match="no sentence-transformers model"):
        WordEncoder.open(str(tmp_path / "nothing"))
