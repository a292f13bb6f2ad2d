"""sembed spo: S_cf of CF-BERT (section 3.3), on the packaged spaCy parses and through the CLI."""

from __future__ import annotations

from typing import ClassVar

import pytest
from conftest import jsonl, sembed

from sembed_cli.io import TextFields
from sembed_cli.text import spacy_pipeline
from sembed_cli.text.component_focus import component_words, s_cf, spo_records
from sembed_cli.text.dependency import doc_tokens

TABLE_1 = [
    ("An Asian woman in a crowd is not carrying a black bag", "woman not carrying bag"),
    ("A man attacks a woman", "man attacks woman"),
]

# Each expectation was checked against the parse the packaged pipeline gives.
SHAPES = [
    # plain transitive clauses
    ("A woman is slicing an onion.", "woman slicing onion"),
    ("A man is playing a guitar.", "man playing guitar"),
    # passive: the agent keeps its "by", so who did what survives
    ("The ball was kicked by the boy.", "ball kicked by boy"),
    ("An onion is being cut by a man", "onion cut by man"),
    ("The boy was given a gift.", "boy given gift"),
    # clausal subjects stand where the subject stands
    ("To err is human.", "err human"),
    ("Eating vegetables is healthy.", "Eating vegetables healthy"),
    ("Whoever wins gets a prize.", "Whoever wins gets prize"),
    # no subject or object: nouns and verbs (and negation) in order
    ("A black dog.", "dog"),
    ("A man in a hat.", "man hat"),
    ("Not a good idea.", "Not idea"),
    # questions; the subject spaCy hangs on "Is" belongs to the verb
    ("Who ate the cake?", "Who ate cake"),
    ("Where is the cat?", "cat is"),
    ("Is the cat sleeping?", "cat sleeping"),
    ("Did you see the movie?", "you see movie"),
    # negation: not, n't (written "not", also with a curly apostrophe), never, no
    ("I don't like apples.", "I not like apples"),
    ("The man isn’t playing the guitar.", "man not playing guitar"),
    ("I can't swim.", "I not swim"),
    ("She never eats meat.", "She never eats meat"),
    ("I have never seen a whale.", "I never seen whale"),
    ("He has no money.", "He has no money"),
    ("No man is walking.", "No man walking"),
    ("He never said no.", "He never said no"),
    ("No, you do not need a bread machine.", "No you not need machine"),
    # coordination: conjuncts share the role, coordinated verbs are predicates
    ("John and Mary bought a car and a house.", "John Mary bought car house"),
    ("A woman picks up and holds a baby kangaroo in her arms.", "woman picks holds kangaroo in arms"),
    # pronoun subjects, indirect objects
    ("It is raining.", "It raining"),
    ("He gave her a book.", "He gave her book"),
    ("He gave a book to her.", "He gave book to her"),
    # prepositional objects count on a verb or predicate, not inside a noun phrase
    ("He sat on the chair.", "He sat on chair"),
    ("Two dogs are running through a field.", "dogs running through field"),
    ("The dog is not snapping at some droplets of water.", "dog not snapping at droplets"),
    ("A woman with a ponytail is climbing a wall of rock.", "woman climbing wall"),
    # copula: the complement is the predicate, as in the Stanford analysis
    ("She is not happy.", "She not happy"),
    ("He is a doctor.", "He doctor"),
    ("She is afraid of dogs.", "She afraid of dogs"),
    ("The cat is on the mat.", "cat is on mat"),
    # several clauses and sentences
    ("The man is cutting a tomato and the woman is slicing an onion.", "man cutting tomato woman slicing onion"),
    ("The cat that chased the mouse is sleeping.", "cat sleeping that chased mouse"),
    ("I think that he left.", "I think he left"),
    ("The boy wants to eat an apple.", "boy wants eat apple"),
    ("A man is slicing a potato. A woman is peeling an onion.", "man slicing potato woman peeling onion"),
    ("A cute puppy. The puppy sleeps.", "puppy puppy sleeps"),
    # imperatives
    ("Close the door.", "Close door"),
    ("Don't touch that!", "not touch that"),
    ("Never give up.", "Never give"),
    # there is / there are: the noun after the verb is the subject
    ("There is a dog in the yard.", "dog is"),
    ("There is no water in the glass.", "no water is"),
    # the same spelling twice is two words; a token is never written twice
    ("A dog chases another dog.", "dog chases dog"),
    # one word, and texts that give no word at all keep their own text
    ("Dogs", "Dogs"),
    ("Run!", "Run"),
    ("Hello", "Hello"),
    ("...", "..."),
    ("!!!", "!!!"),
]


@pytest.fixture(scope="module")
def nlp():
    return spacy_pipeline.load(spacy_pipeline.DEFAULT_MODEL, spacy_pipeline.PARSE)


@pytest.mark.parametrize("text, expected", TABLE_1)
def test_paper_table_1(nlp, text, expected):
    assert s_cf(doc_tokens(nlp(text)), text) == expected


@pytest.mark.parametrize("text, expected", SHAPES)
def test_sentence_shapes(nlp, text, expected):
    assert s_cf(doc_tokens(nlp(text)), text) == expected


def stanford(triples: list[tuple[str, str, str, str, str]], words: list[tuple[str, str]]) -> list[dict]:
    """Tokens from the paper's Table 3 triples: (head, dep, child) by word, heads found by spelling."""
    position = {w: n for n, (w, _) in enumerate(words)}
    tokens = [
        {"i": n, "text": w, "lemma": w.lower(), "pos": "", "tag": tag, "dep": "ROOT", "head": n}
        for n, (w, tag) in enumerate(words)
    ]
    for head, dep, child in triples:
        tokens[position[child]].update(dep=dep, head=position[head])
    return tokens


def test_paper_table_3_stanford_parses_give_table_1():
    """The paper's own parses (Table 3): one through subj/obj, the other through the noun/verb fallback."""
    woman = stanford(
        [
            ("carrying", "nsubj", "woman"),
            ("woman", "det", "An"),
            ("woman", "amod", "Asian"),
            ("woman", "amod", "crowd"),
            ("crowd", "case", "in"),
            ("crowd", "det", "a"),
            ("carrying", "aux", "is"),
            ("carrying", "neg", "not"),
            ("carrying", "dobj", "bag"),
            ("bag", "det", "a2"),
            ("bag", "amod", "black"),
        ],
        [
            ("An", "DT"),
            ("Asian", "JJ"),
            ("woman", "NN"),
            ("in", "IN"),
            ("a", "DT"),
            ("crowd", "NN"),
            ("is", "VBZ"),
            ("not", "RB"),
            ("carrying", "VBG"),
            ("a2", "DT"),
            ("black", "JJ"),
            ("bag", "NN"),
        ],
    )
    assert " ".join(component_words(woman)) == "woman not carrying bag"
    man = stanford(
        [("man", "det", "A"), ("man", "dep", "attacks"), ("man", "dep", "woman"), ("woman", "det", "a")],
        [("A", "DT"), ("man", "NN"), ("attacks", "NNS"), ("a", "DT"), ("woman", "NN")],
    )
    assert " ".join(component_words(man)) == "man attacks woman"


def test_never_empty_and_tolerant_of_odd_parses():
    assert s_cf([], "Hm.") == "Hm."
    looped = [
        {"i": 0, "text": "dogs", "tag": "NNS", "dep": "nsubj", "head": 1},
        {"i": 1, "text": "bark", "tag": "VBP", "dep": "ROOT", "head": 0},
        {"i": 2, "text": "loudly", "tag": "RB", "dep": "advmod", "head": 9},
    ]
    assert s_cf(looped, "dogs bark loudly") == "dogs bark"


# The CLI


def test_parse_then_spo_equals_spo_alone():
    records = [{"text": text, "id": n} for n, (text, _) in enumerate(TABLE_1 + SHAPES[:8])]
    alone = sembed("spo", input=jsonl(*records))
    piped = sembed("spo", input=sembed("parse", input=jsonl(*records)).stdout)
    assert alone.exit_code == piped.exit_code == 0
    assert [r["s_cf"] for r in alone.records] == [r["s_cf"] for r in piped.records]
    assert [r["s_cf"] for r in alone.records[:2]] == [expected for _, expected in TABLE_1]
    assert list(alone.records[0]) == ["text", "id", "s_cf"]  # spo adds s_cf only, after the input fields
    assert list(piped.records[0]) == ["text", "id", "tokens", "triples", "s_cf"]


def test_tokens_given_are_used_and_spacy_is_not_loaded():
    tokens = [
        {"i": 0, "text": "cats", "lemma": "cat", "pos": "NOUN", "tag": "NNS", "dep": "nsubj", "head": 1},
        {"i": 1, "text": "purr", "lemma": "purr", "pos": "VERB", "tag": "VBP", "dep": "ROOT", "head": 1},
    ]
    run = sembed(
        "spo", "--model", "no_such_pipeline", input=jsonl({"text": "(not what the tokens say)", "tokens": tokens})
    )
    assert run.exit_code == 0
    assert run.records[0]["s_cf"] == "cats purr"
    run = sembed("spo", "--model", "no_such_pipeline", input=jsonl({"text": "A dog barks."}))
    assert run.exit_code == 1
    assert run.stderr.startswith("error: spaCy pipeline 'no_such_pipeline' is not installed (hint: pip install")


def test_pairs_and_text_key():
    run = sembed("spo", input=jsonl({"text_a": TABLE_1[0][0], "text_b": TABLE_1[1][0], "score": 4.2}))
    assert run.exit_code == 0
    assert run.records == [
        {
            "text_a": TABLE_1[0][0],
            "text_b": TABLE_1[1][0],
            "score": 4.2,
            "s_cf_a": TABLE_1[0][1],
            "s_cf_b": TABLE_1[1][1],
        }
    ]
    run = sembed("spo", "--text-key", "question", input=jsonl({"question": "Who ate the cake?"}))
    assert run.exit_code == 0
    assert run.records == [{"question": "Who ate the cake?", "s_cf_question": "Who ate cake"}]


def test_pair_with_one_side_parsed():
    parsed = sembed("parse", "-k", "text_a", input=jsonl({"text_a": "A man attacks a woman", "text_b": "Dogs"}))
    run = sembed("spo", input=parsed.stdout)
    assert run.exit_code == 0
    assert (run.records[0]["s_cf_a"], run.records[0]["s_cf_b"]) == ("man attacks woman", "Dogs")


def test_missing_text_key_stops_after_earlier_records():
    run = sembed("spo", "-b", "1", input=jsonl({"text": "A man attacks a woman", "id": 1}, {"id": 2}, {"text": "x"}))
    assert run.exit_code == 1
    assert run.stderr == "error: <stdin>:2: missing key 'text' (or 'text_a'/'text_b'; --text-key names another)\n"
    assert run.records == [{"text": "A man attacks a woman", "id": 1, "s_cf": "man attacks woman"}]


@pytest.mark.parametrize(
    "tokens, message",
    [
        ("A man", "'tokens' must be a list of tokens, got a string"),
        ([["A", 0]], "'tokens'[0] must be a token object, got an array"),
        ([{"i": 0, "text": "A", "dep": "ROOT"}], "'tokens'[0] needs 'head' as a number, got null"),
    ],
)
def test_unusable_tokens_field(tokens, message):
    run = sembed("spo", input=jsonl({"text": "Dogs bark.", "id": 1}, {"text": "A man", "tokens": tokens}))
    assert run.exit_code == 1
    assert run.stderr == f"error: <stdin>:2: {message}\n"
    assert [r["id"] for r in run.records] == [1]


def test_skip_errors_and_batches_agree():
    lines = jsonl({"text": "A man attacks a woman"}, {"text": 3}, {"text": "Close the door."})
    whole = sembed("spo", "--skip-errors", input=lines)
    one_by_one = sembed("spo", "--skip-errors", "-b", "1", input=lines)
    assert whole.exit_code == one_by_one.exit_code == 0
    assert (
        [r["s_cf"] for r in whole.records]
        == [r["s_cf"] for r in one_by_one.records]
        == ["man attacks woman", "Close door"]
    )
    assert whole.stderr == (
        "warning: skipped 1 bad record(s) in <stdin>: line 2; first: 'text' must be a string, got a number\n"
    )


def test_spo_records_parses_only_what_lacks_tokens(nlp):
    class CountingPipeline:
        texts: ClassVar[list[str]] = []

        def pipe(self, texts, batch_size):
            texts = list(texts)
            self.texts += texts
            return nlp.pipe(texts, batch_size=batch_size)

    counting = CountingPipeline()
    parsed = {"text": "A man attacks a woman", "tokens": doc_tokens(nlp("A man attacks a woman"))}
    records = [parsed, {"text": "He sat on the chair."}, {"text_a": "Dogs", "text_b": "Close the door."}]
    out = list(spo_records(iter(records), counting, TextFields(), batch_size=2))
    assert counting.texts == ["He sat on the chair.", "Dogs", "Close the door."]
    assert [r.get("s_cf") for r in out] == ["man attacks woman", "He sat on chair", None]
    assert (out[2]["s_cf_a"], out[2]["s_cf_b"]) == ("Dogs", "Close door")
    assert "tokens" not in out[1]
