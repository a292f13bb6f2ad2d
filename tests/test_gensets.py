"""sembed gensets: structurally equivalent sentence sets (syntax-distillation paper, section 3.1).

The masked-LM here is a tiny BERT over a word-level vocabulary whose decoder
weights are zero, so its logits are its output bias: the same ranking of
words at every position, which makes the candidates known in advance. The
unit tests tag with a lexicon (a fake tagger) so that which candidate keeps
the tag is known too; the CLI tests use the packaged spaCy pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import jsonl, sembed

torch = pytest.importorskip("torch")

from sembed_cli.models.masked_lm import MaskedLM  # noqa: E402
from sembed_cli.text import spacy_pipeline  # noqa: E402
from sembed_cli.text.structural_sets import (  # noqa: E402
    FUNCTION_WORDS,
    SetGenerator,
    Tagger,
    candidate_word,
    match_case,
    replaceable,
    tagger_context,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    ",",
    "the",
    "a",
    "in",
    "it",
    "x",
    "42",
    "##s",
    "dog",
    "cat",
    "house",
    "garden",
    "fish",
    "runs",
    "sleeps",
    "eats",
    "big",
    "small",
    "red",
    "happy",
    "quickly",
    "un",
    "##fold",
    "##ing",
]
# the bias ranking: junk first (a word piece, a special token, punctuation, a function word, a letter, a number),
# then the eligible words in this order
RANKING = [
    "##s",
    "[SEP]",
    ",",
    "the",
    "x",
    "42",
    "cat",
    "runs",
    "house",
    "quickly",
    "big",
    "fish",
    "small",
    "eats",
    "sleeps",
    "red",
    "garden",
    "dog",
    "happy",
]
ELIGIBLE = RANKING[6:]
LEXICON = {
    "dog": "NN",
    "cat": "NN",
    "house": "NN",
    "garden": "NN",
    "fish": "NN",
    "runs": "VBZ",
    "sleeps": "VBZ",
    "eats": "VBZ",
    "big": "JJ",
    "small": "JJ",
    "red": "JJ",
    "happy": "JJ",
    "quickly": "RB",
    "the": "DT",
    "a": "DT",
    "in": "IN",
    "it": "PRP",
    ".": ".",
    ",": ",",
}
SENTENCE = "The dog sleeps in the big garden."
WORDS = ["The", "dog", "sleeps", "in", "the", "big", "garden", "."]


def build_mlm(root: Path, ranked: bool = True, max_positions: int = 40) -> Path:
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    root.mkdir(parents=True)
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    tokenizer = BertTokenizerFast(str(root / "vocab.txt"), do_lower_case=True)
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=max_positions,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    model = BertForMaskedLM(config)
    if ranked:
        with torch.no_grad():
            model.cls.predictions.decoder.weight.zero_()
            bias = torch.full((len(VOCAB),), -10.0)
            for rank, entry in enumerate(RANKING):
                bias[VOCAB.index(entry)] = 20.0 - rank
            model.cls.predictions.decoder.bias.copy_(bias)
    model.save_pretrained(root)
    tokenizer.save_pretrained(root)
    return root


@pytest.fixture(scope="module")
def tiny_mlm(tmp_path_factory) -> Path:
    return build_mlm(tmp_path_factory.mktemp("gensets") / "mlm")


@pytest.fixture(scope="module")
def mlm(tiny_mlm) -> MaskedLM:
    return MaskedLM.load(tiny_mlm)


@pytest.fixture(scope="module")
def tokenizer():
    import spacy

    return spacy.blank("en").tokenizer


class LexiconTagger:
    """Tags by a word list (lower case), whatever the context; counts the words it is asked to tag in context."""

    def __init__(self):
        self.asked = 0

    def tag(self, sentences):
        return [[LEXICON.get(w.lower(), "XX") for w in words] for words, _ in sentences]

    def tags_at(self, items):
        self.asked += len(items)
        return [LEXICON.get(words[i].lower(), "XX") for words, _, i in items]


def generator(mlm, tokenizer, tagger=None, **options) -> SetGenerator:
    return SetGenerator(mlm, tagger or LexiconTagger(), tokenizer, **options)


def sets(gen: SetGenerator, *records: dict) -> list[dict]:
    return list(gen.generate([dict(r) for r in records]))


# --- pieces --------------------------------------------------------------------------------------------


def test_function_words_punctuation_and_numbers_are_not_replaceable():
    assert len(FUNCTION_WORDS) >= 36
    assert [
        w
        for w in ["The", "dog", "is", "n't", "61", ",", "N.V.", "well-known", "Pierre", "of", "they"]
        if replaceable(w)
    ] == ["dog", "Pierre"]
    assert not any(candidate_word(w) for w in ["##s", "x", "42", "the", "[SEP]", "it's", "москва"])
    assert candidate_word("café") and candidate_word("dog")


def test_an_uncased_guess_takes_the_originals_capitalisation():
    assert match_case("cat", "Dog", first=False, uncased=True) == "Cat"
    assert match_case("cat", "DOG", first=False, uncased=True) == "CAT"
    assert match_case("cat", "dog", first=True, uncased=True) == "cat"
    assert match_case("cat", "A", first=False, uncased=True) == "Cat"
    assert match_case("London", "dog", first=False, uncased=False) == "London"
    assert match_case("cat", "Dog", first=True, uncased=False) == "Cat"


def test_candidates_are_whole_words_best_first_without_the_word_itself(mlm):
    words, spaces = WORDS, [True] * 6 + [False, False]
    assert mlm.uncased
    assert mlm.candidates([(words, spaces, 1)], 30) == [[w for w in ELIGIBLE if w != "dog"] + ["un"]]
    assert mlm.candidates([(words, spaces, 1), (words, spaces, 2)], 3) == [["cat", "runs", "house"]] * 2
    assert mlm.candidates([(["A", "Cat"], [True, False], 1)], 2) == [["runs", "house"]]


def test_a_word_of_several_pieces_is_masked_as_one_mask(mlm):
    words, spaces = ["the", "unfolding", "dog"], [True, True, False]
    ids, where = mlm.encode(words, spaces)
    assert mlm.tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "the", "un", "##fold", "##ing", "dog", "[SEP]"]
    assert where == -1
    ids, where = mlm.encode(words, spaces, masked=1)
    assert mlm.tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "the", "[MASK]", "dog", "[SEP]"] and where == 2


def test_logits_at_the_mask_only_equal_the_full_forward(tmp_path):
    mlm = MaskedLM.load(build_mlm(tmp_path / "random", ranked=False))
    assert mlm.split is not None
    rows = [mlm.encode(WORDS, [True] * 8, masked=i) for i in (1, 2, 5)]
    ids, where = [r[0] for r in rows], [r[1] for r in rows]
    fast = mlm.mask_logits(ids, where)
    mlm.split = None
    full = mlm.mask_logits(ids, where)
    assert torch.allclose(fast, full, atol=1e-5)


def test_the_small_pipelines_tagger_is_tagged_in_a_window_with_the_same_tags():
    nlp = spacy_pipeline.load(spacy_pipeline.DEFAULT_MODEL, ("tagger",))
    tagger = Tagger(nlp)
    assert tagger_context(nlp) == tagger.context == 4
    words = "Pierre Vinken , 61 years old , will join the board as a nonexecutive director Nov. 29 .".split()
    spaces = [True] * (len(words) - 1) + [False]
    whole = tagger.tag([(words, spaces)])[0]
    assert tagger.tags_at([(words, spaces, i) for i in range(len(words))]) == whole
    assert whole[:5] == ["NNP", "NNP", ",", "CD", "NNS"]


# --- sets ----------------------------------------------------------------------------------------------


def test_variants_keep_the_word_count_and_stay_aligned(mlm, tokenizer):
    [record] = sets(generator(mlm, tokenizer), {"text": SENTENCE})
    assert len(record["sentences"]) == len(record["words"]) == 7
    assert record["words"][0] == WORDS and record["sentences"][0] == SENTENCE
    assert record["pos"] == ["DT", "NN", "VBZ", "IN", "DT", "JJ", "NN", "."]
    for words, text in zip(record["words"], record["sentences"]):
        assert len(words) == len(WORDS)
        assert text == " ".join(words[:-1]) + "."  # written back with the original's spacing
    assert any(words != WORDS for words in record["words"][1:])


def test_function_words_punctuation_and_numbers_are_never_replaced(mlm, tokenizer):
    text = "It is the dog, 42 cats and a fish in 1999 that the house has."
    [record] = sets(generator(mlm, tokenizer, k=12), {"text": text})
    original = record["words"][0]
    fixed = [i for i, w in enumerate(original) if not replaceable(w)]
    assert [original[i] for i in fixed] == [
        "It",
        "is",
        "the",
        ",",
        "42",
        "and",
        "a",
        "in",
        "1999",
        "that",
        "the",
        "has",
        ".",
    ]
    for words in record["words"][1:]:
        assert [words[i] for i in fixed] == [original[i] for i in fixed]


def test_only_candidates_with_the_original_tag_are_chosen(mlm, tokenizer):
    [record] = sets(generator(mlm, tokenizer, k=20), {"text": SENTENCE})
    allowed = {
        1: {"cat", "house", "fish", "garden"},
        2: {"runs", "eats"},
        5: {"small", "red", "happy"},
        6: {"cat", "house", "fish", "dog"},
    }
    for words in record["words"][1:]:
        for i, choices in allowed.items():
            assert words[i] in choices
    assert {words[1] for words in record["words"][1:]} == allowed[1]  # all of them drawn at some point


def test_a_word_stays_when_no_candidate_keeps_its_tag(mlm, tokenizer):
    # the top 3 are cat, runs, house: no adjective, so "big" stays; "sleeps" can only become "runs"
    [record] = sets(generator(mlm, tokenizer, top=3), {"text": SENTENCE})
    assert {w[5] for w in record["words"][1:]} == {"big"}
    assert {w[2] for w in record["words"][1:]} == {"runs"}


def test_candidates_are_tagged_lazily(mlm, tokenizer):
    tagger = LexiconTagger()
    sets(generator(mlm, tokenizer, tagger), {"text": SENTENCE})
    everything = 6 * 4 * (len(ELIGIBLE) - 1)  # 6 variants, 4 content words, every candidate
    assert 24 <= tagger.asked < everything / 2


def test_capitalisation_follows_the_original(mlm, tokenizer):
    [record] = sets(generator(mlm, tokenizer), {"text": "Dog sleeps in the HOUSE."})
    assert all(
        w[0] in {"Cat", "House", "Fish", "Garden"} and w[4] in {"CAT", "FISH", "GARDEN", "DOG"}
        for w in record["words"][1:]
    )


def test_k_and_top(mlm, tokenizer):
    [record] = sets(generator(mlm, tokenizer, k=2, top=1), {"text": SENTENCE})
    assert record["words"][1:] == [["The", "cat", "sleeps", "in", "the", "big", "cat", "."]] * 2


def test_same_seed_same_sets_another_seed_other_sets(mlm, tokenizer):
    records = [{"text": SENTENCE}, {"text": "A small fish eats the red dog."}]
    first = sets(generator(mlm, tokenizer, seed=1), *records)
    assert sets(generator(mlm, tokenizer, seed=1, batch_size=1), *records) == first
    other = sets(generator(mlm, tokenizer, seed=2), *records)
    assert [r["words"] for r in other] != [r["words"] for r in first]
    assert [r["words"][0] for r in other] == [r["words"][0] for r in first]


def test_set_ids_and_passed_through_fields(mlm, tokenizer):
    records = [
        {"doc_id": "d", "text": SENTENCE, "extra": [1, 2]},
        {"id": "s-7", "text": "A dog runs."},
        {"text": "The cat eats."},
    ]
    out = sets(generator(mlm, tokenizer), *records)
    assert [r["set_id"] for r in out] == [0, "s-7", 2]
    assert list(out[0]) == ["doc_id", "text", "extra", "set_id", "sentences", "words", "pos"]
    assert out[0]["extra"] == [1, 2] and out[0]["doc_id"] == "d"


def test_tokens_of_a_parse_give_the_words_and_the_tags(mlm, tokenizer):
    tokens = [
        {"i": 0, "text": "The", "tag": "DT"},
        {"i": 1, "text": "dog", "tag": "NN"},
        {"i": 2, "text": "sleeps", "tag": "VBZ"},
        {"i": 3, "text": ".", "tag": "."},
    ]
    [record] = sets(generator(mlm, tokenizer), {"text": "The dog  sleeps.", "tokens": tokens})
    assert record["pos"] == ["DT", "NN", "VBZ", "."]
    assert record["sentences"][0] == "The dog sleeps."
    assert all(len(w) == 4 and w[1] in {"cat", "house", "fish", "garden"} for w in record["words"][1:])


# --- the command ---------------------------------------------------------------------------------------


def gensets(tiny_mlm, *args: str, input: str) -> object:
    return sembed("gensets", "--mlm", str(tiny_mlm), "--device", "cpu", "-q", *args, input=input)


def test_cli_writes_one_set_per_record(tiny_mlm, tmp_path):
    lines = jsonl({"text": SENTENCE, "score": 1.5}, {"id": 9, "text": "A small fish eats the red dog."})
    run = gensets(tiny_mlm, "--k", "3", input=lines)
    assert run.exit_code == 0, run.stderr
    assert run.stderr == ""
    records = run.records
    assert [r["set_id"] for r in records] == [0, 9] and records[0]["score"] == 1.5
    assert all(len(r["sentences"]) == len(r["words"]) == 4 for r in records)
    assert all(len({len(w) for w in r["words"]}) == 1 and len(r["pos"]) == len(r["words"][0]) for r in records)
    path = tmp_path / "in.jsonl"
    path.write_text(lines)
    from_file = sembed(
        "gensets",
        str(path),
        "--mlm",
        str(tiny_mlm),
        "--device",
        "cpu",
        "--k",
        "3",
        "-q",
        "-o",
        str(tmp_path / "out.jsonl"),
    )
    assert from_file.exit_code == 0 and from_file.stdout == ""
    assert (tmp_path / "out.jsonl").read_text() == run.stdout


def test_cli_same_seed_same_output(tiny_mlm):
    lines = jsonl(*({"text": t} for t in [SENTENCE, "The happy cat runs in the garden.", "A dog eats fish."]))
    one = gensets(tiny_mlm, "--seed", "5", input=lines)
    assert gensets(tiny_mlm, "--seed", "5", "-b", "1", input=lines).stdout == one.stdout
    assert gensets(tiny_mlm, "--seed", "6", input=lines).stdout != one.stdout


@pytest.mark.parametrize(
    "line, message",
    [
        ("{not json", "invalid JSON: unexpected character, expected a string key at column 2"),
        ('{"txt": "A dog."}', "missing key 'text'"),
        ('{"text": "   "}', "empty text in 'text'"),
        ('{"text": 3}', "'text' must be a string, got a number"),
        ('{"text": "A dog.", "tokens": "A dog"}', "'tokens' must be a list of tokens, got a string"),
    ],
)
def test_cli_bad_input_stops_at_its_line_with_earlier_sets_written(tiny_mlm, line, message):
    run = gensets(tiny_mlm, input=jsonl({"text": SENTENCE}) + line + "\n")
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:2: {message}\n"
    assert [r["set_id"] for r in run.records] == [0]


def test_cli_skip_errors_keeps_positions(tiny_mlm):
    lines = jsonl({"text": SENTENCE}) + "{bad\n" + jsonl({"text": "A dog runs."})
    quiet = gensets(tiny_mlm, "--skip-errors", input=lines)
    assert (quiet.exit_code, quiet.stderr) == (0, "")  # -q: errors only
    run = sembed("gensets", "--mlm", str(tiny_mlm), "--device", "cpu", "--skip-errors", input=lines)
    assert run.exit_code == 0 and run.records == quiet.records
    assert [r["set_id"] for r in run.records] == [0, 2]
    assert run.stderr.startswith("warning: skipped 1 bad record(s) in <stdin>: line 2; first: invalid JSON")


def test_cli_shard_ids_are_input_positions(tiny_mlm):
    lines = jsonl(*({"text": f"The dog {w}."} for w in ["runs", "eats", "sleeps", "runs", "eats"]))
    run = gensets(tiny_mlm, "--shard", "2/2", input=lines)
    assert run.exit_code == 0 and [r["set_id"] for r in run.records] == [1, 3]
    whole = {r["set_id"]: r["words"] for r in gensets(tiny_mlm, input=lines).records}
    assert all(whole[r["set_id"]] == r["words"] for r in run.records)


def test_cli_a_sentence_longer_than_the_masked_lm_takes_is_bad_input(tiny_mlm):
    long = " ".join(["dog"] * 45)
    run = gensets(tiny_mlm, input=jsonl({"text": SENTENCE}, {"text": long}))
    assert run.exit_code == 1
    assert run.stderr == (
        "error: <stdin>:2: the sentence is 47 word pieces long, more than the masked-LM takes "
        "(40); split it, or --skip-errors to leave it out\n"
    )
    assert len(run.records) == 1


def test_cli_missing_masked_lm(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    run = sembed("gensets", "-q", input=jsonl({"text": SENTENCE}))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: no masked-LM at {tmp_path}/sembed/minilm-mlm (the default --mlm) (hint: run "
        "examples/build_mlm.sh to build it, or pass --mlm with any Hugging Face masked-LM directory "
        "such as bert-base-uncased)\n"
    )
    run = sembed("gensets", "--mlm", str(tmp_path / "nowhere"), input=jsonl({"text": SENTENCE}))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"error: no masked-LM directory at '{tmp_path / 'nowhere'}' (no config.json)")


def test_cli_masked_lm_from_the_environment(tiny_mlm, monkeypatch):
    monkeypatch.setenv("SEMBED_MLM", str(tiny_mlm))
    run = sembed("gensets", "--k", "1", "--device", "cpu", input=jsonl({"text": SENTENCE}))
    assert run.exit_code == 0, run.stderr
    assert len(run.records[0]["sentences"]) == 2


def test_cli_usage_errors(tiny_mlm):
    assert gensets(tiny_mlm, "--k", "0", input="").exit_code == 2
    assert gensets(tiny_mlm, "--top", "0", input="").exit_code == 2


def test_precision(tiny_mlm, monkeypatch):
    run = gensets(tiny_mlm, "--precision", "fp16", input=jsonl({"text": SENTENCE}))
    assert run.exit_code == 1
    assert run.stderr == (
        "error: --precision fp16 needs CUDA; on the CPU this command runs in fp32 or bf16 "
        "(hint: use --precision auto, fp32 or bf16)\n"
    )
    assert gensets(tiny_mlm, "--precision", "int4", input="").exit_code == 2
    fp32, bf16 = (gensets(tiny_mlm, "--precision", p, input=jsonl({"text": SENTENCE})) for p in ("fp32", "bf16"))
    assert fp32.exit_code == bf16.exit_code == 0 and fp32.stdout == bf16.stdout  # the tiny model's ranking is exact
