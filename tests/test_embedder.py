"""models/embedder.py: the one way from a model or a recorded identity to vectors, and the Python API opening it."""

from __future__ import annotations

import copy

import numpy as np
import orjson
import pytest
from conftest import jsonl, sembed

from sembed_cli import api
from sembed_cli.errors import SembedError
from sembed_cli.models import model_identity
from sembed_cli.models.embedder import Embedder, Encoder

TEXTS = ["A man is playing a guitar.", "Someone plays an instrument.", "A man is playing a guitar."]


def test_an_embedder_carries_identity_dimension_and_rows(tiny_model):
    embedder = Embedder.open(tiny_model, device="cpu")
    assert isinstance(embedder.encoder, Encoder)
    assert embedder.identity == model_identity.of_sentence_model(tiny_model)
    rows = embedder.encode(TEXTS)
    assert rows.dtype == np.float32 and rows.shape == (3, embedder.dimension)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)  # the tiny model normalises
    assert np.array_equal(rows[0], rows[2])  # a repeated text: encoded once


def test_cf_weight_is_part_of_the_identity_and_of_the_rows(tiny_model):
    plain = Embedder.open(tiny_model, device="cpu")
    focused = Embedder.open(tiny_model, device="cpu", cf_weight=0.5)
    assert str(focused.identity) == f"{plain.identity};cf=0.5"
    texts, s_cf = ["A man attacks a woman."], ["man attacks woman"]
    expected = plain.encode(texts) + np.float32(0.5) * plain.encode(s_cf)  # CF-BERT eq. 1
    assert np.allclose(focused.encode(texts, s_cf), expected, atol=1e-6)


def test_for_identity_reopens_the_recorded_model_and_refuses_another(tiny_model, tmp_path):
    recorded = Embedder.open(tiny_model, device="cpu", cf_weight=0.25).identity
    again = Embedder.for_identity(recorded, device="cpu", where="idx")
    assert again.identity == recorded and again.cf_weight == 0.25
    other = model_identity.Identity(recorded.name, "0" * model_identity.DIGEST_LENGTH, recorded.settings)
    with pytest.raises(SembedError, match="another model"):
        Embedder.for_identity(other, device="cpu", where="idx")
    words = recorded.with_setting("words", "layer2")
    with pytest.raises(SembedError, match=r"cannot make from a text \(words\)"):
        Embedder.for_identity(words, device="cpu", where="idx")


def test_word_vector_methods_open_as_embedders(tmp_path):
    embedder = Embedder.open(None, method="avg")
    assert dict(embedder.identity.settings) == {"method": "avg"}
    rows = embedder.encode(["the cat sat", "a dog ran"])
    assert rows.shape == (2, embedder.dimension) and rows.dtype == np.float32
    assert Embedder.for_identity(embedder.identity, where="idx").identity == embedder.identity


def test_api_embed_records_stamps_the_identity_leaves_its_input_alone_and_equals_the_command(tiny_model, tmp_path):
    records = [{"id": n, "text": text} for n, text in enumerate(TEXTS)]
    given = copy.deepcopy(records)
    embedded = list(api.embed_records(records, api.load_model(tiny_model, device="cpu")))
    assert records == given  # new records: the input is untouched
    assert all(record is not out for record, out in zip(records, embedded))
    src = tmp_path / "in.jsonl"
    src.write_text(jsonl(*records))
    run = sembed("embed", "-q", "-m", tiny_model, "--device", "cpu", str(src))
    assert run.exit_code == 0, run.stderr
    for ours, theirs in zip(embedded, run.records, strict=True):
        assert ours[model_identity.FIELD] == theirs[model_identity.FIELD]
        assert np.allclose(ours["embedding"], theirs["embedding"], atol=1e-6)
        assert orjson.loads(orjson.dumps(ours, option=orjson.OPT_SERIALIZE_NUMPY)).keys() == theirs.keys()


def test_api_embed_records_refuses_records_of_another_model(tiny_model):
    other = {"text": "x", "embedding_title": [0.0], model_identity.FIELD: "elsewhere@" + "1" * 12}
    with pytest.raises(SembedError, match="elsewhere"):
        list(api.embed_records([other], tiny_model))


def test_the_python_api_applies_the_w_cf_a_model_saved_as_the_command_does(tiny_model, tmp_path):
    import json
    import shutil

    from conftest import api_gives_what_embed_writes

    cf_model = tmp_path / "cf-model"
    shutil.copytree(tiny_model, cf_model)
    (cf_model / "sembed.json").write_text(json.dumps({"method": "cf", "cf_weight": 0.2}))
    records = [
        {"text_a": "A man attacks a woman.", "s_cf_a": "man attacks woman", "text_b": "x y", "s_cf_b": "x"},
        {"text": "The dog chased the cat.", "s_cf": "dog chased cat"},
    ]
    model = api.load_model(str(cf_model), device="cpu")
    assert model.cf_weight == 0.2 and str(model.identity).endswith(";cf=0.2")
    written = api_gives_what_embed_writes(records, model, "-m", str(cf_model), "--device", "cpu")
    plain = api.load_model(tiny_model, device="cpu")
    basic, cf = plain.encode(["The dog chased the cat."]), plain.encode(["dog chased cat"])
    assert np.allclose(written[1]["embedding"], (basic + np.float32(0.2) * cf)[0], atol=1e-6)  # CF-BERT eq. 1
