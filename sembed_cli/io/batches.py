"""Records in batches for a model: a partial batch comes out before an input error, so nothing read is lost."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..errors import SembedError
from .fields import TextFields

T = TypeVar("T")


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` items; on an input error the partial batch comes out first."""
    batch: list[T] = []
    try:
        for item in items:
            batch.append(item)
            if len(batch) >= size:
                yield batch
                batch = []
    except SembedError:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def text_jobs(batch: list[dict], fields: TextFields) -> list[tuple[dict, str]]:
    """Every (record, text key) of a batch, in order: the units a model works on."""
    return [(record, key) for record in batch for key in fields.of(record)]


def map_texts(
    records: Iterable[dict],
    fields: TextFields,
    batch_size: int,
    process: Callable[[list[str]], Iterable[T]],
    store: Callable[[dict, str, T], None],
) -> Iterator[dict]:
    """Run `process` over all texts of each batch at once, `store` each result in its record, pass records on."""
    for batch in batched(records, batch_size):
        jobs = text_jobs(batch, fields)
        for (record, key), result in zip(jobs, process([record[key] for record, key in jobs])):
            store(record, key, result)
        yield from batch
