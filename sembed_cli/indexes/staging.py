"""What every verb of `sembed index` shares: the settings an index is built under, records read into entries,
and entries staged into the rows, with the FAISS calls each verb makes.

`read_entries` reads a record source into entries (each checked as read, its line kept for an error); `stage`
applies entries to a record store inside its open transaction: a new id is added, a changed record replaces its
row, an unchanged one is skipped (not embedded), and the vectors of new rows go to a `VectorFile`. A build
(`build.py`) stages into an empty store, an update (`update.py`) into the index's own; `add_rows` and
`write_faiss` then fill and write the FAISS index.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from .. import console
from ..io import RecordReader, Rejects
from ..io.atomic_files import DiskFull, is_disk_full
from ..io.checksums import DEFAULT, hasher, make
from . import keyword, kinds
from .entries import Entry, EntryReader, unit_rows
from .store import RecordStore
from .vector_file import VectorFile

if TYPE_CHECKING:
    from .model_choice import ModelCheck

log = logging.getLogger(__name__)

RERANK_CHOICES = ("float16", "float32", "none")


@dataclass(frozen=True)
class IndexSettings:
    """How an index is built: the type asked for (a kinds.NAMES entry or a FAISS factory string), the kept
    vectors of lossy types, inverted lists probed, the seed of the training sample, and the record's keys."""

    requested_type: str = "auto"
    rerank: str = "float16"
    nprobe: int | None = None
    seed: int = 42
    text_key: str = "text"
    embedding_key: str = "embedding"
    id_key: str = "id"
    batch_size: int = 2_000  # records looked up, inserted and embedded together
    doc_key: str = "doc_id"  # the document a record without an id comes from: one entry per document and sentence
    recall: float | None = 0.95  # recall@10 the search breadth is tuned to at build (indexes/recall.py); None: not
    keywords: bool | None = None  # the FTS5 keyword index (keyword.py): None, a build's default or an index's own

    def describe(self) -> dict:
        return {
            "requested_type": self.requested_type,
            "rerank": self.rerank,
            "text_key": self.text_key,
            "embedding_key": self.embedding_key,
            "id_key": self.id_key,
            "doc_key": self.doc_key,
            "seed": self.seed,
            keyword.SETTING: self.keywords is not False,
        }


@dataclass
class Changes:
    """What a build or an update did to the rows."""

    added: int = 0
    replaced: int = 0
    unchanged: int = 0
    repeated: int = 0  # the same id and content again in this input: indexed once
    synced: int = 0  # removed by sync: the input no longer holds them
    removed: list[int] = field(default_factory=list)  # rows taken out (replaced or synced)
    compacted: int = 0  # removed rows a graph held, purged by rebuilding it (indexes/compaction.py)
    folded: int = 0  # fresh rows moved into FAISS (indexes/fresh.py)

    def describe(self) -> dict:
        described = {
            "added": self.added,
            "replaced": self.replaced,
            "unchanged": self.unchanged,
            "repeated": self.repeated,
            "removed_missing": self.synced,
        }
        if self.folded:
            described["folded"] = self.folded
        return {**described, "compacted": self.compacted} if self.compacted else described


Embed = Callable[[list[str]], np.ndarray]


class IndexSource(RecordReader, Protocol):
    """What an index reads: a `RecordSource` (a file or stdin), or the parts `sembed embed --parts` wrote
    (`parts.reassemble.PartsSource`), with the --skip-errors policy and the number of the record last read."""

    rejects: Rejects
    line: int


def read_entries(source: IndexSource, reader: EntryReader, check: ModelCheck, batch: int = 2_000) -> Iterator[Entry]:
    """The source's records as entries, each checked as it is read (a bad one names its line); their vectors
    (their own, or the --npy rows they name) made unit and hashed a batch at a time (`EntryReader.fill`)."""
    made: list[Entry] = []

    def read(record: dict) -> None:
        entry = reader(record)
        entry.line = source.line
        if check.identity is None:
            check()
        made.append(entry)

    def filled(entries: list[Entry]) -> list[Entry]:
        bad = reader.fill(entries)
        for entry, problem in bad:  # as RecordSource.checked rejects a record (--skip-errors or the error)
            source.rejects.reject(entry.line, problem.message, problem.hint)
        return [entry for entry in entries if entry.pending is None] if bad else entries

    waiting: list[Entry] = []
    for _ in console.progress(source.checked(read), "reading records"):
        waiting.append(made.pop())
        if len(waiting) >= batch:
            yield from filled(waiting)
            waiting = []
    yield from filled(waiting)


@dataclass
class Plan:
    """What a batch of entries does to the rows (`Staging.plan`), made before anything is written."""

    next_row: int  # the row the batch's first new row takes; past its last once planned
    inserts: list[tuple[int, str, str, bytes]] = field(default_factory=list)  # (row, id, hash, payload)
    kept: list[Entry] = field(default_factory=list)  # the entries of `inserts`, in order
    deletes: list[int] = field(default_factory=list)  # rows replaced by a changed record
    payloads: list[tuple[int, bytes]] = field(default_factory=list)  # an unchanged record's new payload
    seen: set[int] = field(default_factory=set)  # indexed rows the batch names
    rejected: list[tuple[int, str, str]] = field(default_factory=list)  # (line, message, hint)
    added: int = 0
    unchanged: int = 0
    repeated: int = 0


class Staging:
    """Entries applied to a store inside its open transaction, their vectors appended to a VectorFile."""

    def __init__(self, store: RecordStore, vectors: Callable[[int], VectorFile], embed: Embed | None, rejects: Rejects):
        self.store, self.make_vectors, self.embed, self.rejects = store, vectors, embed, rejects
        self.first_new = self.next_row = store.next_row
        self.seen = np.zeros(self.first_new, dtype=bool)  # indexed rows this input has named
        self.changes = Changes()
        self.vectors: VectorFile | None = None
        self.digest = hashlib.sha256(store.state.get("data_sha256", "").encode())

    def add(self, entries: list[Entry]) -> None:
        if self.first_new == 0:  # a new store: an id stored already is one this input gave, which is rare
            plan = self.plan(entries, {})
            if not plan.rejected and self.store.insert_new(plan.inserts):
                self.apply(plan, inserted=True)
                return
        self.apply(self.plan(entries, self.store.find([entry.key for entry in entries])))

    def plan(self, entries: list[Entry], found: dict[str, tuple[int, str, bytes]]) -> Plan:
        """What `entries` do to the rows, given `found` (id -> (row, hash, payload) of those stored): nothing is
        changed yet (`apply`)."""
        plan = Plan(self.next_row)
        fresh: dict[str, tuple[int, str]] = {}  # ids first met in this batch
        for entry in entries:
            hit = fresh.get(entry.key) or found.get(entry.key)
            if hit is not None:
                row, digest = hit[0], hit[1]
                if row >= self.first_new or self.seen[row] or row in plan.seen:  # this input named it already
                    if digest == entry.digest:
                        plan.repeated += 1
                    else:
                        plan.rejected.append(
                            (
                                entry.line,
                                f"id {entry.key} again, with other content than an earlier record of that id",
                                "give each record its own id, or none (the id is then a hash of the text)",
                            )
                        )
                    continue
                plan.seen.add(row)
                if digest == entry.digest:
                    plan.unchanged += 1
                    if found[entry.key][2] != entry.payload:
                        plan.payloads.append((row, entry.payload))
                    continue
                plan.deletes.append(row)
            else:
                plan.added += 1
            fresh[entry.key] = (plan.next_row, entry.digest)
            plan.inserts.append((plan.next_row, entry.key, entry.digest, entry.payload))
            plan.kept.append(entry)
            plan.next_row += 1
        return plan

    def apply(self, plan: Plan, inserted: bool = False) -> None:
        """Make `plan`'s changes (its rows already inserted where `inserted`) and embed its new rows' texts."""
        for line, message, hint in plan.rejected:  # raises unless --skip-errors: nothing of the batch is written
            self.rejects.reject(line, message, hint)
        for row, payload in plan.payloads:
            self.store.set_payload(row, payload)
        self.seen[list(plan.seen)] = True
        changes = self.changes
        changes.added += plan.added
        changes.replaced += len(plan.deletes)
        changes.unchanged += plan.unchanged
        changes.repeated += plan.repeated
        changes.removed.extend(plan.deletes)
        self.digest.update("".join(f"{key}\0{digest}\n" for _, key, digest, _ in plan.inserts).encode())
        self.next_row = plan.next_row
        kept = plan.kept
        if not kept:
            self.store.delete(plan.deletes)
            return
        texts = [entry.text for entry in kept if entry.vector is None and entry.text is not None]  # one or other
        embedded = iter(self.embed(texts)) if texts and self.embed is not None else iter(())
        matrix = unit_rows(np.stack([entry.vector if entry.vector is not None else next(embedded) for entry in kept]))
        if self.vectors is None:
            self.vectors = self.make_vectors(matrix.shape[1])
        self.store.delete(plan.deletes)
        if not inserted:
            self.store.insert(plan.inserts)
        self.vectors.append(matrix, at_row=self.next_row - len(kept))

    def sync(self) -> None:
        """Remove the indexed rows this input did not name (`index --update --sync`)."""
        gone = [row for row in self.store.row_numbers(below=self.first_new) if not self.seen[row]]
        self.store.delete(gone)
        self.changes.removed.extend(gone)
        self.changes.synced = len(gone)
        for row in gone:
            self.digest.update(f"-{row}\n".encode())


def stage(
    store: RecordStore,
    entries: Iterable[Entry],
    vectors: Callable[[int], VectorFile],
    embed: Embed | None,
    rejects: Rejects,
    batch_size: int,
    sync: bool = False,
) -> Staging:
    staging = Staging(store, vectors, embed, rejects)
    batch: list[Entry] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) >= batch_size:
            staging.add(batch)
            batch = []
    if batch:
        staging.add(batch)
    if sync:
        staging.sync()
    return staging


ADD_CHUNK = 50_000  # rows read and added to FAISS a time (add_rows_read)


def add_block(index, block: np.ndarray, rows: np.ndarray) -> None:
    """`block`, the vectors of the ascending row numbers `rows`, into `index`: by position in a graph whose rows
    are its positions (they must come next), else under their row numbers; into the cells a build puts them in
    (`kinds.adding`)."""
    if kinds.positional(index):
        if index.ntotal != rows[0]:
            raise RuntimeError(f"graph holds {index.ntotal} rows, adding row {rows[0]}")
        index.add(block)
    else:
        with kinds.adding(index):
            index.add_with_ids(block, rows)


def add_rows(index, vectors: VectorFile, start: int, stop: int, kept: VectorFile | None = None) -> None:
    """Rows start .. stop - 1 of `vectors` into `index`, read from the file a chunk at a time (`add_block`), and
    appended to `kept` (the vectors a lossy index re-ranks with) in the same pass."""
    for first, block in vectors.chunks(stop, start):
        add_block(index, block, np.arange(first, first + len(block), dtype=np.int64))
        if kept is not None:
            kept.append(block, at_row=first)


def add_rows_read(index, rows: np.ndarray, read: Callable[[np.ndarray], np.ndarray], offset: int = 0) -> None:
    """The ascending `rows` into `index` as rows + `offset`, ADD_CHUNK at a time, their vectors given by
    `read(rows)` (`add_block`)."""
    for start in range(0, len(rows), ADD_CHUNK):
        chunk = rows[start : start + ADD_CHUNK]
        add_block(index, read(chunk), chunk + offset)


def write_faiss(index, path: Path) -> str:
    """Write `index` to `path` (synced) through sembed's own file writes, and return the file's checksum (taken as
    it is written: io.checksums). A full disk is DiskFull naming the file and its whole size (FAISS's own writer
    would say neither); the partial file is removed."""
    import faiss

    written, digest = 0, hasher()
    failure: OSError | None = None
    with open(path, "wb", buffering=0) as f:

        def write(data: bytes) -> int:
            nonlocal written, failure
            if failure is None:
                try:
                    view = memoryview(data)
                    while view:
                        view = view[f.write(view) or 0 :]
                except OSError as e:
                    failure = e  # the rest is counted, not written: the size the whole file needs
            written += len(data)
            digest.update(data)
            return len(data)

        faiss.write_index(index, faiss.PyCallbackIOWriter(write))  # type: ignore[attr-defined]  # not in the stubs
        if failure is None:
            try:
                os.fsync(f.fileno())
            except OSError as e:
                failure = e
    if failure is not None:
        path.unlink(missing_ok=True)
        if is_disk_full(failure):
            raise DiskFull(path, written)
        raise failure
    return make(DEFAULT, written, digest.hexdigest())
