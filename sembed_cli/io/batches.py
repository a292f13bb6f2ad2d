"""Records in batches for a model: a partial batch comes out before an input error, so nothing read is lost.

Windows start small and grow (`window_sizes`): `... | sembed embed | head -1` has its first record as soon as
one record is embedded, not after a full --batch-size window of them (issue 41.5); the growth ends exactly at
the first full window, so every later window holds the records it held before. The sink flushes on the same
schedule (`stream.RecordSink`), so each window is written as soon as it is done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from ..errors import SembedError
from .fields import TextFields

T = TypeVar("T")


def window_sizes(size: int) -> Iterator[int]:
    """The sizes of successive windows of at most `size` items: 1, 2, 4, ... while they fit inside the first `size`
    items, the rest of those, then `size` on (1000: 1, 2, 4, ..., 256, 489, 1000, 1000, ...)."""
    size = max(1, size)
    done, step = 0, 1
    while done + step < size:
        yield step
        done, step = done + step, step * 2
    yield size - done
    while True:
        yield size


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` items, growing to it (`window_sizes`); on an input error the partial batch comes out
    first."""
    sizes = window_sizes(size)
    limit = next(sizes)
    batch: list[T] = []
    try:
        for item in items:
            batch.append(item)
            if len(batch) >= limit:
                yield batch
                batch, limit = [], next(sizes)
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
