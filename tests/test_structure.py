"""sembed embed --words and sembed eval structure: word records, the neighbour tests, difficult tags, purity."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import scipy.stats
import torch
from conftest import TINY_DIM, jsonl, sembed

from sembed_cli.evaluation import structure
from sembed_cli.models.word_records import depths

# --- eval structure: hand-made word records with known nearest neighbours ---------------------------------


def word(sentence, text, pos, dep, head_dep, depth, vector, tag=None):
    return {
        "sentence_index": sentence,
        "word": text,
        "pos": pos,
        "tag": tag or pos,
        "dep": dep,
        "head_dep": head_dep,
        "depth": depth,
        "embedding": vector,
    }


# Nearest neighbours among the content words of the other sentences (cosines in the comments):
# A -> D (.994), B -> E (.994), D -> A (.994), E -> B (.994), G -> A (.6), H -> B (.6).
# F, a determiner, has A's very vector: were function words values, A's neighbour would be F.
WORDS = [
    word(0, "Cat", "NOUN", "nsubj", "ROOT", 1, [1, 0, 0]),  # A
    word(0, "sat", "VERB", "ROOT", "ROOT", 0, [0, 1, 0]),  # B
    word(1, "dog", "NOUN", "nsubj", "ROOT", 1, [0.9, 0.1, 0]),  # D
    word(1, "sat", "VERB", "ROOT", "ROOT", 0, [0.1, 0.9, 0]),  # E
    word(1, "the", "DET", "det", "nsubj", 2, [1, 0, 0]),  # F
    word(2, "cat", "NOUN", "dobj", "ccomp", 2, [0.6, 0, 0.8]),  # G
    word(2, "ran", "VERB", "ROOT", "ROOT", 0, [0, 0.6, 0.8]),  # H
    word(2, ".", "PUNCT", "punct", "ROOT", 1, [0, 0.6, 0.8]),  # function word
]


def test_shares_of_known_nearest_neighbours():
    run = sembed("eval", "structure", "--min-tag-count", "1", "--clusters", "2", input=jsonl(*WORDS))
    assert run.exit_code == 0, run.stderr
    [report] = run.records
    depth_r = scipy.stats.pearsonr([1, 0, 1, 0, 2, 0], [1, 0, 1, 0, 1, 0]).statistic
    assert report["all"] == {
        "n": 6,
        "dep_edge": round(5 / 6, 4),
        "head_dep_edge": round(5 / 6, 4),
        "depth_r": round(depth_r, 4),
        "lexical_match": 0.5,
    }  # "Cat" matches "cat"
    assert (report["words"], report["sentences"], report["content_words"], report["dimension"]) == (8, 3, 6, 3)
    assert "nearest neighbour by cosine: 8 words, 3 sentences, 3-d" in run.stderr
    assert "k-means purity" in run.stderr


def test_function_words_are_neither_queries_nor_neighbours():
    pos = np.array([w["pos"] for w in WORDS])
    assert {"DET", "ADP", "PRON", "AUX", "CCONJ", "SCONJ", "PART", "PUNCT", "NUM"} <= structure.FUNCTION_POS
    assert not structure.FUNCTION_POS & {"NOUN", "VERB", "ADJ", "ADV", "PROPN"}
    kept = structure.StructureWords()
    for record in WORDS:
        kept(record)
    report = structure.structure_report(kept, queries=100, min_tag_count=1, ks=(2,))
    assert report["all"]["n"] == int((~np.isin(pos, list(structure.FUNCTION_POS))).sum()) == 6


def test_neighbours_skip_the_query_s_own_sentence():
    vectors = structure.normalised(np.array([[1, 0], [1, 0.01], [0.2, 1], [1, 1]], dtype=np.float32))
    sentences = np.array([0, 0, 1, 2])
    assert structure.nearest_neighbours(vectors, np.array([0, 1, 2]), sentences).tolist() == [3, 3, 3]
    assert structure.nearest_neighbours(vectors, np.array([3]), sentences).tolist() == [2]


def test_queries_are_a_seeded_sample():
    kept = structure.StructureWords()
    rng = np.random.default_rng(1)
    for n in range(60):
        dep = ["nsubj", "dobj", "pobj"][n % 3]
        kept(word(n // 6, f"w{n}", "NOUN", dep, "ROOT", n % 3, rng.normal(size=4).tolist()))
    one = structure.structure_report(kept, queries=20, seed=3, min_tag_count=1, ks=(5,))
    assert one == structure.structure_report(kept, queries=20, seed=3, min_tag_count=1, ks=(5,))
    assert one["all"]["n"] == 20 and one["seed"] == 3
    assert one != structure.structure_report(kept, queries=20, seed=4, min_tag_count=1, ks=(5,))


def test_difficult_tags_are_those_with_the_most_varied_dependency_labels():
    tags = ["NN"] * 10 + ["JJ"] * 10 + ["VB"] * 12 + ["RB"] * 4
    deps = (
        ["nsubj", "dobj"] * 5
        + ["amod"] * 10
        + ["ROOT", "ccomp", "xcomp", "advcl"] * 3
        + ["advmod", "neg", "prep", "npadvmod"]
    )
    chosen = structure.difficult_tags(np.array(tags), np.array(deps), count=2, min_count=5)
    assert chosen == [{"tag": "VB", "entropy": 2.0, "n": 12}, {"tag": "NN", "entropy": 1.0, "n": 10}]
    # RB has the highest entropy (2 bits) but only 4 words; with a lower bar it ties VB and loses on frequency
    assert [t["tag"] for t in structure.difficult_tags(np.array(tags), np.array(deps), 4, 1)] == [
        "VB",
        "RB",
        "NN",
        "JJ",
    ]
    assert structure.entropy(Counter({"a": 1, "b": 1})) == 1.0


def test_difficult_queries_come_from_the_difficult_tags_only():
    records = [dict(w, tag="VB" if w["pos"] == "VERB" else "NN") for w in WORDS]
    for w in records:
        if w["pos"] == "VERB":
            w["dep"] = {0: "ROOT", 1: "ccomp", 2: "xcomp"}[w["sentence_index"]]
    run = sembed(
        "eval", "structure", "--difficult", "1", "--min-tag-count", "1", "--clusters", "2", input=jsonl(*records)
    )
    assert run.exit_code == 0, run.stderr
    difficult = run.records[0]["difficult"]
    assert difficult["tags"][0]["tag"] == "VB" and len(difficult["tags"]) == 1
    assert difficult["n"] == 3  # B, E, H
    assert difficult["dep_edge"] == 0.0 and difficult["lexical_match"] == round(2 / 3, 4)  # B <-> E "sat"


def test_purity_on_a_constructed_example():
    labels = np.array(["a", "a", "b", "b", "b", "b", "c"])
    clusters = np.array([0, 0, 0, 1, 1, 1, 2])
    mean, weighted = structure.purity(labels, clusters)
    assert mean == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert weighted == pytest.approx(6 / 7)


def test_kmeans_purity_finds_separated_groups():
    rng = np.random.default_rng(0)
    centres = np.eye(4) * 10
    vectors = np.concatenate([centres[g] + rng.normal(scale=0.1, size=(10, 4)) for g in range(4)])
    labels = np.repeat(np.array(["nsubj", "dobj", "amod", "pobj"]), 10)
    result = structure.cluster_purity(structure.normalised(vectors), labels, (4, 2, 40), seed=0)
    assert result["4"] == {"mean": 1.0, "weighted": 1.0}
    assert result["2"]["weighted"] == 0.5
    assert result["40"] is None  # K not below the number of vectors


@pytest.mark.parametrize(
    "line, message",
    [
        (
            {k: v for k, v in WORDS[1].items() if k != "embedding"},
            "missing key 'embedding' (run sembed embed --words first, or give its matrix with --npy)",
        ),
        ({k: v for k, v in WORDS[1].items() if k != "dep"}, "missing key 'dep' (run sembed embed --words first)"),
        (dict(WORDS[1], embedding=[1, 0]), "'embedding' has 2 dimensions, earlier records 3"),
        (dict(WORDS[1], depth=-1), "'depth' must be a non-negative integer, got a number -1"),
        (dict(WORDS[1], pos=None), "'pos' must be a string, got null"),
        (dict(WORDS[1], sentence_index=[1]), "'sentence_index' must be a string or a number, got an array"),
    ],
)
def test_bad_records_stop_with_file_and_line(line, message):
    run = sembed("eval", "structure", input=jsonl(WORDS[0], line, *WORDS[2:]))
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.stderr == f"error: <stdin>:2: {message}\n"


def test_one_sentence_is_not_enough():
    run = sembed("eval", "structure", input=jsonl(*WORDS[:2]))
    assert run.exit_code == 1
    assert run.stderr.startswith(
        "error: 2 content word(s) in 1 sentence(s): the test needs content words of at least two sentences"
    )


def test_bad_cluster_list_is_a_usage_error():
    run = sembed("eval", "structure", "--clusters", "10,x", input=jsonl(*WORDS))
    assert run.exit_code == 2


# --- embed --words ------------------------------------------------------------------------------------

# "The old man saw a dog ." as `sembed parse` writes it
TOKENS = [
    {"i": 0, "text": "The", "lemma": "the", "pos": "DET", "tag": "DT", "dep": "det", "head": 2},
    {"i": 1, "text": "old", "lemma": "old", "pos": "ADJ", "tag": "JJ", "dep": "amod", "head": 2},
    {"i": 2, "text": "man", "lemma": "man", "pos": "NOUN", "tag": "NN", "dep": "nsubj", "head": 3},
    {"i": 3, "text": "saw", "lemma": "see", "pos": "VERB", "tag": "VBD", "dep": "ROOT", "head": 3},
    {"i": 4, "text": "a", "lemma": "a", "pos": "DET", "tag": "DT", "dep": "det", "head": 5},
    {"i": 5, "text": "dog", "lemma": "dog", "pos": "NOUN", "tag": "NN", "dep": "dobj", "head": 3},
    {"i": 6, "text": ".", "lemma": ".", "pos": "PUNCT", "tag": ".", "dep": "punct", "head": 3},
]
SHORT = [{"i": 0, "text": "Cats", "dep": "nsubj", "head": 1}, {"i": 1, "text": "sleep", "dep": "ROOT", "head": 1}]
RECORDS = [
    {"id": "s1", "text": "The old man saw a dog.", "tokens": TOKENS, "triples": [], "label": 1},
    {"id": "s2", "text": "Cats sleep", "tokens": SHORT},
]


def test_depths_count_edges_to_the_root():
    assert depths(TOKENS) == [2, 2, 1, 0, 2, 1, 1]
    assert depths([{"i": 0, "head": 1}, {"i": 1, "head": 0}]) == [2, 1]  # a cycle ends


def test_embed_words_writes_one_record_per_word(tiny_model, one_torch_thread):
    from sembed_cli.models.contextual_words import WordEncoder

    run = sembed("embed", "--words", "-m", tiny_model, "--device", "cpu", "-b", "1", input=jsonl(*RECORDS))
    assert run.exit_code == 0, run.stderr
    words = run.records
    assert len(words) == 9
    first = words[0]
    assert list(first) == [
        "id",
        "text",
        "label",
        "word_index",
        "word",
        "lemma",
        "pos",
        "tag",
        "dep",
        "head_index",
        "head_dep",
        "depth",
        "sentence_index",
        "embedding",
        "embedding_model",
    ]
    assert [(w["word"], w["dep"], w["head_dep"], w["depth"]) for w in words[:7]] == [
        ("The", "det", "nsubj", 2),
        ("old", "amod", "nsubj", 2),
        ("man", "nsubj", "ROOT", 1),
        ("saw", "ROOT", "ROOT", 0),
        ("a", "det", "dobj", 2),
        ("dog", "dobj", "ROOT", 1),
        (".", "punct", "ROOT", 1),
    ]
    assert [w["head_index"] for w in words[:7]] == [2, 2, 3, 3, 5, 3, 3]
    assert [w["sentence_index"] for w in words] == [0] * 7 + [1] * 2
    assert words[7]["lemma"] is None and words[7]["id"] == "s2" and "label" not in words[7]
    expected = WordEncoder.open(tiny_model, device="cpu").encode([[t["text"] for t in TOKENS]])[0]
    got = torch.tensor([w["embedding"] for w in words[:7]])
    assert got.shape == (7, 2 * TINY_DIM)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_embed_words_feeds_eval_structure(tiny_model, one_torch_thread):
    records = [dict(RECORDS[0], id=n) for n in range(3)]
    words = sembed("embed", "--words", "-m", tiny_model, "--device", "cpu", input=jsonl(*records))
    run = sembed("eval", "structure", "-q", "--min-tag-count", "1", "--clusters", "2", input=words.stdout)
    assert run.exit_code == 0, run.stderr
    # the same sentence three times: each content word's nearest neighbour is itself in another copy
    assert run.records[0]["all"] == {
        "n": 12,
        "dep_edge": 1.0,
        "head_dep_edge": 1.0,
        "depth_r": 1.0,
        "lexical_match": 1.0,
    }


def test_embed_words_applies_a_syntax_map(tiny_model, tmp_path, one_torch_thread, monkeypatch):
    from sembed_cli.models.contextual_words import WordEncoder
    from sembed_cli.models.syntax_map import SyntaxMap

    encoder = WordEncoder.open(tiny_model, device="cpu")
    generator = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(5, encoder.dimension, generator=generator), torch.randn(5, generator=generator)
    directory = tmp_path / "map"
    directory.mkdir()
    SyntaxMap(weight, bias, encoder.describe()).save(directory)
    run = sembed("embed", "--words", "--syntax-map", str(directory), "--device", "cpu", input=jsonl(*RECORDS))
    assert run.exit_code == 0, run.stderr
    got = torch.tensor([w["embedding"] for w in run.records[:7]])
    expected = encoder.encode([[t["text"] for t in TOKENS]])[0] @ weight.T + bias
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
    same = sembed("embed", "--words", "--syntax-map", str(directory), "-m", tiny_model, input=jsonl(*RECORDS))
    assert same.exit_code == 0, same.stderr
    other = sembed("embed", "--words", "--syntax-map", str(directory), "-m", "all-MiniLM-L6-v2", input=jsonl(*RECORDS))
    assert other.exit_code == 2 and "Invalid value for '--model': the syntax map was trained on" in other.stderr
    assert "leave --model out with --syntax-map" in other.stderr
    monkeypatch.setenv("SEMBED_MODEL", "all-MiniLM-L6-v2")  # only a --model typed on the command line must match
    from_environment = sembed(
        "embed", "--words", "--syntax-map", str(directory), "--device", "cpu", input=jsonl(*RECORDS)
    )
    assert from_environment.exit_code == 0, from_environment.stderr
    assert from_environment.records == run.records


def test_embed_words_to_npy_and_shards(tiny_model, tmp_path, one_torch_thread):
    npy = tmp_path / "words.npy"
    run = sembed("embed", "--words", "-m", tiny_model, "--npy", str(npy), input=jsonl(*RECORDS))
    assert run.exit_code == 0, run.stderr
    assert [w["embedding_row"] for w in run.records] == list(range(9))
    assert np.load(npy).shape == (9, 2 * TINY_DIM)
    second = sembed("embed", "--words", "-m", tiny_model, "--shard", "2/2", input=jsonl(*RECORDS))
    assert {w["sentence_index"] for w in second.records} == {1} and len(second.records) == 2


def test_embed_words_parses_text_without_tokens(tiny_model, one_torch_thread):
    record = {"text": "The dog barked at the mailman."}
    run = sembed("embed", "--words", "-m", tiny_model, input=jsonl(record))
    assert run.exit_code == 0, run.stderr
    parsed = sembed("parse", input=jsonl(record)).records[0]
    with_tokens = sembed("embed", "--words", "-m", tiny_model, input=jsonl(parsed))
    assert run.records == with_tokens.records
    assert [w["word"] for w in run.records] == ["The", "dog", "barked", "at", "the", "mailman", "."]


@pytest.mark.parametrize(
    "record, message",
    [
        ({"id": 1}, "missing key 'tokens' (or 'text' to parse)"),
        (
            {"tokens": [{"i": 0, "text": "Hi", "head": 0}]},
            "'tokens'[0] needs 'dep' as a string, got null (run sembed parse: --words needs dependency labels)",
        ),
        (
            {"tokens": [{"i": 0, "text": "Hi", "dep": "ROOT", "head": 4}]},
            "'tokens'[0] has head 4, which is no token's 'i'",
        ),
    ],
)
def test_embed_words_bad_records(tiny_model, record, message, one_torch_thread):
    run = sembed("embed", "--words", "-m", tiny_model, "-b", "1", input=jsonl(RECORDS[1], record))
    assert run.exit_code == 1
    assert len(run.records) == 2  # the first record's words were written
    assert run.stderr == f"error: <stdin>:2: {message}\n"


@pytest.mark.parametrize(
    "options, flag",
    [
        (["--syntax-map", "x"], "--syntax-map"),
        (["--words", "--cf-weight", "0.2"], "--cf-weight"),
        (["--words", "--method", "avg"], "--method"),
        (["--words", "-k", "text_a", "-k", "text_b"], "--text-key"),
    ],
)
def test_embed_words_usage_errors(options, flag):
    run = sembed("embed", *options, input=jsonl(RECORDS[1]))
    assert run.exit_code == 2 and flag in run.stderr
