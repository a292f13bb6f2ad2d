"""Sentence-ordered corpora: {doc_id, sent_id, text} in reading order.

Documents matter downstream: NWS training pairs a sentence with its
neighbours in the same document. A document is either a whole file, named by
the file (its path under the folder given, e.g. "state_union/1945-Truman.txt"),
or, with blank-line breaks, a run of lines up to a blank line, named by the
file and its number in the file from 0 ("abc/rural.txt#3"). sent_id counts
the sentences of a document from 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from ..errors import BadRecord
from ..io import batched
from ..text import spacy_pipeline
from .inputs import InputFile, ReadSettings, lines

BLANK = "blank"  # a blank line ends a document
FILE = "file"  # a file is one document


def doc_id(file: InputFile, number: int, doc_break: str) -> str:
    return f"{file.label}#{number}" if doc_break == BLANK else file.label


def read_lines(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """One sentence a line; by default a blank line ends a document."""
    doc_break = settings.doc_break or BLANK
    document, sent_id = 0, 0
    for _, line in lines(file, settings.encoding):
        text = line.strip()
        if not text:
            if sent_id and doc_break == BLANK:
                document, sent_id = document + 1, 0
            continue
        yield {"doc_id": doc_id(file, document, doc_break), "sent_id": sent_id, "text": text}
        sent_id += 1


@dataclass
class Paragraph:
    doc_id: str
    text: str


def paragraphs(files: Sequence[InputFile], settings: ReadSettings, max_length: int) -> Iterator[Paragraph]:
    """The paragraphs of each file in order: a line each, or with `wrapped` the lines up to a blank line."""
    doc_break = settings.doc_break or FILE
    for file in files:
        document, started = 0, False
        pending: list[tuple[int, str]] = []  # the lines of a wrapped paragraph
        for number, line in chain(lines(file, settings.encoding), [(0, "")]):  # a blank line closes the file
            text = line.strip()
            if text:
                pending.append((number, text))
            if pending and (not text or not settings.wrapped):
                paragraph = " ".join(t for _, t in pending)
                if len(paragraph) > max_length:  # spaCy refuses longer texts (and would need its RAM)
                    file.reject(
                        pending[0][0],
                        f"paragraph of {len(paragraph)} characters is longer than spaCy's limit of {max_length}",
                    )
                else:
                    yield Paragraph(doc_id(file, document, doc_break), paragraph)
                    started = True
                pending = []
            if not text and started and doc_break == BLANK:
                document, started = document + 1, False


def read_prose(files: Sequence[InputFile], settings: ReadSettings) -> Iterator[dict]:
    """Prose split into sentences by spaCy's `senter`, paragraphs batched across files; a file is a document."""
    nlp = spacy_pipeline.load(settings.model, spacy_pipeline.SENTENCES)
    current, sent_id = None, 0
    for batch in batched(paragraphs(files, settings, nlp.max_length), settings.batch_size):
        docs = nlp.pipe((p.text for p in batch), batch_size=spacy_pipeline.BATCH, n_process=settings.n_process)
        for paragraph, doc in zip(batch, docs):
            if paragraph.doc_id != current:
                current, sent_id = paragraph.doc_id, 0
            for sent in doc.sents:
                text = sent.text.strip()
                if text:
                    yield {"doc_id": current, "sent_id": sent_id, "text": text}
                    sent_id += 1


def brown_record(line: str) -> tuple[list[str], list[str]] | None:
    """Words and tags of one tagged Brown line (word/TAG tokens; a word may itself contain '/')."""
    words, tags = [], []
    for token in line.split():
        word, slash, tag = token.rpartition("/")
        if not slash or not word or not tag:
            raise BadRecord(f"token {token!r} is not word/TAG")
        words.append(word)
        tags.append(tag)
    return (words, tags) if words else None


def read_brown(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """The tagged Brown corpus (NLTK layout): one sentence a line, a file a document.
    sent_id is the sentence's position in the file, so it stays put when --skip-errors drops one."""
    sent_id = 0
    for number, line in lines(file, settings.encoding):
        try:
            parsed = brown_record(line)
        except BadRecord as e:
            file.reject(number, e.message)
            sent_id += 1
            continue
        if parsed:
            words, tags = parsed
            yield {"doc_id": file.label, "sent_id": sent_id, "text": " ".join(words), "tags": tags}
            sent_id += 1
