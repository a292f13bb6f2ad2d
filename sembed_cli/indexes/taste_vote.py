"""`sembed taste` over a record stream: the masked-LM's taste of each name (models/taste.py, Zhang et al. section 4),
and, where --neighbours names labelled-name indexes, their k-NN vote mixed with the n-gram regression
(`neighbour_vote`), which decides is_poi then."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..io import StreamOptions, TextFields, derived_key, map_texts
from ..models.taste import DEFAULT_THRESHOLD, DEFAULT_TOP_K
from .neighbour_vote import Identification, VoteSettings, opened_identification

if TYPE_CHECKING:
    from ..models.taste import Taster


def taste_records(
    records: Iterable[dict],
    taster: Taster,
    fields: TextFields,
    batch_size: int,
    threshold: float,
    identification: Identification | None = None,
) -> Iterator[dict]:
    """`sembed taste`: each record with taste_score, taste_prob, taste_hits, taste_length, (poi_vote, poi_ngram,
    poi_score,) and is_poi for each text field (lazy)."""

    def judge(texts: list[str]) -> list[tuple]:
        verdicts = identification.judge(texts) if identification is not None else [None] * len(texts)
        return list(zip(taster.taste(texts), verdicts))

    def store(record: dict, key: str, judged) -> None:
        taste, verdict = judged
        prediction = derived_key(key, "is_poi")
        if prediction in record:
            record[prediction + "_gold"] = record.pop(prediction)
        record[derived_key(key, "taste_score")] = round(taste.score, 6)
        record[derived_key(key, "taste_prob")] = round(taste.probability, 6)
        record[derived_key(key, "taste_hits")] = taste.hits
        record[derived_key(key, "taste_length")] = taste.length
        if verdict is None:
            record[prediction] = taste.length > 0 and taste.score >= threshold
        else:
            for name, value in zip(("poi_vote", "poi_ngram", "poi_score"), verdict):
                record[derived_key(key, name)] = value
            record[prediction] = taste.length > 0 and verdict[2] >= threshold

    return map_texts(records, fields, batch_size, judge, store)


@dataclass(frozen=True)
class TasteSettings:
    """What `sembed taste` tastes with: the masked-LM directory and how it runs, the hit rule (--top-k) and the
    is_poi threshold, and the labelled-name indexes that vote (none: the taste alone decides)."""

    model: str
    device: str = "auto"
    precision: str = "auto"
    top_k: int = DEFAULT_TOP_K
    threshold: float = DEFAULT_THRESHOLD
    batch_size: int = 256
    neighbours: tuple[Path, ...] = ()
    vote: VoteSettings = field(default_factory=VoteSettings)


def taste_stream(stream: StreamOptions, fields: TextFields, settings: TasteSettings) -> int:
    """`sembed taste`: load the masked-LM (and the --neighbours indexes), taste the stream's records into its
    output; returns the count written."""
    from ..models.masked_lm import load_masked_lm
    from ..models.precision import resolve
    from ..models.sentence_models import resolve_device
    from ..models.taste import Taster

    device = resolve_device(settings.device)
    lm, tokenizer = load_masked_lm(settings.model, device, resolve(settings.precision, device, cpu_bf16=True))
    taster = Taster(lm, tokenizer, settings.top_k)
    voting = opened_identification(settings.neighbours, device, settings.vote) if settings.neighbours else nullcontext()
    with voting as identification:
        return stream.run(
            fields.of,
            lambda records: taste_records(
                records, taster, fields, settings.batch_size, settings.threshold, identification
            ),
            settings.batch_size,
            "tasting",
        )
