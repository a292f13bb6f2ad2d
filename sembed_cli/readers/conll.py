"""Dependency treebanks as records with `tokens` in the shape `sembed parse` writes.

Three layouts, told apart by the number of tab-separated columns:
- 3: word, tag, head (the Penn Treebank sample's .dp files; no labels),
- 4: word, tag, head, label (Malt-TAB),
- 10: CoNLL-X / CoNLL-U (ID, FORM, LEMMA, UPOS/CPOSTAG, XPOS/POSTAG, FEATS, HEAD, DEPREL, ...);
  '#' comment lines, multiword ranges (1-2) and empty nodes (1.1) are skipped.
A blank line ends a sentence. Heads in the files count from 1 with 0 for the
root; in `tokens` they are 0-based and the root is its own head, as spaCy
has it. Only the fields a layout has are written: {i, text, tag, head} for
the .dp files, plus dep with labels, plus lemma and pos for CoNLL-X/U.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain

from ..errors import BadRecord
from .inputs import InputFile, ReadSettings, lines

LAYOUTS = {3: "word/tag/head", 4: "Malt-TAB", 10: "CoNLL"}
MISSING = "_"


@dataclass
class Sentence:
    """Tokens of one sentence as read, with the physical line of each for error messages."""

    tokens: list[dict] = field(default_factory=list)
    heads: list[tuple[int, str]] = field(default_factory=list)  # (line, head as written)
    words: list[str] = field(default_factory=list)
    spaces: list[bool] = field(default_factory=list)
    layout: int | None = None

    def add(self, number: int, cells: list[str]) -> None:
        if len(cells) not in LAYOUTS:
            raise BadRecord(
                f"expected word TAB tag TAB head (3 or 4 columns) or 10 CoNLL-X/U columns, found {len(cells)}"
            )
        if self.layout is not None and len(cells) != self.layout:
            raise BadRecord(f"{len(cells)} columns in a sentence of {self.layout}-column lines")
        self.layout = len(cells)
        i = len(self.tokens)
        if self.layout == 10:
            misc = cells[9]
            token: dict = {"i": i, "text": cells[1]}
            if cells[2] != MISSING:
                token["lemma"] = cells[2]
            token["pos"] = cells[3]
            token["tag"] = cells[4] if cells[4] != MISSING else cells[3]
            token["dep"] = cells[7]
            head = cells[6]
            self.spaces.append("SpaceAfter=No" not in misc.split("|"))
        else:
            token = {"i": i, "text": cells[0], "tag": cells[1]}
            if self.layout == 4:
                token["dep"] = cells[3]
            head = cells[2]
            self.spaces.append(True)
        if not token["text"]:
            raise BadRecord("empty word")
        self.tokens.append(token)
        self.heads.append((number, head.strip()))
        self.words.append(token["text"])

    def record(self) -> dict:
        """{text, tokens}, heads resolved; a head outside the sentence is reported at its token's line."""
        n = len(self.tokens)
        for token, (number, written) in zip(self.tokens, self.heads):
            try:
                head = int(written)
            except ValueError:
                raise _LineError(number, f"head {written!r} is not a number") from None
            if not 0 <= head <= n:
                raise _LineError(number, f"head {head} is outside the sentence of {n} words")
            token["head"] = token["i"] if head == 0 else head - 1
        text = "".join(w + (" " if space else "") for w, space in zip(self.words, self.spaces)).rstrip()
        return {"text": text, "tokens": self.tokens}


class _LineError(BadRecord):
    """A problem found at sentence end that belongs to one earlier line."""

    def __init__(self, number: int, message: str):
        super().__init__(message)
        self.number = number


def is_comment(line: str) -> bool:
    """CoNLL-U comments; a '#' word in the other layouts has tabs after it."""
    return line.startswith("#") and "\t" not in line


def is_word_line(cells: list[str]) -> bool:
    """CoNLL-U multiword ranges (3-4) and empty nodes (5.1) are not words of the tree."""
    return len(cells) != 10 or cells[0].isdigit()


def read_conll(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """Sentences as {doc_id (the file), sent_id (position in the file from 0), text, tokens}.
    A bad line drops its sentence under --skip-errors; sent_id still counts it, so ids stay put."""
    sent_id = 0
    sentence, broken = Sentence(), False
    for number, line in chain(lines(file, settings.encoding), [(0, "")]):  # a blank line ends the file
        if line.strip():
            if is_comment(line):
                continue
            cells = line.split("\t")
            if broken or not is_word_line(cells):
                continue
            try:
                sentence.add(number, cells)
            except BadRecord as e:
                file.reject(number, e.message)
                broken = True
            continue
        if sentence.tokens or broken:
            record = None
            if not broken:
                try:
                    record = sentence.record()
                except _LineError as e:
                    file.reject(e.number, e.message)
            if record is not None:
                yield {"doc_id": file.label, "sent_id": sent_id, **record}
            sent_id += 1
        sentence, broken = Sentence(), False
