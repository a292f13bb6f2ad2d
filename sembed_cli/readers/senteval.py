"""SentEval-style classification sets (Conneau & Kiela 2018): {text, label} with SentEval's 1/0 labels.

- mr: sentence polarity (Pang & Lee 2005), rt-polarity.pos -> 1, rt-polarity.neg -> 0;
- subj: subjectivity (Pang & Lee 2004), quote.* (subjective) -> 1, plot.* (objective) -> 0;
- cr: customer reviews (Hu & Liu 2004) in their annotated form, where a line is
  "feature[+2], other[-1]##the sentence". A sentence is positive (1) when its
  opinion strengths sum above 0, negative (0) below 0; sentences without
  marks, or whose marks cancel out, carry no polarity and are left out
  (counted on stderr), as are review titles ([t]) and the header. SentEval's
  own custrev.pos / custrev.neg files are read by name like MR's.
The label comes from the file name, so these read files, not stdin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from ..errors import SembedError
from .inputs import InputFile, ReadSettings, line_records, lines, sentence

POLARITY_SUFFIXES = {".pos": 1, ".neg": 0}
SUBJECTIVITY_NAMES = {"quote": 1, "subj.subjective": 1, "plot": 0, "subj.objective": 0}
OPINION = re.compile(r"\[([+-])(\d?)\]")  # [+2], [-1]; a bare [+] counts as strength 1


def polarity_label(file: InputFile) -> int | None:
    name = file.label.removesuffix(".gz")
    return next((label for suffix, label in POLARITY_SUFFIXES.items() if name.endswith(suffix)), None)


def subjectivity_label(file: InputFile) -> int | None:
    name = file.label.rsplit("/", 1)[-1].removesuffix(".gz")
    return next((label for start, label in SUBJECTIVITY_NAMES.items() if name.startswith(start)), None)


def _labelled_by_name(file: InputFile, settings: ReadSettings, label: int) -> Iterator[dict]:
    return line_records(file, settings.encoding, lambda line: {"text": sentence(line, "sentence"), "label": label})


def _by_name(
    rule: Callable[[InputFile], int | None], expected: str
) -> Callable[[InputFile, ReadSettings], Iterator[dict]]:
    def read(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
        label = rule(file)
        if label is None:
            raise SembedError(f"cannot tell the label of {file.name} from its name", f"this format reads {expected}")
        return _labelled_by_name(file, settings, label)

    return read


read_mr = _by_name(polarity_label, "rt-polarity.pos and rt-polarity.neg")
read_subj = _by_name(subjectivity_label, "quote.tok.gt9.5000 and plot.tok.gt9.5000")


def opinion(features: str) -> int:
    """The sum of the opinion strengths marked in a Hu & Liu feature list."""
    return sum(
        (int(strength) if strength else 1) * (1 if sign == "+" else -1) for sign, strength in OPINION.findall(features)
    )


def cr_record(line: str) -> dict | None:
    """{text, label} for an annotated review sentence with a net opinion, else None."""
    features, mark, text = line.partition("##")
    if not mark:
        return None  # a review title, the header, a note
    total = opinion(features)
    if total == 0 or not text.strip():
        return None
    return {"text": text.strip(), "label": 1 if total > 0 else 0}


def read_cr(file: InputFile, settings: ReadSettings) -> Iterator[dict]:
    """Hu & Liu annotated reviews, or SentEval's custrev.pos / custrev.neg."""
    label = polarity_label(file)
    if label is not None:
        yield from _labelled_by_name(file, settings, label)
        return
    neutral = 0
    for _, line in lines(file, settings.encoding):
        record = cr_record(line)
        if record is not None:
            yield record
        elif "##" in line and line.partition("##")[2].strip():
            neutral += 1
    if neutral:
        file.note(f"left out {neutral} sentence(s) without a net opinion mark")
