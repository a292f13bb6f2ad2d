"""The parts of a directory read back as one record stream, in the input's order.

`--shard I/N` shares round-robin (record k of the input goes to part k mod N + 1), so the input's order is the
parts' records interleaved: one from part 1, one from part 2, ..., then part 1's second. A part's manifest names
its share's size and the share positions it skipped as bad, so the interleaving stays exact with --skip-errors.
Each record comes with its vectors back in place (embedding_row -> embedding, a float32 row of the part's .npy),
as `sembed embed` without --npy would have written it; memory holds one record per part.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

from ..errors import BadRecord, SembedError
from ..io import ReadPosition, Rejects, loads
from ..vector_rows import RowVectors, vector_field
from .files import PartFiles, finished


class PartReader:
    """One part's records in order, each with its vectors attached."""

    def __init__(self, files: PartFiles, stack: ExitStack):
        self.files = files
        self.vectors = RowVectors(files.vectors)
        self.stream = stack.enter_context(open(files.records, "rb"))  # noqa: SIM115 (the stack closes it)
        self.line = 0

    def next(self) -> dict:
        raw = self.stream.readline()
        self.line += 1
        if not raw:
            raise SembedError(
                f"{self.files.records} ends at line {self.line - 1}, before the count its manifest gives",
                "the part was changed after it was written: run it again with --force",
            )
        record = loads(raw)
        if not isinstance(record, dict):
            raise SembedError(f"{self.files.records}:{self.line}: not a JSON object")
        try:
            self.vectors.attach(record)
        except BadRecord as e:
            raise SembedError(f"{self.files.records}:{self.line}: {e.message}") from None
        return _vectors_in_place(record)


def _vectors_in_place(record: dict) -> dict:
    """The record with each embedding..._row field replaced, where it stood, by the vector `attach` added."""
    placed = {}
    for key, value in record.items():
        name = vector_field(key)
        if name is None:
            if key not in placed:
                placed[key] = value
        else:
            placed[name] = record[name]
    return placed


class PartsSource:
    """A parts directory as a record source (what `indexes.build` reads): every part must be done and of one
    model. `checked(check)` runs the check on each record; a record the check refuses is an error naming its part
    and line (parts are sembed's own output, not input to skip through)."""

    def __init__(self, directory: str | Path):
        self.path = str(directory)
        self.directory = Path(directory)
        self.manifests = finished(self.directory)
        self.rejects = Rejects(self.path)
        self.position = ReadPosition()
        self.line = 0  # the record's number in input order, from 1

    @property
    def count(self) -> int:
        return sum(manifest["count"] for manifest in self.manifests)

    def __iter__(self) -> Iterator[dict]:
        return self.checked(None)

    def checked(self, check: Callable[[dict], object] | None) -> Iterator[dict]:
        count = len(self.manifests)
        total = sum(manifest["input"]["share_records"] for manifest in self.manifests)
        skipped = [frozenset(manifest.get("skipped", [])) for manifest in self.manifests]
        with ExitStack() as stack:
            readers = [PartReader(PartFiles(self.directory, index, count), stack) for index in range(1, count + 1)]
            for position in range(total):
                part, share_position = position % count, position // count
                if share_position in skipped[part]:
                    continue
                reader = readers[part]
                record = reader.next()
                self.line += 1
                if check is not None:
                    try:
                        check(record)
                    except BadRecord as e:
                        raise BadRecord(f"{reader.files.records}:{reader.line}: {e.message}", e.hint) from None
                yield record
            for reader in readers:
                if reader.stream.readline():
                    raise SembedError(
                        f"{reader.files.records} holds more records than its manifest counts",
                        "the part was changed after it was written: run it again with --force",
                    )

    def summary(self) -> str | None:
        return None
