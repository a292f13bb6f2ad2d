"""Sentence pairs with a gold target: a similarity score (SBERT, CF-BERT, TA-SBERT --objective sts) or an
NLI label (TA-SBERT's softmax objective).

Training sees the whole input before the first step (the data is shuffled
every epoch), so the pairs are read into memory, each checked as it is read,
keeping only the fields training uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import console
from ..artifacts import ContentHash
from ..errors import BadRecord
from ..io import TextFields, batched, check_number, check_text, derived_key, label, text_jobs
from .data import TrainingInput

LABEL_COLUMN = "label"  # the column name the sentence-transformers trainer takes as the target


@dataclass(frozen=True)
class ScoreRange:
    """The scale of the gold scores, mapped linearly onto the [0, 1] target of the cosine objective.

    SBERT (and CF-BERT after it) divides STS-B's 0-5 scores by 5. SICK's 1-5
    relatedness is mapped with (s - 1) / 4, so that "unrelated" is 0 on both.
    """

    low: float = 0.0
    high: float = 5.0

    @classmethod
    def parse(cls, text: str) -> ScoreRange:
        try:
            low, high = (float(part) for part in text.split(":"))
        except ValueError:
            raise ValueError(f"expected LOW:HIGH such as 0:5, got {text!r}") from None
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"expected LOW < HIGH, got {text!r}")
        return cls(low, high)

    def scale(self, score: float) -> float:
        return (score - self.low) / (self.high - self.low)

    def __str__(self) -> str:
        return f"{self.low:g}:{self.high:g}"


@dataclass(frozen=True)
class PairFields:
    """Which record fields hold the two texts and the score; S_cf lives in the texts' derived fields."""

    text_a: str = "text_a"
    text_b: str = "text_b"
    score: str = "score"
    label: str = "label"

    @property
    def texts(self) -> tuple[str, str]:
        return self.text_a, self.text_b

    @property
    def s_cf(self) -> tuple[str, str]:
        return derived_key(self.text_a, "s_cf"), derived_key(self.text_b, "s_cf")


@dataclass(frozen=True)
class LabelSet:
    """The NLI classes, in the order of the softmax classifier's outputs; labels are matched in lower case."""

    names: tuple[str, ...] = ("entailment", "neutral", "contradiction")

    def index(self, record: dict, key: str) -> int:
        value = label(record, key).strip().lower()
        if value not in self.names:
            raise BadRecord(f"'{key}' {value!r} is not one of {', '.join(self.names)}")
        return self.names.index(value)


@dataclass
class TrainingPairs:
    """The training pairs as named columns, in the order the loss reads them, and what they were."""

    columns: dict[str, list] = field(default_factory=dict)
    count: int = 0
    sha256: str = ""
    target: str = "score"
    s_cf_computed: int = 0  # pairs whose S_cf was not in the input and was built here

    def describe(self, input: TrainingInput) -> dict:
        """The `data` part of the model's metadata."""
        data = {
            **input.provenance(self.sha256, records=self.count),
            "sha256_of": f"text_a, text_b, {self.target} of each pair, in input order",
        }
        if self.s_cf_computed:
            data["s_cf_computed"] = self.s_cf_computed
        return data

    def training_data(self, input: TrainingInput, hint: str) -> tuple[dict[str, list], dict]:
        """The columns training reads and the `data` of the metadata; no pair at all is an error (`hint`: what
        the method reads)."""
        input.refuse_empty(self.count, "training pairs", hint)
        return self.columns, self.describe(input)


def check_pair(fields: PairFields, score_range: ScoreRange, component_focus: bool):
    """The per-record check: two usable texts, a numeric score in range, usable S_cf where given."""
    texts = TextFields(fields.texts)

    def check(record: dict) -> None:
        texts.of(record)
        score = check_number(record, fields.score, "training needs each pair's gold similarity score")
        if not score_range.low <= score <= score_range.high:
            raise BadRecord(f"'{fields.score}' {score:g} is outside --score-range {score_range}")
        if component_focus:
            for key in fields.s_cf:
                if key in record:
                    check_text(record, key)

    return check


def check_labelled_pair(fields: PairFields, labels: LabelSet):
    """The per-record check of NLI pairs: two usable texts and one of the known labels."""
    texts = TextFields(fields.texts)

    def check(record: dict) -> None:
        texts.of(record)
        labels.index(record, fields.label)

    return check


def read_scored_pairs(
    source: TrainingInput,
    fields: PairFields,
    score_range: ScoreRange,
    component_focus: bool = False,
    batch_size: int = 1000,
) -> TrainingPairs:
    """Read and check every pair of `source`; with `component_focus`, also S_cf of both texts.

    S_cf given in the input (s_cf_a / s_cf_b) is used as it is; where it is
    missing it is built by `sembed spo`'s own function, from the pair's
    tokens_a / tokens_b when present, else by parsing the text.
    """
    keep = set(fields.texts) | {fields.score}
    if component_focus:
        keep |= set(fields.s_cf) | {derived_key(key, "tokens") for key in fields.texts}
    records = _read(source, check_pair(fields, score_range, component_focus), keep)
    pairs = TrainingPairs(count=len(records), target="score")
    if component_focus:
        pairs.s_cf_computed = _add_missing_s_cf(records, fields, batch_size)
    order = [fields.text_a, fields.s_cf[0], fields.text_b, fields.s_cf[1]] if component_focus else list(fields.texts)
    _fill(
        pairs,
        records,
        fields,
        fields.score,
        order,
        [score_range.scale(float(record[fields.score])) for record in records],
    )
    return pairs


def read_labelled_pairs(source: TrainingInput, fields: PairFields, labels: LabelSet = LabelSet()) -> TrainingPairs:
    """Read and check every NLI pair of `source`: the two texts and the label's index in `labels`."""
    records = _read(source, check_labelled_pair(fields, labels), set(fields.texts) | {fields.label})
    pairs = TrainingPairs(count=len(records), target="label")
    _fill(
        pairs,
        records,
        fields,
        fields.label,
        list(fields.texts),
        [labels.index(record, fields.label) for record in records],
    )
    return pairs


def _read(source: TrainingInput, check, keep: set[str]) -> list[dict]:
    """Every checked record of `source`, with only the fields in `keep`."""
    return [{key: record[key] for key in keep if key in record} for record in source.read(check, "reading pairs")]


def _fill(
    pairs: TrainingPairs, records: list[dict], fields: PairFields, target: str, order: list[str], targets: list
) -> None:
    """The fingerprint of (text_a, text_b, target) and the columns in the loss's order, then the targets."""
    digest = ContentHash()
    for record in records:
        digest.add([record[fields.text_a], record[fields.text_b], record[target]])
    pairs.sha256 = digest.hexdigest()
    pairs.columns = {key: [record[key] for record in records] for key in order}
    pairs.columns[LABEL_COLUMN] = targets


def _add_missing_s_cf(records: list[dict], fields: PairFields, batch_size: int) -> int:
    """S_cf (`component_focus.add_missing_s_cf`) for the records that lack it; S_cf the input gave is kept.
    Returns how many records lacked it."""
    from ..text.component_focus import add_missing_s_cf

    missing = [record for record in records if any(key not in record for key in fields.s_cf)]
    texts = TextFields(fields.texts)
    for batch in batched(console.progress(iter(missing), "building S_cf", total=len(missing)), batch_size):
        add_missing_s_cf(text_jobs(batch, texts))
    return len(missing)
