"""Vectors know their model: embedding_model on every vector sembed writes, and the refusals that read it."""

from __future__ import annotations

import json
import shutil

import orjson
import pytest
from conftest import jsonl, sembed

from sembed_cli.models import model_identity
from sembed_cli.models.model_identity import FIELD, Identity, OneModel, content_digest, of_sentence_model

PAIRS = [
    {"text_a": f"A man plays the guitar {n}.", "text_b": f"Someone plays music {n}.", "score": float(n % 5)}
    for n in range(8)
]


@pytest.fixture(scope="module")
def other_model(tiny_model, tmp_path_factory) -> str:
    """The tiny model with every weight moved a little: another model of the same shape."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(tiny_model, device="cpu")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.1)
    path = tmp_path_factory.mktemp("other") / "model"
    model.save(str(path))
    return str(path)


def embed(model: str, records: str, *args: str) -> str:
    run = sembed("embed", "-q", "-m", model, "--device", "cpu", *args, input=records)
    assert run.exit_code == 0, run.stderr
    return run.stdout


# --- the identity itself ----------------------------------------------------------------------------------------


def test_identity_string_round_trips_and_compares_by_content_not_name():
    identity = Identity("models/cf", "0123456789ab").with_setting("cf", 0.2)
    assert str(identity) == "models/cf@0123456789ab;cf=0.2"
    assert Identity.parse(str(identity)) == identity
    assert Identity.parse("/abs/models/cf@0123456789ab;cf=0.2").same(identity)  # another path to the same files
    assert not identity.same(identity.without("cf")) and not identity.same(identity.with_setting("backend", "onnx"))
    salience = Identity("g@1", "x").with_setting("salience", Identity("nws-glove", "abc"))
    assert salience.same(Identity.parse("g@1@x;salience=/elsewhere/nws-glove@abc"))
    for bad in ("no-digest", "@abc", "name@abc;cf"):
        with pytest.raises(ValueError):
            Identity.parse(bad)


def test_content_digest_follows_the_weights_not_the_place_or_the_metadata(tiny_model, other_model, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_model, copy)
    assert content_digest(copy) == content_digest(tiny_model) != content_digest(other_model)
    (copy / "sembed.json").write_text('{"created": "now"}')
    (copy / "README.md").write_text("notes")
    assert content_digest(copy) == content_digest(tiny_model)
    weights = next(copy.rglob("model.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF  # the last bytes are always read
    weights.write_bytes(bytes(data))
    assert content_digest(copy) != content_digest(tiny_model)


def test_content_digest_of_a_large_file_reads_its_size_and_samples(tmp_path):
    big = tmp_path / "weights.bin"
    big.write_bytes(bytes(8 << 20))
    before = content_digest(big)
    with open(big, "r+b") as f:
        f.write(b"\1")  # the first 256 KiB are read
    changed = content_digest(big)
    with open(big, "ab") as f:
        f.write(b"\0")
    assert len({before, changed, content_digest(big)}) == 3  # and the size always counts


def test_one_model_check():
    check = OneModel()
    check({"embedding": [1.0]})
    check({"embedding": [1.0]})  # unlabelled records alone are accepted
    with pytest.raises(model_identity.BadRecord) as error:
        check({FIELD: "m@aaa"})
    assert error.value.message == (
        "embedding_model is 'm@aaa', but earlier records have no 'embedding_model': "
        "vectors of two models cannot be compared"
    )
    labelled = OneModel()
    labelled({FIELD: "m@aaa"})
    labelled({FIELD: "/other/path/m@aaa"})
    with pytest.raises(model_identity.BadRecord) as error:
        labelled({FIELD: "m@bbb"})
    assert error.value.message == (
        "embedding_model is 'm@bbb', but earlier records are 'm@aaa': vectors of two models cannot be compared"
    )
    with pytest.raises(model_identity.BadRecord, match="'embedding_model' must be a string"):
        labelled({FIELD: 3})


# --- embed writes it --------------------------------------------------------------------------------------------


def test_embed_names_the_model_once_per_record_for_a_pair(tiny_model):
    [record] = [orjson.loads(line) for line in embed(tiny_model, jsonl(PAIRS[0])).splitlines()]
    assert list(record) == ["text_a", "text_b", "score", "embedding_a", "embedding_b", FIELD]
    assert record[FIELD] == str(of_sentence_model(tiny_model)) == f"{tiny_model}@{content_digest(tiny_model)}"


def test_cf_weight_and_word_vector_methods_are_part_of_the_identity(tiny_model):
    [cf] = [
        orjson.loads(line)
        for line in embed(
            tiny_model,
            jsonl({"text": "A man attacks a woman", "s_cf": "man attacks woman"}),
            "--cf-weight",
            "0.2",
            "--keep-parts",
        ).splitlines()
    ]
    assert cf[FIELD] == f"{of_sentence_model(tiny_model)};cf=0.2"
    run = sembed("embed", "-q", "--method", "avg", input=jsonl({"text": "a man plays"}))
    if run.exit_code == 1 and "not installed" in run.stderr:
        pytest.skip("the packaged GloVe vectors are not installed")
    label = run.records[0][FIELD]
    assert label.startswith("glove-6b-50d@") and label.endswith(";method=avg")


def test_npy_vectors_have_a_sidecar_naming_the_model(tiny_model, tmp_path):
    npy = tmp_path / "v.npy"
    out = [orjson.loads(line) for line in embed(tiny_model, jsonl(*PAIRS), "--npy", str(npy)).splitlines()]
    sidecar = json.loads((tmp_path / "v.npy.json").read_text())
    assert sidecar == {FIELD: str(of_sentence_model(tiny_model)), "rows": 16, "dim": 32, "dtype": "float32"}
    assert all(record[FIELD] == sidecar[FIELD] for record in out)


def test_embed_words_names_the_encoder_and_the_recipe(tiny_model):
    run = sembed("embed", "-q", "--words", "-m", tiny_model, "--device", "cpu", input=jsonl({"text": "Dogs bark."}))
    assert run.exit_code == 0, run.stderr
    assert {r[FIELD] for r in run.records} == {f"{tiny_model}@{content_digest(tiny_model)};words=layer1"}


def test_embed_refuses_to_put_a_second_model_into_a_record(tiny_model, other_model):
    first = embed(tiny_model, jsonl(PAIRS[0]), "-k", "text_a")
    assert embed(tiny_model, first, "-k", "text_b")  # the same model: fine
    run = sembed("embed", "-m", other_model, "--device", "cpu", "-k", "text_b", input=first)
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: <stdin>:1: 'embedding_a' is of '{of_sentence_model(tiny_model)}', and this run "
        f"embeds with '{of_sentence_model(other_model)}': one record cannot hold vectors of two "
        "models (embed every text field in one run, or drop 'embedding_a')\n"
    )
    again = embed(other_model, first)  # embedding every text again replaces the old vectors: fine
    assert orjson.loads(again)[FIELD] == str(of_sentence_model(other_model))


# --- index, search and eval read it -----------------------------------------------------------------------------


def test_index_takes_the_model_from_the_records_and_search_embeds_with_it(other_model, tmp_path):
    """The issue's case: `embed -m DIR | index` recorded the packaged model whatever made the vectors."""
    records = jsonl(*({"id": n, "text": text} for n, text in enumerate(["Salem", "Madison", "Newport", "Clinton"])))
    out = tmp_path / "idx"
    run = sembed("index", "-q", "-o", str(out), input=embed(other_model, records))
    assert run.exit_code == 0, run.stderr
    meta = json.loads((out / "sembed.json").read_text())
    assert meta[FIELD] == str(of_sentence_model(other_model)) and meta["model"] == other_model
    found = sembed("search", "-q", "--index", str(out), "--device", "cpu", "--k", "1", "--query", "Newport")
    assert found.exit_code == 0, found.stderr
    assert found.records == [{"text": "Newport", "neighbors": [{"id": 2, "text": "Newport", "score": 1.0}]}]
    searched = sembed("search", "-q", "--index", str(out), "-m", other_model, "--device", "cpu", "--query", "x")
    assert searched.exit_code == 0


def test_index_refuses_records_of_two_models_and_a_wrong_model_option(tiny_model, other_model, tmp_path):
    records = jsonl({"id": 1, "text": "Salem"})
    mixed = embed(tiny_model, records) + embed(other_model, jsonl({"id": 2, "text": "Madison"}))
    run = sembed("index", "-o", str(tmp_path / "i"), input=mixed)
    assert run.exit_code == 1 and not (tmp_path / "i").exists()
    assert run.stderr == (
        f"error: <stdin>:2: embedding_model is '{of_sentence_model(other_model)}', but earlier "
        f"records are '{of_sentence_model(tiny_model)}': vectors of two models cannot be compared\n"
    )
    run = sembed("index", "-m", other_model, "-o", str(tmp_path / "i"), input=embed(tiny_model, records))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: the records' vectors are of '{of_sentence_model(tiny_model)}', not of --model "
        f"'{other_model}' (hint: leave out --model: the index takes the records' model)\n"
    )


def test_search_refuses_query_vectors_of_another_model(tiny_model, other_model, tmp_path):
    records = jsonl({"id": 1, "text": "Salem"}, {"id": 2, "text": "Madison"})
    assert sembed("index", "-q", "-o", str(tmp_path / "i"), input=embed(tiny_model, records)).exit_code == 0
    run = sembed("search", "-q", "--index", str(tmp_path / "i"), input=embed(other_model, records))
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr == (
        f"error: <stdin>:1: the query's 'embedding' is of '{of_sentence_model(other_model)}', but "
        f"the index holds vectors of '{of_sentence_model(tiny_model)}'\n"
    )


def test_eval_refuses_vectors_of_two_models(tiny_model, other_model):
    mixed = embed(tiny_model, jsonl(*PAIRS[:4])) + embed(other_model, jsonl(*PAIRS[4:]))
    for task in ("sts", "entailment"):
        run = sembed("eval", task, "-q", input=mixed.replace('"score"', '"label":"x","score"'))
        assert run.exit_code == 1 and run.stdout == ""
        assert run.stderr == (
            f"error: <stdin>:5: embedding_model is '{of_sentence_model(other_model)}', but earlier "
            f"records are '{of_sentence_model(tiny_model)}': vectors of two models cannot be "
            "compared\n"
        )


def test_unlabelled_vectors_are_accepted_alone_but_not_mixed_with_labelled_ones(tiny_model):
    labelled = [orjson.loads(line) for line in embed(tiny_model, jsonl(*PAIRS)).splitlines()]
    unlabelled = [{k: v for k, v in r.items() if k != FIELD} for r in labelled]
    assert sembed("eval", "sts", "-q", input=jsonl(*unlabelled)).exit_code == 0
    run = sembed("eval", "sts", "-q", input=jsonl(*labelled[:3], *unlabelled[3:]))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: <stdin>:4: no 'embedding_model' (vectors of an unknown model), but earlier "
        f"records are '{of_sentence_model(tiny_model)}': vectors of two models cannot be compared\n"
    )


def test_eval_and_index_read_npy_vectors(tiny_model, tmp_path):
    npy = tmp_path / "v.npy"
    rows = embed(tiny_model, jsonl(*PAIRS), "--npy", str(npy))
    inline = embed(tiny_model, jsonl(*PAIRS))
    from_npy = sembed("eval", "sts", "-q", "--npy", str(npy), input=rows)
    assert from_npy.exit_code == 0, from_npy.stderr
    assert from_npy.records == sembed("eval", "sts", "-q", input=inline).records
    singles = jsonl(*({"id": n, "text": p["text_a"]} for n, p in enumerate(PAIRS)))
    assert (
        sembed(
            "index",
            "-q",
            "--npy",
            str(tmp_path / "s.npy"),
            "-o",
            str(tmp_path / "i"),
            input=embed(tiny_model, singles, "--npy", str(tmp_path / "s.npy")),
        ).exit_code
        == 0
    )
    found = sembed("search", "-q", "--index", str(tmp_path / "i"), "--k", "1", input=embed(tiny_model, singles))
    assert [r["neighbors"][0]["id"] for r in found.records] == list(range(len(PAIRS)))
    bad = sembed("eval", "sts", "--npy", str(npy), input=rows.replace('"embedding_row_b":1,', '"embedding_row_b":99,'))
    assert bad.exit_code == 1
    assert bad.stderr == f"error: <stdin>:1: 'embedding_row_b' is 99, but {npy} has rows 0 to 15\n"


def test_an_npy_matrix_made_elsewhere_is_indexed_as_the_given_models_vectors(tiny_model, tmp_path):
    """Rows of a .npy without a sidecar, named by records without embedding_model: taken to be --model's vectors,
    their width checked against it before the first batch is read (until 2026-11-29 'has None dimensions')."""
    import numpy as np
    from conftest import TINY_DIM

    vectors = np.random.default_rng(3).standard_normal((3, TINY_DIM)).astype(np.float32)
    np.save(tmp_path / "v.npy", vectors)
    records = jsonl(*({"id": n, "text": f"t{n}", "embedding_row": n} for n in range(3)))
    built = sembed(
        "index", "--npy", str(tmp_path / "v.npy"), "-m", tiny_model, "-o", str(tmp_path / "i"), input=records
    )
    assert built.exit_code == 0, built.stderr
    assert "carry no embedding_model: taken to be of --model" in built.stderr
    np.save(tmp_path / "w.npy", vectors[:, :5])
    narrow = sembed(
        "index", "--npy", str(tmp_path / "w.npy"), "-m", tiny_model, "-o", str(tmp_path / "j"), input=records
    )
    assert narrow.exit_code == 1
    assert narrow.stderr.endswith(
        f"error: 'embedding' has 5 dimensions, but the model '{tiny_model}' makes {TINY_DIM}: it was embedded with "
        "another model\n"
    )


def test_npy_sidecar_of_another_model_is_refused(tiny_model, other_model, tmp_path):
    npy = tmp_path / "v.npy"
    rows = embed(tiny_model, jsonl(*PAIRS), "--npy", str(npy))
    (tmp_path / "v.npy.json").write_text(json.dumps({FIELD: str(of_sentence_model(other_model))}))
    run = sembed("eval", "sts", "--npy", str(npy), input=rows)
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: the records' vectors are of '{of_sentence_model(tiny_model)}', but {npy}.json "
        f"names vectors of '{of_sentence_model(other_model)}'\n"
    )


def test_search_embeds_text_queries_as_a_word_vector_index_was_made(tmp_path):
    records = jsonl(*({"id": n, "text": text} for n, text in enumerate(["a red car", "the old dog", "blue sky"])))
    embedded = sembed("embed", "-q", "--method", "avg", input=records)
    if embedded.exit_code == 1 and "not installed" in embedded.stderr:
        pytest.skip("the packaged GloVe vectors are not installed")
    assert sembed("index", "-q", "-o", str(tmp_path / "i"), input=embedded.stdout).exit_code == 0
    run = sembed("search", "-q", "--index", str(tmp_path / "i"), "--k", "1", "--query", "the old dog")
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["neighbors"][0]["id"] == 1 and run.records[0]["neighbors"][0]["score"] == 1.0


def test_search_embeds_text_queries_with_the_indexs_cf_weight(tiny_model, tmp_path):
    texts = ["A man attacks a woman", "The dog chases a cat", "Children play football"]
    records = jsonl(*({"id": n, "text": text} for n, text in enumerate(texts)))
    assert (
        sembed(
            "index", "-q", "-o", str(tmp_path / "i"), input=embed(tiny_model, records, "--cf-weight", "0.5")
        ).exit_code
        == 0
    )
    assert json.loads((tmp_path / "i" / "sembed.json").read_text())[FIELD].endswith(";cf=0.5")
    run = sembed("search", "-q", "--index", str(tmp_path / "i"), "--device", "cpu", "--k", "1", "--query", texts[1])
    assert run.exit_code == 0, run.stderr
    assert run.records[0]["neighbors"][0]["id"] == 1
    assert run.records[0]["neighbors"][0]["score"] == pytest.approx(1.0, abs=1e-5)  # emb(text) + 0.5 emb(s_cf) too
