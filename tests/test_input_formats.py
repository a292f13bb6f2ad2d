"""An input whose first line shows another format than its name (or --lines) says gets a hint naming what to run
(issue 42.5: a JSONL file named .txt; issue 41.6: SICK and STS-B pair files, plain text given to eval)."""

from __future__ import annotations

import pytest
from conftest import jsonl, sembed

from sembed_cli.io.lookalike_formats import pair_format

SICK = (
    "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
    "1\tA group of kids is playing in a yard\tA group of boys in a yard is playing\t4.5\tNEUTRAL\n"
)
STSB = (
    "main-captions\tMSRvid\t2012test\t0024\t2.500\tA girl is styling her hair.\tA girl is brushing her hair.\n"
    "main-captions\tMSRvid\t2012test\t0033\t3.600\tA group of men play soccer.\tBoys are playing soccer.\n"
)
INVALID = "invalid JSON: unexpected character, expected a JSON value at column 1"


def test_a_jsonl_file_named_txt_is_an_error_with_the_hint_and_jsonl_reads_it(tmp_path):
    src = tmp_path / "x.txt"
    src.write_text("\n" + jsonl({"text": "Dogs bark.", "id": 1}, {"text": "Cats purr.", "id": 2}))
    run = sembed("normalize", str(src))
    assert (run.exit_code, run.stdout) == (1, "")
    assert run.stderr == (
        f"error: {src}:2: a .txt INPUT is plain text, but this line is a JSON object "
        "(hint: this looks like JSONL: give it a .jsonl name or pass --jsonl)\n"
    )
    assert sembed("normalize", "--skip-errors", str(src)).stderr == run.stderr  # the whole file, not one line
    read = sembed("normalize", "--jsonl", str(src))
    assert read.exit_code == 0, read.stderr
    assert [(r["id"], r["text"]) for r in read.records] == [(1, "Dogs bark."), (2, "Cats purr.")]
    as_text = sembed("normalize", "--lines", str(src))  # asked for: each line is a text
    assert as_text.exit_code == 0 and as_text.records[0]["text"] == '{"text":"Dogs bark.","id":1}'
    assert sembed("spo", "--jsonl", "--lines", str(src)).exit_code == 0  # the last of the pair wins, as with click


def test_a_txt_whose_first_line_is_not_an_object_is_plain_text(tmp_path):
    src = tmp_path / "notes.txt"
    src.write_text('["a list"]\n{not json\n"quoted"\n')
    run = sembed("normalize", str(src))
    assert run.exit_code == 0, run.stderr
    assert [r["text"] for r in run.records] == ['["a list"]', "{not json", '"quoted"']


@pytest.mark.parametrize(
    "name, data, fmt, label", [("SICK_trial.txt", SICK, "sick", "SICK"), ("sts.txt", STSB, "stsb", "STS-B")]
)
def test_a_pair_file_named_txt_says_to_convert_it(tmp_path, name, data, fmt, label):
    src = tmp_path / name
    src.write_text(data)
    run = sembed("embed", str(src))
    what = "a SICK header" if fmt == "sick" else "an STS-B pair"
    assert (run.exit_code, run.stdout) == (1, "")
    assert run.stderr == (
        f"error: {src}:1: a .txt INPUT is plain text, but this line is {what} "
        f"(hint: this looks like {label}: sembed convert --from {fmt} {src})\n"
    )
    converted = sembed("convert", "--from", fmt, str(src))
    assert converted.exit_code == 0 and len(converted.records) == {"sick": 1, "stsb": 2}[fmt]


@pytest.mark.parametrize(
    "command", [["embed"], ["index", "-o", "{d}/idx"], ["eval", "sts"], ["train", "--method", "sbert", "-o", "{d}/m"]]
)
def test_a_pair_file_read_as_jsonl_says_to_convert_it(tmp_path, command):
    src = tmp_path / "sts-test.csv"  # STS-B's own name: read as JSONL
    src.write_text(STSB)
    run = sembed(*[arg.replace("{d}", str(tmp_path)) for arg in command], str(src))
    assert (run.exit_code, run.stdout) == (1, "")
    assert run.stderr == f"error: {src}:1: {INVALID} (hint: this looks like STS-B: sembed convert --from stsb {src})\n"
    piped = sembed(*[arg.replace("{d}", str(tmp_path)) for arg in command], input=SICK)
    assert (
        piped.stderr == f"error: <stdin>:1: {INVALID} (hint: this looks like SICK: sembed convert --from sick FILE)\n"
    )


@pytest.mark.parametrize("task", ["sts", "entailment", "classify"])
def test_plain_text_into_eval_says_to_embed_first(task):
    run = sembed("eval", task, input="A man plays a guitar.\nA woman sings.\n")
    assert (run.exit_code, run.stdout) == (1, "")
    assert run.stderr == (
        f"error: <stdin>:1: {INVALID} (hint: this looks like plain text: embed it first, e.g. "
        f"sembed embed --lines FILE | sembed eval {task})\n"
    )


def test_pair_format_reads_the_shared_files_first_lines():
    assert pair_format("pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\r") == "sick"
    assert pair_format(STSB.splitlines()[0]) == "stsb"
    assert pair_format(STSB.splitlines()[0] + "\tsource-a\tsource-b") == "stsb"  # the rows with two more columns
    assert pair_format("genre\tfile\tyear\tid\tscore\ts1\ts2") is None  # no id, no score
    assert pair_format("main-captions\tMSRvid\t2012test\t0024\t7.5\tA.\tB.") is None  # past STS-B's 0-5
    assert pair_format("Plain text\twith a tab.") is None
