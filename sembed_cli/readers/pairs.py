"""Sentence-pair benchmarks: STS Benchmark, SICK, SemEval STS 2012-2016, SNLI / MultiNLI.

Every pair becomes {id, ..., text_a, text_b, score and/or label}, texts
stripped of surrounding blanks. Cells are split on tabs only: the sentences
contain quotes, so csv quoting rules would merge or split lines wrongly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import ClassVar

from ..errors import BadRecord, SembedError
from ..io import RecordSource, json_type
from .inputs import InputFile, ReadSettings, columns, data_files, line_records, lines, number, sentence

STSB_COLUMNS = ("genre", "file", "year", "id", "score", "sentence1", "sentence2")
NLI_LABELS = ("entailment", "neutral", "contradiction")
NO_CONSENSUS = "-"


def stsb_record(line: str) -> dict:
    """One STS Benchmark line (Cer et al. 2017). Some lines carry two source columns after
    sentence2 (where each sentence was taken from); they are not part of the pair and are dropped."""
    genre, source, year, pair_id, score, text_a, text_b = columns(line, STSB_COLUMNS)[:7]
    return {
        "id": f"{source}/{year}/{pair_id}",
        "genre": genre,
        "source": source,
        "text_a": sentence(text_a, "sentence1"),
        "text_b": sentence(text_b, "sentence2"),
        "score": number(score, "score"),
    }


def read_stsb(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """STS Benchmark csv files (tab-separated, no header)."""
    return line_records(file, settings.encoding, stsb_record)


class SickColumns:
    """Where the fields of a SICK file are, from its header line.

    The SemEval-2014 task 1 files have pair_ID, sentence_A, sentence_B,
    relatedness_score, entailment_judgment; the full SICK.txt has more
    columns and calls the label entailment_label. Score and label columns
    are optional (an unannotated test file has neither).
    """

    FIELDS: ClassVar[dict[str, str]] = {
        "pair_ID": "id",
        "sentence_A": "text_a",
        "sentence_B": "text_b",
        "relatedness_score": "score",
        "entailment_judgment": "label",
        "entailment_label": "label",
    }
    REQUIRED = ("pair_ID", "sentence_A", "sentence_B")

    def __init__(self, header: str):
        names = [name.strip() for name in header.split("\t")]
        if not set(self.REQUIRED) <= set(names):
            raise BadRecord(
                f"expected a SICK header line with {', '.join(self.REQUIRED)}, relatedness_score, entailment_judgment"
            )
        self.names = names
        self.where = {field: names.index(name) for name, field in self.FIELDS.items() if name in names}

    def record(self, line: str) -> dict:
        cells = columns(line, self.names)
        record: dict = {
            "id": cells[self.where["id"]].strip(),
            "text_a": sentence(cells[self.where["text_a"]], "sentence_A"),
            "text_b": sentence(cells[self.where["text_b"]], "sentence_B"),
        }
        if "score" in self.where:
            record["score"] = number(cells[self.where["score"]], "relatedness_score")
        if "label" in self.where:
            record["label"] = nli_label(cells[self.where["label"]].strip().lower(), "entailment_judgment")
        return record


def nli_label(label: str, what: str) -> str:
    if label not in NLI_LABELS:
        raise BadRecord(f"{what} {label!r} is not one of {', '.join(NLI_LABELS)}")
    return label


def read_sick(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """SICK files: a header line, then one pair a line."""
    header: SickColumns | None = None
    for number_, line in lines(file, settings.encoding):
        if not line.strip():
            continue
        if header is None:
            try:
                header = SickColumns(line)
            except BadRecord as e:  # without the header no line can be read: stop even under --skip-errors
                raise SembedError(f"{file.name}:{number_}: {e.message}", "is this a SICK file?") from None
            continue
        try:
            record = header.record(line)
        except BadRecord as e:
            file.reject(number_, e.message)
            continue
        yield record


# SemEval STS 2012-2016 (Agirre et al.): STS.input.<set>.txt holds the pairs, STS.gs.<set>.txt beside it
# the gold scores, one a line, a blank line for a pair the annotators left unscored.
STS_INPUT = re.compile(r"^STS\.input\.(.+)\.txt(\.gz)?$")
STS_GOLD = re.compile(r"^STS\.gs\.(.+)\.txt(\.gz)?$")
SCORED_COLUMNS = ("score", "sentence1", "sentence2")


def semeval_files(paths: Sequence[Path]) -> list[Path]:
    """In a SemEval folder, the STS.input files (their gold files are read with them); otherwise all data files."""
    inputs = [p for p in paths if STS_INPUT.match(p.name)]
    return inputs or [p for p in data_files(paths) if not STS_GOLD.match(p.name)]


def read_semeval_sts(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """SemEval STS pairs: STS.input.*.txt with its STS.gs.*.txt, or lines of score TAB sentence1 TAB sentence2."""
    name = Path(file.path).name
    gold = STS_GOLD.match(name)
    if gold:
        raise SembedError(f"{file.name} holds gold scores only", f"pass STS.input.{gold.group(1)}.txt, which it scores")
    match = STS_INPUT.match(name)
    if match:
        yield from _input_with_gold(file, settings, match.group(1))
        return
    unscored = 0
    for number_, line in lines(file, settings.encoding):
        if not line.strip():
            continue
        try:
            score, text_a, text_b = columns(line, SCORED_COLUMNS)[:3]
            record = _pair(f"{file.stem}/{number_}", file.stem, text_a, text_b, score)
        except BadRecord as e:
            file.reject(number_, e.message)
            continue
        unscored += "score" not in record
        yield record
    _note_unscored(file, unscored)


def _pair(pair_id: str, source: str, text_a: str, text_b: str, score: str | None) -> dict:
    record: dict = {
        "id": pair_id,
        "source": source,
        "text_a": sentence(text_a, "sentence1"),
        "text_b": sentence(text_b, "sentence2"),
    }
    if score is not None and score.strip():
        record["score"] = number(score, "score")
    return record


def _gold_path(path: str, source: str) -> Path:
    here = Path(path)
    candidates = [here.with_name(f"STS.gs.{source}.txt{gz}") for gz in ("", ".gz")]
    return next((c for c in candidates if c.exists()), candidates[0])


class GoldLines:
    """The lines of an STS.gs file, asked for by line number in increasing order."""

    def __init__(self, file: InputFile, encoding: str):
        self.file = file
        self._lines = lines(file, encoding)
        self._next: tuple[int, str] | None = None
        self.ended = False
        self.last = 0

    def line(self, number_: int) -> str | None:
        """Line `number_`, or None when the file ended before it or that line was rejected (--skip-errors)."""
        while not self.ended and (self._next is None or self._next[0] < number_):
            self._next = next(self._lines, None)
            self.ended = self._next is None
        return self._next[1] if self._next is not None and self._next[0] == number_ else None

    def check_rest(self, pairs: int, pairs_file: str) -> None:
        """A score beyond the last pair means the two files do not belong together."""
        for number_, text in chain([self._next] if self._next and self._next[0] > pairs else [], self._lines):
            if text.strip():
                self.file.reject(number_, f"a score with no pair: {pairs_file} has {pairs} line(s)")
                return


def _input_with_gold(file: InputFile, settings: ReadSettings, source: str) -> Iterator[dict]:
    """Pairs from STS.input.X.txt (sentence1 TAB sentence2; later columns ignored), line n of STS.gs.X.txt
    being the score of line n. Without a gold file, or for a blank gold line, the pair has no score."""
    gold_path = _gold_path(file.path, source)
    if not gold_path.exists():
        file.note(f"no {gold_path.name} beside it: pairs are written without a score")
    gold = GoldLines(file.companion(gold_path), settings.encoding) if gold_path.exists() else None
    last, unscored = 0, 0
    for number_, line in lines(file, settings.encoding):
        last = number_
        score = None
        if gold is not None:
            score = gold.line(number_)
            if score is None:
                if gold.ended:
                    file.reject(number_, f"no score for this pair: {gold.file.name} ends before line {number_}")
                continue  # otherwise its gold line was bad, and skipped
            if score.strip():
                try:
                    number(score, "score")
                except BadRecord as e:
                    gold.file.reject(number_, e.message)
                    continue
        if not line.strip():
            continue
        try:
            text_a, text_b = columns(line, SCORED_COLUMNS[1:])[:2]
            record = _pair(f"{source}/{number_}", source, text_a, text_b, score)
        except BadRecord as e:
            file.reject(number_, e.message)
            continue
        unscored += "score" not in record
        yield record
    if gold is not None:
        gold.check_rest(last, file.name)
        file.warnings.extend(filter(None, [gold.file.rejects.summary()]))
        _note_unscored(file, unscored)


def _note_unscored(file: InputFile, unscored: int) -> None:
    if unscored:
        file.note(f"{unscored} pair(s) have no gold score (blank score): written without 'score'")


def snli_check(record: dict) -> None:
    """Raise BadRecord unless the record has the SNLI / MultiNLI fields in usable shape."""
    for key in ("sentence1", "sentence2", "gold_label"):
        if key not in record:
            raise BadRecord(f"missing key '{key}'")
        if not isinstance(record[key], str):
            raise BadRecord(f"'{key}' must be a string, got {json_type(record[key])}")
    for key in ("sentence1", "sentence2"):
        if not record[key].strip():
            raise BadRecord(f"empty text in '{key}'")
    if record["gold_label"] != NO_CONSENSUS:
        nli_label(record["gold_label"].strip().lower(), "gold_label")


def snli_record(record: dict) -> dict | None:
    """{id, genre (MultiNLI), text_a, text_b, label} from a checked record; None when the
    annotators reached no consensus (gold_label '-'), which the SNLI paper leaves out too."""
    if record["gold_label"] == NO_CONSENSUS:
        return None
    pair = {"id": str(record["pairID"])} if "pairID" in record else {}
    if isinstance(record.get("genre"), str):
        pair["genre"] = record["genre"]
    pair.update(
        text_a=record["sentence1"].strip(),
        text_b=record["sentence2"].strip(),
        label=record["gold_label"].strip().lower(),
    )
    return pair


def read_snli(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """SNLI / MultiNLI JSONL (always UTF-8, as JSON is)."""
    source = RecordSource(file.path, skip_errors=file.rejects.skip_errors)
    no_consensus = 0
    try:
        for record in source.checked(snli_check):
            pair = snli_record(record)
            if pair is None:
                no_consensus += 1
            else:
                yield pair
    finally:
        file.rejects.skipped.extend(source.rejects.skipped)  # one summary per file, in the file's own Rejects
    if no_consensus:
        file.note(f"left out {no_consensus} pair(s) with gold_label '-' (no annotator consensus)")
