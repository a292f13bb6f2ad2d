"""The record-stream contract (SPEC section 1), through the CLI: input three ways, bad input, skips, pipes."""

from __future__ import annotations

import gzip
import subprocess
import sys

import orjson
import pytest
from conftest import ROOT, jsonl, sembed

GOOD = [{"text": "A man attacks a woman.", "id": 1}, {"text": "Dogs bark.", "id": 2}]


def test_stdin_argument_and_file_output_agree(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(jsonl(*GOOD))
    from_stdin = sembed("parse", input=jsonl(*GOOD))
    from_path = sembed("parse", str(src))
    out = tmp_path / "sub" / "out.jsonl"
    to_file = sembed("parse", str(src), "-o", str(out))
    assert from_stdin.exit_code == from_path.exit_code == to_file.exit_code == 0
    assert from_stdin.stdout == from_path.stdout == out.read_text()
    assert to_file.stdout == ""
    records = from_stdin.records
    assert [r["id"] for r in records] == [1, 2]
    assert list(records[0]) == ["text", "id", "tokens", "triples"]  # input fields first, untouched


def test_gzip_input(tmp_path):
    src = tmp_path / "in.jsonl.gz"
    src.write_bytes(gzip.compress(jsonl(*GOOD).encode()))
    assert sembed("parse", str(src)).records == sembed("parse", input=jsonl(*GOOD)).records


def test_unicode_is_written_as_utf8():
    run = sembed("parse", input=jsonl({"text": "Zoë’s café"}))
    assert run.exit_code == 0
    assert "Zoë’s café" in run.stdout


def test_blank_lines_are_ignored_but_counted():
    run = sembed("parse", input=jsonl(GOOD[0]) + "\n\n" + "{bad\n")
    assert run.exit_code == 1
    assert run.stderr == "error: <stdin>:4: invalid JSON: unexpected character, expected a string key at column 2\n"
    assert [r["id"] for r in run.records] == [1]


PLAIN_TEXT = (
    "error: <stdin>:1: invalid JSON: unexpected character, expected a JSON value at column 1 (hint: this looks "
    'like plain text: pass --lines to read each line as a record {"text": LINE})\n'
)


@pytest.mark.parametrize("command", ["embed", "parse", "spo", "normalize"])
def test_plain_text_read_as_jsonl_says_to_pass_lines(command):
    """printf 'hello\n' | sembed embed: a first line that is not JSON and opens with neither { nor [ is text."""
    run = sembed(command, input="\nhello\nworld\n")
    assert (run.exit_code, run.stdout, run.stderr) == (1, "", PLAIN_TEXT.replace("<stdin>:1:", "<stdin>:2:"))


def test_the_lines_hint_comes_only_where_the_input_is_text_and_the_command_reads_text():
    assert sembed("normalize", input="hello\n").stderr == PLAIN_TEXT
    with_lines = sembed("normalize", "--lines", input="hello\n")
    assert with_lines.exit_code == 0 and with_lines.records == [{"text": "hello", "text_raw": "hello"}]
    an_object = sembed("normalize", input="{hello\n")  # broken JSON, not text
    assert (an_object.exit_code, an_object.stderr) == (
        1,
        "error: <stdin>:1: invalid JSON: unexpected character, expected a string key at column 2\n",
    )
    after_json = sembed("normalize", input=jsonl(GOOD[0]) + "hello\n")  # JSONL with one broken line
    assert (after_json.exit_code, after_json.stderr) == (
        1,
        "error: <stdin>:2: invalid JSON: unexpected character, expected a JSON value at column 1\n",
    )
    no_lines_option = sembed("eval", "sts", input="hello\n")  # eval reads vectors: --lines is no help
    assert (no_lines_option.exit_code, no_lines_option.stderr) == (
        1,
        "error: <stdin>:1: invalid JSON: unexpected character, expected a JSON value at column 1 (hint: this looks "
        "like plain text: embed it first, e.g. sembed embed --lines FILE | sembed eval sts)\n",
    )


BAD_LINES = [
    ('{"text": "ok", "id": 3', "error: {f}:3: invalid JSON: unexpected end of data at column 23"),
    ('{"id": 3}', "error: {f}:3: missing key 'text' (or 'text_a'/'text_b'; --text-key names another)"),
    ('{"text": 42}', "error: {f}:3: 'text' must be a string, got a number"),
    ('{"text": "  "}', "error: {f}:3: empty text in 'text'"),
    ('["text"]', "error: {f}:3: expected a JSON object, got an array"),
]


@pytest.mark.parametrize("command", ["parse", "spo", "normalize"])
@pytest.mark.parametrize("bad, message", BAD_LINES)
def test_bad_record_stops_with_one_line_after_writing_earlier_records(tmp_path, command, bad, message):
    src = tmp_path / "in.jsonl"
    src.write_text(jsonl(*GOOD) + bad + "\n" + jsonl({"text": "Never reached.", "id": 4}))
    run = sembed(command, str(src))
    assert run.exit_code == 1
    assert run.stderr == message.format(f=src) + "\n"
    assert [r["id"] for r in run.records] == [1, 2]


def test_non_utf8_byte(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(jsonl(GOOD[0]).encode() + b'{"text": "caf\xe9"}\n' + jsonl(GOOD[1]).encode())
    run = sembed("parse", str(src))
    assert run.exit_code == 1
    assert run.stderr == f"error: {src}:2: not valid UTF-8 (byte 0xe9 at column 14)\n"
    assert [r["id"] for r in run.records] == [1]


def test_skip_errors_goes_on_and_reports_where(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_bytes(
        jsonl(GOOD[0]).encode() + b"{oops\n" + b'{"text": "caf\xe9"}\n' + b'{"id": 9}\n' + jsonl(GOOD[1]).encode()
    )
    run = sembed("parse", str(src), "--skip-errors")
    assert run.exit_code == 0
    assert [r["id"] for r in run.records] == [1, 2]
    assert run.stderr == (
        f"warning: skipped 3 bad record(s) in {src}: line 2, 3, 4; "
        "first: invalid JSON: unexpected character, expected a string key at column 2\n"
    )


def test_explicit_text_key_and_pairs():
    run = sembed("parse", "--text-key", "question", input=jsonl({"question": "Who came?"}))
    assert run.exit_code == 0
    assert run.records[0]["tokens_question"][0]["text"] == "Who"
    pair = sembed("parse", input=jsonl({"text_a": "A cat.", "text_b": "A dog.", "score": 1.0})).records[0]
    assert [t["text"] for t in pair["tokens_b"]] == ["A", "dog", "."]
    assert list(pair) == ["text_a", "text_b", "score", "tokens_a", "triples_a", "tokens_b", "triples_b"]
    missing = sembed("parse", "-k", "question", input=jsonl({"text": "x"}))
    assert missing.exit_code == 1
    assert missing.stderr == "error: <stdin>:1: missing key 'question'\n"


@pytest.mark.parametrize(
    "given, default, expected",
    [
        (None, ("text",), ("text",)),
        ([], ("text_a", "text_b"), ("text_a", "text_b")),
        (["q"], ("text",), ("q",)),
        (["a", "b"], ("text_a", "text_b"), ("a", "b")),
        (None, (), ()),
    ],
)
def test_text_keys_are_counted_in_one_place(given, default, expected):
    from sembed_cli.options import counted_text_keys

    assert counted_text_keys(given, default, "reads {given}") == expected


@pytest.mark.parametrize(
    "given, default, why, message",
    [
        (
            ["a"],
            ("text_a", "text_b"),
            "a pair needs exactly two --text-key options, got {given}",
            "a pair needs exactly two --text-key options, got 1",
        ),
        (["a", "b"], ("text",), "nws reads one text field", "nws reads one text field"),
        (
            ["a"],
            (),
            "syntax reads the aligned `words` of gensets records",
            "syntax reads the aligned `words` of gensets records",
        ),
    ],
)
def test_a_wrong_count_of_text_keys_is_a_usage_error(given, default, why, message):
    import typer

    from sembed_cli.options import counted_text_keys

    with pytest.raises(typer.BadParameter) as refused:
        counted_text_keys(given, default, why)
    assert (refused.value.message, refused.value.param_hint) == (message, "'--text-key'")


def test_missing_input_file_and_unknown_model(tmp_path):
    run = sembed("parse", str(tmp_path / "nope.jsonl"))
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: cannot open {tmp_path / 'nope.jsonl'}: No such file or directory (hint: check the path)\n"
    )
    run = sembed("parse", "--model", "no_such_pipeline", input=jsonl(*GOOD))
    assert run.exit_code == 1
    assert run.stderr.startswith("error: spaCy pipeline 'no_such_pipeline' is not installed (hint: pip install")


def test_usage_errors_exit_2():
    assert sembed("parse", "--batch-size", "0", input="").exit_code == 2
    assert sembed("no-such-command").exit_code == 2
    assert sembed("parse", "--no-such-flag").exit_code == 2


def test_empty_input_is_empty_output():
    run = sembed("parse", input="")
    assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def _script(*args: str) -> list[str]:
    return [sys.executable, "-m", "sembed_cli", *args]


@pytest.mark.subprocess
def test_closed_pipe_exits_quietly(tmp_path):
    src = tmp_path / "big.jsonl"
    src.write_text(jsonl(*[{"text": f"Sentence number {i} is here.", "id": i} for i in range(3000)]))
    run = subprocess.run(
        f"{sys.executable} -m sembed_cli parse -b 100 {src} | head -1",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0
    assert run.stderr == ""
    assert orjson.loads(run.stdout)["id"] == 0


@pytest.mark.subprocess
def test_no_traceback_unless_verbose(tmp_path, monkeypatch):
    src = tmp_path / "in.jsonl"
    src.write_text('{"text": 1}\n')
    quiet = subprocess.run(_script("parse", str(src)), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert quiet.returncode == 1 and "Traceback" not in quiet.stderr
    loud = subprocess.run(_script("parse", "-v", str(src)), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert loud.returncode == 1 and "Traceback" in loud.stderr
    assert loud.stderr.rstrip().endswith(f"error: {src}:1: 'text' must be a string, got a number")


# --- --shard I/N (SPEC section 6) ----------------------------------------------------------------------------

SHARDED = "".join(
    [
        jsonl({"text": "I'm one", "id": 0}),
        "not json\n",
        "\n",
        jsonl({"text": "it's two", "id": 2}),
        "[3]\n",
        jsonl({"text": "we've four", "id": 4}),
    ]
)


def test_shards_split_the_records_round_robin_and_cover_them_once():
    """Blank lines are not records; each share reads only its own lines, so it meets only its own bad ones."""
    first = sembed("normalize", "--shard", "1/2", input=SHARDED)
    assert first.exit_code == 0, first.stderr
    assert [(r["id"], r["text"]) for r in first.records] == [(0, "I am one"), (2, "it is two"), (4, "we have four")]
    second = sembed("normalize", "--shard", "2/2", input=SHARDED)
    assert second.exit_code == 1 and second.stdout == ""
    assert second.stderr == "error: <stdin>:2: invalid JSON: invalid literal, expected 'null' at column 1\n"
    skipping = sembed("normalize", "--shard", "2/2", "--skip-errors", input=SHARDED)
    assert skipping.exit_code == 0 and skipping.records == []
    assert "skipped 2 bad record(s) in <stdin>: line 2, 5" in skipping.stderr
    assert (
        sembed("normalize", "--shard", "1/1", "--skip-errors", input=SHARDED).stdout
        == sembed("normalize", "--skip-errors", input=SHARDED).stdout
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("0/2", "'0/2' is not a shard: I/N needs 1 <= I <= N"),
        ("3/2", "'3/2' is not a shard: I/N needs 1 <= I <= N"),
        ("2", "'2' is not I/N (e.g. 2/8: the second of eight shares)"),
        ("a/b", "'a/b' is not I/N (e.g. 2/8: the second of eight shares)"),
    ],
)
def test_a_bad_shard_is_a_usage_error(spec, message):
    run = sembed("parse", "--shard", spec, input="")
    assert run.exit_code == 2
    assert message in run.stderr


def test_the_stream_options_travel_as_one_object(tmp_path):
    """StreamOptions (issue 18, item 5) carries INPUT, -o, --lines, --force, --shard and --skip-errors to both ends of
    the stream: the share and the policies to the source, the output and --force to the sink."""
    import dataclasses

    from sembed_cli.errors import BadRecord, SembedError
    from sembed_cli.io import Shard, StreamOptions

    src, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    src.write_text("one\ntwo\n\nthree\nfour\n")
    stream = StreamOptions(str(src), str(out), lines=True, shard=Shard(1, 2), skip_errors=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stream.force = True

    def no_three(record: dict) -> None:
        if record["text"] == "three":
            raise BadRecord("not three")

    assert stream.run(no_three, iter, 1, "copying") == 1  # the share of "one" and "three", "three" skipped
    assert out.read_text() == jsonl({"text": "one"})
    with pytest.raises(SembedError, match="already exists"):
        stream.run(None, iter, 1, "copying")
    assert dataclasses.replace(stream, force=True, shard=None).run(None, iter, 1, "copying") == 4
    with pytest.raises(SembedError, match="is the input"), dataclasses.replace(stream, output=str(src)).sink():
        pass


# --- progress on a terminal (issue 14, item 7) ---------------------------------------------------------------


@pytest.fixture
def terminal(monkeypatch):
    """stderr as a terminal 100 columns wide, its text kept."""
    import io as stdio

    from rich.console import Console

    from sembed_cli import console

    screen = stdio.StringIO()
    monkeypatch.setattr(console, "console", Console(file=screen, force_terminal=True, width=100, highlight=False))
    monkeypatch.setattr(console.state, "quiet", False)
    monkeypatch.setattr(console.state, "rank", 0)
    return screen


def last_line(screen) -> str:
    """The last line left on the terminal, its control sequences taken out."""
    import re

    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", screen.getvalue()).splitlines()[-1]


def test_progress_counts_records_written_and_ends_with_a_summary(terminal, tmp_path):
    from sembed_cli.io import RecordSource, run_stream

    src = tmp_path / "in.jsonl"
    src.write_text("".join(jsonl({"text": f"Sentence {n}.", "id": n}) for n in range(10)))

    def half(records):  # a command that writes one record for every two it reads
        return (record for record in records if record["id"] % 2 == 0)

    written = run_stream(RecordSource(str(src)), None, half, str(tmp_path / "out.jsonl"), 2, "halving")
    assert written == 5
    last = last_line(terminal)
    assert last.startswith("halving: 5 records written in 0:00 (") and last.endswith(" records/s)")


def test_progress_shows_the_share_of_the_input_file_read(terminal, tmp_path):
    from sembed_cli.console import StreamProgress
    from sembed_cli.io import ReadPosition

    position = ReadPosition()
    position.size = 1000
    position.bytes_read = lambda: 250
    with StreamProgress("parsing", position) as progress:
        progress.written(7)
        task = progress._bar.tasks[0]
        assert (task.completed, task.total, task.fields["written"]) == (250, 1000, "7")
        assert task.fields["rate"].endswith(" records/s")
    assert last_line(terminal).startswith("parsing: 7 records written in 0:00")


@pytest.mark.parametrize("setting", [("quiet", True), ("rank", 1)])
def test_no_progress_under_quiet_or_on_other_ranks(terminal, monkeypatch, setting):
    from sembed_cli import console

    monkeypatch.setattr(console.state, *setting)
    with console.StreamProgress("parsing") as progress:
        progress.written(3)
    console.say("information")
    assert terminal.getvalue() == ""


@pytest.mark.subprocess
def test_no_progress_where_stderr_is_not_a_terminal(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(jsonl(*GOOD))
    run = subprocess.run(_script("normalize", str(src)), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (run.returncode, run.stderr) == (0, "")


# --- plain text and exact ids through index and search -----------------------------------------------------------


def test_index_and_search_take_plain_text_and_keep_big_ids(tiny_model, one_torch_thread, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("Lake Geneva\nMount Fuji\n\nSpringfield\n")
    built = sembed("index", str(names), "-m", tiny_model, "-o", str(tmp_path / "idx"), "--id-key", "text", "-q")
    assert built.exit_code == 0, built.stderr
    found = sembed("search", "--lines", "--index", str(tmp_path / "idx"), "--k", "1", input="Mount Fuji\n")
    assert found.exit_code == 0, found.stderr
    assert [(r["text"], r["neighbors"][0]["id"]) for r in found.records] == [("Mount Fuji", "Mount Fuji")]
    big = '{"text": "Lake Geneva", "id": 123456789012345678901234567890}\n'
    built = sembed("index", "-m", tiny_model, "-o", str(tmp_path / "big"), "-q", input=big)
    assert built.exit_code == 0, built.stderr
    found = sembed("search", "--index", str(tmp_path / "big"), "--k", "1", input=big)
    assert found.stdout.startswith(
        '{"text":"Lake Geneva","id":123456789012345678901234567890,"neighbors":[{"id":123456789012345678901234567890,'
    )


def test_loads_many_reads_each_text_as_loads_does():
    from sembed_cli.io import loads, loads_many

    texts = [b'{"text": "a", "n": 1.5}', '"doc:3"', b'{"id": 123456789012345678901234567890}', b"[1, 2]", b"null"]
    assert loads_many(texts) == [loads(t) for t in texts]
    assert loads_many(texts)[2]["id"] == 123456789012345678901234567890  # not the float orjson alone reads
    assert loads_many([]) == []
    for damaged, message in ((b'{"b": ', "unexpected end"), (b"1, 2", "unexpected content")):  # the array would read
        with pytest.raises(orjson.JSONDecodeError) as raised:
            loads_many([b'{"a": 1}', damaged])
        assert message in str(raised.value).lower()


def test_search_refuses_a_query_past_the_window_when_asked(tiny_model, one_torch_thread, tmp_path):
    assert (
        sembed(
            "index", "-m", tiny_model, "-o", str(tmp_path / "idx"), "-q", input=jsonl({"text": "Lake Geneva", "id": 1})
        ).exit_code
        == 0
    )
    queries = jsonl({"text": "Mount Fuji", "q": 1}, {"text": "word " * 100, "q": 2})
    refused = sembed("search", "--index", str(tmp_path / "idx"), "--long-text", "error", input=queries)
    assert refused.exit_code == 1
    assert refused.stderr.endswith(
        "error: <stdin>:2: 'text' is 102 tokens, longer than the model's 64-token window "
        "(hint: --long-text truncate or window embeds it)\n"
    )
    assert [r["q"] for r in refused.records] == [1]
    quiet = sembed("search", "--index", str(tmp_path / "idx"), "-q", input=queries)
    assert quiet.exit_code == 0 and quiet.stderr == ""  # -q: errors only
    counted = sembed("search", "--index", str(tmp_path / "idx"), input=queries)
    assert counted.exit_code == 0 and counted.records == quiet.records
    identity = orjson.loads((tmp_path / "idx" / "sembed.json").read_bytes())["embedding_model"]
    assert counted.stderr == (
        f"searching 1 vectors (flat) of {identity}\n"
        "warning: 1 text(s) longer than the model's 64-token window were truncated to it "
        "(--long-text window embeds them whole, error refuses them)\n"
    )
