"""sembed normalize: TA-SBERT's base-form conversion (paper 001, section III-A), unit and CLI."""

from __future__ import annotations

import csv
import itertools

import pytest
from conftest import jsonl, sembed

from sembed_cli.io import TextFields
from sembed_cli.text import spacy_pipeline
from sembed_cli.text.base_form import analysis_text, base_forms, has_apostrophe, normalize_records


@pytest.fixture(scope="session")
def nlp():
    return spacy_pipeline.load(spacy_pipeline.DEFAULT_MODEL, spacy_pipeline.TAG)


CASES = [
    # Fixed clitics and negations (Fig. 1(c): "won't" -> "will not").
    ("I won't go.", "I will not go."),
    ("I can't swim.", "I can not swim."),
    ("I'm happy.", "I am happy."),
    ("They're late.", "They are late."),
    ("We've seen it.", "We have seen it."),
    ("You'll see.", "You will see."),
    ("It isn't red.", "It is not red."),
    ("Don't do that.", "Do not do that."),
    ("They didn't come and she shan't.", "They did not come and she shall not."),
    ("He could've won.", "He could have won."),
    ("You shouldn't've said it.", "You should not have said it."),
    # "ain't": the form of "be" the subject takes, or "have"/"has" before a participle.
    ("I ain't sure.", "I am not sure."),
    ("They ain't here.", "They are not here."),
    ("He ain't happy.", "He is not happy."),
    ("I ain't got it.", "I have not got it."),
    # "'s": is, has, us, possessive.
    ("It's fine.", "It is fine."),
    ("He's tall.", "He is tall."),
    ("He's gone.", "He has gone."),
    ("She's been there.", "She has been there."),
    ("She's finished it.", "She has finished it."),
    ("It's broken.", "It is broken."),
    ("He's not here.", "He is not here."),
    ("He's never been.", "He has never been."),
    ("There's a cat and that's it.", "There is a cat and that is it."),
    ("What's up?", "What is up?"),
    ("Let's go.", "Let us go."),
    ("John's car is red.", "John car is red."),
    ("The boss's car.", "The boss car."),
    ("The man's in the car.", "The man is in the car."),
    ("The dogs' bowl is empty.", "The dogs bowl is empty."),
    ("James' book.", "James book."),
    ("It's the cat's toy.", "It is the cat toy."),
    ("Music of the 90's.", "Music of the 90s."),
    ("Where's Rusty? Who's there?", "Where is Rusty? Who is there?"),
    ("A dog with a ball in it's mouth, if it's water.", "A dog with a ball in its mouth, if it is water."),
    # "'d": would or had.
    ("She'd go.", "She would go."),
    ("She'd gone.", "She had gone."),
    ("She'd better leave.", "She had better leave."),
    ("We'd rather not.", "We would rather not."),
    ("He'd had enough.", "He had had enough."),
    ("I'd never seen it.", "I had never seen it."),
    ("I'd've known.", "I would have known."),
    # Curly and modifier-letter apostrophes.
    ("It\u2019s John\u2019s car.", "It is John car."),
    ("She\u2019d gone and we\u2019re late.", "She had gone and we are late."),
    ("I don\u2018t know.", "I do not know."),
    ("We don\u02bct know.", "We do not know."),
    # Case: capitals kept, shouted contractions shouted.
    ("Won't you?", "Will not you?"),
    ("Can't stop.", "Can not stop."),
    ("I'M HERE.", "I AM HERE."),
    ("WON'T!", "WILL NOT!"),
    ("JOHN'S CAR IS RED AND HE'S GONE.", "JOHN CAR IS RED AND HE HAS GONE."),
    ("LET'S GO.", "LET US GO."),
    # Several in one sentence, and spaCy's own norms.
    (
        "I'm sure they're right, but we can't go and it's late.",
        "I am sure they are right, but we can not go and it is late.",
    ),
    ("He's got a car and she'd like one, wouldn't she?", "He has got a car and she would like one, would not she?"),
    ("y'all 'cause ma'am, he's goin' home.", "you all because madam, he is going home."),
    ("Tell 'em.", "Tell them."),
    # Apostrophes that are part of a word, and quotation marks, stay; spacing and punctuation are copied.
    ("O'Brien came at 5 o'clock.", "O'Brien came at 5 o'clock."),
    ("Rock 'n' roll in the '90s.", "Rock 'n' roll in the '90s."),
    ("He said 'hello there' to me.", "He said 'hello there' to me."),
    ("\u2018Quoted\u2019 text isn\u2019t kept.", "\u2018Quoted\u2019 text is not kept."),
    ('"Won\'t you?" she asked.', '"Will not you?" she asked.'),
    ("It's  two  spaces,\ta tab\nand a newline .", "It is  two  spaces,\ta tab\nand a newline ."),
    (" Leading and trailing it's ", " Leading and trailing it is "),
    ("PTB quotes ``like these'' stay.", "PTB quotes ``like these'' stay."),
]

UNCHANGED = [
    "A woman is slicing an onion.",
    "  Odd   spacing,\tand\ttabs\nand newlines  ",
    "Quotes \u201clike these\u201d stay.",
    "Cannot, gonna, dont, wont, Im: no apostrophe, no change.",
    "Zoë, naïve café: unicode untouched.",
]


@pytest.mark.parametrize("text, expected", CASES)
def test_base_form(nlp, text, expected):
    assert list(base_forms([text], nlp)) == [expected]


def test_many_texts_keep_their_order(nlp):
    texts = [text for text, _ in CASES] + UNCHANGED
    assert list(base_forms(texts, nlp)) == [expected for _, expected in CASES] + UNCHANGED


def test_base_form_is_idempotent(nlp):
    expected = [expected for _, expected in CASES]
    assert list(base_forms(expected, nlp)) == expected


class NoSpacy:
    def pipe(self, texts, batch_size=None):
        for text in texts:
            raise AssertionError(f"spaCy ran on {text!r}")
        return iter(())


def test_text_without_apostrophe_is_unchanged_and_skips_spacy():
    assert list(base_forms(UNCHANGED, NoSpacy())) == UNCHANGED


def test_analysis_text_keeps_offsets():
    assert analysis_text("It\u2019s WON\u2019T and O'BRIEN.") == "It's won't and o'brien."
    assert analysis_text("I'M HERE.") == "i'm here."
    assert analysis_text("Mixed I'm, LOUD.") == "Mixed I'm, LOUD."
    assert has_apostrophe("it\u2019s") and has_apostrophe("\u02bc") and not has_apostrophe("it is \u201cso\u201d")


def test_normalize_records_in_place_with_raw(nlp):
    records = [{"text_a": "I won't.", "text_b": "No.", "score": 1.0}, {"text": "It's.", "text_raw": "It is."}]
    out = list(normalize_records(iter(records), nlp, TextFields(), batch_size=1))
    assert out == [
        {"text_a": "I will not.", "text_b": "No.", "score": 1.0, "text_raw_a": "I won't.", "text_raw_b": "No."},
        {"text": "It is.", "text_raw": "It is."},
    ]  # an existing text_raw keeps the original


def test_normalize_records_streams(nlp):
    endless = ({"text": f"It's number {i}."} for i in itertools.count())
    first = next(normalize_records(endless, nlp, TextFields(), batch_size=2))
    assert first == {"text": "It is number 0.", "text_raw": "It's number 0."}


# CLI


def test_cli_pairs_and_raw_fields():
    run = sembed(
        "normalize",
        input=jsonl(
            {"text_a": "She\u2019d gone.", "text_b": "He's tall.", "score": 2.5}, {"text": "No change.", "id": 7}
        ),
    )
    assert run.exit_code == 0
    assert run.stderr == ""
    assert run.records == [
        {
            "text_a": "She had gone.",
            "text_b": "He is tall.",
            "score": 2.5,
            "text_raw_a": "She\u2019d gone.",
            "text_raw_b": "He's tall.",
        },
        {"text": "No change.", "id": 7, "text_raw": "No change."},
    ]
    assert "She\u2019d gone." in run.stdout  # written as UTF-8, not escaped


def test_cli_text_key_and_output_file(tmp_path):
    out = tmp_path / "out.jsonl"
    run = sembed(
        "normalize", "-k", "question", "-o", str(out), input=jsonl({"question": "Who's there?", "text": "x'y"})
    )
    assert (run.exit_code, run.stdout) == (0, "")
    assert out.read_text() == '{"question":"Who is there?","text":"x\'y","text_raw_question":"Who\'s there?"}\n'


def test_cli_empty_text_stops_after_earlier_records(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(
        jsonl({"text": "I'm first.", "id": 1}, {"text": "Second's.", "id": 2})
        + '{"text_a": "Fine.", "text_b": " "}\n'
        + jsonl({"text": "Never.", "id": 4})
    )
    run = sembed("normalize", "-b", "1", str(src))
    assert run.exit_code == 1
    assert run.stderr == f"error: {src}:3: empty text in 'text_b'\n"
    assert [r["text"] for r in run.records] == ["I am first.", "Second."]

    skipped = sembed("normalize", "--skip-errors", str(src))
    assert skipped.exit_code == 0
    assert [r.get("id") for r in skipped.records] == [1, 2, 4]
    assert skipped.stderr == f"warning: skipped 1 bad record(s) in {src}: line 3; first: empty text in 'text_b'\n"


def test_stsb_sentences(data_dir, nlp):
    """Every STS-B test sentence: apostrophe-free ones untouched, no contraction clitic left in the others."""
    with open(data_dir / "stsb" / "sts-test.csv", encoding="utf-8") as f:
        sentences = [s for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE) for s in row[5:7]]
    assert len(sentences) == 2758
    for raw, normalized in zip(sentences, base_forms(sentences, nlp)):
        if not has_apostrophe(raw):
            assert normalized == raw
        words = analysis_text(normalized).lower().split()
        assert not any(w.endswith(("n't", "'re", "'ve", "'ll", "'m")) for w in words), (raw, normalized)
