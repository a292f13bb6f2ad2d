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
from ..io.checksums import hasher, mismatch, parse
from ..vector_rows import RowVectors, vector_field
from .files import PartFiles, finished

RUN_AGAIN = "run the part again: sembed embed ... --shard I/N --parts DIR --force"


class PartReader:
    """One part's records in order, each with its vectors attached."""

    def __init__(self, files: PartFiles, stack: ExitStack, manifest: dict | None = None):
        self.files = files
        recorded = (manifest or {}).get("files", {})
        if "npy_checksum" in recorded:  # the vectors are read by row: compared whole before the first
            problem = mismatch(files.vectors, recorded["npy_checksum"])
            if problem is not None:
                raise SembedError(f"damaged part: {files.directory}/{problem}", RUN_AGAIN)
        self.checksum = recorded.get("jsonl_checksum")
        self.hasher = hasher(parse(self.checksum)[0]) if self.checksum is not None else None
        self.vectors = RowVectors(files.vectors)
        self.stream = stack.enter_context(open(files.records, "rb"))  # noqa: SIM115 (the stack closes it)
        self.line = 0

    def next(self) -> dict:
        raw = self.stream.readline()
        if self.hasher is not None:
            self.hasher.update(raw)
        self.line += 1
        if not raw:
            raise SembedError(
                f"{self.files.records} ends at line {self.line - 1}, before the count its manifest gives",
                "the part was changed after it was written: run it again with --force",
            )
        try:
            record = loads(raw)
        except ValueError as e:
            raise SembedError(f"{self.files.records}:{self.line}: not JSON ({e})", RUN_AGAIN) from None
        if not isinstance(record, dict):
            raise SembedError(f"{self.files.records}:{self.line}: not a JSON object", RUN_AGAIN)
        try:
            self.vectors.attach(record)
        except BadRecord as e:
            raise SembedError(f"{self.files.records}:{self.line}: {e.message}") from None
        return _vectors_in_place(record)

    def finish(self) -> None:
        """At the end of the part: it holds no more records than its manifest counts, and its bytes are the ones
        its checksum was taken over (before the index that read them commits)."""
        rest = self.stream.read()
        if rest.strip():
            raise SembedError(
                f"{self.files.records} holds more records than its manifest counts",
                "the part was changed after it was written: run it again with --force",
            )
        if self.hasher is not None:
            self.hasher.update(rest)
        if self.checksum is not None and self.hasher is not None and self.hasher.hexdigest() != parse(self.checksum)[2]:
            raise SembedError(
                f"damaged part: {self.files.records} does not match its checksum (its bytes changed after they "
                "were written)",
                RUN_AGAIN,
            )


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
            readers = [
                PartReader(PartFiles(self.directory, index, count), stack, self.manifests[index - 1])
                for index in range(1, count + 1)
            ]
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
                reader.finish()

    def summary(self) -> str | None:
        return None
