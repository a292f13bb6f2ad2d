"""What an input's first line looks like when it is not what its name (or --lines) says: the hint of the error.

An input's format is decided by its name (a `.txt` is plain text, anything else JSONL) or by --lines/--jsonl, never
by sniffing, so a file reads the same way every time. But a first line that plainly belongs to another format turns
the error into one that says what to run instead (issues 41.6, 42.5): a JSONL file named `.txt`, the pair files
`sembed convert` reads (SICK's header; an STS Benchmark row, which has no header), or plain text given to a
command that needs records.
"""

from __future__ import annotations

import orjson

from .lines import STDIN

JSONL_HINT = "this looks like JSONL: give it a .jsonl name or pass --jsonl"
SICK_HEADER = ("pair_ID", "sentence_A", "sentence_B")  # the columns every SICK file opens with (readers.pairs)
STSB_FIELDS = 7  # genre, file, year, id, score (0-5), sentence1, sentence2; some rows carry 2 source columns more


def pair_format(line: str) -> str | None:
    """The `convert --from` name of the pair file whose first line `line` is: 'sick' or 'stsb', else None."""
    fields = [field.strip() for field in line.split("\t")]
    if fields[: len(SICK_HEADER)] == list(SICK_HEADER):
        return "sick"
    if len(fields) in (STSB_FIELDS, STSB_FIELDS + 2) and fields[3].isdigit():
        try:
            score = float(fields[4])
        except ValueError:
            return None
        if 0.0 <= score <= 5.0 and fields[5] and fields[6]:
            return "stsb"
    return None


PAIR_NAMES = {"sick": "SICK", "stsb": "STS-B"}
PAIR_LINES = {"sick": "a SICK header", "stsb": "an STS-B pair"}  # what the first line is, for the error


def pair_hint(line: str, path: str) -> str | None:
    """`this looks like SICK: sembed convert --from sick FILE` where `line` opens a pair file, else None."""
    fmt = pair_format(line)
    if fmt is None:
        return None
    return f"this looks like {PAIR_NAMES[fmt]}: sembed convert --from {fmt} {path if path != STDIN else 'FILE'}"


def is_json_object(line: str) -> bool:
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def embed_first_hint(command: str) -> str:
    """The hint for plain text given to a command that needs vectors (eval): embed it first."""
    return f"this looks like plain text: embed it first, e.g. sembed embed --lines FILE | {command}"
