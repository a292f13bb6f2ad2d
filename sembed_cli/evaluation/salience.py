"""eval salience: a salience table against word norms (word, rating), and its highest and lowest words.

The NWS paper (section 4.2, Table 3) correlates the learnt scores with
psycholinguistic ratings (concreteness, imageability, valence, arousal,
dominance). Norms come as JSONL records or as the delimited files they are
published in (CSV, or tab-separated .tsv/.txt, with a header row).
"""

from __future__ import annotations

import contextlib
import csv
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .. import console
from ..errors import BadRecord, SembedError
from ..io import RecordSource, check_number, check_text, text_lines
from ..models.salience import SalienceTable
from . import tables
from .statistics import correlation

log = logging.getLogger(__name__)

DELIMITED = {".csv": ",", ".tsv": "\t", ".txt": "\t"}


class NormReader:
    """(word, rating) of one record."""

    def __init__(self, word_key: str = "word", rating_key: str = "rating"):
        self.word_key, self.rating_key = word_key, rating_key

    def __call__(self, record: dict) -> tuple[str, float]:
        if self.word_key not in record:
            raise BadRecord(f"missing key '{self.word_key}' (the rated word)")
        return check_text(record, self.word_key).strip(), check_number(record, self.rating_key, "the rating")


def delimited_records(path: str, source: RecordSource) -> Iterator[tuple[int, dict[str, str | float]]]:
    """The rows of a CSV/TSV file with a header as (line number, dict) pairs, the values as numbers where they are."""
    delimiter = DELIMITED[Path(path).suffix.lower()]
    lines = text_lines(path, source.rejects)
    header = None
    for number, line in lines:
        if not line.strip():
            continue
        row = next(csv.reader([line], delimiter=delimiter))
        if header is None:
            header = [name.strip() for name in row]
            continue
        record: dict[str, str | float] = dict(zip(header, row))
        for key, value in record.items():
            with contextlib.suppress(ValueError):  # a number where it reads as one; the word stays a string
                record[key] = float(value)
        yield number, record


def read_norms(
    path: str, reader: NormReader, skip_errors: bool = False
) -> tuple[list[tuple[str, float]], RecordSource]:
    source = RecordSource(path, skip_errors=skip_errors)
    norms: list[tuple[str, float]] = []
    if Path(path).suffix.lower() in DELIMITED:
        for number, record in delimited_records(path, source):
            try:
                norms.append(reader(record))
            except BadRecord as e:
                source.rejects.reject(number, e.message)
    else:
        norms = []
        for _ in source.checked(lambda record: norms.append(reader(record))):
            pass
    if not norms:
        raise SembedError(
            f"no rated words in {source.rejects.name}", "give word and rating fields (--word-key, --rating-key)"
        )
    return norms, source


def correlation_with_norms(table: SalienceTable, norms: list[tuple[str, float]]) -> dict:
    """Pearson and Spearman (x100, Fisher 95% CI) of the scores of the words in `norms` with their ratings."""
    index = {word: i for i, word in enumerate(table.words)}
    lowercase = bool(table.metadata["vectors"].get("lowercase"))
    scores, ratings, missing = [], [], []
    for word, rating in norms:
        i = index.get(word)
        if i is None and lowercase:
            i = index.get(word.lower())
        if i is None:
            missing.append(word)
            continue
        scores.append(table.scores[i])
        ratings.append(rating)
    if len(scores) < 3:
        raise SembedError(
            f"only {len(scores)} of the {len(norms)} rated words are in the salience table",
            "the correlation needs at least 3",
        )
    result = correlation(np.array(scores, dtype=np.float64), np.array(ratings, dtype=np.float64), "salience", "rating")
    return {"rated": len(norms), "missing": len(missing), "missing_examples": missing[:10], **result.as_dict()}


def salience_report(table_path: str, norms: list[tuple[str, float]], extremes: int, min_sentences: int) -> dict:
    table = SalienceTable.load(table_path)
    top, bottom = table.extremes(extremes, min_sentences)
    return {
        "task": "salience",
        "table": str(table_path),
        "words": len(table.words),
        **correlation_with_norms(table, norms),
        "top": top,
        "bottom": bottom,
    }


def evaluate(
    input: str,
    table_path: str,
    word_key: str = "word",
    rating_key: str = "rating",
    extremes: int = 10,
    min_sentences: int = 5,
    skip_errors: bool = False,
) -> dict:
    """The report of `sembed eval salience`: the rated words of `input` (JSONL, or a delimited file with a header)
    against the salience table at `table_path` (`salience_report`)."""
    norms, source = read_norms(input, NormReader(word_key, rating_key), skip_errors)
    summary = source.summary()
    if summary:
        log.warning(summary)
    return salience_report(table_path, norms, extremes, min_sentences)


def print_report(result: dict, rating_key: str = "rating") -> None:
    """The correlation as a table on stderr, then the highest and lowest scored words (none with -q)."""
    from rich.table import Table

    table = Table(
        title=f"salience vs {rating_key} (x100, Fisher 95% CI): {result['n']} of {result['rated']} rated "
        f"words in the table",
        title_justify="left",
    )
    for column in ("n", "Pearson", "95% CI", "Spearman", "95% CI"):
        table.add_column(column, justify="right")
    table.add_row(*tables.correlation_cells(result))
    tables.show(table)
    if result["top"] and not console.state.quiet:
        log.info("highest: " + ", ".join(f"{w} {s:.3g}" for w, s in result["top"]))
        log.info("lowest: " + ", ".join(f"{w} {s:.3g}" for w, s in result["bottom"]))
