"""sembed convert: the shared data sets read right (counts, exact records), small files for every layout and error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from conftest import sembed

from sembed_cli.errors import BadRecord
from sembed_cli.io import Rejects
from sembed_cli.readers import conll, senteval
from sembed_cli.readers.corpora import brown_record
from sembed_cli.readers.inputs import InputFile, input_files, number
from sembed_cli.readers.pairs import stsb_record


def convert(*args: str, input: str | bytes | None = None):
    return sembed("convert", *args, input=input)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# ---------------------------------------------------------------- the shared data sets


@pytest.mark.parametrize("name, count", [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsb_files_give_every_pair(data_dir, name, count):
    run = convert("--from", "stsb", str(data_dir / "stsb" / f"sts-{name}.csv"))
    assert run.exit_code == 0, run.stderr
    records = run.records
    assert len(records) == count
    assert all(isinstance(r["score"], float) and 0 <= r["score"] <= 5 for r in records)
    assert all(list(r) == ["id", "genre", "source", "text_a", "text_b", "score"] for r in records)
    assert len({r["id"] for r in records}) == count


def test_stsb_first_test_record_exactly(data_dir):
    first = convert("--from", "stsb", str(data_dir / "stsb" / "sts-test.csv")).records[0]
    assert first == {
        "id": "MSRvid/2012test/0024",
        "genre": "main-captions",
        "source": "MSRvid",
        "text_a": "A girl is styling her hair.",
        "text_b": "A girl is brushing her hair.",
        "score": 2.5,
    }


def test_stsb_lines_with_two_extra_source_columns(data_dir):
    test = {r["id"]: r for r in convert("--from", "stsb", str(data_dir / "stsb" / "sts-test.csv")).records}
    banyan = test["answer-answer/2016/0008"]  # line 626 ends with two 'StackExchange Network: ...' columns
    assert banyan["score"] == 3.0
    assert banyan["text_a"] == (
        "I remained under the banyan tree, exhausted by my daily ritual of dragooning the men every two hours."
    )
    assert banyan["text_b"] == (
        "I remained under the banyan tree, exhausted by my daily ritual of herding the cats every two hours."
    )
    train = convert("--from", "stsb", str(data_dir / "stsb" / "sts-train.csv")).records
    stroller = train[5552]  # line 5553, the first 9-column line of train
    assert stroller["score"] == 4.0
    assert stroller["text_b"] == "Driver backs into mom, stroller with child then drives off"


@pytest.mark.parametrize("name, count", [("SICK_train", 4500), ("SICK_trial", 500), ("SICK_test_annotated", 4927)])
def test_sick_files_give_every_pair(data_dir, name, count):
    records = convert("--from", "sick", str(data_dir / "sick" / f"{name}.txt")).records
    assert len(records) == count
    assert {r["label"] for r in records} == {"entailment", "neutral", "contradiction"}
    assert all(1 <= r["score"] <= 5 and list(r) == ["id", "text_a", "text_b", "score", "label"] for r in records)


def test_sick_first_test_record_exactly(data_dir):
    first = convert("--from", "sick", str(data_dir / "sick" / "SICK_test_annotated.txt")).records[0]
    assert first == {
        "id": "6",
        "text_a": "There is no boy playing outdoors and there is no man smiling",
        "text_b": "A group of kids is playing in a yard and an old man is standing in the background",
        "score": 3.3,
        "label": "neutral",
    }  # the file has CRLF line ends: no '\r' may remain


def test_snli_leaves_out_no_consensus_pairs_and_says_so(data_dir):
    run = convert("--from", "snli", str(data_dir / "nli"))
    assert run.exit_code == 0
    records = run.records
    # 2566 JSON lines (wc -l says 2564: neither file ends with a newline), 39 with gold_label '-'
    assert len(records) == 2527
    assert records[0] == {
        "id": "4705552913.jpg#2r1n",
        "text_a": "Two women are embracing while holding to go packages.",
        "text_b": "The sisters are hugging goodbye while holding to go packages after just eating lunch.",
        "label": "neutral",
    }
    nli = data_dir / "nli"
    assert run.stderr == (
        f"{nli / 'snli_1.0_dev_part.jsonl'}: left out 16 pair(s) with gold_label '-' (no annotator consensus)\n"
        f"{nli / 'snli_1.0_test_part.jsonl'}: left out 23 pair(s) with gold_label '-' (no annotator consensus)\n"
    )
    assert convert("-q", "--from", "snli", str(nli)).stderr == ""


def test_treebank_sentences_become_parse_tokens(data_dir):
    records = convert("--from", "conll", str(data_dir / "treebank" / "dependency_treebank")).records
    assert len(records) == 3914
    first = records[0]
    assert first["doc_id"] == "dependency_treebank/wsj_0001.dp" and first["sent_id"] == 0
    assert first["text"].startswith("Pierre Vinken , 61 years old , will join the board")
    assert first["tokens"][:2] == [
        {"i": 0, "text": "Pierre", "tag": "NNP", "head": 1},
        {"i": 1, "text": "Vinken", "tag": "NNP", "head": 7},
    ]
    assert first["tokens"][7] == {"i": 7, "text": "will", "tag": "MD", "head": 7}  # the root heads itself
    assert all(0 <= t["head"] < len(r["tokens"]) for r in records for t in r["tokens"])
    assert records[-1]["doc_id"] == "dependency_treebank/wsj_0199.dp"


@pytest.mark.parametrize(
    "fmt, folder, counts",
    [
        ("mr", "sentence_polarity", {0: 5331, 1: 5331}),
        ("subj", "subjectivity", {0: 5000, 1: 5000}),
        ("cr", "product_reviews_1", {0: 638, 1: 1081}),
    ],
)
def test_senteval_sets(data_dir, fmt, folder, counts):
    run = convert("-q", "--from", fmt, str(data_dir / "senteval" / folder))
    assert run.exit_code == 0 and run.stderr == ""
    records = run.records
    assert {label: sum(r["label"] == label for r in records) for label in (0, 1)} == counts
    assert all(list(r) == ["text", "label"] and r["text"] == r["text"].strip() and r["text"] for r in records)


def test_brown_corpus_folder(data_dir):
    records = convert("--from", "brown", str(data_dir / "corpora" / "brown")).records
    assert len(records) == 57340  # CONTENTS, README and cats.txt are not read
    assert len({r["doc_id"] for r in records}) == 500
    first = records[0]
    assert first["doc_id"] == "brown/ca01" and first["sent_id"] == 0
    assert first["text"].startswith("The Fulton County Grand Jury said Friday")
    assert first["tags"][:3] == ["at", "np-tl", "nn-tl"]
    assert all(len(r["tags"]) == len(r["text"].split(" ")) for r in records)


# ---------------------------------------------------------------- pairs: small files

STSB = (
    'main-news\theadlines\t2013\t0001\t4.0\tA "quoted" sentence.\tAnother one.\n'
    "main-news\theadlines\t2013\t0002\tfour\tBad score.\tHere.\n"
    "main-news\theadlines\t2013\t0003\t1.5\tThird.\tPair.\n"
)


def test_stsb_bad_score_stops_after_writing_what_came_before(tmp_path):
    src = write(tmp_path / "sts.csv", STSB)
    run = convert("--from", "stsb", str(src))
    assert run.exit_code == 1
    assert run.stderr == f"error: {src}:2: score 'four' is not a number\n"
    assert [r["id"] for r in run.records] == ["headlines/2013/0001"]
    assert run.records[0]["text_a"] == 'A "quoted" sentence.'


def test_stsb_skip_errors_goes_on_and_counts(tmp_path):
    src = write(tmp_path / "sts.csv", STSB + "too\tfew\tcolumns\n")
    run = convert("--from", "stsb", "--skip-errors", str(src))
    assert run.exit_code == 0
    assert [r["id"] for r in run.records] == ["headlines/2013/0001", "headlines/2013/0003"]
    assert run.stderr == f"warning: skipped 2 bad record(s) in {src}: line 2, 4; first: score 'four' is not a number\n"


def test_stsb_record_unit():
    with pytest.raises(
        BadRecord,
        match=r"expected 7 tab-separated columns \(genre, file, year, id, score, "
        r"sentence1, sentence2\), found 3",
    ):
        stsb_record("a\tb\tc")
    with pytest.raises(BadRecord, match="empty sentence2"):
        stsb_record("g\tf\ty\t1\t2\tText.\t  ")
    with pytest.raises(BadRecord, match="score 'nan' is not a number"):
        number("nan", "score")


def test_stdin_gzip_and_output_file_agree(tmp_path):
    src = write(tmp_path / "sts.csv.gz", gzip.compress(STSB.encode()))
    from_gzip = convert("--from", "stsb", "--skip-errors", "-q", str(src))
    from_stdin = convert("--from", "stsb", "--skip-errors", "-q", input=STSB)
    out = tmp_path / "out.jsonl"
    to_file = convert("--from", "stsb", "--skip-errors", "-", "-o", str(out), input=STSB)
    assert from_gzip.stdout == from_stdin.stdout == out.read_text() and len(from_stdin.records) == 2
    assert to_file.stdout == ""
    assert from_stdin.stderr == ""  # -q: errors only
    assert to_file.stderr == (
        "warning: skipped 1 bad record(s) in <stdin>: line 2; first: score 'four' is not a number\n"
    )


def test_sick_header_decides_the_columns(tmp_path):
    full = write(
        tmp_path / "SICK.txt",
        "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tSemEval_set\n"
        "1\tA dog runs.\tA dog is running.\tENTAILMENT\t4.8\tTRAIN\n",
    )
    assert convert("--from", "sick", str(full)).records == [
        {"id": "1", "text_a": "A dog runs.", "text_b": "A dog is running.", "score": 4.8, "label": "entailment"}
    ]
    unlabelled = write(tmp_path / "unlabelled.txt", "pair_ID\tsentence_A\tsentence_B\n7\tA.\tB.\n")
    assert convert("--from", "sick", str(unlabelled)).records == [{"id": "7", "text_a": "A.", "text_b": "B."}]
    no_header = write(tmp_path / "bare.txt", "1\tA.\tB.\t3\tNEUTRAL\n")
    run = convert("--from", "sick", str(no_header))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: {no_header}:1: expected a SICK header line with pair_ID, sentence_A, sentence_B, "
        "relatedness_score, entailment_judgment (hint: is this a SICK file?)\n"
    )
    bad_label = write(
        tmp_path / "label.txt",
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\tA.\tB.\t3\tMAYBE\n",
    )
    assert convert("--from", "sick", str(bad_label)).stderr == (
        f"error: {bad_label}:2: entailment_judgment 'maybe' is not one of entailment, neutral, contradiction\n"
    )


def test_snli_bad_records_name_the_line(tmp_path):
    src = write(
        tmp_path / "mnli.jsonl",
        '{"pairID": "1", "genre": "fiction", "sentence1": "A.", "sentence2": "B.", "gold_label": "neutral"}\n'
        '{"sentence1": "A.", "gold_label": "neutral"}\n',
    )
    run = convert("--from", "snli", str(src))
    assert run.exit_code == 1
    assert run.records == [{"id": "1", "genre": "fiction", "text_a": "A.", "text_b": "B.", "label": "neutral"}]
    assert run.stderr == f"error: {src}:2: missing key 'sentence2'\n"


def semeval_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sts2016"
    write(folder / "STS.input.headlines.txt", "A man sings.\tA man is singing.\nA cat.\tA plane.\nHi there.\tHello.\n")
    write(folder / "STS.gs.headlines.txt", "4.8\n\n3\n")  # the second pair was left unscored
    write(folder / "00-readme.txt", "SemEval 2016 task 1\n")
    write(folder / "LICENSE.txt", "licence\n")
    return folder


def test_semeval_input_with_gold_beside_it(tmp_path):
    folder = semeval_folder(tmp_path)
    run = convert("--from", "semeval-sts", str(folder))  # the folder: only STS.input files, gold read alongside
    assert run.exit_code == 0
    assert run.records == [
        {
            "id": "headlines/1",
            "source": "headlines",
            "text_a": "A man sings.",
            "text_b": "A man is singing.",
            "score": 4.8,
        },
        {"id": "headlines/2", "source": "headlines", "text_a": "A cat.", "text_b": "A plane."},
        {"id": "headlines/3", "source": "headlines", "text_a": "Hi there.", "text_b": "Hello.", "score": 3.0},
    ]
    assert run.stderr == (
        f"{folder / 'STS.input.headlines.txt'}: 1 pair(s) have no gold score (blank score): written without 'score'\n"
    )
    gold = folder / "STS.gs.headlines.txt"
    run = convert("--from", "semeval-sts", str(gold))
    assert run.exit_code == 1
    assert run.stderr == f"error: {gold} holds gold scores only (hint: pass STS.input.headlines.txt, which it scores)\n"


def test_semeval_gold_problems(tmp_path):
    folder = semeval_folder(tmp_path)
    gold = write(folder / "STS.gs.headlines.txt", "4.8\nhigh\n3\n")
    run = convert("--from", "semeval-sts", str(folder / "STS.input.headlines.txt"))
    assert run.exit_code == 1
    assert run.stderr == f"error: {gold}:2: score 'high' is not a number\n"
    assert len(run.records) == 1
    run = convert("--from", "semeval-sts", "--skip-errors", str(folder / "STS.input.headlines.txt"))
    assert [r["id"] for r in run.records] == ["headlines/1", "headlines/3"]
    assert run.stderr == f"warning: skipped 1 bad record(s) in {gold}: line 2; first: score 'high' is not a number\n"
    write(gold, "4.8\n")
    run = convert("--from", "semeval-sts", str(folder / "STS.input.headlines.txt"))
    assert run.stderr == (
        f"error: {folder / 'STS.input.headlines.txt'}:2: no score for this pair: {gold} ends before line 2\n"
    )
    gold.unlink()
    run = convert("--from", "semeval-sts", str(folder / "STS.input.headlines.txt"))
    assert run.exit_code == 0 and all("score" not in r for r in run.records) and len(run.records) == 3
    assert run.stderr == (
        f"{folder / 'STS.input.headlines.txt'}: no STS.gs.headlines.txt beside it: pairs are written without a score\n"
    )


def test_semeval_scored_lines(tmp_path):
    src = write(tmp_path / "sts-2015-answers.tsv", "3.2\tA.\tB.\n\tC.\tD.\n5\tE.\tF.\n")
    run = convert("--from", "semeval-sts", str(src))
    assert run.records == [
        {"id": "sts-2015-answers/1", "source": "sts-2015-answers", "text_a": "A.", "text_b": "B.", "score": 3.2},
        {"id": "sts-2015-answers/2", "source": "sts-2015-answers", "text_a": "C.", "text_b": "D."},
        {"id": "sts-2015-answers/3", "source": "sts-2015-answers", "text_a": "E.", "text_b": "F.", "score": 5.0},
    ]
    assert run.stderr == f"{src}: 1 pair(s) have no gold score (blank score): written without 'score'\n"


# ---------------------------------------------------------------- corpora: small files


def test_lines_blank_line_ends_a_document(tmp_path):
    src = write(tmp_path / "news.txt", "First one.\nSecond one.\n\n\n  Third, new document.  \n\nFourth.\n")
    records = convert("--from", "lines", str(src)).records
    assert records == [
        {"doc_id": "news.txt#0", "sent_id": 0, "text": "First one."},
        {"doc_id": "news.txt#0", "sent_id": 1, "text": "Second one."},
        {"doc_id": "news.txt#1", "sent_id": 0, "text": "Third, new document."},
        {"doc_id": "news.txt#2", "sent_id": 0, "text": "Fourth."},
    ]
    whole = convert("--from", "lines", "--doc-break", "file", str(src)).records
    assert [(r["doc_id"], r["sent_id"]) for r in whole] == [("news.txt", i) for i in range(4)]


def test_folders_are_read_in_sorted_order_without_documentation(tmp_path):
    corpus = tmp_path / "reviews"
    write(corpus / "pos" / "b.txt", "pos b .\n")
    write(corpus / "neg" / "z.txt", "neg z .\n")
    write(corpus / "neg" / "a.txt", "neg a .\n")
    write(corpus / "README", "About this corpus.\n")
    write(corpus / ".hidden", "not data\n")
    records = convert("--from", "lines", str(corpus), str(tmp_path / "reviews" / "pos" / "b.txt")).records
    assert [(r["doc_id"], r["text"]) for r in records] == [
        ("reviews/neg/a.txt#0", "neg a ."),
        ("reviews/neg/z.txt#0", "neg z ."),
        ("reviews/pos/b.txt#0", "pos b ."),
        ("b.txt#0", "pos b ."),
    ]
    files = input_files([str(corpus)])
    assert [f.label for f in files] == ["reviews/neg/a.txt", "reviews/neg/z.txt", "reviews/pos/b.txt"]


PROSE = (
    "THE ADDRESS\n\nMr. Speaker, members of Congress. We meet in a hard hour. Dr. Smith agrees.\n"
    "The second paragraph has one sentence.\n\nA new section starts here. It ends here.\n"
)


def test_prose_is_split_into_sentences_a_file_a_document(tmp_path):
    a = write(tmp_path / "speeches" / "1945-a.txt", PROSE)
    write(tmp_path / "speeches" / "1946-b.txt", "Short speech. Thank you.\n")
    run = convert("--from", "prose", "-b", "2", str(tmp_path / "speeches"))  # tiny batches cross file boundaries
    assert run.exit_code == 0, run.stderr
    assert [(r["doc_id"], r["sent_id"], r["text"]) for r in run.records] == [
        ("speeches/1945-a.txt", 0, "THE ADDRESS"),
        ("speeches/1945-a.txt", 1, "Mr. Speaker, members of Congress."),
        ("speeches/1945-a.txt", 2, "We meet in a hard hour."),
        ("speeches/1945-a.txt", 3, "Dr. Smith agrees."),
        ("speeches/1945-a.txt", 4, "The second paragraph has one sentence."),
        ("speeches/1945-a.txt", 5, "A new section starts here."),
        ("speeches/1945-a.txt", 6, "It ends here."),
        ("speeches/1946-b.txt", 0, "Short speech."),
        ("speeches/1946-b.txt", 1, "Thank you."),
    ]
    sections = convert("--from", "prose", "--doc-break", "blank", str(a)).records
    assert [(r["doc_id"], r["sent_id"]) for r in sections] == [
        ("1945-a.txt#0", 0),
        ("1945-a.txt#1", 0),
        ("1945-a.txt#1", 1),
        ("1945-a.txt#1", 2),
        ("1945-a.txt#1", 3),
        ("1945-a.txt#2", 0),
        ("1945-a.txt#2", 1),
    ]


def test_prose_wrapped_lines_join_into_paragraphs(tmp_path):
    src = write(tmp_path / "book.txt", "It was a dark and\nstormy night. The rain\nfell.\n\nNext paragraph.\n")
    assert [r["text"] for r in convert("--from", "prose", "--wrapped", str(src)).records] == [
        "It was a dark and stormy night.",
        "The rain fell.",
        "Next paragraph.",
    ]
    run = convert("--from", "lines", "--wrapped", str(src))
    assert run.exit_code == 2 and "only for --from prose" in run.stderr


def test_mixed_encodings(tmp_path):
    src = write(tmp_path / "old.txt", "Caf\u00e9 in UTF-8.\n".encode() + b"Caf\xe9 in Latin-1, \x93quoted\x94.\n")
    run = convert("--from", "lines", str(src))
    assert [r["text"] for r in run.records] == ["Café in UTF-8.", "Café in Latin-1, “quoted”."]
    assert run.stderr == (
        f"{src}: 1 line(s) not UTF-8, read as Windows-1252 (first: line 2; --encoding sets another)\n"
    )
    strict = convert("--from", "lines", "--encoding", "utf-8", str(src))
    assert strict.exit_code == 1 and len(strict.records) == 1
    assert strict.stderr == f"error: {src}:2: not valid UTF-8 (byte 0xe9 at column 4)\n"
    latin = convert("--from", "lines", "--encoding", "latin-1", str(src)).records
    assert latin[0]["text"] == "CafÃ© in UTF-8."


def test_brown_record_unit():
    assert brown_record("\tThe/at 1/2/cd said/vbd ./.") == (["The", "1/2", "said", "."], ["at", "cd", "vbd", "."])
    assert brown_record("   ") is None
    with pytest.raises(BadRecord, match="token 'oops' is not word/TAG"):
        brown_record("The/at oops")


# ---------------------------------------------------------------- conll: small files


def test_conll_layouts(tmp_path):
    malt = write(tmp_path / "malt.tab", "Dogs\tNNS\t2\tnsubj\nbark\tVBP\t0\tROOT\n")
    assert convert("--from", "conll", str(malt)).records == [
        {
            "doc_id": "malt.tab",
            "sent_id": 0,
            "text": "Dogs bark",
            "tokens": [
                {"i": 0, "text": "Dogs", "tag": "NNS", "dep": "nsubj", "head": 1},
                {"i": 1, "text": "bark", "tag": "VBP", "dep": "ROOT", "head": 1},
            ],
        }
    ]
    conllu = write(
        tmp_path / "en.conllu",
        "# sent_id = 1\n# text = Don't go.\n"
        "1-2\tDon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "1\tDo\tdo\tAUX\tVB\t_\t3\taux\t_\tSpaceAfter=No\n"
        "2\tn't\tnot\tPART\tRB\t_\t3\tadvmod\t_\t_\n"
        "3\tgo\tgo\tVERB\tVB\t_\t0\troot\t_\tSpaceAfter=No\n"
        "3.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n",
    )
    record = convert("--from", "conll", str(conllu)).records[0]
    assert record["text"] == "Don't go."
    assert record["tokens"][0] == {
        "i": 0,
        "text": "Do",
        "lemma": "do",
        "pos": "AUX",
        "tag": "VB",
        "dep": "aux",
        "head": 2,
    }
    assert [t["head"] for t in record["tokens"]] == [2, 2, 2, 2]


def test_conll_bad_head_names_its_line_and_skip_keeps_positions(tmp_path):
    src = write(tmp_path / "wsj.dp", "A\tDT\t2\nb\tNN\t0\n\nC\tNN\t5\nd\tNN\t0\n\n#\t#\t0\n")
    run = convert("--from", "conll", str(src))
    assert run.exit_code == 1 and len(run.records) == 1
    assert run.stderr == f"error: {src}:4: head 5 is outside the sentence of 2 words\n"
    skipped = convert("--from", "conll", "--skip-errors", str(src))
    assert [(r["sent_id"], r["text"]) for r in skipped.records] == [(0, "A b"), (2, "#")]
    assert skipped.stderr == (
        f"warning: skipped 1 bad record(s) in {src}: line 4; first: head 5 is outside the sentence of 2 words\n"
    )
    odd = write(tmp_path / "odd.dp", "A\tDT\nb\tNN\t0\n")
    assert convert("--from", "conll", str(odd)).stderr == (
        f"error: {odd}:1: expected word TAB tag TAB head (3 or 4 columns) or 10 CoNLL-X/U columns, found 2\n"
    )
    assert conll.is_comment("# newdoc") and not conll.is_comment("#\t#\t0")


# ---------------------------------------------------------------- senteval: small files


def test_cr_opinion_marks():
    assert senteval.cr_record("picture[+2], use[-1]##great pictures , clumsy menus . ") == {
        "text": "great pictures , clumsy menus .",
        "label": 1,
    }
    assert senteval.cr_record("battery[-3][p]##it dies .") == {"text": "it dies .", "label": 0}
    assert senteval.cr_record("size[+]##small .")["label"] == 1
    assert senteval.cr_record("a[+1],b[-1]##cancels out .") is None
    assert senteval.cr_record("##no opinion here .") is None
    assert senteval.cr_record("[t]a review title") is None


def test_labels_come_from_file_names(tmp_path):
    pos = write(tmp_path / "rt-polarity.pos", "good .\n\n")
    assert convert("--from", "mr", str(pos)).records == [{"text": "good .", "label": 1}]
    assert convert("--from", "cr", str(write(tmp_path / "custrev.neg", "bad .\n"))).records == [
        {"text": "bad .", "label": 0}
    ]
    assert convert("--from", "subj", str(write(tmp_path / "quote.tok.gt9.5000", "wow .\n"))).records[0]["label"] == 1
    run = convert("--from", "mr", input="good .\n")
    assert run.exit_code == 1
    assert run.stderr == (
        "error: cannot tell the label of <stdin> from its name "
        "(hint: this format reads rt-polarity.pos and rt-polarity.neg)\n"
    )


# ---------------------------------------------------------------- usage and missing input


def test_missing_file_unknown_format_and_misplaced_options(tmp_path):
    run = convert("--from", "stsb", str(tmp_path / "nope.csv"))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: cannot open {tmp_path / 'nope.csv'}: No such file or directory (hint: check the path)\n"
    )
    assert run.stdout == ""
    (tmp_path / "empty").mkdir()
    assert convert("--from", "lines", str(tmp_path / "empty")).stderr == (
        f"error: no input files in folder {tmp_path / 'empty'} (hint: pass the data files themselves)\n"
    )
    unknown = convert("--from", "csv", str(tmp_path))
    assert unknown.exit_code == 2 and "'csv' is not one of 'stsb'" in unknown.stderr
    assert convert("x.csv").exit_code == 2  # --from is required
    assert convert("--from", "stsb", "--doc-break", "blank", input="").exit_code == 2
    assert convert("--from", "lines", "--encoding", "klingon", input="").exit_code == 2


def test_empty_input_is_empty_output():
    run = convert("--from", "lines", input="")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def test_input_file_stem():
    file = InputFile("x", "sts/STS.input.headlines.txt.gz", Rejects("x"))
    assert file.stem == "STS.input.headlines"


def test_convert_records_is_lazy_and_importable(tmp_path):
    from sembed_cli.commands.convert import convert_records

    src = write(tmp_path / "a.txt", "One.\nTwo.\n")
    records = convert_records("lines", input_files([str(src)]))
    assert next(records) == {"doc_id": "a.txt#0", "sent_id": 0, "text": "One."}
    assert list(records) == [{"doc_id": "a.txt#0", "sent_id": 1, "text": "Two."}]
