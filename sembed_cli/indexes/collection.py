"""A collection's unit vectors read once into a matrix, and its records read back in order: what `sembed dedup` and
`sembed cluster` share.

A collection is a record stream (records with vectors, as `sembed embed` writes them, or rows of an `--npy` matrix,
or texts embedded with a model as `sembed index` embeds them) or an index directory `sembed index` wrote. Both
commands must see every vector before they can say anything of one record, so they read twice: the first pass
(`read`) keeps each record's unit vector (float16, in a temporary file, memory-mapped: 768 bytes a 384-d vector)
and its physical line, nothing else; the second (`records`) reads the records again, in order, for the command to
write each with what it computed. The input file is read again; stdin is spooled to a temporary file as it is read;
an index's records come back from its store. Nothing that grows with the corpus is held in RAM but the vectors.

Bad input in the first pass stops it there (without --skip-errors): the records before the bad one still go
through the command and out, and the error is raised after them (`StreamCollection.error`), so nothing already
read is lost, as the record stream's rule is for the streaming commands.
"""

from __future__ import annotations

import logging
import mmap
import shutil
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import console
from ..errors import BadRecord, SembedError
from ..io import STDIN, RecordSink, RecordSource, Rejects, check_text, display_name, float32_vector, loads
from .directory import VectorIndex, payload_record
from .entries import unit_rows
from .vector_file import VectorFile

if TYPE_CHECKING:
    from ..models.model_identity import Identity
    from .model_choice import ModelChoice

log = logging.getLogger(__name__)

SPOOL_DTYPE = "float16"  # cosines to about 1e-3 (vector_file.py), half the memory of float32
BLOCK = 50_000  # rows read, searched or assigned together
RELEASE_EVERY = 50_000  # records read between two releases of the .npy matrix's mapped pages


def drop_pages(array: object) -> None:
    """Let the kernel drop the pages of a memory-mapped matrix read so far: mapped file pages count in the process's
    memory (RSS) while they stay, and a matrix read once need not stay (a page read again comes back from the
    file). A no-op for an array that is not mapped."""
    mapped = getattr(array, "_mmap", None)
    if isinstance(mapped, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        mapped.madvise(mmap.MADV_DONTNEED)


@dataclass(frozen=True)
class ReadSettings:
    """Which fields a record's vector, text and id are in, the .npy matrix of `embed --npy` rows, and how many
    texts are embedded together."""

    text_key: str = "text"
    embedding_key: str = "embedding"
    id_key: str = "id"
    npy: Path | None = None
    batch_size: int = 256


class Collection:
    """The vectors of a collection (rows 0..count-1 in the order its records are read back) and its records."""

    count: int = 0
    dimension: int = 0
    identity: Identity | None = None
    name: str = ""
    id_key: str = "id"
    vectors: VectorFile | None = None
    error: SembedError | None = None  # bad input that stopped the first pass, raised after the output

    def matrix(self) -> np.ndarray:
        """The unit vectors, float16, memory-mapped (count x dimension)."""
        if self.vectors is None or self.count == 0:
            return np.zeros((0, self.dimension), dtype=SPOOL_DTYPE)
        return self.vectors.matrix(self.count)

    def block(self, start: int, stop: int) -> np.ndarray:
        return np.asarray(self.matrix()[start:stop], dtype=np.float32)

    def release(self) -> None:
        """Drop the spooled vectors' mapped pages (read again from the temporary file when needed): a pass over
        them all then holds only a block at a time."""
        drop_pages(self.matrix())

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """float32 unit vectors of `positions` (any order)."""
        if self.vectors is None:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self.vectors.read(np.asarray(positions, dtype=np.int64), self.count)

    def records(self) -> Iterator[tuple[int, dict, object]]:
        """(position, record, id) of every record read, in order: the record as read (an index's: as stored), its
        id (--id-key's value; an index's own id; else the position)."""
        raise NotImplementedError

    def summary(self) -> str | None:
        """What the first pass skipped (--skip-errors), for stderr."""
        return None

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *_) -> None:
        self.close()


class StreamCollection(Collection):
    """A record stream's vectors (read by `read`) and, again, its records. `work`: a temporary folder for the
    vectors (and stdin's copy) that the caller removes."""

    def __init__(
        self,
        input: str,
        settings: ReadSettings,
        work: Path,
        *,
        choice: ModelChoice | None = None,
        lines: bool | None = None,
        skip_errors: bool = False,
    ):
        self.input, self.settings, self.work, self.choice = input, settings, work, choice
        self.lines_option, self.skip_errors = lines, skip_errors
        self.name = display_name(input)
        self.id_key = settings.id_key
        self.path = input  # the file the second pass reads (stdin's copy, for stdin)
        self.lines = array("q")  # the physical line of each record read, by position
        self.error: SembedError | None = None  # bad input that stopped the first pass, raised after the output
        self.rejects = Rejects(self.name, skip_errors)
        self.uses_vectors: bool | None = None
        self.texts_embedded = 0

    def source(self, skip_errors: bool) -> RecordSource:
        from ..io import PLAIN_TEXT_HINT

        source = RecordSource(
            self.path, skip_errors=skip_errors, lines=self.lines_option, plain_text_hint=PLAIN_TEXT_HINT
        )
        source.rejects = Rejects(self.name, skip_errors)
        return source

    def read(self) -> StreamCollection:
        """The first pass: every record's unit vector into the spool, its line into `lines`."""
        from ..models import model_identity
        from ..vector_rows import RowVectors

        if self.input == STDIN:
            self.path = str(self.work / "stdin.jsonl")
            with open(self.path, "wb") as copy:
                shutil.copyfileobj(sys.stdin.buffer, copy, 1 << 20)
        settings = self.settings
        rows = RowVectors(settings.npy) if settings.npy is not None else None
        models = model_identity.OneModel()
        pending_vectors: list[np.ndarray] = []
        pending_texts: list[str] = []
        embedder = None
        source = self.source(self.skip_errors)
        self.rejects = source.rejects

        def check(record: dict) -> None:
            nonlocal embedder
            if rows is not None:
                rows.attach(record)
            if self.uses_vectors is None:
                self.uses_vectors = settings.embedding_key in record
            if self.uses_vectors:
                models(record)
                vector = float32_vector(record, settings.embedding_key, self.dimension or None)
                if not self.dimension:
                    self.dimension = len(vector)
                pending_vectors.append(vector)
            else:
                if settings.text_key not in record:
                    raise BadRecord(f"missing key '{settings.text_key}' (or '{settings.embedding_key}')")
                text = check_text(record, settings.text_key)
                if embedder is None:  # opened at the first text: a stream of vectors loads no model
                    embedder = self._embedder()
                    self.dimension = embedder.dimension
                embedder.check_long(record, settings.text_key)  # --long-text error: bad input, named by its line
                pending_texts.append(text)

        def flush() -> None:
            if pending_vectors:
                block = unit_rows(np.stack(pending_vectors))
                pending_vectors.clear()
            elif pending_texts and embedder is not None:
                texts = pending_texts[:]
                pending_texts.clear()
                block = unit_rows(embedder.encode(texts))
                self.texts_embedded += len(texts)
            else:
                return
            if self.vectors is None:
                self.vectors = VectorFile(self.work / "vectors.f16", self.dimension, SPOOL_DTYPE)
            self.vectors.append(block, at_row=self.count)
            self.count += len(block)

        try:
            for _ in console.progress(source.checked(check), "reading records"):
                self.lines.append(source.line)
                if len(pending_vectors) + len(pending_texts) >= settings.batch_size:
                    flush()
                    if rows is not None and len(self.lines) % RELEASE_EVERY < settings.batch_size:
                        drop_pages(rows.matrix)  # the .npy read so far: its rows are in the spool now
        except SembedError as e:  # bad input: what was read before it is still used, and the error raised after
            self.error = e
        flush()
        if self.uses_vectors:
            self.identity = models.identity
            if rows is not None:
                models.agree(rows.identity, f"{rows.path}.json names vectors")
                self.identity = self.identity or rows.identity
        elif embedder is not None:
            self.identity = embedder.identity
            embedder.report()
        if self.count == 0 and self.error is None:
            skipped = f" ({len(self.rejects.skipped)} skipped as bad records)" if self.rejects.skipped else ""
            raise SembedError(f"no records in {self.name}{skipped}")
        return self

    def _embedder(self):
        choice = self.choice
        if choice is None:
            raise BadRecord(
                f"no '{self.settings.embedding_key}' to read", "embed the records first, or give texts and a model"
            )
        embedder = choice.open()
        log.info(f"embedding texts with {embedder.identity} on {embedder.device}")
        return embedder

    def records(self) -> Iterator[tuple[int, dict, object]]:
        wanted = self.lines
        if not self.count:
            return
        position = 0
        source = self.source(skip_errors=True)  # the first pass reported the bad lines already
        for record in source.checked(None):
            if source.line != wanted[position]:
                continue  # a bad record the first pass skipped
            yield position, record, record.get(self.id_key, position)
            position += 1
            if position == self.count:
                return
        raise SembedError(f"{self.name} changed while it was read: {self.count - position} record(s) gone")

    def summary(self) -> str | None:
        return self.rejects.summary()


class IndexCollection(Collection):
    """An index directory's live rows, in row order: their vectors (read back from the index) and records."""

    def __init__(self, path: str | Path, work: Path):
        self.index = VectorIndex.load(path)
        self.work = work
        self.name = str(path)
        self.identity = self.index.identity
        self.dimension = self.index.dimension
        self.id_key = self.index.settings.get("id_key", "id")
        self.text_key = self.index.settings.get("text_key", "text")
        self.row_numbers = np.fromiter((row for row, *_ in self.index.store.rows()), dtype=np.int64)
        self.count = len(self.row_numbers)

    def read(self) -> IndexCollection:
        """The index's vectors into the spool, a block at a time."""
        self.vectors = VectorFile(self.work / "vectors.f16", self.dimension, SPOOL_DTYPE)
        for start in console.progress(range(0, self.count, BLOCK), "reading vectors", unit="blocks"):
            block = self.index.vectors_of(self.row_numbers[start : start + BLOCK])
            self.vectors.append(unit_rows(block), at_row=start)
        if self.count == 0:
            raise SembedError(f"the index at '{self.name}' holds no records")
        return self

    def positions(self, rows: np.ndarray) -> np.ndarray:
        """The positions of index rows (-1 for -1 and for rows not live)."""
        found = np.searchsorted(self.row_numbers, rows)
        found = np.minimum(found, max(self.count - 1, 0))
        live = (rows >= 0) & (self.row_numbers[found] == rows) if self.count else np.zeros(rows.shape, dtype=bool)
        return np.where(live, found, -1)

    def records(self) -> Iterator[tuple[int, dict, object]]:
        for position, (_row, key, _, payload) in enumerate(self.index.store.rows()):
            record, record_id = payload_record(payload), loads(key)
            if self.id_key not in record:
                record[self.id_key] = record_id  # the index's id (a hash of the content), which search names too
            yield position, record, record_id

    def close(self) -> None:
        self.index.close()

    def summary(self) -> str | None:
        return None


@dataclass(frozen=True)
class CollectionSource:
    """Where a collection comes from: a record stream (INPUT, read with `read`'s fields, texts embedded by
    `choice`, --lines, --skip-errors) or, given `index`, an index directory."""

    input: str = STDIN
    index: Path | None = None
    read: ReadSettings = field(default_factory=ReadSettings)
    choice: ModelChoice | None = None
    lines: bool | None = None
    skip_errors: bool = False


def _collection(source: CollectionSource, work: Path) -> StreamCollection | IndexCollection:
    if source.index is not None:
        return IndexCollection(source.index, work)
    return StreamCollection(
        source.input, source.read, work, choice=source.choice, lines=source.lines, skip_errors=source.skip_errors
    )


@contextmanager
def opened(source: CollectionSource) -> Iterator[StreamCollection | IndexCollection]:
    """The collection, its vectors read (the first pass); its temporary files are removed at the end."""
    with tempfile.TemporaryDirectory(prefix="sembed-vectors-") as work:
        collection = _collection(source, Path(work))
        with collection:
            collection.read()
            yield collection


def run_collection(
    source: CollectionSource,
    output: str,
    force: bool,
    compute: Callable[[StreamCollection | IndexCollection], Iterable[dict]],
    description: str,
    flush_every: int = 1000,
) -> int:
    """Read the collection, then write the records `compute` makes of it to `output` (stdout, or -o FILE: refused
    before any work when it exists without --force, or is the input); bad input that stopped the first pass is
    raised after the records before it are written. Returns the count written."""
    inputs = [source.input] if source.index is None else []
    with tempfile.TemporaryDirectory(prefix="sembed-vectors-") as work:
        collection = _collection(source, Path(work))
        with collection, RecordSink(output, flush_every=flush_every, force=force, inputs=inputs) as sink:
            collection.read()
            records = compute(collection)
            with console.StreamProgress(description) as progress:
                sink.progress = progress
                sink.write_all(records)
        skipped = collection.summary()
        if skipped:
            log.warning(skipped)
        if collection.error is not None:
            raise collection.error
    return sink.count
