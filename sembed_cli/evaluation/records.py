"""Reading a whole record stream for a metric: every record is read, only what the task needs is kept.

A metric needs every record, so nothing streams out; each task passes a
`keep` function that checks one record and returns what it contributes (a
similarity, a label and features, a score), raising `BadRecord`, which the
record source reports at FILE:LINE (or skips with --skip-errors).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .. import console
from ..errors import SembedError
from ..io import RecordSource, derived_key, embed_first_hint

if TYPE_CHECKING:
    from ..models.model_identity import OneModel

log = logging.getLogger(__name__)

T = TypeVar("T")


def eval_source(path: str, skip_errors: bool, task: str) -> RecordSource:
    """The records `sembed eval TASK` reads; plain text given to it gets the hint to embed it first."""
    return RecordSource(path, skip_errors=skip_errors, plain_text_hint=embed_first_hint(f"sembed eval {task}"))


def read_all(
    source: RecordSource, keep: Callable[[dict], T], models: OneModel | None = None, npy: Path | None = None
) -> list[T]:
    """What `keep` takes from every record; a BadRecord it raises is reported at FILE:LINE (or skipped).

    `models` (a model_identity.OneModel) refuses records whose vectors are of another model than the first's;
    `npy`: the vectors are rows of that `embed --npy` matrix (vector_rows.RowVectors)."""
    from ..vector_rows import RowVectors

    rows = RowVectors(npy) if npy is not None else None
    kept: list[T] = []

    def take(record: dict) -> None:
        if rows is not None:
            rows.attach(record)
        if models is not None:
            models(record)
            if rows is not None:
                models.agree(rows.identity, f"{rows.path}.json names vectors")
        kept.append(keep(record))

    for _ in console.progress(source.checked(take), "reading records"):
        pass
    summary = source.summary()
    if summary:
        log.warning(summary)
    if not kept:
        raise SembedError(f"no usable records in {source.rejects.name}")
    return kept


def pair_keys(text_keys: tuple[str, str], name: str) -> tuple[str, str]:
    """The two fields derived from a pair's text keys: ("text_a", "text_b") and "embedding" give
    ("embedding_a", "embedding_b")."""
    return derived_key(text_keys[0], name), derived_key(text_keys[1], name)
